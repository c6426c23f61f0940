"""Every input rule of GatedDeltaNet (docs/spec.md §8) fires, through the oracle, with a message naming the problem."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from oracles import ValidationError
from oracles.gated_delta_net import gated_delta_net

N, H, HV, DK, DV = 6, 2, 4, 3, 2
f32, i32 = np.float32, np.int32


def good(**overrides: Any) -> dict[str, Any]:
    """A valid rank-3 gated_delta call of two uniform requests with capture, then ``overrides`` (None removes)."""
    call: dict[str, Any] = {
        "query": np.ones((N, H, DK), f32), "key": np.ones((N, H, DK), f32), "value": np.ones((N, HV, DV), f32),
        "decay": -np.ones((N, HV), f32), "beta": np.ones((N, HV), f32), "initial_state": np.zeros((2, HV, DV, DK), f32),
        "capture_count": np.array([2, 2], i32), "state_update_capacity": 3,
    }
    call.update(overrides)
    return {k: v for k, v in call.items() if v is not None}


def test_the_valid_call_runs() -> None:
    output, final, capsule = gated_delta_net(**good())
    assert output.shape == (N, HV, DV) and final.shape == (2, HV, DV, DK) and capsule.shape == (2, 3 * (4 + 6 + 8))


PACKED = np.ones((N, 2 * H * DK + HV * DV), f32)

BROKEN = {
    "update_rule": (good(update_rule="gated_deltas"), "update_rule: expected one of"),
    "gate_activation": (good(gate_activation="softplus"), "gate_activation: expected one of none, qwen"),
    "beta_activation": (good(beta_activation="tanh"), "beta_activation: expected one of none, sigmoid"),
    "qk_l2_norm": (good(qk_l2_norm=2), "qk_l2_norm: expected in [0, 1]"),
    "capacity above 8": (good(state_update_capacity=9), "state_update_capacity: expected in [0, 8]"),
    "scale": (good(scale=float("nan")), "scale: expected a finite float"),
    "query rank": (good(query=np.ones((N, H * DK), f32)), "query: expected rank 3 or 4"),
    "query dtype": (good(query=np.ones((N, H, DK), np.int32)), "query: expected dtype float32 or float16"),
    "key without value": (good(value=None), "value: expected an input (key and value are both present"),
    "key dtype": (good(key=np.ones((N, H, DK), np.float16)), "key: expected the dtype of query"),
    "key tokens": (good(key=np.ones((N + 1, H, DK), f32)), "key: expected token axes"),
    "key heads": (good(key=np.ones((N, H + 1, DK), f32)), "key: expected heads and size (2, 3)"),
    "value heads not a multiple": (good(value=np.ones((N, 3, DV), f32), decay=-np.ones((N, 3), f32),
                                        beta=np.ones((N, 3), f32), initial_state=np.zeros((2, 3, DV, DK), f32)),
                                   "value heads H_v: expected a multiple of the query/key heads H_q = 2"),
    "decay missing": (good(decay=None), "decay: expected an input (update_rule 'gated_delta' requires it)"),
    "decay on a rule without": (good(update_rule="delta"), "decay: expected absent"),
    "beta missing": (good(beta=None), "beta: expected an input"),
    "beta on a rule without": (good(update_rule="gated"), "beta: expected absent"),
    "decay dtype": (good(decay=-np.ones((N, HV), np.float16)), "decay: expected dtype float32"),
    "decay shape": (good(decay=-np.ones((N, HV + 1), f32)), "decay: expected shape (6, 4)"),
    "per-key decay with capture": (good(decay=-np.ones((N, HV, DK), f32)), "a per-key decay cannot be captured"),
    "beta shape": (good(beta=np.ones((N, 1), f32)), "beta: expected shape (6, 4)"),
    "a_log without qwen": (good(a_log=np.zeros(HV, f32)), "a_log: expected absent"),
    "qwen without dt_bias": (good(gate_activation="qwen", a_log=np.zeros(HV, f32)), "dt_bias: expected an input"),
    "a_log shape": (good(gate_activation="qwen", a_log=np.zeros(HV + 1, f32), dt_bias=np.zeros(HV, f32)),
                    "a_log: expected shape (4,)"),
    "initial_state shape": (good(initial_state=np.zeros((2, HV, DK, DV), f32)),
                            "initial_state: expected shape (2, 4, 2, 3)"),
    "initial_state dtype": (good(initial_state=np.zeros((2, HV, DV, DK), np.float16)),
                            "initial_state: expected dtype float32"),
    "rank 3 without a batch": (good(initial_state=None), "initial_state: expected an input (rank-3 uniform packing"),
    "batch not dividing": (good(initial_state=np.zeros((4, HV, DV, DK), f32), capture_count=np.ones(4, i32)),
                           "initial_state.shape[0]: expected a batch size B >= 1 dividing N = 6"),
    "empty call": (good(query=np.ones((0, H, DK), f32), key=np.ones((0, H, DK), f32),
                        value=np.ones((0, HV, DV), f32), decay=-np.ones((0, HV), f32), beta=np.ones((0, HV), f32)),
                   "query: expected N >= 1 tokens"),
    "cu_seqlens dtype": (good(cu_seqlens=np.array([0, 3, 6], np.int64)), "cu_seqlens: expected an int32 tensor"),
    "cu_seqlens not ending at N": (good(cu_seqlens=np.array([0, 3, 5], i32)),
                                   "cu_seqlens: expected non-decreasing prefix sums from 0 to N = 6"),
    "cu_seqlens decreasing": (good(cu_seqlens=np.array([0, 4, 3, 6], i32)), "cu_seqlens: expected non-decreasing"),
    "cu_seqlens on rank 4": (good(query=np.ones((2, 3, H, DK), f32), key=np.ones((2, 3, H, DK), f32),
                                  value=np.ones((2, 3, HV, DV), f32), decay=-np.ones((2, 3, HV), f32),
                                  beta=np.ones((2, 3, HV), f32), cu_seqlens=np.array([0, 3, 6], i32)),
                             "cu_seqlens: expected rank-3 inputs"),
    "capture_count without capacity": (good(state_update_capacity=0), "capture_count: expected absent"),
    "capacity without capture_count": (good(capture_count=None), "capture_count: expected an input"),
    "capture_count shape": (good(capture_count=np.array([1, 1, 1], i32)), "capture_count: expected shape (2,)"),
    "capture_count dtype": (good(capture_count=np.array([1, 1], np.int64)), "capture_count: expected dtype int32"),
    "state_update_active shape": (good(state_update_active=np.array([1, 1], i32)),
                                  "state_update_active: expected shape (1,)"),
    "packed without a state": (good(query=PACKED, key=None, value=None, initial_state=None),
                               "initial_state: expected a (B, H_v, d_v, d_k) input (packed QKV"),
    "packed width": (good(query=np.ones((N, 2 * H * DK + HV * DV + 1), f32), key=None, value=None),
                     "query.shape[-1]: expected 2 * H_q * 3 + 4 * 2"),
}


@pytest.mark.parametrize("call,message", BROKEN.values(), ids=BROKEN.keys())
def test_each_broken_rule_is_refused_with_its_message(call: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        gated_delta_net(**call)


def test_packed_qkv_and_ragged_requests_are_valid() -> None:
    output, _, _ = gated_delta_net(**good(query=PACKED, key=None, value=None))
    assert output.shape == (N, HV, DV)
    _, final, _ = gated_delta_net(**good(cu_seqlens=np.array([0, 0, 6], i32)))
    np.testing.assert_array_equal(final[0], 0)

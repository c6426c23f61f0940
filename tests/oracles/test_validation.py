"""Every validation rule of docs/spec.md §1-2 fires, through the oracle, with a message naming the problem."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from oracles import ValidationError, linear_attention

B, T, H, DK, DV = 2, 3, 2, 4, 5


def good(**overrides):
    """A valid gated_delta call with per-head decay and beta, W = 0, then ``overrides`` applied."""
    f = np.float32
    call = {
        "query": np.ones((B, T, H * DK), f),
        "key": np.ones((B, T, H * DK), f),
        "value": np.ones((B, T, H * DV), f),
        "past_state": np.zeros((B, H, DK, DV), f),
        "decay": np.zeros((B, T, H), f),
        "beta": np.ones((B, T, H), f),
        "q_num_heads": H,
        "kv_num_heads": H,
        "update_rule": "gated_delta",
    }
    call.update(overrides)
    return {k: v for k, v in call.items() if v is not None}


def test_valid_call_runs():
    output, state = linear_attention(**good())
    assert output.shape == (B, T, H * DV) and state.shape == (B, H, DK, DV)


BROKEN = {
    "query rank": (good(query=np.ones((B, T), np.float32)), "query: expected rank 3"),
    "key batch": (good(key=np.ones((B + 1, T, H * DK), np.float32)), "key: expected (batch, sequence)"),
    "value sequence": (good(value=np.ones((B, T + 1, H * DV), np.float32)), "value: expected (batch, sequence)"),
    "T = 0": (good(query=np.ones((B, 0, H * DK), np.float32), key=np.ones((B, 0, H * DK), np.float32),
                   value=np.ones((B, 0, H * DV), np.float32), decay=np.ones((B, 0, H), np.float32),
                   beta=np.ones((B, 0, H), np.float32)), "T = 0 is outside the contract"),
    "query hidden not divisible": (good(query=np.ones((B, T, H * DK + 1), np.float32)),
                                   "query.shape[2]: expected a multiple of q_num_heads"),
    "key hidden not divisible": (good(key=np.ones((B, T, DK + 1), np.float32)),
                                 "key.shape[2]: expected a multiple of d_k"),
    "kv heads not multiple of n_k": (good(key=np.ones((B, T, 3 * DK), np.float32), q_num_heads=4, kv_num_heads=4,
                                          query=np.ones((B, T, 4 * DK), np.float32),
                                          value=np.ones((B, T, 4 * DV), np.float32)),
                                     "kv_num_heads: expected a multiple of the number of key heads"),
    "value hidden not divisible": (good(value=np.ones((B, T, H * DV + 1), np.float32)),
                                   "value.shape[2]: expected a multiple of kv_num_heads"),
    "heads not divisible (standard)": (good(q_num_heads=3, kv_num_heads=2, query=np.ones((B, T, 3 * DK), np.float32)),
                                       "q_num_heads: expected a multiple of kv_num_heads"),
    "heads not divisible (inverse)": (good(q_num_heads=2, kv_num_heads=3, key=np.ones((B, T, 3 * DK), np.float32),
                                           value=np.ones((B, T, 3 * DV), np.float32)),
                                      "kv_num_heads: expected a multiple of q_num_heads"),
    "decay last dim": (good(decay=np.zeros((B, T, H + 1), np.float32)), "decay: expected shape (2, 3, 2) or (2, 3, 8)"),
    "beta last dim": (good(beta=np.ones((B, T, H + 1), np.float32)), "beta: expected shape (2, 3, 2) or (2, 3, 1)"),
    "decay missing for gated": (good(decay=None, update_rule="gated"), "decay: expected an input (update_rule 'gated'"),
    "beta missing for delta": (good(beta=None, update_rule="delta"), "beta: expected an input (update_rule 'delta'"),
    "decay validated for linear": (good(decay=np.zeros((B, T, 7), np.float32), update_rule="linear"),
                                   "decay: expected shape"),
    "beta validated for gated": (good(beta=np.ones((B, T, 7), np.float32), update_rule="gated"),
                                 "beta: expected shape"),
    "past_state 4-D for W=2": (good(state_window=2), "past_state: expected shape (2, 2, 2, 4, 5)"),
    "past_state 5-D for W=0": (good(past_state=np.zeros((1, B, H, DK, DV), np.float32)),
                               "past_state: expected shape (2, 2, 4, 5) = (B, H_kv, d_k, d_v)"),
    "past_state wrong W": (good(state_window=3, past_state=np.zeros((2, B, H, DK, DV), np.float32)),
                           "past_state: expected shape (3, 2, 2, 4, 5)"),
    "W = 9": (good(state_window=9), "state_window: expected in [0, 8], received 9"),
    "W = -1": (good(state_window=-1), "state_window: expected in [0, 8], received -1"),
    "W not an int": (good(state_window=1.5), "state_window: expected an integer"),
    "unknown rule": (good(update_rule="gated-delta"), "update_rule: expected one of linear, gated, delta, gated_delta"),
    "int dtype": (good(query=np.ones((B, T, H * DK), np.int32)), "query: expected dtype float32 or float16"),
    "mixed dtype": (good(key=np.ones((B, T, H * DK), np.float16)), "key: expected the dtype of query"),
    "not an array": (good(value=[[1.0]]), "value: expected a numpy.ndarray, received list"),
    "zero heads": (good(q_num_heads=0), "q_num_heads: expected >= 1"),
    "nan scale": (good(scale=float("nan")), "scale: expected a finite float"),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_rule_fires_with_message(name):
    call, message = BROKEN[name]
    with pytest.raises(ValidationError) as info:
        linear_attention(**call)
    assert message in str(info.value), f"{name}: got {info.value}"


def test_validation_error_is_a_value_error():
    """Callers that catch ValueError see it too; nothing escapes as IndexError or a broadcast error."""
    assert issubclass(ValidationError, ValueError)


CARRIED = {
    "decay last dim": ("decay", "shape (2, 3, 2) or (2, 3, 8)", "shape (2, 3, 3)"),
    "beta missing for delta": ("beta", "an input (update_rule 'delta' requires it)", "None"),
    "heads not divisible (inverse)": ("kv_num_heads", "a multiple of q_num_heads = 2", 3),
    "W = 9": ("state_window", "in [0, 8]", 9),
    "not an array": ("value", "a numpy.ndarray", "list"),
}


@pytest.mark.parametrize("name", list(CARRIED))
def test_error_carries_the_broken_input_as_data(name):
    """``input``, ``expected`` and ``received`` are the parts of the message, as data (and survive pickling)."""
    with pytest.raises(ValidationError) as info:
        linear_attention(**BROKEN[name][0])
    err = info.value
    assert (err.input, err.expected, err.received) == CARRIED[name]
    assert str(err) == f"{err.input}: expected {err.expected}, received {err.received}"
    copy = pickle.loads(pickle.dumps(err))
    assert (copy.input, copy.expected, copy.received, str(copy)) == (*CARRIED[name], str(err))

"""The capsule's layout and the property that ties it to the recurrence (docs/spec.md §8-9).

Replaying the first ``k`` captured entries of a request over its initial state gives the state after its first
``k`` tokens, for every ``k`` up to what it captured: here through GatedDeltaNetStateReplay's own descriptor and
backings, against a fresh call over the prefix.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fuzz.model.case import Case
from fuzz.ops.gated_delta_net.strategies import GdnLayout, GdnShape, build_gdn_case, gdn_cases
from oracles.gated_delta_net import gated_delta_net, gated_delta_net_state_replay, replay_descriptor


def prefix_of(case: Case, request: int, tokens: int) -> Case:
    """Request ``request``'s first ``tokens`` tokens alone, as a one-request rank-3 call without capture."""
    d = case.dims()
    start = d.starts[request]
    token_major = {"query", "key", "value", "decay", "beta"}
    inputs = {}
    for name, x in case.inputs.items():
        if name in token_major:
            flat = x.reshape(d.total_tokens, *x.shape[len(d.token_shape):])
            inputs[name] = flat[start:start + tokens]
        elif name == "initial_state":
            inputs[name] = x[request:request + 1]
        elif name in ("a_log", "dt_bias"):
            inputs[name] = x
    return Case(inputs=inputs, attrs={**case.attrs, "state_update_capacity": 0}, op=case.op)


@settings(max_examples=150, deadline=None)
@given(case=gdn_cases(capture=True))
def test_replaying_k_entries_gives_the_state_after_k_tokens(case: Case) -> None:
    d = case.dims()
    _, _, capsule = gated_delta_net(**case.kwargs())
    initial = case.inputs.get("initial_state", np.zeros(d.state_shape, np.float32)).astype(np.float64)
    for request, captured in enumerate(d.captured):
        for kept in range(1, captured + 1):
            metadata = replay_descriptor(d, request, kept, source_offset=request * initial[0].size)
            replayed = gated_delta_net_state_replay(initial.ravel(), capsule.ravel(), np.zeros(initial[0].size),
                                                    metadata)
            prefix = prefix_of(case, request, kept)
            prefix = prefix.with_inputs(initial_state=initial[request:request + 1])
            _, after, _ = gated_delta_net(**prefix.kwargs())
            np.testing.assert_allclose(replayed.reshape(after[0].shape), after[0], rtol=1e-9, atol=1e-9,
                                       err_msg=f"request {request}, {kept} of {captured} entries")


def test_capture_counts_are_clamped_and_the_rest_is_unspecified() -> None:
    case = build_gdn_case(GdnShape(lengths=(3, 3, 3), ragged=False, q_heads=2, group=1, d_k=2, d_v=2),
                          GdnLayout(capacity=4, capture_counts=(-2, 2, 9)), seed=1)
    assert case.dims().captured == (0, 2, 3)
    _, _, capsule = gated_delta_net(**case.kwargs())
    d = case.dims()
    decay = capsule[:, :d.capacity * d.v_heads].reshape(3, d.capacity, d.v_heads)
    assert np.isnan(decay[0]).all() and np.isfinite(decay[1, :2]).all() and np.isnan(decay[1, 2:]).all()
    assert np.isfinite(decay[2, :3]).all() and np.isnan(decay[2, 3:]).all()


@given(active=st.sampled_from((0, 7)))
def test_state_update_active_zero_turns_capture_off(active: int) -> None:
    case = build_gdn_case(GdnShape(lengths=(2, 2), ragged=False, q_heads=1, group=1, d_k=2, d_v=2),
                          GdnLayout(capacity=2, active=active), seed=2)
    _, _, capsule = gated_delta_net(**case.kwargs())
    assert capsule.shape == (2, 2 * (1 + 2 + 2))
    assert (capsule == 0).all() == (active == 0)


def test_no_capacity_gives_an_empty_capsule() -> None:
    case = build_gdn_case(GdnShape(lengths=(2, 2), ragged=False, q_heads=1, group=1, d_k=2, d_v=2), GdnLayout(), 0)
    assert gated_delta_net(**case.kwargs())[2].shape == (2, 0)

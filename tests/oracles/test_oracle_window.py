"""The oracle's window against its second formulation (prefix runs), and the contract's invariants."""

from __future__ import annotations

import numpy as np
import pytest
from support.random_cases import random_case

from oracles import linear_attention, next_past_state, represented_acceptances, slot_for_accepted, window_by_prefix


def window_case(window: int, seq_len: int, index: int, with_past: bool | None = None, dtype=None):
    rng = np.random.default_rng(1000 * window + seq_len)
    return random_case(rng, index, window=window, seq_len=seq_len, with_past=with_past, dtype=dtype)


@pytest.mark.parametrize("window", range(1, 9))
@pytest.mark.parametrize("seq_len", range(1, 11))
def test_window_equals_prefix_oracle(window, seq_len):
    """Every slot equals a W = 0 run over its prefix; T < W leading slots are exact zeros."""
    for index in range(4):  # one case per update rule
        case = window_case(window, seq_len, index)
        _, present = linear_attention(**case.kwargs())
        by_prefix = window_by_prefix(linear_attention, case.inputs, case.attrs)
        np.testing.assert_allclose(present, by_prefix, rtol=1e-12, atol=1e-12, err_msg=case.summary())
        leading = max(window - seq_len, 0)
        assert np.all(present[:leading] == 0.0), case.summary()
        assert np.any(present[leading:] != 0.0) or "past_state" not in case.inputs


@pytest.mark.parametrize("window", [1, 4, 8])
def test_output_and_last_slot_match_w0(window):
    for index in range(8):
        case = window_case(window, 6, index)
        out_w, present = linear_attention(**case.kwargs())
        legacy = case.with_attrs(state_window=0)
        if "past_state" in case.inputs:
            legacy = legacy.with_inputs(past_state=case.inputs["past_state"][window - 1])
        out_0, final = linear_attention(**legacy.kwargs())
        assert np.array_equal(out_w, out_0), case.summary()
        assert np.array_equal(present[window - 1], final), case.summary()


@pytest.mark.parametrize("poison", [np.nan, np.inf, -np.inf, 6.0e4])
@pytest.mark.parametrize("window", [2, 5, 8])
def test_poisoned_past_slots_change_nothing(poison, window):
    for index in range(4):
        case = window_case(window, 3, index, with_past=True)
        past = case.inputs["past_state"].copy()
        past[: window - 1] = poison
        clean = linear_attention(**case.kwargs())
        dirty = linear_attention(**case.with_inputs(past_state=past).kwargs())
        for a, b in zip(clean, dirty, strict=True):
            assert a.tobytes() == b.tobytes(), case.summary()


@pytest.mark.parametrize("window,seq_len", [(1, 1), (4, 2), (4, 4), (4, 7), (8, 8), (8, 3)])
def test_select_and_resume_equals_fresh_run(window, seq_len):
    """Resuming from the slot of ``a`` accepted tokens equals a fresh run over prefix + next tokens."""
    follow_len = 2
    for index in range(4):
        # float64 inputs, so the float64 slot feeds the next call without a rounding step
        whole = window_case(window, seq_len + follow_len, index, with_past=True, dtype=np.float64)
        past = whole.inputs["past_state"]
        sequence = {n: x for n, x in whole.inputs.items() if n != "past_state"}
        draft = {n: x[:, :seq_len] for n, x in sequence.items()}
        follow = {n: x[:, seq_len:] for n, x in sequence.items()}
        _, present = linear_attention(**draft, past_state=past, **whole.attrs)
        for accepted in [0, *represented_acceptances(seq_len, window)]:
            resumed_past = next_past_state(present, past, seq_len, accepted)
            resumed = linear_attention(**follow, past_state=resumed_past, **whole.attrs)
            replayed = {n: np.concatenate([x[:, :accepted], follow[n]], axis=1) for n, x in draft.items()}
            fresh = linear_attention(**replayed, past_state=past, **whole.attrs)
            np.testing.assert_allclose(resumed[0], fresh[0][:, accepted:], rtol=1e-10, atol=1e-12)
            tail = min(window, follow_len)  # slots holding states after the follow tokens, in both runs
            np.testing.assert_allclose(resumed[1][-tail:], fresh[1][-tail:], rtol=1e-10, atol=1e-12)


def test_zero_acceptance_keeps_original_past():
    past = np.arange(24.0).reshape(2, 1, 1, 3, 4)
    assert next_past_state(np.zeros_like(past), past, seq_len=3, accepted=0) is past


@pytest.mark.parametrize("seq_len,window,accepted,slot", [(5, 4, 2, 0), (5, 4, 5, 3), (2, 4, 1, 2), (2, 4, 2, 3)])
def test_slot_for_accepted(seq_len, window, accepted, slot):
    assert slot_for_accepted(seq_len, window, accepted) == slot


def test_unrepresented_acceptance_is_an_error():
    with pytest.raises(ValueError, match="not represented"):
        slot_for_accepted(seq_len=6, window=2, accepted=3)

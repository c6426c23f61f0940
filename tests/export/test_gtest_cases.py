"""``fuzz.export.gtest_cases``: the built-in set covers the correctness plan and the findings, read from the cases'
own data (not their names); each call is what it says (valid, or refused by the contract); select-and-resume's
second call equals one fresh run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fuzz.export.gtest_cases import DEFAULT_ENTRIES, GtestCase, attention, builtin_cases, entry_cases, resumed
from fuzz.export.gtest_expected import expected, matches
from fuzz.model.ops import CAUSAL_CONV, LINEAR_ATTENTION
from oracles.validation import ValidationError

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
BUILTIN = builtin_cases()
ATTENTION = BUILTIN[LINEAR_ATTENTION.name]
CONVOLUTION = BUILTIN[CAUSAL_CONV.name]


def _valid(tests: list[GtestCase]) -> list[GtestCase]:
    return [t for t in tests if t.error is None and not t.pass_through]


def _windowed_calls(tests: list[GtestCase]) -> list:
    return [call for t in _valid(tests) if t.windowed for call in t.calls]


@pytest.mark.parametrize("tests", [ATTENTION, CONVOLUTION], ids=["attention", "convolution"])
def test_windows_one_four_eight_with_short_calls_poison_aliasing_and_fp16(tests):
    calls = _windowed_calls(tests)
    windows = {c.state_window for c in calls}
    assert {1, 4, 8} <= windows
    assert any(c.seq_len < c.state_window and "past_state" not in c.inputs for c in calls), "zero-filled leading slots"
    assert any(c.seq_len < c.state_window and "past_state" in c.inputs for c in calls)
    assert {"nan", "inf"} <= {c.poison for c in calls}
    for c in calls:
        if c.poison:
            assert not np.isfinite(c.inputs["past_state"][: c.state_window - 1]).all() or c.poison == "huge"
            assert np.isfinite(c.inputs["past_state"][c.state_window - 1]).all()
    assert any(c.aliased for c in calls)
    assert any(c.dtype == np.float16 for c in calls)
    assert any(len(t.calls) == 2 and t.windowed for t in tests), "select-and-resume over two calls"


def test_attention_covers_heads_rules_and_gate_layouts_under_a_window():
    dims = [c.dims() for c in _windowed_calls(ATTENTION)]
    assert any(d.q_heads > d.kv_heads for d in dims) and any(d.q_heads < d.kv_heads for d in dims)
    assert any(d.key_heads < d.kv_heads for d in dims)
    assert {d.update_rule for d in dims} == {"linear", "gated", "delta", "gated_delta"}
    gated = [d for d in dims if d.update_rule in ("gated", "gated_delta")]
    assert {d.decay_per_row for d in gated} == {True, False}
    delta = [d for d in dims if d.update_rule in ("delta", "gated_delta")]
    assert {d.beta_shared for d in delta} == {True, False}
    assert any(d.batch > 1 for d in dims)


def test_every_valid_call_is_valid_and_every_refusal_is_refused_by_the_contract():
    for test in ATTENTION + CONVOLUTION:
        for call in test.calls:
            if test.error is None and not test.pass_through:
                call.dims()
            else:
                with pytest.raises(ValidationError):
                    call.dims()


def test_refusals_include_the_findings_that_were_defects():
    refused = {(t.calls[0].attrs.get("kv_num_heads"), tuple(sorted(t.calls[0].inputs))) for t in ATTENTION if t.error}
    assert any(heads == 0 for heads, _ in refused)
    shapes = [t for t in ATTENTION if t.error and t.calls[0].state_window == 0
              and any(name in t.error for name in ("decay", "beta", "past_state"))]
    assert {name for t in shapes for name in ("decay", "beta", "past_state") if name in t.error} == {
        "decay", "beta", "past_state"}
    shared_beta = [c for t in _valid(ATTENTION) for c in t.calls if c.state_window == 0
                   and c.inputs["beta"].shape[2] == 1 and c.attrs["update_rule"] in ("delta", "gated_delta")]
    assert shared_beta
    assert any(t.pass_through and t.calls[0].seq_len == 0 for t in ATTENTION)
    assert any(t.error and t.calls[0].seq_len == 0 and t.windowed for t in ATTENTION)


def test_names_are_unique_within_each_file():
    for tests in (ATTENTION, CONVOLUTION):
        names = [t.name for t in tests]
        assert len(names) == len(set(names))


@pytest.mark.parametrize("op_tests", [ATTENTION, CONVOLUTION], ids=["attention", "convolution"])
def test_the_resumed_call_gives_what_one_fresh_run_gives(op_tests):
    draft, second = next(t.calls for t in op_tests if len(t.calls) == 2)
    window, seq_axis = draft.state_window, draft.op.sequence_axis(draft.attrs)
    accepted = next(a for a in range(1, draft.seq_len + 1)
                    if np.array_equal(second.inputs["past_state"][window - 1],
                                      expected(draft).present_state[a - (draft.seq_len - window) - 1]))
    fresh = {}
    for name, array in draft.inputs.items():
        if name in draft.op.sequence_inputs:
            head = np.take(array, range(accepted), axis=seq_axis)
            fresh[name] = np.concatenate([head, second.inputs[name]], axis=seq_axis)
        else:
            fresh[name] = array
    one_run = draft.with_inputs(**fresh)
    whole = expected(one_run)
    resumed_call = expected(second)
    tail = np.take(whole.output, range(accepted, accepted + second.seq_len), axis=seq_axis)
    assert matches(tail, resumed_call.output, resumed_call.tolerance) is None
    assert matches(whole.present_state[-1], resumed_call.present_state[-1], resumed_call.tolerance) is None


def test_no_slot_stands_for_accepting_nothing():
    with pytest.raises(ValueError, match="no slot"):
        resumed(attention(window=2, seq_len=2), accepted=0, next_tokens=1, seed=0)


def test_the_default_entries_become_tests_of_both_ops():
    tests = entry_cases(CORPUS, DEFAULT_ENTRIES)
    assert sum(len(v) for v in tests.values()) == len(DEFAULT_ENTRIES)
    every = [t for v in tests.values() for t in v]
    assert all(t.origin.startswith("corpus/") and t.name.startswith("Corpus_") for t in every)
    kv_zero = next(t for t in every if "kv-heads-zero" in t.origin)
    assert kv_zero.error == "kv_num_heads"
    assert next(t for t in every if "empty-sequence" in t.origin).pass_through

"""The strategies: valid cases are valid and reach every axis; bad inputs break exactly their rule."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict

import numpy as np
import pytest
from hypothesis import find, given, settings
from support.sampling import sample

import oracles
from fuzz.campaign import profiles
from fuzz.campaign.coverage import buckets
from fuzz.corpus.entry import Entry, from_bytes, read_entry, to_bytes, write_entry
from fuzz.model.case import POISON_KINDS, Case
from fuzz.model.findings import Finding, Kind
from fuzz.ops.linear_attention.bad_inputs import BREAKERS, RULES, break_case, invalid_cases
from fuzz.ops.linear_attention.strategies import (
    Layout,
    Limits,
    Numerics,
    Shape,
    build_case,
    cases,
    head_dims,
    layouts,
    numerics,
    one_of_values,
    resume_cases,
    shapes,
    with_clean_past,
)
from fuzz.ops.linear_attention.testing import TESTING as LINEAR_ATTENTION_TESTING
from oracles.validation import ValidationError

CI = profiles.get("ci")
LIMITS = Limits.ci()




@pytest.fixture(scope="module")
def valid() -> list[Case]:
    return sample(cases(LIMITS), 300)


@pytest.mark.slow
def test_valid_cases_are_valid_finite_and_within_limits(valid: list[Case]) -> None:
    for case in valid:
        d = case.dims()
        assert d.batch <= LIMITS.max_batch and d.seq_len <= LIMITS.max_seq_len
        assert max(d.q_heads, d.kv_heads) <= LIMITS.max_heads and max(d.d_k, d.d_v) <= LIMITS.max_head_dim
        output, state = oracles.linear_attention(**case.kwargs())
        limit = np.finfo(case.dtype).max
        assert np.all(np.abs(output) < limit) and np.all(np.abs(state) < limit), case.summary()


@pytest.mark.slow
def test_valid_cases_reach_every_axis(valid: list[Case]) -> None:
    seen = Counter(label for case in valid for label in buckets(case))
    wanted = [
        *(f"rule: {r}" for r in ("linear", "gated", "delta", "gated_delta")),
        "dtype: float32", "dtype: float16", "W: 0", "W: 1", "W: 8", "T vs W: T < W", "T vs W: T = W",
        "T vs W: T > W", "B: 2", "heads: MHA", "heads: GQA 2", "heads: inverse 2", "n_k: 1 < n_k < H_kv",
        "d_k class: d_k 1-4 (4 rows x 1 groups)", "d_k class: d_k 5-8 (4 rows x 2 groups)",
        "state: past", "state: no past", "scale: absent", "scale: 0.0 (default)", "decay: per key row",
        "decay: per head", "beta: shared", "beta: per head", "values: tiny", "values: large", "keys: normalised",
        "decay regime: strong", "beta regime: one", "beta regime: zero",
    ]
    missing = [w for w in wanted if not seen[w]]
    assert not missing, f"never exercised: {missing}"


@settings(CI, max_examples=40)
@given(shapes(LIMITS), layouts(LIMITS), numerics())
def test_shape_and_layout_name_the_cases_dims(shape: Shape, layout: Layout, num: Numerics) -> None:
    """Every field of ``Shape`` and ``Layout`` is the ``Dims`` field of that name, with the same value
    (``scale`` aside: the attribute as set, not the scale in effect)."""
    dims = build_case(shape, layout, num).dims()
    wanted = {**asdict(shape), **asdict(layout)}
    del wanted["scale"]
    # a per-row decay at d_k = 1 and a shared beta at H_kv = 1 are the per-head shapes: Dims says per-head
    if layout.decay_per_row:
        wanted["decay_per_row"] = shape.d_k > 1
    if layout.beta_shared:
        wanted["beta_shared"] = shape.kv_heads > 1
    assert {name: getattr(dims, name) for name in wanted} == wanted


@pytest.mark.slow
def test_big_limits_reach_head_size_256() -> None:
    big = sample(cases(Limits.big()), 60)
    assert max(max(c.dims().d_k, c.dims().d_v) for c in big) >= 128
    assert find(head_dims(Limits.big()), lambda d: d == 256, settings=settings(CI, max_examples=1000)) == 256
    assert find(head_dims(Limits.big()), lambda d: d > 128 and d % 2, settings=settings(CI, max_examples=1000)) > 128


def test_fp16_tiny_values_include_subnormals(valid: list[Case]) -> None:
    tiny = [c for c in valid if c.dtype == np.float16 and c.notes["magnitude"] == "tiny"]
    assert tiny
    smallest_normal = np.finfo(np.float16).smallest_normal
    assert any(np.any((np.abs(c.inputs["query"]) < smallest_normal) & (c.inputs["query"] != 0)) for c in tiny)


def test_poisoned_cases_poison_only_the_unread_slots() -> None:
    kinds = set()
    for case in sample(LINEAR_ATTENTION_TESTING.poisoned_cases(LIMITS), 40):
        past = case.inputs["past_state"]
        clean = with_clean_past(case).inputs["past_state"]
        assert np.array_equal(past[-1], clean[-1]) and np.all(clean[:-1] == 0)
        kinds.add(case.poison)
        if case.poison in ("nan", "inf"):
            assert not np.any(np.isfinite(past[:-1]))
    assert kinds == set(POISON_KINDS)


def test_short_and_resume_cases() -> None:
    for case in sample(LINEAR_ATTENTION_TESTING.short_cases(LIMITS), 20):
        assert 1 <= case.seq_len < case.state_window and "past_state" in case.inputs
    for case in sample(resume_cases(LIMITS), 20):
        draft = case.notes["draft_len"]
        assert 1 <= draft < case.seq_len <= draft + LIMITS.max_next_tokens and case.state_window >= 1


def test_cases_round_trip_losslessly(valid: list[Case], tmp_path) -> None:
    """Through the one case serialisation, the corpus entry: in a directory and as one archive."""
    for case in valid[:30]:
        entry = Entry(Finding(property="backends-agree", backends=("oracle",), kind=Kind.REFERENCE,
                              signature=case.summary(), report="", case=case))
        assert from_bytes(to_bytes(entry)).finding.case.identical(case)
        assert read_entry(write_entry(tmp_path, entry)).finding.case.identical(case)


def test_every_rule_is_broken_and_nothing_else_is_valid(valid: list[Case]) -> None:
    broken = Counter()
    for i, case in enumerate(valid[:60]):
        for breaker in BREAKERS:
            if breaker.applies(case.dims()):
                bad = break_case(case, breaker, seed=i)
                with pytest.raises(ValidationError):
                    bad.dims()
                broken[bad.notes["broken_rule"]] += 1
    assert set(broken) == set(RULES), f"never broken: {set(RULES) - set(broken)}"


def test_invalid_cases_name_their_rule() -> None:
    for case in sample(invalid_cases(LIMITS), 60):
        assert case.notes["broken_rule"] in RULES
        with pytest.raises(ValidationError):
            case.dims()


def test_limits_reject_nonsense() -> None:
    with pytest.raises(ValueError, match="max_window"):
        Limits(max_window=9)
    with pytest.raises(ValueError, match="dtypes"):
        Limits(dtypes=("bfloat16",))
    with pytest.raises(ValueError, match="max_batch"):
        Limits(max_batch=0)


def test_one_of_values_reuses_one_strategy_per_tuple_and_keeps_types_apart() -> None:
    """The cached ``sampled_from``: one object per tuple, and ``(0, 1)`` is not ``(False, True)``
    (they are equal as keys), so a draw of acceptances never yields a boolean."""
    assert one_of_values((0, 1)) is one_of_values((0, 1))
    assert one_of_values((0, 1)) is not one_of_values((False, True))
    drawn = [find(one_of_values(values), lambda x: True) for values in ((False, True), (0, 1))]
    assert [type(x) for x in drawn] == [bool, int]

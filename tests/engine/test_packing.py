"""Packed cases: several cases of one shape in the batch axis of one call (``fuzz.model.pack``), checked slice by
slice (``fuzz.engine.packing``).

A pack comes apart into its slices and goes back together bit for bit; the oracle's answer to a pack, cut at its
slices, is its answer to each slice (the soundness of judging a pack in one comparison); a known issue affects a
pack exactly when it affects its slices; a failure in one slice is reported as that slice's single case; and a
backend that swaps batch entries is still caught, reported as a call of its own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings
from support.oracle_mutants import OracleMutant, SwapsBatchEntries
from support.sampling import sample

from fuzz.backends import create
from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.unit import run_unit
from fuzz.corpus.known_issues import KNOWN_ISSUES
from fuzz.engine.op_testing import OpTesting, exact_for
from fuzz.engine.properties import PROPERTIES
from fuzz.model.case import Case
from fuzz.model.findings import PropertyFailure
from fuzz.model.ops import CAUSAL_CONV
from fuzz.model.pack import PACK, batch_axis, slice_of, slices
from fuzz.ops.causal_conv.strategies import ConvLimits
from fuzz.ops.causal_conv.testing import TESTING as CAUSAL_CONV_TESTING
from fuzz.ops.linear_attention.strategies import Layout, Limits, Numerics, Shape, build_case
from fuzz.ops.linear_attention.testing import TESTING as LINEAR_ATTENTION_TESTING

TESTINGS = [(LINEAR_ATTENTION_TESTING, Limits.ci()), (CAUSAL_CONV_TESTING, ConvLimits.ci())]
IDS = ["LinearAttention", "CausalConvWithState"]


def _packs(testing: OpTesting, limits: Limits | ConvLimits, n: int) -> list[Case]:
    """Draws of every packing strategy of an op (valid cases, poisoned pasts, short calls)."""
    return [*sample(testing.cases(limits, packs=True), n), *sample(testing.poisoned_cases(limits, packs=True), n),
            *sample(testing.short_cases(limits, packs=True), n)]


def _joined(parts: list[Case]) -> dict[str, np.ndarray]:
    """The slices' inputs side by side again in the batch axis (a shared input from the first)."""
    first = parts[0]
    return {name: array if (axis := batch_axis(first, name)) is None
            else np.concatenate([p.inputs[name] for p in parts], axis=axis)
            for name, array in first.inputs.items()}


@pytest.mark.parametrize(("testing", "limits"), TESTINGS, ids=IDS)
def test_a_pack_comes_apart_into_its_slices_and_back(testing: OpTesting, limits: Limits | ConvLimits) -> None:
    drawn = _packs(testing, limits, 40)
    counts = {slices(case) for case in drawn}
    assert 1 in counts and len(counts) > 2, f"packs of {counts}: single calls and packs of several sizes"
    for case in (c for c in drawn if slices(c) > 1):
        parts = [slice_of(case, i) for i in range(slices(case))]
        joined = _joined(parts)
        assert all(joined[n].tobytes() == x.tobytes() and joined[n].shape == x.shape for n, x in case.inputs.items())
        assert all(slices(p) == 1 and PACK not in p.notes and p.attrs == case.attrs and p.poison == case.poison
                   for p in parts)
        assert parts[0].dims().batch * slices(case) == case.dims().batch
        assert f"packing {slices(case)} cases" in case.summary() and "packing" not in parts[0].summary()
        for name in case.op.shared_inputs:
            assert all(p.inputs[name] is case.inputs[name] for p in parts if name in case.inputs)
    with pytest.raises(IndexError):
        slice_of(drawn[0], slices(drawn[0]))


@pytest.mark.parametrize(("testing", "limits"), TESTINGS, ids=IDS)
def test_the_exact_answer_to_a_pack_is_its_slices_answers(testing: OpTesting, limits: Limits | ConvLimits) -> None:
    """What makes one comparison of a whole pack sound: values and tolerance blocks alike, bit for bit."""
    for case in (c for c in _packs(testing, limits, 30) if slices(c) > 1):
        whole = exact_for(case)
        entries = case.dims().batch // slices(case)
        for index in range(slices(case)):
            alone = exact_for(slice_of(case, index))
            for tensor in ("output", "present_state"):
                axis = 1 if tensor == "present_state" and case.state_window else 0
                cut = [np.take(np.broadcast_to(a, whole.part(tensor)[0].shape),
                               range(index * entries, (index + 1) * entries), axis) for a in whole.part(tensor)]
                own = [np.broadcast_to(a, alone.part(tensor)[0].shape) for a in alone.part(tensor)]
                assert all(np.array_equal(c, o, equal_nan=True) for c, o in zip(cut, own, strict=True)), \
                    f"{tensor} of slice {index}: {case.summary()}"


@pytest.mark.parametrize(("testing", "limits"), TESTINGS, ids=IDS)
def test_a_known_issue_affects_a_pack_as_it_affects_its_slices(testing: OpTesting,
                                                               limits: Limits | ConvLimits) -> None:
    """A backend sits out a pack for a known issue only where it would sit out every slice of it."""
    packs = [c for c in _packs(testing, limits, 40) if slices(c) > 1]
    for issue in (i for i in KNOWN_ISSUES if i.op == testing.op.name):
        for case in packs:
            assert {issue.affects(slice_of(case, i)) for i in range(slices(case))} == {issue.affects(case)}, \
                f"{issue.id}: {case.summary()}"


class WrongOnOneEntry(OracleMutant):
    """Wrong output for the batch entries whose query is ``target``'s, whatever call they are in."""

    name = "wrong-on-one-entry"

    def __init__(self, target: np.ndarray) -> None:
        super().__init__()
        self.target = target.tobytes()

    def mutate(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        output, present = self.oracle.run(case)
        for b, query in enumerate(case.inputs["query"]):
            if query.tobytes() == self.target:
                output[b] += 1.0
        return output, present


class WrongOnNegativeEntries(OracleMutant):
    """Wrong output for every batch entry whose first query value is negative, whatever call it is in."""

    name = "wrong-on-negative-entries"

    def mutate(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        output, present = self.oracle.run(case)
        output[case.inputs["query"][:, 0, 0] < 0] += 1.0
        return output, present


def test_a_failing_entry_is_found_and_shrunk_to_a_single_case(tmp_path: Path) -> None:
    """Through the suite's one driver: a packed failure and a single one are one failure to Hypothesis, which
    shrinks it to one call of one entry (not reported as flaky)."""
    bad = WrongOnNegativeEntries()
    result = run_unit(WorkUnit("prefix-oracle", 0, 0), [create("oracle"), bad], limits=Limits.ci(),
                      settings=settings(), save_dir=tmp_path)
    finding = result.finding
    assert finding is not None and finding.kind == "mismatch" and "flaky" not in finding.report
    assert slices(finding.case) == 1 and finding.case.dims().batch == 1, finding.case.summary()


def _pack_of_four() -> Case:
    return build_case(
        Shape(batch=4, seq_len=3, q_heads=1, kv_heads=1, key_heads=1, d_k=2, d_v=2, state_window=2),
        Layout(update_rule="linear", dtype="float32", decay_per_row=None, beta_shared=None, has_past=True,
               scale=None),
        Numerics(magnitude="unit", keys="raw", decay="moderate", beta="uniform", seed=5), notes={PACK: 4})


def test_a_failing_slice_is_reported_as_its_own_case() -> None:
    pack = _pack_of_four()
    third = slice_of(pack, 2)
    bad = WrongOnOneEntry(third.inputs["query"][0])
    with pytest.raises(PropertyFailure) as failed:
        PROPERTIES["prefix-oracle"].check(pack, [bad.oracle, bad])
    finding = failed.value.finding
    assert finding.case.identical(third), finding.case.summary()
    assert "found as slice 3 of 4 cases packed into one call of batch 4" in finding.report
    assert bad.name in finding.backends and finding.kind == "mismatch"


def test_a_failure_of_the_whole_pack_only_is_reported_as_one_call() -> None:
    """Entries that interact (every slice passes alone): the case is the whole call, without the pack note."""
    pack = _pack_of_four()
    bad = SwapsBatchEntries()
    with pytest.raises(PropertyFailure) as failed:
        PROPERTIES["backends-agree"].check(pack, [bad.oracle, bad])
    finding = failed.value.finding
    assert slices(finding.case) == 1 and finding.case.dims().batch == 4
    assert all(finding.case.inputs[n].tobytes() == x.tobytes() for n, x in pack.inputs.items())
    assert "each of its 4 slices of batch 1 passes alone" in finding.report


class ConvSwapsBatchEntries(SwapsBatchEntries):
    name = "conv-swaps-batch-entries"
    ops = (CAUSAL_CONV.name,)


@pytest.mark.parametrize(("prop", "mutant", "limits"), [
    ("prefix-oracle", SwapsBatchEntries, Limits.ci()), ("backends-agree", SwapsBatchEntries, Limits.ci()),
    ("prefix-oracle", ConvSwapsBatchEntries, ConvLimits.ci()),
], ids=["prefix-oracle", "backends-agree", "conv-prefix-oracle"])
def test_a_backend_that_swaps_batch_entries_is_caught(prop: str, mutant: type[SwapsBatchEntries],
                                                      limits: Limits | ConvLimits, tmp_path: Path) -> None:
    """Through the suite's one driver: found, shrunk, and reported as a case that is not a pack."""
    bad = mutant()
    result = run_unit(WorkUnit(prop, 0, 0), [create("oracle"), bad], limits=limits,
                      settings=settings(settings(), max_examples=200), save_dir=tmp_path)
    finding = result.finding
    assert finding is not None, f"{prop} missed {bad.name}"
    assert finding.kind == "mismatch" and bad.name in finding.backends, finding.report
    assert slices(finding.case) == 1 and finding.case.dims().batch >= 2, finding.case.summary()
    print(f"shrunk: {finding.case.summary()}")

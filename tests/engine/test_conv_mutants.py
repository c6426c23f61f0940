"""Bugs planted in CausalConvWithState's window: each is caught by the window properties, written once for both
ops, and shrunk to a small conv case, reproducible from its saved corpus entry.

As ``test_mutants.py`` does for LinearAttention, every mutant wraps the float64 oracle and breaks one thing an
implementation of the window could get wrong.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings
from support import oracle_mutants
from support.oracle_mutants import OracleMutant

from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.unit import UnitResult, run_unit
from fuzz.corpus.entry import read_entry
from fuzz.engine.properties import PROPERTIES
from fuzz.model.case import Case
from fuzz.model.findings import PropertyFailure
from fuzz.model.ops import CAUSAL_CONV
from fuzz.ops.causal_conv.strategies import ConvLimits
from oracles.causal_conv.convolution import from_canonical, state_after, virtual_sequence

HUNT_EXAMPLES = 300


class ConvMutant(OracleMutant):
    """The conv oracle with one deliberate fault in its window; subclasses override ``mutate``."""

    name = "conv-mutant"
    ops = (CAUSAL_CONV.name,)


class SlotOnePositionShort(ConvMutant):
    """Slot ``j`` holds the state after ``T - W + j`` positions, one short (zeros where that is none)."""

    name = "conv-slot-one-position-short"

    def mutate(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        output, present = self.oracle.run(case)
        d = case.dims()
        if d.state_window:
            virtual = virtual_sequence(d, case.inputs["input"], case.inputs.get("past_state"))
            for j in range(d.state_window):
                positions = d.seq_len - d.state_window + j
                present[j] = from_canonical(d, state_after(d, virtual, positions)) if positions >= 1 else 0.0
        return output, present


class SeedsFromFirstSlot(oracle_mutants.SeedsFromFirstSlot, ConvMutant):
    """Reads ``past_state[0]`` instead of ``past_state[W-1]``."""

    name = "conv-seeds-from-first-slot"


class LeavesLeadingSlots(oracle_mutants.KeepsLeadingSlots, ConvMutant):
    """With ``T < W`` the slots that hold no position of the call keep the caller's past slots."""

    name = "conv-leaves-leading-slots"


SMALL = {"batch": 2, "seq_len": 3, "channels": 2, "state_length": 4}
"""What "shrunk to a small case" means for a conv case (ConvLimits.ci() allows 9 positions, 4 channels)."""

MUTANTS = [
    ("prefix-oracle", SlotOnePositionShort),
    ("poison-invariance", SeedsFromFirstSlot),
    ("output-parity", SeedsFromFirstSlot),
    ("leading-zeros", LeavesLeadingSlots),
]


def _hunt(prop: str, mutant: ConvMutant, tmp_path: Path) -> UnitResult:
    hunt = settings(settings(), max_examples=max(HUNT_EXAMPLES, settings().max_examples))
    return run_unit(WorkUnit(prop, 0, 0), [mutant.oracle, mutant], limits=ConvLimits.ci(), settings=hunt,
                    save_dir=tmp_path)


@pytest.mark.parametrize(("prop", "mutant"), MUTANTS, ids=[f"{p}-{m.name}" for p, m in MUTANTS])
def test_window_property_catches_and_shrinks_a_conv_mutant(prop: str, mutant: type[ConvMutant],
                                                           tmp_path: Path) -> None:
    bad = mutant()
    failure = _hunt(prop, bad, tmp_path).finding
    assert failure is not None, f"{prop} did not catch {bad.name}"
    assert (failure.property, failure.kind) == (prop, "mismatch"), failure.report
    assert bad.name in failure.backends and failure.case.op is CAUSAL_CONV
    dims = failure.case.dims()
    too_big = {k: getattr(dims, k) for k, cap in SMALL.items() if getattr(dims, k) > cap}
    assert not too_big, f"shrunk case still large {too_big}: {failure.case.summary()}"
    print(f"shrunk: {failure.case.summary()}")
    saved = read_entry(tmp_path / prop / failure.id)
    assert saved.finding.case.identical(failure.case) and saved.finding.case.op is CAUSAL_CONV
    with pytest.raises(PropertyFailure) as again:
        PROPERTIES[prop].check(saved.finding.case, [bad.oracle, mutant()])
    assert again.value.finding.signature == failure.signature

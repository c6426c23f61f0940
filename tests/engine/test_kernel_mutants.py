"""Bugs planted in the WGSL kernel where the old default campaign never looked: the swarm finds them.

Each mutant of ``support.kernel_mutants`` computes the right bits everywhere in the old default
slice (``Limits.campaign()``: head sizes 1, 3, 8; at most 2 heads with ``n_k = 1``; ``B <= 2``;
``T <= 9``) and wrong ones in one region outside it. The first test shows the old slice cannot see
it; the second that swarm units (``fuzz.campaign.swarm``), drawn from a fixed sequence of seeds as a
campaign draws them, find it and shrink it to a case in that region. One region, ``B >= 3``, the slice
now reaches with packed cases (``fuzz.model.pack``: several cases in the batch axis of one call), which
find that mutant in it.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import settings
from support.kernel_mutants import MUTANTS, KernelMutant
from support.swarm_hunt import hunt

from fuzz.backends import Backend
from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.unit import UnitResult, run_unit
from fuzz.model.case import Case
from fuzz.model.findings import Kind
from fuzz.model.pack import slices
from fuzz.ops.linear_attention import swarm as la_swarm
from fuzz.ops.linear_attention.strategies import Limits
from kernels.options import WIDE_ROW_GROUPS
from kernels.shader import CHUNK_SIZE, KernelSpec

PROPERTY = "backends-agree"
OLD_SLICE_EXAMPLES = 150


def _tiles(case: Case) -> int:
    dims = case.dims()
    return -(-dims.d_v // KernelSpec.for_dims(dims).columns)


REGION: dict[str, Callable[[Case], bool]] = {
    "grouped-key-heads": lambda c: 1 < c.dims().key_heads < c.dims().kv_heads,
    "gqa-interleaved": lambda c: c.dims().q_heads >= 2 * c.dims().kv_heads and c.dims().kv_heads >= 2,
    "short-reduction": lambda c: c.dims().d_k >= 9,
    "stale-gate": lambda c: c.dims().seq_len >= 17 and c.dims().decay_per_row is False,
    "batch-alias": lambda c: c.dims().batch >= 3,
    "tile-stride": lambda c: _tiles(c) >= 2,
    "chunk-offset": lambda c: c.dims().seq_len > CHUNK_SIZE,
    "staged-rows": lambda c: KernelSpec.for_dims(c.dims(), WIDE_ROW_GROUPS).staged_stores,
    "paired-halves": lambda c: KernelSpec.for_dims(c.dims(), WIDE_ROW_GROUPS).paired_stores,
}
"""Where each mutant is wrong: its minimal case must lie there."""


def _mutant(cls: type[KernelMutant], need: Callable[..., Backend]) -> Backend:
    need("wgpu-dawn")  # skips, with the reason, where Dawn has no adapter
    return cls()


PACKS_REACH = ("batch-alias",)
"""The mutants whose region packed cases of the old slice reach."""


def _old_slice(cls: type[KernelMutant], need: Callable[..., Backend]) -> UnitResult:
    return run_unit(WorkUnit(PROPERTY, 0, 0), [need("oracle"), _mutant(cls, need)], limits=Limits.campaign(),
                    settings=settings(settings(), max_examples=OLD_SLICE_EXAMPLES))


@pytest.mark.slow
@pytest.mark.parametrize("cls", [m for m in MUTANTS if m.patch.name not in PACKS_REACH], ids=lambda m: m.patch.name)
def test_the_old_slice_cannot_see_the_mutant(cls: type[KernelMutant], need) -> None:
    result = _old_slice(cls, need)
    assert result.finding is None, result.finding.report
    assert result.checked > 0


@pytest.mark.slow
@pytest.mark.parametrize("cls", [m for m in MUTANTS if m.patch.name in PACKS_REACH], ids=lambda m: m.patch.name)
def test_packs_of_the_old_slice_find_the_mutant(cls: type[KernelMutant], need) -> None:
    """Found in a packed call, and reported as one call in the region (its slices pass alone)."""
    finding = _old_slice(cls, need).finding
    assert finding is not None and finding.kind == Kind.MISMATCH, "the packed slice missed the mutant"
    assert REGION[cls.patch.name](finding.case) and slices(finding.case) == 1, finding.case.summary()
    print(f"{cls.patch.name}: {finding.case.summary()}")


@pytest.mark.slow
@pytest.mark.parametrize("cls", MUTANTS, ids=lambda m: m.patch.name)
def test_swarm_units_find_and_shrink_the_mutant(cls: type[KernelMutant], need) -> None:
    bad = _mutant(cls, need)
    found = hunt(PROPERTY, [need("oracle"), bad], la_swarm.plan, cls.patch.name)
    finding = found.finding
    assert finding.kind == Kind.MISMATCH and bad.name in finding.backends, finding.report
    assert REGION[cls.patch.name](finding.case), f"minimal case outside {cls.patch.region}: {finding.case.summary()}"
    print(f"{cls.patch.name}: unit {found.number} ({found.plan.describe()}) -> {finding.case.summary()}")

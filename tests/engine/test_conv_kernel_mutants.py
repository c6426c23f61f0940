"""Bugs planted in the CausalConvWithState kernel (``support.conv_kernel_mutants``) are caught through the
kernel's backend by the window properties, and shrunk to a case where the mutant is wrong; the one wrong only
for calls of more than one workgroup of rows is out of the fixed campaign slice's reach and found by the conv
swarm's units, as a campaign draws them."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import settings
from support.conv_kernel_mutants import ConvKernelMutant, OneWorkgroup, SeedAtSlotZero, SlotOneShort
from support.swarm_hunt import hunt

from fuzz.backends import Backend
from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.unit import run_unit
from fuzz.model.case import Case
from fuzz.model.findings import Kind
from fuzz.ops.causal_conv import swarm as conv_swarm
from fuzz.ops.causal_conv.strategies import ConvLimits
from kernels.causal_conv import WORKGROUP_SIZE

CAUGHT_BY = [("prefix-oracle", SlotOneShort), ("poison-invariance", SeedAtSlotZero)]


def _mutant(cls: type[ConvKernelMutant], need: Callable[..., Backend]) -> ConvKernelMutant:
    need("wgpu-conv")  # skips, with the reason, where wgpu-native has no adapter
    return cls()


def _rows(case: Case) -> int:
    dims = case.dims()
    return dims.batch * dims.channels


@pytest.mark.parametrize(("prop", "cls"), CAUGHT_BY, ids=[c.patch.name for _, c in CAUGHT_BY])
def test_a_window_property_catches_the_kernel_mutant(prop: str, cls: type[ConvKernelMutant], need) -> None:
    bad = _mutant(cls, need)
    result = run_unit(WorkUnit(prop, 0, 0), [need("oracle"), bad], limits=ConvLimits.ci(), settings=settings())
    finding = result.finding
    assert finding is not None, f"{prop} did not catch {bad.name}"
    assert finding.kind == Kind.MISMATCH and bad.name in finding.backends, finding.report
    assert finding.case.state_window >= 1, finding.case.summary()
    print(f"{bad.name}: {finding.case.summary()}")


@pytest.mark.slow
def test_swarm_units_find_what_the_fixed_slice_cannot(need) -> None:
    bad = _mutant(OneWorkgroup, need)
    oracle = need("oracle")
    fixed = run_unit(WorkUnit("backends-agree", 0, 0), [oracle, bad], limits=ConvLimits.campaign(),
                     settings=settings(settings(), max_examples=60))
    assert fixed.finding is None and fixed.checked > 0, "the fixed slice reaches more than one workgroup of rows"
    found = hunt("backends-agree", [oracle, bad], conv_swarm.plan, bad.name)
    finding = found.finding
    assert finding.kind == Kind.MISMATCH and bad.name in finding.backends, finding.report
    assert _rows(finding.case) > WORKGROUP_SIZE, f"minimal case outside the region: {finding.case.summary()}"
    print(f"{bad.name}: unit {found.number} ({found.plan.describe()}) -> {finding.case.summary()}")

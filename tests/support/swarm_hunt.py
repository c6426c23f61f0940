"""Swarm units drawn as a campaign draws them, run one after another until one finds something."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest
from hypothesis import settings

from fuzz.backends import Backend
from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.swarm import UnitPlan
from fuzz.campaign.unit import run_unit
from fuzz.model.findings import Finding

UNITS = 40
"""Swarm units tried before giving up (a campaign runs hundreds in its default three minutes)."""
UNIT_EXAMPLES = 25
UNIT_SECONDS = 4.0


@dataclass(frozen=True)
class Found:
    """The first unit that found something: its number and plan, and the finding (shrunk)."""

    number: int
    plan: UnitPlan
    finding: Finding


def hunt(prop: str, backends: Sequence[Backend], plan_of: Callable[[int, int], UnitPlan], what: str) -> Found:
    """Run ``prop``'s units of seeds ``7919 * n + 1`` (plans from ``plan_of(seed, examples)``) on ``backends`` until
    one finds something; fail the test naming ``what`` where none does in ``UNITS``."""
    for number in range(UNITS):
        unit = WorkUnit(prop, number, seed=7919 * number + 1)
        plan = plan_of(unit.seed, UNIT_EXAMPLES)
        result = run_unit(unit, list(backends), limits=plan.limits,
                          settings=settings(settings(), max_examples=plan.examples),
                          budget_at=time.time() + UNIT_SECONDS)
        if result.finding is not None:
            return Found(number, plan, result.finding)
    pytest.fail(f"{what}: not found in {UNITS} swarm units")

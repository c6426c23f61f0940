"""Adding an op is adding a folder and a registry line: a throwaway third op, written to a temporary package and
added to ``fuzz.ops.registry.PACKAGES`` alone, is drawn by the engine's properties, counted in the campaign's
coverage and given its share of the swarm's units, with no other module told of it."""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

import pytest
from support.sampling import sample

from fuzz.campaign import coverage, swarm
from fuzz.campaign.arms import arms_of
from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.worker import plan_for
from fuzz.engine.op_testing import for_limits, for_op
from fuzz.engine.properties import resolve_property
from fuzz.export import op_export
from fuzz.model.ops import CAUSAL_CONV, GATED_DELTA_NET, GATED_DELTA_NET_STATE_REPLAY, LINEAR_ATTENTION
from fuzz.ops import registry

NAME = "ThrowawayOp"
SHARE = 0.2

FILES = {
    "__init__.py": f"""
        from dataclasses import replace

        from fuzz.model.ops import CAUSAL_CONV

        OP = replace(CAUSAL_CONV, name="{NAME}")
    """,
    "strategies.py": """
        from dataclasses import dataclass, replace

        from fuzz.ops.causal_conv.strategies import ConvLimits, conv_cases
        from throwaway_op import OP


        @dataclass(frozen=True)
        class ThrowawayLimits:
            conv: ConvLimits

            def describe(self) -> str:
                return "throwaway " + self.conv.describe()

            @classmethod
            def ci(cls) -> "ThrowawayLimits":
                return cls(ConvLimits.ci())

            default = campaign = big = ci


        def cases(limits, **options):
            return conv_cases(limits.conv, **options).map(lambda case: replace(case, op=OP))
    """,
    "testing.py": """
        from dataclasses import replace

        from fuzz.ops.causal_conv.testing import TESTING as CONV
        from throwaway_op import OP
        from throwaway_op.strategies import ThrowawayLimits, cases

        TESTING = replace(CONV, op=OP, limits_type=ThrowawayLimits, cases=cases)
    """,
    "coverage.py": """
        from fuzz.campaign.bucketing import OpCoverage

        COVERAGE = OpCoverage(axes={"throwaway T": ("short", "long")},
                              buckets=lambda case, chunked: {"throwaway T": "short" if case.seq_len <= 4 else "long"})
    """,
    "swarm.py": f"""
        from fuzz.campaign.swarm import OpSwarm, UnitPlan
        from throwaway_op.strategies import ThrowawayLimits


        def plan(seed, base_examples, **drawn):
            return UnitPlan(tier="throwaway small", limits=ThrowawayLimits.ci(), examples=base_examples)


        SWARM = OpSwarm(share={SHARE}, tiers=(("throwaway small", 1.0),), forms=lambda tier: {{"": 1.0}}, plan=plan,
                        ort_shape=lambda case: True)
    """,
}


@pytest.fixture
def third_op(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The throwaway op's folder, and its line in the registry."""
    folder = tmp_path / "throwaway_op"
    folder.mkdir()
    for name, source in FILES.items():
        (folder / name).write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "PACKAGES", (*registry.PACKAGES, "throwaway_op"))
    return NAME


def test_the_engine_draws_the_new_ops_cases(third_op: str) -> None:
    testing = for_op(third_op)
    limits = testing.preset("ci")
    assert for_limits(limits) is testing
    drawn = sample(resolve_property("backends-agree").strategy(limits), 20)
    assert drawn and all(case.op.name == third_op for case in drawn)


def test_the_campaign_counts_the_new_ops_buckets(third_op: str) -> None:
    assert coverage.universe()["op"] == (LINEAR_ATTENTION.name, CAUSAL_CONV.name, GATED_DELTA_NET.name,
                                         GATED_DELTA_NET_STATE_REPLAY.name, third_op)
    assert coverage.op_axes()[third_op] == ("throwaway T",)
    (case,) = sample(for_op(third_op).cases(for_op(third_op).preset("ci")), 1)
    labels = coverage.buckets(case)
    assert labels[0] == f"op: {third_op}" and labels[1] in {"throwaway T: short", "throwaway T: long"}
    assert coverage.reached_by_op(Counter(labels))[third_op] == (1, 2)
    assert coverage.never_reached(coverage.table(Counter(labels)))[-1].startswith("throwaway T: ")


def test_the_swarm_gives_the_new_op_its_share(third_op: str) -> None:
    ops = (LINEAR_ATTENTION.name, CAUSAL_CONV.name, third_op)
    drawn = Counter(swarm.unit_op(seed, ops) for seed in range(4000))
    assert abs(drawn[third_op] / 4000 - SHARE) < 0.03
    assert {arm.op: arm.weight for arm in arms_of(ops, "swarm") if arm.op == third_op} == {third_op: SHARE}
    units = [plan_for("swarm", WorkUnit("backends-agree", 0, seed), 10, ops) for seed in range(200)]
    assert any(plan.tier == "throwaway small" and plan.limits.describe().startswith("throwaway") for plan in units)


def test_without_its_registry_line_the_op_is_unknown() -> None:
    assert NAME not in registry.op_names() and NAME not in coverage.universe()["op"]
    with pytest.raises(KeyError, match=NAME):
        for_op(NAME)


def test_an_op_without_an_export_part_has_no_upstream_report(third_op: str) -> None:
    (op,) = (op for op in registry.ops() if op.name == third_op)
    with pytest.raises(op_export.NotExported, match=f"{third_op} has no upstream report"):
        op_export.for_op(op)

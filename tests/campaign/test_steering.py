"""Following the yield and the focus: the bandit over the swarm's arms, the steered unit stream, and the plans of
steered units."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import pytest

from fuzz.campaign import swarm
from fuzz.campaign.arms import Arm, arms_of, fits
from fuzz.campaign.campaign import CampaignConfig
from fuzz.campaign.focus import Focus
from fuzz.campaign.schedule import FLOOR, Scheduler
from fuzz.campaign.shard import Shard, WorkUnit, work_units
from fuzz.campaign.steering import FOCUSED_SHARE, Steering
from fuzz.campaign.worker import plan_for
from fuzz.cli import main
from fuzz.engine.properties import PROPERTIES
from fuzz.ops.causal_conv import swarm as conv_swarm
from fuzz.ops.linear_attention import swarm as la_swarm

CONV, LA = "CausalConvWithState", "LinearAttention"
RICH, BARREN = Arm(LA, "rich"), Arm(LA, "barren")


def _run(scheduler: Scheduler, units: int, outcome: dict[str, tuple[float, int]]) -> Counter:
    """Hand out ``units`` units; each arm's unit takes ``outcome[key] = (seconds, new buckets)``."""
    arms = [Arm(LA, key) for key in outcome]
    chosen: Counter = Counter()
    for _ in range(units):
        arm = scheduler.choose(arms)
        chosen[arm.tier] += 1
        seconds, buckets = outcome[arm.tier]
        scheduler.absorb(arm.key, examples=10, seconds=seconds, buckets=buckets, findings=0, ratio=0.0)
    return chosen


def test_an_arm_that_yields_gets_more_units_and_every_arm_keeps_its_floor() -> None:
    scheduler = Scheduler(seed=1)
    chosen = _run(scheduler, 300, {"rich": (1.0, 3), "barren": (1.0, 0)})
    assert chosen["rich"] > 2 * chosen["barren"]
    assert chosen["barren"] >= 0.5 * FLOOR / 2 * 300
    assert min(scheduler.shares([RICH, BARREN])) >= FLOOR / 2


def test_yield_counts_per_second_and_a_costly_arm_that_yields_is_not_starved() -> None:
    scheduler = Scheduler(seed=2)
    chosen = _run(scheduler, 300, {"cheap": (0.5, 0), "costly": (8.0, 4)})
    rows = scheduler.rows()
    assert rows["LinearAttention costly"]["milliseconds"] > rows["LinearAttention cheap"]["milliseconds"]
    assert chosen["costly"] >= FLOOR / 2 * 300 * 0.5


def test_the_first_units_follow_the_prior_until_yield_outweighs_it() -> None:
    scheduler = Scheduler(seed=4)
    assert scheduler.shares([RICH, BARREN], [0.9, 0.1]) == pytest.approx([FLOOR / 2 + 0.7 * 0.9, FLOOR / 2 + 0.7 * 0.1])
    assert scheduler.shares([RICH, BARREN]) == pytest.approx([0.5, 0.5])
    for _ in range(3):
        scheduler.absorb(BARREN.key, examples=10, seconds=2, buckets=0, findings=1, ratio=0.0)
        scheduler.absorb(RICH.key, examples=10, seconds=2, buckets=0, findings=0, ratio=0.0)
    low, high = scheduler.shares([RICH, BARREN], [0.9, 0.1])
    assert high > 0.5 > low


def test_a_climbing_ratio_and_a_new_finding_yield() -> None:
    scheduler = Scheduler(seed=3)
    scheduler.absorb("a", examples=1, seconds=1, buckets=0, findings=0, ratio=0.02)
    scheduler.absorb("a", examples=1, seconds=1, buckets=0, findings=0, ratio=0.6)
    scheduler.absorb("a", examples=1, seconds=1, buckets=0, findings=0, ratio=0.6)
    scheduler.absorb("b", examples=1, seconds=1, buckets=3, findings=1, ratio=0.0)
    rows = scheduler.rows()
    assert rows["a"]["yield"] == pytest.approx(1 + 4 + 1)  # 0.01 -> 0.02, then 0.02 -> 0.6 (capped), a near miss
    assert rows["b"]["yield"] == 2 + 10 and rows["b"]["findings"] == 1 and rows["b"]["buckets"] == 3


def test_every_tier_is_an_arm_and_forms_fit_the_focused_kernels() -> None:
    arms = arms_of([LA, CONV], "swarm")
    assert {a.tier for a in arms} == {t.name for t in (*la_swarm.TIERS, *conv_swarm.CONV_TIERS)}
    chunked = Focus(("wgpu-chunked",), (LA,))
    assert {a.form for a in arms if fits(a, chunked)} == {la_swarm.CHUNKED_FORM}
    assert {a.op for a in arms if fits(a, Focus(("wgpu-conv",), (CONV,)))} == {CONV}
    assert arms_of([LA], "ci") == (Arm(LA, "ci", first=True),)


def _config(**changes: object) -> CampaignConfig:
    windowed = [name for name, p in PROPERTIES.items() if p.applies_to(LA) or p.applies_to(CONV)]
    base = {"properties": windowed, "backends": ["oracle"], "seed": 11, "ops": [LA, CONV],
            "example_budget": 1000}
    return CampaignConfig(**{**base, **changes})  # type: ignore[arg-type]


def _steered(config: CampaignConfig, count: int = 200) -> list[WorkUnit]:
    stream = Steering(config).units(work_units(config.properties, config.seed, config.shard))
    return list(itertools.islice(stream, count))


CONV_FOCUS = Focus(("wgpu-conv",), (CONV,))


def test_a_focus_takes_most_units_and_the_list_repeats_under_a_fixed_budget() -> None:
    units = _steered(_config(focus=CONV_FOCUS))
    assert units == _steered(_config(focus=CONV_FOCUS))
    focused = [u for u in units if u.only is not None]
    assert abs(len(focused) / len(units) - FOCUSED_SHARE) < 0.1
    assert all(u.arm is not None and u.arm.op == CONV and u.only == {"oracle", "wgpu-conv", "wgpu"} for u in focused)
    assert all(u.arm is None for u in units if u.only is None), "unfocused units draw their own plans"
    assert len({u.key for u in units}) == len(units)


def test_half_the_focused_units_of_a_long_change_take_long_calls() -> None:
    long = [u.longest for u in _steered(_config(focus=Focus(("wgpu-conv",), (CONV,), long=True))) if u.only]
    assert 0.35 < sum(long) / len(long) < 0.65
    assert not any(u.longest for u in _steered(_config(focus=CONV_FOCUS)))
    tier = conv_swarm.CONV_TIERS[-1]
    plans = [plan_for("swarm", WorkUnit("backends-agree", 5, seed, arm=Arm(CONV, tier.name), longest=True), 50,
                      (CONV,)) for seed in range(20)]
    assert {(p.limits.min_seq_len, p.limits.max_seq_len) for p in plans} == {swarm.longest_range(tier.seq_lens)}


def test_focused_shards_stay_disjoint() -> None:
    keys = [{u.key for u in _steered(_config(focus=CONV_FOCUS, shard=Shard(i, 3)), 100)} for i in (1, 2, 3)]
    assert not (keys[0] & keys[1]) and not (keys[1] & keys[2]) and not (keys[0] & keys[2])


def test_a_time_budget_follows_the_yield_and_warms_up_on_the_first_tiers() -> None:
    units = _steered(_config(example_budget=None), 60)
    assert all(u.arm is not None for u in units)
    assert all(u.arm.first for u in units if u.number < swarm.WARM_UP_ROUNDS)  # type: ignore[union-attr]
    wide = Focus(("wgpu-wide",), (LA,))
    focused = [u for u in _steered(_config(example_budget=None, focus=wide), 60) if u.only is not None]
    assert focused[0].number < swarm.WARM_UP_ROUNDS and all(u.arm.form == la_swarm.WIDE_FORM for u in focused)  # type: ignore[union-attr]
    assert not any(u.arm is not None for u in _steered(_config(example_budget=None, follow_yield=False), 20))


def test_a_steered_plan_takes_its_arms_op_tier_form_and_backends() -> None:
    names = ("oracle", "wgpu", "wgpu-dawn", "wgpu-chunked", "ort-cpu", "ort-webgpu")
    unit = WorkUnit("backends-agree", 5, 1234, arm=Arm(LA, la_swarm.TIERS[-1].name, la_swarm.CHUNKED_FORM))
    plan = plan_for("swarm", unit, 50, (LA, CONV))
    assert plan.tier == la_swarm.TIERS[-1].name and "wgpu-chunked" not in swarm.sitting_out(plan, names)
    assert len(plan.limits.head_dim_pool) == 1, "a chunked unit keeps to one head size"
    focused = WorkUnit("backends-agree", 5, 1234, arm=Arm(CONV, "conv large"), only=frozenset({"oracle", "ort-cpu"}))
    plan = plan_for("swarm", focused, 50, (LA, CONV))
    assert plan.tier == "conv large" and swarm.sitting_out(plan, names) == set(names) - {"oracle", "ort-cpu"}
    ort = plan_for("swarm", WorkUnit("backends-agree", 5, 99, arm=Arm(LA, "small", la_swarm.LOOP_FORM),
                                     only=frozenset({"oracle", "ort-webgpu"})), 50, (LA,))
    assert set(ort.limits.head_dim_pool) & la_swarm.ORT_SIZES, "a unit ORT takes part in has one of ORT's sizes"


@pytest.mark.slow
def test_a_campaign_focused_on_the_conv_kernel_runs_it_in_most_units(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["campaign", "--focus", "wgpu-conv", "--backends", "oracle,wgpu-conv,wgpu,ort-cpu", "--examples",
                 "60", "--examples-per-unit", "3", "-j", "1", "--seed", "3", "--out", str(out),
                 "--corpus", str(tmp_path / "none")]) == 0
    summary = json.loads((out / "summary.json").read_text())
    arms = summary["per_arm"]
    conv_units = sum(row["units"] for arm, row in arms.items() if arm.startswith(CONV))
    units = sum(row["units"] for row in arms.values())
    assert units == summary["units"] == 20 and conv_units >= 0.6 * units
    assert sum(row["focused"] for row in arms.values()) >= 0.6 * units
    assert summary["backend_calls"]["wgpu-conv"] > summary["backend_calls"]["ort-cpu"]
    assert any(row.get("wgpu-conv") for row in summary["tier_backend_ms"].values())


@pytest.mark.parametrize(
    "form", [la_swarm.LOOP_FORM, la_swarm.CHUNKED_FORM, la_swarm.SPECIALISED_FORM, la_swarm.WIDE_FORM])
def test_a_unit_focused_on_every_kernel_form_runs_its_arms_form_only(form: str) -> None:
    forms = {la_swarm.CHUNKED_FORM: swarm.CHUNKED_RUNTIME, la_swarm.SPECIALISED_FORM: swarm.SPECIALISED_RUNTIME,
             la_swarm.WIDE_FORM: swarm.WIDE_RUNTIME}
    kernels = (*swarm.KERNEL_RUNTIMES, *forms.values())
    names = ("oracle", *kernels, "ort-cpu")
    for seed in range(20):
        tier = la_swarm.TIERS[2].name if form == la_swarm.WIDE_FORM else la_swarm.TIERS[0].name
        unit = WorkUnit("backends-agree", 5, seed, arm=Arm(LA, tier, form), only=frozenset({"oracle", *kernels}))
        running = set(names) - swarm.sitting_out(plan_for("swarm", unit, 50, (LA, CONV)), names)
        assert "ort-cpu" not in running and "oracle" in running
        if form == la_swarm.LOOP_FORM:
            assert running & set(swarm.KERNEL_RUNTIMES) and not running & set(forms.values())
        else:  # its form, with at most the other runtime's token loop beside it (as an unfocused unit of the form)
            assert forms[form] in running and not running & (set(forms.values()) - {forms[form]})


def test_a_focused_unit_runs_the_kernel_on_another_platform_only_where_its_plan_drew_it() -> None:
    """A focus on LinearAttention's kernel names its SwiftShader and browser backends too (they run the same WGSL);
    each is several times slower than lavapipe, so a steered unit takes them in their share of the units, as any
    unit does, not in every focused unit."""
    platforms = tuple(la_swarm.PLATFORMS)
    names = ("oracle", *swarm.KERNEL_RUNTIMES, *platforms)
    runs = []
    for seed in range(200):
        unit = WorkUnit("backends-agree", 5, seed, arm=Arm(LA, la_swarm.TIERS[0].name, la_swarm.LOOP_FORM),
                        only=frozenset(names))
        plan = plan_for("swarm", unit, 50, (LA, CONV))
        running = set(names) - swarm.sitting_out(plan, names)
        assert running & set(platforms) == set(platforms) - plan.sit_out
        runs.append(bool(running & set(platforms)))
    assert 0 < sum(runs) < 0.4 * len(runs)


def test_a_unit_leaves_out_the_other_ops_kernels_on_other_platforms() -> None:
    """Their processes start on first use, and asking whether they run the unit's op would start them: a conv unit
    never takes LinearAttention's kernel in the browser or on SwiftShader, nor the reverse."""
    la_platforms, conv_platforms = set(la_swarm.PLATFORMS), set(conv_swarm.PLATFORMS)
    names = ("oracle", *swarm.KERNEL_RUNTIMES, "wgpu-conv", *la_platforms, *conv_platforms)
    for seed in range(40):
        for op, others in ((LA, conv_platforms), (CONV, la_platforms)):
            unit = WorkUnit("backends-agree", 5, seed, arm=Arm(op, swarm.swarm_of(op).tiers[0][0], ""), only=None)
            assert others <= swarm.sitting_out(plan_for("swarm", unit, 50, (op,)), names)

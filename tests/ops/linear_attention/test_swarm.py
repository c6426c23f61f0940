"""Swarm plans: drawn from the unit seed alone, spread over the whole contract, within their cost caps."""

from __future__ import annotations

import random
from collections import Counter

from fuzz.campaign import swarm
from fuzz.campaign.shard import Shard, work_units
from fuzz.ops.linear_attention import swarm as la_swarm
from fuzz.ops.linear_attention.strategies import Limits

SEEDS = range(1, 2001)


def test_the_same_seed_gives_the_same_plan() -> None:
    units = list(zip(range(40), work_units(["backends-agree", "prefix-oracle"], 7, Shard(1, 1)), strict=False))
    again = list(zip(range(40), work_units(["backends-agree", "prefix-oracle"], 7, Shard(1, 1)), strict=False))
    assert [la_swarm.plan(u.seed, 50) for _, u in units] == [la_swarm.plan(u.seed, 50) for _, u in again]
    assert len({la_swarm.plan(u.seed, 50) for _, u in units}) > 30


def test_plans_reach_what_the_old_slice_never_did() -> None:
    plans = [la_swarm.plan(seed, 50) for seed in SEEDS]
    tiers = Counter(p.tier for p in plans)
    assert set(tiers) == {t.name for t in la_swarm.TIERS}
    assert tiers["small"] > tiers["medium"] > tiers["long"] > tiers["large"] > tiers["long large"]
    layouts = [p.limits.head_layout_pool[0] for p in plans]
    assert any(1 < nk < kv for _, kv, nk in layouts), "no grouped key heads"
    assert any(q >= 2 * kv >= 4 for q, kv, _ in layouts), "no GQA group of 2 with 2 kv heads"
    assert any(kv >= 2 * q and kv >= 6 for q, kv, _ in layouts), "no wide inverse GQA"
    assert max(max(q, kv) for q, kv, _ in layouts) == 32
    sizes = {d for p in plans for d in p.limits.head_dim_pool}
    assert {1, 9, 16, 17, 33, 64, 65, 128, 129, 256} <= sizes
    assert max(p.limits.max_seq_len for p in plans) == 2049 and max(p.limits.max_batch for p in plans) == 4
    assert any(p.limits.rules != Limits().rules for p in plans) and any(p.sit_out for p in plans)
    variants = {swarm.CHUNKED_RUNTIME, swarm.SPECIALISED_RUNTIME, swarm.WIDE_RUNTIME}
    assert any(p.sit_out - set(la_swarm.PLATFORMS) == variants for p in plans), "no unit with every other backend"
    assert any(not p.sit_out & set(la_swarm.PLATFORMS) for p in plans), "no unit on every platform"


def test_a_plan_stays_within_its_tiers_cost_cap() -> None:
    caps = {t.name: t for t in la_swarm.TIERS}
    for seed in SEEDS:
        plan = la_swarm.plan(seed, 50)
        tier, limits = caps[plan.tier], plan.limits
        single_head = max(limits.head_dim_pool) ** 2 * max(limits.head_layout_pool[0][:2])
        state = max(la_swarm.MIN_STATE_ELEMENTS, tier.max_cost // limits.max_seq_len)
        assert limits.max_state_elements == max(state, single_head), plan.describe()
        assert limits.min_seq_len <= limits.max_seq_len


def test_about_a_quarter_of_units_climb_the_error_ratio() -> None:
    share = sum(la_swarm.plan(seed, 50).targeting for seed in range(2000)) / 2000
    assert abs(share - swarm.TARGETING) < 0.05, share


def test_a_unit_that_does_not_climb_never_calls_target(monkeypatch) -> None:
    """``targeting=False`` keeps Hypothesis's target phase (and its per-example bookkeeping) out of the unit."""
    from hypothesis import settings

    from fuzz.backends.oracle import OracleBackend
    from fuzz.campaign import profiles, unit
    from fuzz.campaign.shard import WorkUnit

    calls = Counter()
    monkeypatch.setattr(unit, "target", lambda *args, **kwargs: calls.update(["target"]))
    for targeting in (False, True):
        unit.run_unit(WorkUnit("backends-agree", 0, 0), [OracleBackend(), OracleBackend()], limits=Limits.ci(),
                      settings=settings(profiles.get("ci"), max_examples=10), targeting=targeting)
        assert (calls["target"] > 0) == targeting, (targeting, calls)


def test_profiles_do_not_inherit_the_profile_loaded_when_they_are_built() -> None:
    """Built after ``ci`` (derandomized, no database) was loaded, ``campaign`` still explores from its seeds
    with a database: the order in which a process imports the suite must not change what a campaign does."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("from hypothesis import settings\n"
            "settings.register_profile('loaded-first', settings(derandomize=True, database=None))\n"
            "settings.load_profile('loaded-first')\n"
            "from fuzz.campaign import profiles\n"
            "campaign = profiles.get('campaign')\n"
            "assert not campaign.derandomize and campaign.database is not None, campaign\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])


def test_units_run_the_kernel_on_one_runtime_or_more_never_none() -> None:
    """Both token-loop runtimes in ``BOTH_RUNTIMES`` of the units, the chunked prefill in place of
    wgpu-native's generic token loop in its tier's share of the units (``CHUNKED_UNITS`` unless the tier says) and
    the specialised pipelines in ``SPECIALISED_UNITS`` of the units of the tiers that allow them, and never no
    kernel at all (a GPU's geometry replaces Dawn's: ``test_a_gpus_geometry_replaces_dawns_where_heads_stage``)."""
    plans = [la_swarm.plan(seed, 50) for seed in range(2000)]
    tiers = {t.name: t for t in la_swarm.TIERS}
    replacements = (swarm.CHUNKED_RUNTIME, swarm.SPECIALISED_RUNTIME)
    runtimes = {*swarm.KERNEL_RUNTIMES, *replacements, swarm.WIDE_RUNTIME}
    running = [runtimes - p.sit_out for p in plans]
    assert all(running)
    chunked = [la_swarm.CHUNKED_UNITS if tiers[p.tier].chunked_units is None else tiers[p.tier].chunked_units
               for p in plans]
    specialised = [la_swarm.SPECIALISED_UNITS * tiers[p.tier].specialised for p in plans]
    for replacement, shares in {swarm.CHUNKED_RUNTIME: chunked, swarm.SPECIALISED_RUNTIME: specialised}.items():
        assert abs(sum(replacement in r for r in running) - sum(shares)) / len(plans) < 0.02, replacement
        assert not any({"wgpu", replacement} <= r for r in running), f"{replacement} replaces wgpu's generic loop"
    assert all(swarm.SPECIALISED_RUNTIME in p.sit_out for p in plans if not tiers[p.tier].specialised)
    assert not any(set(replacements) <= r for r in running), "one form of wgpu-native's kernel per unit"
    # two runtimes: Dawn's beside one form of wgpu-native's, or beside a replacement where wgpu's loop sat out anyway
    replaced_share = (sum(chunked) + sum(specialised)) / len(plans)
    two = la_swarm.BOTH_RUNTIMES + (1 - la_swarm.BOTH_RUNTIMES) / 2 * replaced_share
    assert abs(sum(len(r) == 2 for r in running) / len(plans) - two) < 0.05
    one = next(p for p in plans if "wgpu" in p.sit_out and "wgpu-dawn" not in p.sit_out)
    assert swarm.sitting_out(one, ("oracle", "wgpu", "wgpu-dawn")) >= {"wgpu"}
    assert "wgpu" not in swarm.sitting_out(one, ("oracle", "wgpu")), "the only kernel runtime of a campaign sat out"


def test_a_gpus_geometry_replaces_dawns_where_heads_stage() -> None:
    """``wgpu-wide`` runs only in units whose head sizes take the staged checkpoint stores at 32 row
    groups (``d > 64``), in ``WIDE_UNITS`` of those, and always in place of Dawn's default geometry."""
    plans = [la_swarm.plan(seed, 50) for seed in range(4000)]
    staging = [p for p in plans if max(p.limits.head_dim_pool) > 64]
    wide = [p for p in plans if swarm.WIDE_RUNTIME not in p.sit_out]
    assert wide and all(max(p.limits.head_dim_pool) > 64 for p in wide)
    assert all("wgpu-dawn" in p.sit_out for p in wide)
    assert abs(len(wide) / len(staging) - la_swarm.WIDE_UNITS) < 0.04


def test_other_builds_join_a_share_of_the_slow_units():
    """ort-node, ort-webgpu-builtin and ort-web take part only in units where ort-webgpu does (at ORT's head
    sizes), each in some of them and fewer than all: they cost a share of the campaign, not every unit."""
    plans = [la_swarm.plan(seed, 10) for seed in range(600)]
    slow = [p for p in plans if swarm.SLOW_BACKENDS[0] not in p.sit_out]
    for build in swarm.WORKER_BUILD_SHARES:
        joined = [p for p in plans if build not in p.sit_out]
        assert all(p in slow for p in joined), build
        assert 0 < len(joined) < len(slow), (build, len(joined), len(slow))


def test_the_issues_of_the_worker_process_builds_in_play_count_as_shrunk():
    """A campaign with ort-web does not shrink ORT Web's documented crash again (a browser per example)."""
    from fuzz.corpus.shrunk import preshrunk

    assert "ort-web-kv-heads-zero" in preshrunk(("oracle", "ort-web"))
    assert not any(i.startswith("ort-webgpu-") for i in preshrunk(("ort-webgpu", "ort-web")))
    assert preshrunk(("oracle", "ort-webgpu")) == set()


def test_the_ort_builds_check_only_their_shared_shapes_while_the_unit_draws_every_size():
    """A unit ORT takes part in has one of ORT's head sizes for its tier in its pool (and often a size of the
    whole tier beside it, for the kernels); the ORT builds check only the cases at ORT's sizes, every other
    backend every case. So ORT's shaders repeat across units while the kernels keep the swarm's variety."""
    from hypothesis import settings

    from fuzz.campaign import profiles, unit
    from fuzz.campaign.shard import WorkUnit
    from tests.support.fakes import LinearAttentionOracle

    plans = [la_swarm.plan(seed, 10) for seed in range(600)]
    ort_units = [p for p in plans if swarm.SLOW_BACKENDS[0] not in p.sit_out]
    assert ort_units and all(set(p.limits.head_dim_pool) & set(la_swarm.ORT_HEAD_SIZES[p.tier]) for p in ort_units)
    assert any(set(p.limits.head_dim_pool) - la_swarm.ORT_SIZES for p in ort_units), "ORT units never draw other sizes"

    class Recording(LinearAttentionOracle):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name, self.sizes = name, []

        def run(self, case):
            dims = case.dims()
            self.sizes.append((dims.d_k, dims.d_v))
            return super().run(case)

    mixed = next(p for p in ort_units if p.tier == "small" and len(p.limits.head_dim_pool) == 2
                 and not set(p.limits.head_dim_pool) <= la_swarm.ORT_SIZES)
    ort, other = Recording("ort-webgpu"), Recording("wgpu")
    unit.run_unit(WorkUnit("backends-agree", 0, 3), [ort, other], limits=mixed.limits,
                  settings=settings(profiles.get("ci"), max_examples=60), takes_part=swarm.takes_part)
    assert ort.sizes and all(dk in la_swarm.ORT_SIZES and dv in la_swarm.ORT_SIZES for dk, dv in ort.sizes)
    assert any(dk not in la_swarm.ORT_SIZES or dv not in la_swarm.ORT_SIZES for dk, dv in other.sizes), other.sizes


def test_units_of_the_chunked_prefill_or_specialised_pipelines_keep_to_one_size_and_dtype():
    """Their pipelines compile slowest (chunked) or per call shape (specialised): such a unit draws one head size
    and one dtype, so it compiles one or two of them; the other units keep pools of two sizes and both dtypes."""
    plans = [la_swarm.plan(seed, 10) for seed in range(2000)]
    costly = [p for p in plans if {swarm.CHUNKED_RUNTIME, swarm.SPECIALISED_RUNTIME} - p.sit_out]
    assert costly and all(len(p.limits.head_dim_pool) == 1 and len(p.limits.dtypes) == 1 for p in costly)
    assert all(p.limits.max_head_dim == p.limits.head_dim_pool[0] for p in costly)
    rest = [p for p in plans if p not in costly]
    assert any(len(p.limits.head_dim_pool) == 2 for p in rest) and any(len(p.limits.dtypes) == 2 for p in rest)
    assert {p.limits.head_dim_pool[0] for p in costly if swarm.CHUNKED_RUNTIME not in p.sit_out} >= {64, 128, 256}


def test_only_a_campaigns_first_worker_shrinks_a_documented_crash():
    """Shrinking a crash costs a fresh crash-isolated process per example: the first worker shrinks each documented
    crash of the in-process builds once (so the campaign re-finds it), the others count it as shrunk from the start."""
    from fuzz.corpus.shrunk import preshrunk, shrunk_by_the_first_worker

    names = ("oracle", "ort-webgpu", "wgpu")
    assert shrunk_by_the_first_worker(names, 0) == set()
    later = shrunk_by_the_first_worker(names, 1)
    assert {"ort-webgpu-kv-heads-zero", "ort-webgpu-empty-sequence"} <= later
    assert "ort-webgpu-shared-beta" not in later and "ort-webgpu-unvalidated-shapes" not in later
    assert preshrunk(names) == set()


def test_inverse_gqa_often_keeps_two_or_more_query_heads() -> None:
    layouts = [la_swarm.head_layout(random.Random(seed), 8) for seed in range(4000)]
    inverse = [(q, kv) for q, kv, _ in layouts if kv > q]
    grouped = sum(q >= 2 for q, _ in inverse)
    assert grouped / len(layouts) > 0.09, "a query head repeated over a group of kv heads is drawn too rarely"


def test_other_platforms_join_their_share_of_the_units_without_changing_the_other_draws(monkeypatch) -> None:
    """The kernel on SwiftShader checks about its share of LinearAttention's units, and the draw, from a stream of
    its own, leaves every other part of a seed's plan as it was without it."""
    plans = [la_swarm.plan(seed, 10) for seed in range(800)]
    for platform, share in la_swarm.PLATFORMS.items():
        joined = sum(platform not in p.sit_out for p in plans)
        assert abs(joined / len(plans) - share) < 0.05, (platform, joined)
    platforms = frozenset(la_swarm.PLATFORMS)
    monkeypatch.setattr(la_swarm, "PLATFORMS", {})
    without = [la_swarm.plan(seed, 10) for seed in range(800)]
    assert [p.sit_out for p in without] == [p.sit_out - platforms for p in plans]
    assert [p.limits for p in without] == [p.limits for p in plans]

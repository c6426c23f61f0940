"""GatedDeltaNet's and its replay's swarm: their plans within their tiers, and their share of a campaign's units
(about 15% together), which leaves the windowed ops' plans as they were but for that share."""

from __future__ import annotations

import itertools
from collections import Counter

from fuzz.campaign import swarm
from fuzz.campaign.shard import Shard, takes_turn, work_units
from fuzz.engine.properties import PROPERTIES, resolve_property
from fuzz.model.ops import GATED_DELTA_NET, GATED_DELTA_NET_STATE_REPLAY
from fuzz.ops.causal_conv import swarm as conv_swarm
from fuzz.ops.gated_delta_net import swarm as gdn_swarm
from fuzz.ops.gated_delta_net.strategies import GdnLimits
from fuzz.ops.registry import op_names
from fuzz.ops.state_replay import swarm as replay_swarm
from fuzz.ops.state_replay.strategies import ReplayLimits

SEEDS = range(1, 2001)
NEW = (GATED_DELTA_NET.name, GATED_DELTA_NET_STATE_REPLAY.name)


def test_plans_reach_every_tier_within_its_caps_and_leave_out_at_most_one_runtime() -> None:
    plans = [gdn_swarm.plan(seed, 50) for seed in SEEDS]
    assert {p.tier for p in plans} == {t.name for t in gdn_swarm.GDN_TIERS}
    assert all(isinstance(p.limits, GdnLimits) and p.limits.max_d <= 128 for p in plans)
    assert all(len(p.sit_out & set(gdn_swarm.GDN_RUNTIMES)) <= 1 for p in plans)
    assert abs(sum(not p.sit_out for p in plans) / len(plans) - gdn_swarm.BOTH_RUNTIMES) < 0.04
    replays = [replay_swarm.plan(seed, 50) for seed in SEEDS]
    assert {p.tier for p in replays} == {t.name for t in replay_swarm.REPLAY_TIERS}
    assert all(isinstance(p.limits, ReplayLimits) and p.limits.call.dtypes == ("float32",) for p in replays)
    assert gdn_swarm.plan(7, 50) == gdn_swarm.plan(7, 50)


def test_the_new_ops_take_about_fifteen_percent_of_a_default_campaigns_units() -> None:
    ops, properties = op_names(), list(PROPERTIES)
    units = list(zip(range(4000), work_units(properties, 3, Shard(), swarm.turns(properties, ops)), strict=False))
    drawn = Counter()
    for _, unit in units:
        candidates = tuple(op for op in ops if resolve_property(unit.property).applies_to(op))
        drawn[swarm.unit_op(unit.seed, candidates)] += 1
    new = sum(drawn[op] for op in NEW) / len(units)
    assert 0.13 < new < 0.18, drawn
    assert drawn[GATED_DELTA_NET.name] > drawn[GATED_DELTA_NET_STATE_REPLAY.name]


def test_a_property_of_the_new_ops_alone_takes_its_share_of_the_rounds_evenly() -> None:
    turns = swarm.turns(list(PROPERTIES), op_names())
    assert turns["backends-agree"] == turns["error-parity"] == turns["hybrid-block"] == 1.0
    share = turns["gdn-backends-agree"]
    assert 0 < share < 1 and turns["replay-agree"] < share
    taken = [n for n in range(200) if takes_turn(share, n)]
    assert taken[0] == 0 and abs(len(taken) - 200 * share) <= 1
    assert max(b - a for a, b in itertools.pairwise(taken)) <= int(1 / share) + 1
    assert swarm.turns(["gdn-resume"], op_names()) == {"gdn-resume": 1.0}  # a campaign of them alone


def test_a_conv_unit_keeps_its_op_and_plan_beside_the_new_ops() -> None:
    """The new ops' shares come after the conv's in the draw: a unit that tested the conv still does."""
    for seed in SEEDS:
        if swarm.unit_op(seed, ("LinearAttention", "CausalConvWithState")) == "CausalConvWithState":
            assert swarm.unit_op(seed, op_names()) == "CausalConvWithState"
    assert conv_swarm.CONV_UNITS + gdn_swarm.SHARED_UNITS + replay_swarm.SHARED_UNITS < 1

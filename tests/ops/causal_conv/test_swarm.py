"""Swarm units of CausalConvWithState: which op a unit tests, from its seed alone, and conv plans within their caps."""

from __future__ import annotations

from collections import Counter

from fuzz.campaign import swarm
from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.worker import plan_for
from fuzz.ops.causal_conv import swarm as conv_swarm
from fuzz.ops.causal_conv.strategies import ConvLimits
from fuzz.ops.linear_attention import swarm as la_swarm
from fuzz.ops.linear_attention.strategies import Limits

BOTH = ("LinearAttention", "CausalConvWithState")
SEEDS = range(1, 2001)


def test_the_op_is_drawn_from_the_seed_alone_and_keeps_linear_attentions_plans() -> None:
    ops = [swarm.unit_op(seed, BOTH) for seed in SEEDS]
    assert ops == [swarm.unit_op(seed, BOTH) for seed in SEEDS]
    assert abs(ops.count("CausalConvWithState") / len(ops) - conv_swarm.CONV_UNITS) < 0.04
    assert {swarm.unit_op(seed, ("LinearAttention",)) for seed in SEEDS} == {"LinearAttention"}
    for seed in (s for s, op in zip(SEEDS, ops, strict=True) if op == "LinearAttention"):
        unit = WorkUnit("backends-agree", 5, seed)
        assert plan_for("swarm", unit, 50, BOTH) == la_swarm.plan(seed, 50)  # the plan it always drew


def test_conv_plans_reach_the_contract_within_their_caps() -> None:
    plans = [conv_swarm.plan(seed, 50) for seed in SEEDS]
    assert {p.tier for p in plans} == {t.name for t in conv_swarm.CONV_TIERS}
    limits = [p.limits for p in plans]
    assert all(isinstance(lim, ConvLimits) and lim.max_elements <= 1 << 22 for lim in limits)
    assert {k for lim in limits for k in lim.kernel_sizes} == set(conv_swarm.KERNEL_DRAWS)
    assert any(lim.ndims == (1, 2, 3) for lim in limits) and any(lim.channels_last == (True,) for lim in limits)
    assert max(lim.max_channels for lim in limits) == 8192 and max(lim.max_seq_len for lim in limits) == 2049
    long = [p for p in plans if p.tier == "conv long"]
    assert long and all(p.examples < 50 for p in long) and all(p.examples == 50 for p in plans if p not in long)
    assert Counter(lim.max_dilation for lim in limits).keys() == {1, 2, 3, 4}
    assert all(p.describe().startswith(f"{p.tier}: CausalConvWithState") for p in plans[:20])


def test_the_device_chain_and_fixed_limits_choose_an_op_each_unit_can_test() -> None:
    chains = {type(plan_for("swarm", WorkUnit("device-chain", number, seed), 50, BOTH).limits)
              for number, seed in enumerate(SEEDS[:40])}
    assert chains == {Limits, ConvLimits}  # both kernels run device-resident chains
    only_la = plan_for("swarm", WorkUnit("device-chain", 0, 3), 50, ("LinearAttention",))
    assert isinstance(only_la.limits, Limits)
    fixed = [plan_for("ci", WorkUnit("backends-agree", number, 7), 50, BOTH).limits for number in range(4)]
    assert [type(lim) for lim in fixed] == [Limits, ConvLimits, Limits, ConvLimits]


def test_conv_units_run_the_conv_kernel_on_both_runtimes() -> None:
    """The conv kernel's backends on wgpu-native and Dawn take part in every conv unit (its calls are cheap), and
    so do LinearAttention's default kernels, its partners in the hybrid block; its variants sit out."""
    names = ("oracle", "wgpu", "wgpu-dawn", "wgpu-chunked", "wgpu-specialised", "wgpu-wide", "wgpu-conv",
             "wgpu-conv-dawn", "ort-webgpu")
    conv_seeds = [s for s in SEEDS if swarm.unit_op(s, BOTH) == "CausalConvWithState"]
    for seed in conv_seeds:
        plan = plan_for("swarm", WorkUnit("prefix-oracle", 5, seed), 50, BOTH)
        assert isinstance(plan.limits, ConvLimits)
        out = swarm.sitting_out(plan, names)
        assert {"wgpu-chunked", "wgpu-specialised", "wgpu-wide"} <= out
        assert not out & {"oracle", "wgpu", "wgpu-dawn", "wgpu-conv", "wgpu-conv-dawn"}


def test_the_ort_builds_join_conv_units_by_the_cheap_units_shares() -> None:
    """ORT's WebGPU EP sits out ``SIT_OUT[True]`` of the conv units and the other builds join a share of the rest,
    as in cheap LinearAttention units: each compiles its own shaders per conv variant on a software adapter."""
    plans = [conv_swarm.plan(seed, 10) for seed in range(1000)]
    slow = [p for p in plans if swarm.SLOW_BACKENDS[0] not in p.sit_out]
    assert abs(len(slow) / len(plans) - (1 - swarm.SIT_OUT[True])) < 0.05, len(slow)
    for build in swarm.WORKER_BUILD_SHARES:
        joined = [p for p in plans if build not in p.sit_out]
        assert all(p in slow for p in joined) and 0 < len(joined) < len(slow), build


def test_the_conv_kernel_on_other_platforms_joins_its_share_of_the_conv_units() -> None:
    """The conv kernel on SwiftShader takes part in about its share of the conv units (its calls cost a few times
    lavapipe's), while the conv kernel on lavapipe takes part in every one."""
    plans = [conv_swarm.plan(seed, 10) for seed in range(800)]
    for platform, share in conv_swarm.PLATFORMS.items():
        joined = sum(platform not in p.sit_out for p in plans)
        assert abs(joined / len(plans) - share) < 0.05, (platform, joined)
    assert not any({"wgpu-conv", "wgpu-conv-dawn"} & p.sit_out for p in plans)

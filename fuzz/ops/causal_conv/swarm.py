"""Swarm plans of CausalConvWithState units.

A unit's op is drawn from its seed (``fuzz.campaign.swarm.unit_op``): ``CONV_UNITS`` of the units whose property
applies to both ops test the convolution (from their own random stream, so a LinearAttention unit's plan is the one
``fuzz.ops.linear_attention.swarm.plan`` always drew for its seed). A conv unit then draws its own slice of the
conv contract (``plan``), as LinearAttention's units do (``fuzz.campaign.swarm``: swarm testing, Groce et al.):

- a size tier: small (channels up to 16, ``T`` up to 16), medium (up to 256 channels, ``T`` up to 32),
  large (up to 2048 channels, as the hybrid models' convolutions have, ``T`` up to 64) or long (up to 8192
  channels, ``T`` to 2049, few examples a unit), capped by the elements of the virtual sequence
  ``B * C * (L + T)``;
- which ``ndim`` (1 mostly: 2 and 3 run on the oracle alone), which channel layouts, one or two causal
  kernel sizes (4, the models' size, most often), the largest dilation, which activations, dtypes and
  whether a bias is drawn;
- whether the WebGPU builds of ORT take part: by the shares of a cheap LinearAttention unit (``SIT_OUT``,
  ``WORKER_BUILD_SHARES``), since each compiles a shader per variant of the conv's attributes on a software adapter;
- whether the conv kernel on other platforms than lavapipe takes part (``PLATFORMS``: SwiftShader, a browser).

The conv kernel's backends on both WebGPU implementations on lavapipe take part in every conv unit. Of LinearAttention's
kernel, which takes part only in the hybrid block (the convolution's output through LinearAttention), a conv
unit runs the default forms on both implementations and leaves out the variants a software adapter runs in
its place (``CONV_SIT_OUT``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from fuzz.campaign.swarm import (
    CHUNKED_RUNTIME,
    FEW_CHUNKS,
    HUNDREDS_OF_CHUNKS,
    SIT_OUT,
    SLOW_BACKENDS,
    SPECIALISED_RUNTIME,
    TARGETING,
    TENS_OF_CHUNKS,
    UNIT_SECONDS,
    WIDE_RUNTIME,
    OpSwarm,
    UnitPlan,
    longest_range,
    other_builds_out,
    other_platforms_out,
    subset,
)
from fuzz.ops.causal_conv.strategies import KERNEL_SIZES, ConvLimits
from oracles.causal_conv import ACTIVATIONS

CONV_UNITS = 0.3
"""The share of swarm units that test CausalConvWithState where their property applies to both ops: its
cases are cheap (a call costs a fraction of a LinearAttention call of the same tier), so it takes fewer units
than LinearAttention for about as many cases."""

PLATFORMS = {"wgpu-conv-swiftshader": 0.1, "wgpu-conv-browser": 0.05}
"""The conv kernel on other WebGPU platforms than lavapipe, each with the share of the conv units it joins (as
LinearAttention's kernel does, ``fuzz.ops.linear_attention.swarm.PLATFORMS``)."""


@dataclass(frozen=True)
class ConvTier:
    """A size class of conv units."""

    name: str
    weight: float
    max_channels: int
    seq_lens: tuple[tuple[int, int], ...]
    """``(min T, max T)`` ranges a unit draws one of."""
    max_elements: int
    examples: int | None = None
    """Most examples a unit draws (None: the campaign's count per unit), as ``fuzz.campaign.swarm.Tier``'s."""


CONV_TIERS = (
    ConvTier("conv small", 0.6, max_channels=16, seq_lens=((1, 8), (1, 8), (1, 16)), max_elements=1 << 11),
    ConvTier("conv medium", 0.3, max_channels=256, seq_lens=((1, 8), (1, 16), (9, 32)), max_elements=1 << 14),
    ConvTier("conv large", 0.1, max_channels=2048, seq_lens=((1, 8), (17, 64)), max_elements=1 << 16),
    ConvTier("conv long", 0.15, max_channels=8192, seq_lens=(FEW_CHUNKS, TENS_OF_CHUNKS, HUNDREDS_OF_CHUNKS),
             max_elements=1 << 22, examples=6),
)
"""The conv tiers, as data. ``conv long`` convolves prompts of the lengths LinearAttention's long tiers prefill
(to 2049 tokens) at a hybrid layer's channels (thousands: 2047 at 2049 tokens, 8192 to 509), capped where a call
of the float64 oracle and of the tolerance model costs about a second on a software adapter
(``fuzz.campaign.swarm.LONG_CALLS``)."""

CONV_SIT_OUT = frozenset({CHUNKED_RUNTIME, SPECIALISED_RUNTIME, WIDE_RUNTIME})
"""The LinearAttention kernel's variants, which a conv unit leaves out: in the hybrid block they would add
pairs that test their own forms of LinearAttention (which its own units do) at several times the cost."""

KERNEL_DRAWS = (*KERNEL_SIZES, 4, 4, 4, 2, 3)
"""Causal kernel sizes as drawn (repeats as weights): 4, the size of the hybrid models' convolutions, most."""


def plan(seed: int, base_examples: int, *, warming_up: bool = False, tier_name: str | None = None,
         form: str | None = None, only: frozenset[str] | None = None, longest: bool = False) -> UnitPlan:
    """The conv plan of the unit whose seed is ``seed`` (deterministic); the first rounds keep to the small tier.
    A unit the campaign steers is given its tier (``tier_name``), the backends it runs (``only``) and, where the
    change shows at long calls, the tier's longest ``T`` range (``longest``). The conv's kernel has one form, so
    ``form`` (None or ``""``) draws nothing."""
    rng = random.Random(seed)
    tier = CONV_TIERS[0] if warming_up else rng.choices(CONV_TIERS, weights=[t.weight for t in CONV_TIERS])[0]
    if tier_name is not None:
        tier = next(t for t in CONV_TIERS if t.name == tier_name)
    min_t, max_t = longest_range(tier.seq_lens) if longest else rng.choice(tier.seq_lens)
    kernels = tuple(sorted({rng.choice(KERNEL_DRAWS) for _ in range(rng.choice((1, 2)))}))
    limits = ConvLimits(
        max_batch=rng.choice((1, 2, 3, 4)), min_seq_len=min_t, max_seq_len=max_t,
        max_channels=rng.choice((tier.max_channels, max(1, tier.max_channels // 8))), kernel_sizes=kernels,
        max_dilation=rng.choice((1, 1, 2, 3, 4)), max_next_tokens=rng.choice((1, 2, 3, 4)),
        ndims=(1,) if rng.random() < 0.8 else (1, 2, 3), channels_last=subset(rng, (False, True), keep_all=0.5),
        activations=subset(rng, ACTIVATIONS, keep_all=0.5),
        dtypes=rng.choice((("float32", "float16"), ("float32",), ("float16",))),
        biases=subset(rng, (False, True), keep_all=0.5), max_spatial=rng.choice((1, 2, 3)),
        max_elements=tier.max_elements,
    )
    targeting = rng.random() < TARGETING
    slow_out = frozenset(b for b in SLOW_BACKENDS if rng.random() < SIT_OUT[True])
    sit_out = CONV_SIT_OUT | slow_out | other_builds_out(rng, slow_unit=not slow_out)
    sit_out |= other_platforms_out(seed, PLATFORMS)
    return UnitPlan(tier=tier.name, limits=limits, examples=min(base_examples, tier.examples or base_examples),
                    sit_out=sit_out, seconds=UNIT_SECONDS, targeting=targeting, only=only)


SWARM = OpSwarm(share=CONV_UNITS, tiers=tuple((t.name, t.weight) for t in CONV_TIERS), forms=lambda name: {"": 1.0},
                plan=plan, ort_shape=lambda case: True, platforms=tuple(PLATFORMS))
"""CausalConvWithState's part of the swarm; the ORT builds check every conv case."""

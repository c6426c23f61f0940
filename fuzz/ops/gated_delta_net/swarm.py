"""Swarm plans of GatedDeltaNet units, and the op's share of a campaign.

The properties that apply to GatedDeltaNet alone (``gdn-backends-agree``, ``gdn-resume``, ``gdn-decoder-chain``,
``gdn-aliasing``) take ``OWN_UNITS`` of a campaign's units together, and the properties that apply to every op
(``error-parity``) give it ``SHARED_UNITS`` of theirs (``fuzz.campaign.swarm.turns``, ``unit_op``). With the replay's
shares, the two ops take about 15% of the units: enough for hundreds of their cheap cases in a default campaign, while
the windowed ops, whose kernels have many more forms and long tiers, keep the rest (docs/campaign.md#swarm-shares).

A unit draws its own slice of the contract (swarm testing, ``fuzz.campaign.swarm``): a size tier (small: the requests
and heads of the oracle's own tests; medium: requests past the largest capacity; heads: the head sizes models use, 64 to
128, few examples), the dtypes, and which of the two runtimes of the suite's kernels take part (both in
``BOTH_RUNTIMES`` of the units).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from fuzz.campaign.swarm import TARGETING, UNIT_SECONDS, OpSwarm, UnitPlan, longest_range
from fuzz.ops.gated_delta_net.strategies import DTYPES, GdnLimits

OWN_UNITS = 0.10
SHARED_UNITS = 0.10

GDN_RUNTIMES = ("wgpu-gdn", "wgpu-gdn-dawn")
"""The suite's GatedDeltaNet kernels on wgpu-native and on Dawn."""

BOTH_RUNTIMES = 0.4
"""The share of units in which both runtimes take part (the others: one of them): a compiler difference shows only
where both run, a planted kernel bug on either."""


@dataclass(frozen=True)
class GdnTier:
    """A size class of GatedDeltaNet units: its limits, and ``T`` ranges a unit draws one of."""

    name: str
    weight: float
    limits: GdnLimits
    seq_lens: tuple[tuple[int, int], ...]
    examples: int | None = None


GDN_TIERS = (
    GdnTier("gdn small", 0.65, GdnLimits(max_batch=3, max_heads=3, max_group=3, max_d=8), ((1, 4), (1, 9))),
    GdnTier("gdn medium", 0.3, GdnLimits(max_batch=4, max_heads=4, max_group=4, max_d=32), ((1, 9), (9, 32))),
    GdnTier("gdn heads", 0.05, GdnLimits(max_batch=2, max_heads=2, max_group=2, min_d=64, max_d=128),
            ((1, 9),), examples=4),
)


def runtimes_out(rng: random.Random, runtimes: tuple[str, str]) -> frozenset[str]:
    """The kernel runtime a unit leaves out: none in ``BOTH_RUNTIMES`` of the units, else one of the two."""
    return frozenset() if rng.random() < BOTH_RUNTIMES else frozenset({rng.choice(runtimes)})


def drawn_call(rng: random.Random, tiers: tuple[GdnTier, ...], *, warming_up: bool, tier_name: str | None,
               longest: bool, dtypes: tuple[str, ...] | None = None) -> tuple[GdnTier, GdnLimits]:
    """A unit's tier (the first while warming up, ``tier_name`` where steered) and the limits of its calls: the
    tier's, with a ``T`` range of it (its longest where ``longest``) and ``dtypes`` (None: drawn)."""
    tier = tiers[0] if warming_up else rng.choices(tiers, weights=[t.weight for t in tiers])[0]
    if tier_name is not None:
        tier = next(t for t in tiers if t.name == tier_name)
    _, max_len = longest_range(tier.seq_lens) if longest else rng.choice(tier.seq_lens)
    chosen = dtypes or rng.choice((DTYPES, ("float32",), ("float16",)))
    return tier, replace(tier.limits, max_len=max_len, dtypes=chosen)


def plan(seed: int, base_examples: int, *, warming_up: bool = False, tier_name: str | None = None,
         form: str | None = None, only: frozenset[str] | None = None, longest: bool = False) -> UnitPlan:
    """The GatedDeltaNet plan of the unit whose seed is ``seed`` (deterministic); the first rounds keep to the small
    tier. The kernel has one form, so ``form`` draws nothing."""
    rng = random.Random(seed)
    tier, limits = drawn_call(rng, GDN_TIERS, warming_up=warming_up, tier_name=tier_name, longest=longest)
    return UnitPlan(tier=tier.name, limits=limits, examples=min(base_examples, tier.examples or base_examples),
                    sit_out=runtimes_out(rng, GDN_RUNTIMES), seconds=UNIT_SECONDS, targeting=rng.random() < TARGETING,
                    only=only)


SWARM = OpSwarm(share=SHARED_UNITS, tiers=tuple((t.name, t.weight) for t in GDN_TIERS), forms=lambda name: {"": 1.0},
                plan=plan, ort_shape=lambda case: True, own_units=OWN_UNITS)
"""GatedDeltaNet's part of the swarm; the ORT builds check every case (where their build runs the op)."""

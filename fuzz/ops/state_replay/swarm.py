"""Swarm plans of GatedDeltaNetStateReplay units, and the op's share of a campaign.

The replay's own properties (``replay-agree``, ``replay-poison-invariance``, ``replay-refuses-invalid``) take
``OWN_UNITS`` of a campaign's units, ``error-parity`` gives it ``SHARED_UNITS`` of its own: half of GatedDeltaNet's,
since a replay case is the GatedDeltaNet call it replays plus a small descriptor (docs/campaign.md#swarm-shares). Its
tiers are GatedDeltaNet's sizes, with padding that grows with them; the kernel runtimes take part as in GatedDeltaNet's
units.
"""

from __future__ import annotations

import random
from dataclasses import replace

from fuzz.campaign.swarm import TARGETING, UNIT_SECONDS, OpSwarm, UnitPlan
from fuzz.ops.gated_delta_net.swarm import GDN_RUNTIMES, GDN_TIERS, drawn_call, runtimes_out
from fuzz.ops.state_replay.strategies import ReplayLimits

OWN_UNITS = 0.05
SHARED_UNITS = 0.05

REPLAY_TIERS = tuple(replace(t, name=f"replay {t.name.removeprefix('gdn ')}") for t in GDN_TIERS)
"""GatedDeltaNet's tiers, under the replay's names."""

PADS = {"replay small": 5, "replay medium": 64, "replay heads": 1024}
"""Most filler elements around each view, by tier."""


def plan(seed: int, base_examples: int, *, warming_up: bool = False, tier_name: str | None = None,
         form: str | None = None, only: frozenset[str] | None = None, longest: bool = False) -> UnitPlan:
    """The replay plan of the unit whose seed is ``seed`` (deterministic): a GatedDeltaNet tier's float32 calls."""
    rng = random.Random(seed)
    tier, call = drawn_call(rng, REPLAY_TIERS, warming_up=warming_up, tier_name=tier_name, longest=longest,
                            dtypes=("float32",))
    return UnitPlan(tier=tier.name, limits=ReplayLimits(call, max_pad=PADS[tier.name]),
                    examples=min(base_examples, tier.examples or base_examples),
                    sit_out=runtimes_out(rng, GDN_RUNTIMES), seconds=UNIT_SECONDS, targeting=rng.random() < TARGETING,
                    only=only)


SWARM = OpSwarm(share=SHARED_UNITS, tiers=tuple((t.name, t.weight) for t in REPLAY_TIERS),
                forms=lambda name: {"": 1.0}, plan=plan, ort_shape=lambda case: True, own_units=OWN_UNITS)
"""GatedDeltaNetStateReplay's part of the swarm."""

"""Following the yield: a bandit over the swarm's arms (``fuzz.campaign.arms``) by what each found per second.

An arm's yield is what its units brought that the campaign had not seen: coverage buckets first reached (on a
log scale: the first units of a campaign reach dozens each, and whichever arm ran them would otherwise hold
the lead long after its ground is known), new findings, and a climb of the error/tolerance ratio past the
arm's best (more for a near miss). Its rate is
that yield per second of worker time, so an arm of cheap cases and one of costly cases compete on the same
scale (AFL's power schedules give more energy to what yields; here the energy is worker time). A unit goes to
an arm with probability ``FLOOR / arms`` plus the rest in proportion to the arm's rate over its cost per unit
(so each arm's share of the time follows its rate), which keeps every arm alive: a cheap arm cannot starve a
costly one, and an arm that dried up is still tried now and then. A prior yield per arm (``PRIOR_YIELD`` on
average, in proportion to the arm's prior share: the swarm's own shares, or even ones) over ``PRIOR_SECONDS``
makes the first units follow the prior until what they bring back outweighs it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from fuzz.campaign.arms import Arm

FLOOR = 0.3
"""The share of units spread evenly over the arms, whatever they yield: every arm keeps ``FLOOR / arms``."""

PRIOR_YIELD = 2.0
PRIOR_SECONDS = 4.0
"""An untried arm of average prior share has the rate ``PRIOR_YIELD / PRIOR_SECONDS`` (about what a unit of fresh
ground yields early on), and every untried arm the cost per unit ``PRIOR_SECONDS`` (half a swarm unit's time
limit)."""

FINDING_YIELD = 10.0
"""What a new finding counts (a unit's first bucket counts 1, its first thousand 10): it is what the campaign is
for."""

NEAR_MISS = 0.5
"""An error/tolerance ratio from which a passing case is a near miss: a climb there counts one more."""

LEAST_RATIO = 0.01
MOST_CLIMB = 4.0
"""A climb of the ratio counts ``log2(new / best)`` (the best taken as at least ``LEAST_RATIO``), at most
``MOST_CLIMB``: doublings towards the tolerance, not the first noise an arm meets."""


@dataclass
class ArmRecord:
    """What the units of one arm did."""

    units: int = 0
    focused: int = 0
    examples: int = 0
    seconds: float = 0.0
    buckets: int = 0
    findings: int = 0
    gained: float = 0.0
    """Yield in all (``unit_yield``)."""
    best_ratio: float = 0.0

    def rate(self, prior: float = PRIOR_YIELD) -> float:
        """Yield per second of worker time, with ``prior`` yield before any unit."""
        return (self.gained + prior) / (self.seconds + PRIOR_SECONDS)

    def cost(self) -> float:
        """Seconds per unit, with the prior."""
        return (self.seconds + PRIOR_SECONDS) / (self.units + 1)

    def unit_yield(self, buckets: int, findings: int, ratio: float) -> float:
        """The yield of a unit of this arm (read before ``add``): new buckets, new findings, a climb of the ratio."""
        gained = math.log2(1 + buckets) + FINDING_YIELD * findings
        if ratio > self.best_ratio and ratio >= LEAST_RATIO:
            gained += min(MOST_CLIMB, math.log2(ratio / max(self.best_ratio, LEAST_RATIO)))
            gained += ratio >= NEAR_MISS
        return gained

    def add(self, *, examples: int, seconds: float, buckets: int, findings: int, ratio: float, focused: bool) -> None:
        self.gained += self.unit_yield(buckets, findings, ratio)
        self.units += 1
        self.focused += focused
        self.examples += examples
        self.seconds += seconds
        self.buckets += buckets
        self.findings += findings
        self.best_ratio = max(self.best_ratio, ratio)

    def row(self) -> dict[str, float]:
        """The summary's row (``per_arm``): sums only, so that shards' rows add up."""
        return {"units": self.units, "focused": self.focused, "examples": self.examples,
                "milliseconds": round(self.seconds * 1000), "buckets": self.buckets, "findings": self.findings,
                "yield": round(self.gained, 2)}


class Scheduler:
    """Chooses each unit's arm by yield per second (``shares``), from the records of the units absorbed so far."""

    def __init__(self, seed: int) -> None:
        self.records: dict[str, ArmRecord] = {}
        """Arm key (or an unsteered unit's tier) -> its record, in the order first met."""
        self.rng = random.Random(seed)

    def record(self, key: str) -> ArmRecord:
        return self.records.setdefault(key, ArmRecord())

    def shares(self, candidates: Sequence[Arm], prior: Sequence[float] | None = None) -> list[float]:
        """The chance of each of ``candidates`` to get the next unit: ``FLOOR`` evenly, the rest by rate over cost,
        the rates starting from ``prior`` shares (even ones where None)."""
        given = list(prior) if prior is not None and sum(prior) > 0 else [1.0] * len(candidates)
        records = [self.record(a.key) for a in candidates]
        scale = PRIOR_YIELD * len(given) / sum(given)
        weights = [r.rate(scale * p) / r.cost() for r, p in zip(records, given, strict=True)]
        total = sum(weights)
        return [FLOOR / len(candidates) + (1 - FLOOR) * w / total for w in weights]

    def choose(self, candidates: Sequence[Arm], prior: Sequence[float] | None = None) -> Arm:
        return self.rng.choices(candidates, weights=self.shares(candidates, prior))[0]

    def absorb(self, key: str, *, examples: int, seconds: float, buckets: int, findings: int, ratio: float,
               focused: bool = False) -> None:
        """Fold one unit's result into its arm's record."""
        self.record(key).add(examples=examples, seconds=seconds, buckets=buckets, findings=findings, ratio=ratio,
                             focused=focused)

    def rows(self) -> dict[str, dict[str, float]]:
        return {key: record.row() for key, record in self.records.items() if record.units}

"""Which unit runs next, and on which arm: the focus (follow the change) and the yield (follow the bandit).

The campaign's main process passes this shard's units (``fuzz.campaign.shard.work_units``) through ``Steering``:

- with a focus (``fuzz.campaign.focus.Focus``), ``FOCUSED_SHARE`` of the units are focused: a unit whose
  property serves the focus, on an arm that fits it (``fuzz.campaign.arms.fits``), running the focused backends
  and the oracle only (``Focus.runs``), half of them at their tier's longest calls where the change shows
  along the sequence (``Focus.long``); the others are the swarm's as ever. Units passed over for a focused one
  wait for the next unfocused turn (at most ``WAITING`` of them; older ones are dropped, never run twice);
- following the yield, each unit's arm is the bandit's choice (``fuzz.campaign.schedule.Scheduler``). That
  depends on what units brought back, and when, so it is on only where nothing promises a repeatable unit list:
  with ``--examples`` or a shard of several, a focused unit's arm is drawn from its seed by the tiers' weights
  and an unfocused unit draws its own plan, so the list stays a function of seed and shard.

Which turns are focused is drawn from the seed and shard, so shards stay disjoint (each unit comes from this
shard's list once).
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from fuzz.campaign.arms import Arm, arms_of, fits
from fuzz.campaign.focus import Focus
from fuzz.campaign.schedule import Scheduler
from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.swarm import WARM_UP_ROUNDS
from fuzz.campaign.unit import UnitResult
from fuzz.engine.properties import resolve_property

FOCUSED_SHARE = 0.8
"""The share of units a focus takes; the rest keep the whole contract in view (a change can break more than
the table says it serves)."""

WAITING = 64
"""Units passed over for focused ones that may still run in an unfocused turn."""

ARM_STREAM = 0x41524D
"""Mixed into a unit's seed for the draw of a focused unit's arm where the bandit is off."""

LONGEST = 0.5
"""The share of focused units that take their tier's longest calls where the change shows along the sequence
(``Focus.long``); the others draw their ``T`` as any unit does (a change may break short calls too)."""

LONG_STREAM = 0x4C4F4E47
"""Mixed into a unit's seed for that draw."""


class Steering:
    """The unit stream of one campaign (``config``: a ``CampaignConfig``) and the records of its arms."""

    def __init__(self, config: Any) -> None:
        self.focus: Focus | None = config.focus
        self.seed = f"{config.seed}:{config.shard}"
        self.arms = arms_of(config.ops, config.limits)
        self.following = config.follow_yield and config.example_budget is None and config.shard.count == 1
        self.scheduler = Scheduler(random.Random(f"{self.seed}:yield").getrandbits(64))
        self.focused: set[str] = set()
        """Keys of the units given to the focus."""

    def units(self, stream: Iterator[WorkUnit]) -> Iterator[WorkUnit]:
        """``stream``'s units in the order they run, each steered (``steer``)."""
        turns = random.Random(f"{self.seed}:focus")
        waiting: deque[WorkUnit] = deque(maxlen=WAITING)
        while True:
            focused = self.focus is not None and turns.random() < FOCUSED_SHARE
            if not focused:
                yield self.steer(waiting.popleft() if waiting else next(stream), focused=False)
                continue
            yield self.steer(self._next_serving(stream, waiting), focused=True)

    def _next_serving(self, stream: Iterator[WorkUnit], waiting: deque[WorkUnit]) -> WorkUnit:
        """The first waiting unit that serves the focus, else the next one of ``stream`` (those before it wait)."""
        for unit in waiting:
            if self._serves(unit):
                waiting.remove(unit)
                return unit
        while not self._serves(unit := next(stream)):
            waiting.append(unit)
        return unit

    def _arms_for(self, unit: WorkUnit, focused: bool) -> list[Arm]:
        prop = resolve_property(unit.property)
        arms = [a for a in self.arms if prop.applies_to(a.op)]
        if focused and self.focus is not None:
            arms = [a for a in arms if fits(a, self.focus)]
        if unit.number < WARM_UP_ROUNDS and not focused:  # caches fill on cheap cases; a change is tested at once
            arms = [a for a in arms if a.first] or arms
        return arms

    def _serves(self, unit: WorkUnit) -> bool:
        focus = self.focus
        return focus is not None and (not focus.properties or unit.property in focus.properties) \
            and bool(self._arms_for(unit, focused=True))

    def steer(self, unit: WorkUnit, *, focused: bool) -> WorkUnit:
        """``unit`` with its arm and, if ``focused``, the focused backends; unchanged where nothing steers it."""
        arms = self._arms_for(unit, focused)
        if not arms:
            return unit
        if focused:
            self.focused.add(unit.key)
        if self.following:  # from the swarm's own shares; a focused unit's from even ones (its cases are cheap)
            arm: Arm | None = self.scheduler.choose(arms, None if focused else [a.weight for a in arms])
        elif focused:
            arm = random.Random(unit.seed ^ ARM_STREAM).choices(arms, weights=[a.weight for a in arms])[0]
        else:
            arm = None
        if not focused or self.focus is None:
            return replace(unit, arm=arm)
        longest = self.focus.long and random.Random(unit.seed ^ LONG_STREAM).random() < LONGEST
        return replace(unit, arm=arm, only=self.focus.runs(), longest=longest)

    def absorb(self, result: UnitResult, buckets: int, findings: int) -> None:
        """Fold a unit's result into its arm's record: ``buckets`` it reached first, ``findings`` new ones."""
        unit = result.unit
        self.scheduler.absorb(unit.arm.key if unit.arm else result.tier, examples=result.examples,
                              seconds=result.seconds, buckets=buckets, findings=findings,
                              ratio=max(result.parts.values(), default=0.0), focused=unit.key in self.focused)

    def per_arm(self) -> dict[str, dict[str, float]]:
        """Arm (or an unsteered unit's tier) -> units, focused units, examples, worker milliseconds, buckets first
        reached, new findings and yield."""
        return self.scheduler.rows()

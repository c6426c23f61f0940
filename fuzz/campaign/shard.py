"""Splitting a campaign into work units and assigning each unit to exactly one shard.

A campaign is an endless round-robin over its properties: unit ``k`` of property ``p`` runs
Hypothesis with a seed derived from the campaign seed, ``p`` and ``k``. A unit belongs to shard
``i`` of ``n`` when a hash of its key falls in that shard's bucket, so shards run disjoint work
that depends only on ``(seed, shard)``: rerunning a shard repeats it, and no coordination is needed.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int = 1
    count: int = 1

    def __post_init__(self) -> None:
        if self.count < 1 or not 1 <= self.index <= self.count:
            raise ValueError(f"shard {self.index}/{self.count}: need 1 <= i <= n (e.g. 1/4 ... 4/4)")

    @classmethod
    def parse(cls, text: str) -> Shard:
        """Read ``"i/n"``; raises ``ValueError`` with an example of the right form."""
        head, sep, tail = text.partition("/")
        if not sep or not head.strip().isdigit() or not tail.strip().isdigit():
            raise ValueError(f"bad shard {text!r}: expected i/n with whole numbers, e.g. 2/4")
        return cls(int(head), int(tail))

    def owns(self, key: str) -> bool:
        """Whether the work unit called ``key`` is this shard's."""
        return _digest(key) % self.count == self.index - 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True)
class WorkUnit:
    """One Hypothesis run: a property, its position in the round-robin, and the seed it runs with."""

    property: str
    number: int
    seed: int

    @property
    def key(self) -> str:
        return f"{self.property}#{self.number}"


def work_units(properties: Sequence[str], campaign_seed: int, shard: Shard) -> Iterator[WorkUnit]:
    """This shard's units, in order, forever (the caller stops at its budget)."""
    if not properties:
        raise ValueError("a campaign needs at least one property")
    for number in itertools.count():
        for name in properties:
            key = f"{name}#{number}"
            if shard.owns(key):
                yield WorkUnit(name, number, _digest(f"{campaign_seed}:{key}"))

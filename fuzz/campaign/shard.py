"""Splitting a campaign into work units and assigning each unit to exactly one shard.

A campaign is an endless round-robin over its properties: unit ``k`` of property ``p`` runs
Hypothesis with a seed derived from the campaign seed, ``p`` and ``k``. A unit belongs to shard
``i`` of ``n`` when a hash of its key falls in that shard's bucket, so shards run disjoint work
that depends only on ``(seed, shard)``: rerunning a shard repeats it, and no coordination is needed.
Every shard of one campaign must run with the same seed.

``Shard.from_environment`` reads the shard from the variables a CI or batch system sets for a job
that runs ``n`` times in parallel (``--shard auto``).
"""

from __future__ import annotations

import builtins
import hashlib
import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fuzz.campaign.arms import Arm

SHARD_VARIABLE = "LAFUZZ_SHARD"
"""``i/n`` set by hand or from a matrix (GitHub Actions has no variable of its own for a matrix job's place)."""


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

    @classmethod
    def from_environment(cls, env: Mapping[str, str]) -> tuple[Shard, str]:
        """The shard named by the first source in ``ENVIRONMENT_SOURCES`` whose index is set, and which
        variables those were; raises ``ValueError`` naming every source when none is set, or naming the
        variable at fault when one holds a bad value."""
        if env.get(SHARD_VARIABLE):
            try:
                return cls.parse(env[SHARD_VARIABLE]), SHARD_VARIABLE
            except ValueError as err:
                raise ValueError(f"{SHARD_VARIABLE}: {err}") from None
        for source in ENVIRONMENT_SOURCES:
            if env.get(source.index):
                return source.read(env), source.describe()
        known = "; ".join(source.describe() for source in ENVIRONMENT_SOURCES)
        raise ValueError(f"--shard auto found no shard in the environment: set {SHARD_VARIABLE}=i/n, "
                         f"or run where one of these is set: {known}")

    def owns(self, key: str) -> bool:
        """Whether the work unit called ``key`` is this shard's."""
        return _digest(key) % self.count == self.index - 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True)
class EnvironmentSource:
    """Where one CI or batch system puts a parallel job's place: an index variable counted from
    ``base`` (0 or 1) and a count variable."""

    system: str
    index: str
    count: str
    base: int
    count_note: str = ""
    """Why the count variable may be missing, for the error message."""

    def describe(self) -> str:
        return f"{self.index}/{self.count} ({self.system}, index from {self.base})"

    def read(self, env: Mapping[str, str]) -> Shard:
        """The shard these variables name; ``ValueError`` naming the variable that is missing or bad."""
        if not env.get(self.count):
            raise ValueError(f"{self.index} is set but {self.count} is not{self.count_note}")
        index, count = (_whole_number(env, name) for name in (self.index, self.count))
        try:
            return Shard(index - self.base + 1, count)
        except ValueError as err:
            raise ValueError(f"{self.index}={index}, {self.count}={count} ({self.system}): {err}") from None


def _whole_number(env: Mapping[str, str], name: str) -> int:
    text = env[name].strip()
    if not text.isdigit():
        raise ValueError(f"{name}={env[name]!r} is not a whole number")
    return int(text)


ENVIRONMENT_SOURCES = (
    # `parallel: N` makes jobs "name 1/N" .. "name N/N"; CI_NODE_INDEX is the job's number, set only
    # for such jobs; CI_NODE_TOTAL is N (1 for every other job).
    EnvironmentSource("GitLab CI parallel", "CI_NODE_INDEX", "CI_NODE_TOTAL", base=1),
    # `parallelism: N`: CIRCLE_NODE_INDEX runs from 0 to CIRCLE_NODE_TOTAL - 1.
    EnvironmentSource("CircleCI parallelism", "CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", base=0),
    # `parallelism: N`: BUILDKITE_PARALLEL_JOB runs from 0 to N - 1, BUILDKITE_PARALLEL_JOB_COUNT is N.
    EnvironmentSource("Buildkite parallelism", "BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", base=0),
    # `completionMode: Indexed`: the pod's index runs from 0 to completions - 1; the Job does not tell
    # its pods `completions`, so the manifest sets LAFUZZ_SHARD_COUNT to it.
    EnvironmentSource("Kubernetes Indexed Job", "JOB_COMPLETION_INDEX", "LAFUZZ_SHARD_COUNT", base=0,
                      count_note=": an Indexed Job does not tell its pods the completions count, so set "
                                 "LAFUZZ_SHARD_COUNT to spec.completions in the pod's env"),
)
"""The parallel-job variables of the usual CI and batch systems, in the order ``--shard auto`` tries them."""


@dataclass(frozen=True)
class WorkUnit:
    """One Hypothesis run: a property, its position in the round-robin, and the seed it runs with."""

    property: str
    number: int
    seed: int
    arm: Arm | None = None
    """The arm the campaign steered the unit to (``fuzz.campaign.steering``); None: the unit draws its own."""
    only: frozenset[str] | None = None
    """The backends a focused unit runs (``fuzz.campaign.focus.Focus.runs``); None: those its plan draws."""
    longest: bool = False
    """A focused unit of a change that shows at long calls: it takes its tier's longest ``T`` range."""

    @builtins.property  # the field ``property`` shadows the builtin in this class body
    def key(self) -> str:
        return f"{self.property}#{self.number}"


def takes_turn(share: float, number: int) -> bool:
    """Whether a property that takes ``share`` of the turns takes round ``number``'s: evenly spread, round 0 first."""
    return math.ceil(number * share) < math.ceil((number + 1) * share)


def work_units(properties: Sequence[str], campaign_seed: int, shard: Shard,
               turns: Mapping[str, float] | None = None) -> Iterator[WorkUnit]:
    """This shard's units, in order, forever (the caller stops at its budget); a property named in ``turns`` takes
    that share of the rounds (``fuzz.campaign.swarm.turns``), every other one each round."""
    if not properties:
        raise ValueError("a campaign needs at least one property")
    for number in itertools.count():
        for name in properties:
            if turns is not None and not takes_turn(turns.get(name, 1.0), number):
                continue
            key = f"{name}#{number}"
            if shard.owns(key):
                yield WorkUnit(name, number, _digest(f"{campaign_seed}:{key}"))

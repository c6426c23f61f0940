"""Interleaved measurement: a sustained warm-up until timings settle, then every series once per round.

On a GPU whole configurations can shift into a slower mode for their whole measurement block when
configurations are measured one after another (docs/benchmark.md#verdicts-that-hold): a block-wise
protocol compares two configurations measured at different moments. Here every timed series of a group
(each configuration's call, the spans of checkpoint selection, the prefix reruns) is bound once,
its buffers reused for every sample, and measured in ``rounds``: each round measures every series
once, in a fresh random order (seeded), so drift between rounds hits all series alike and the
round-to-round spread becomes the uncertainty that ``fuzz.bench.confidence`` turns into intervals.

Before the first round, ``settle`` keeps the device busy with all series until each one's recent
timings stop moving (the median of its last ``settle_window`` batch medians changes by less than
``settle_tolerance`` between passes), or ``settle_max_passes`` is reached (recorded as unsettled).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import asdict, dataclass

import numpy as np

from .protocol import Sampler, Timing


@dataclass(frozen=True)
class Schedule:
    """How long to warm up and how to split the measured samples into rounds."""

    rounds: int = 10
    per_round: int = 60
    """Samples of each series per round: rounds x per_round = 600, docs/spec.md §5's 3 x 200."""
    round_warmups: int = 2
    """Calls of a series run and discarded before its samples in each round (it follows another series)."""
    settle_batch: int = 20
    settle_window: int = 3
    settle_tolerance: float = 0.02
    settle_max_passes: int = 40

    def __post_init__(self) -> None:
        for name in ("rounds", "per_round", "settle_batch", "settle_window", "settle_max_passes"):
            if getattr(self, name) < 1:
                raise ValueError(f"Schedule: {name} must be >= 1, got {getattr(self, name)}")
        if self.round_warmups < 0 or not 0 < self.settle_tolerance < 1:
            raise ValueError("Schedule: round_warmups must be >= 0 and settle_tolerance in (0, 1)")


FULL_SCHEDULE = Schedule()
QUICK_SCHEDULE = Schedule(rounds=4, per_round=10, round_warmups=1, settle_batch=5, settle_window=2,
                          settle_tolerance=0.05, settle_max_passes=6)


@dataclass(frozen=True)
class WarmUp:
    """What ``settle`` did: passes over all series, whether they settled, the largest change per pass."""

    passes: int
    settled: bool
    changes: tuple[float, ...]
    """Per pass from the ``settle_window + 1``-th on: the largest relative change of any series' recent median."""

    def record(self) -> dict[str, object]:
        return asdict(self)


def settle(series: Mapping[Hashable, Sampler], schedule: Schedule) -> WarmUp:
    """Run batches of every series, pass after pass, until every series' recent median is stable (or the cap)."""
    k = schedule.settle_window
    history: dict[Hashable, list[float]] = {name: [] for name in series}
    changes: list[float] = []
    for passes in range(1, schedule.settle_max_passes + 1):
        for name, sample in series.items():
            history[name].append(float(np.median(sample(schedule.settle_batch))))
        if passes <= k:
            continue
        change = max(abs(np.median(h[-k:]) - np.median(h[-k - 1:-1])) / np.median(h[-k - 1:-1])
                     for h in history.values())
        changes.append(float(change))
        if change < schedule.settle_tolerance:
            return WarmUp(passes, True, tuple(changes))
    return WarmUp(schedule.settle_max_passes, False, tuple(changes))


@dataclass(frozen=True)
class RoundTimings:
    """The samples of every series, ``(rounds, per_round)`` nanoseconds each, on one clock."""

    clock: str
    samples: dict[Hashable, np.ndarray]

    def timing(self, name: Hashable) -> Timing:
        """One series as a ``Timing`` whose repetitions are the rounds (p50/p95 over all samples)."""
        return Timing(self.clock, tuple(tuple(row.tolist()) for row in self.samples[name]))

    def round_medians(self, names: list[Hashable] | None = None) -> dict[Hashable, np.ndarray]:
        """Each series' median per round (of ``names``, default all): what the bootstrap resamples."""
        chosen = self.samples if names is None else {n: self.samples[n] for n in names}
        return {name: np.median(s, axis=1) for name, s in chosen.items()}


def run_rounds(series: Mapping[Hashable, Sampler], schedule: Schedule, clock: str, seed: int = 0) -> RoundTimings:
    """Measure every series ``per_round`` times in each of ``schedule.rounds`` rounds, in a seeded random order."""
    names = list(series)
    rng = np.random.default_rng(seed)
    rows: dict[Hashable, list[np.ndarray]] = {name: [] for name in names}
    for _ in range(schedule.rounds):
        for index in rng.permutation(len(names)):
            sample = series[names[index]]
            if schedule.round_warmups:
                sample(schedule.round_warmups)
            got = np.asarray(sample(schedule.per_round), dtype=np.float64)
            if got.shape != (schedule.per_round,):
                raise RuntimeError(f"run_rounds: {names[index]} gave {got.shape} samples, "
                                   f"expected ({schedule.per_round},)")
            rows[names[index]].append(got)
    return RoundTimings(clock, {name: np.stack(r) for name, r in rows.items()})

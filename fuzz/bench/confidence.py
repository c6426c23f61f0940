"""Bootstrap confidence intervals over measurement rounds, and the verdict they allow.

Every timed series of one benchmark group is measured once per round (``fuzz.bench.rounds``), so
round ``r`` of every series saw the same moment of the machine. A gate's value is a function of
several series (e.g. ``(verify_4 - verify_0) / verify_0``); its interval resamples whole rounds
with replacement - the same rounds for every series, which keeps the pairing that interleaving
bought - and recomputes the value from each series' mean of round medians. A verdict is given only
when the whole interval lies on one side of the threshold; otherwise it is INCONCLUSIVE.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

import numpy as np

Statistic = Callable[[Mapping[Hashable, float]], float | None]
"""A gate's value from one estimate per series (ns); None where it is undefined (e.g. p* with no saving)."""

RESAMPLES = 2000
LEVEL = 0.95

PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"
FLOOR_BOUND = "FLOOR-BOUND"
"""A p* gate that stores at the memory floor would already fail: not the kernel's to meet (``floor_verdict``)."""

ACCEPTED = (PASS, FLOOR_BOUND)
"""Verdicts that let a benchmark run succeed."""


@dataclass(frozen=True)
class Interval:
    """A two-sided bootstrap percentile interval; ``inf`` stands for resamples where the value is undefined."""

    low: float
    high: float
    level: float
    resamples: int
    rounds: int


def estimates(round_medians: Mapping[Hashable, np.ndarray], rows: np.ndarray | None = None) -> dict[Hashable, float]:
    """Each series' mean of round medians, over ``rows`` (indices of rounds, repeats allowed; default all)."""
    return {name: float(np.mean(m if rows is None else m[rows])) for name, m in round_medians.items()}


def _value(statistic: Statistic, values: Mapping[Hashable, float]) -> float:
    found = statistic(values)
    return np.inf if found is None else float(found)


@dataclass(frozen=True)
class Resampled:
    """Every series' estimate in each of ``resamples`` draws of whole rounds (the same draws for every series):
    drawn once, any number of statistics can be bootstrapped over them."""

    draws: tuple[dict[Hashable, float], ...]
    rounds: int


def resample(round_medians: Mapping[Hashable, np.ndarray], resamples: int = RESAMPLES, seed: int = 0) -> Resampled:
    """Draw ``resamples`` sets of rounds with replacement and each series' mean of round medians over each set.

    ``round_medians[name]`` holds one median per round (all series the same number of rounds).
    The seed is fixed: the same measurements always give the same draws.
    """
    rounds = {len(m) for m in round_medians.values()}
    if len(rounds) != 1 or min(rounds) < 2:
        raise ValueError(f"bootstrap: every series needs the same number (>= 2) of rounds, got {sorted(rounds)}")
    count = rounds.pop()
    rows = np.random.default_rng(seed).integers(0, count, size=(resamples, count))
    means = {name: np.asarray(m)[rows].mean(axis=1) for name, m in round_medians.items()}
    return Resampled(tuple({name: float(v[i]) for name, v in means.items()} for i in range(resamples)), count)


def interval(resampled: Resampled, statistic: Statistic, level: float = LEVEL) -> Interval:
    """The ``level`` percentile interval of ``statistic`` over the draws of ``resampled``."""
    values = np.array([_value(statistic, draw) for draw in resampled.draws])
    tail = 100 * (1 - level) / 2
    # order statistics, not interpolation: infinite (undefined) values must not meet as inf - inf
    low, high = np.percentile(values, [tail, 100 - tail], method="nearest")
    return Interval(float(low), float(high), level, len(resampled.draws), resampled.rounds)


def bootstrap(round_medians: Mapping[Hashable, np.ndarray], statistic: Statistic, resamples: int = RESAMPLES,
              level: float = LEVEL, seed: int = 0) -> Interval:
    """The ``level`` percentile interval of ``statistic`` over rounds resampled with replacement (``resample``)."""
    return interval(resample(round_medians, resamples, seed), statistic, level)


def verdict(interval: Interval | None, threshold: float) -> tuple[str, str]:
    """PASS / FAIL / INCONCLUSIVE for an ``at most threshold`` gate, and the reason when inconclusive."""
    if interval is None:
        return INCONCLUSIVE, "no interval: fewer than two rounds"
    if interval.high <= threshold:
        return PASS, ""
    if interval.low > threshold:
        return FAIL, ""
    return INCONCLUSIVE, (f"the {100 * interval.level:.0f}% interval over {interval.rounds} rounds straddles "
                          "the threshold")


def floor_verdict(measured: tuple[str, str], floor: Interval | None, threshold: float) -> tuple[str, str]:
    """The verdict of an ``at most threshold`` gate whose value has a floor (p* with the window's stores at the
    memory floor): ``FLOOR_BOUND`` when the floor's whole interval is beyond the threshold (no kernel could pass
    it); the ``measured`` verdict when the floor's whole interval is within it; where the floor's interval
    straddles the threshold, a PASS stands and anything else is INCONCLUSIVE (whether the floor allows the gate
    is not known)."""
    if floor is None:
        return measured
    if floor.low > threshold:
        return FLOOR_BOUND, ""
    if floor.high <= threshold or measured[0] == PASS:
        return measured
    return INCONCLUSIVE, (f"the floor's {100 * floor.level:.0f}% interval over {floor.rounds} rounds straddles the "
                          "threshold")

"""The verdicts of docs/spec.md §5: each gate with its measured value, interval, threshold and verdict.

Gates per (dtype, shape, T):

- ``W=1 overhead``: (verify_1 - verify_0) / verify_0 <= 5%;
- ``W=4 overhead``: (verify_4 - verify_0) / verify_0 <= 15%;
- ``p* W=4``, ``p* W=8`` (only where T > 1): the request's own p*, as its formula defines it for a decoder: on the
  pipelined wall clock, where a rerun is a whole dispatch of the accepted prefix and a select a rebind
  (``fuzz.bench.decoder_view``), <= 20%;
- ``in-kernel p* W=4``, ``... W=8`` (only where T > 1): the same break-even on GPU time <= 20% (an undefined p* -
  selecting saves nothing - counts as infinite), unless the window's extra slots stored at the floor
  (``fuzz.bench.store_floor``) would already exceed it: then ``FLOOR-BOUND``, with that floor p* printed beside
  the measured one (``fuzz.bench.confidence.floor_verdict``);
- ``stores vs serial floor W=4``, ``... W=8`` (only where T >= W): the window's cost ``verify_W - verify_0`` at
  most 1.25x the floor of its extra slots.

The floor is by default the serial floor (``SERIAL``: the kernel's own workgroups storing the slots one after
another), since a kernel that keeps the state in its workgroups cannot store the slots faster than those
workgroups can; ``PLAIN`` (every extra byte stored at once) judges against the memory floor instead, then named
``stores vs floor`` and printed ``floor``. Either way the report prints the plain floor's ratio as the distance
to the memory limit, a figure to watch, not a gate.

Per (dtype, shape, T, W): ``memory live bytes`` == the declared bytes, and ``memory growth`` == 0 (live bytes,
live buffers and allocations over many select-and-resume cycles).

A timing gate carries a bootstrap interval over measurement rounds (``fuzz.bench.confidence``) and
is PASS only when the whole interval is within the threshold, FAIL when the whole interval is
beyond it, INCONCLUSIVE otherwise (with the reason). A memory gate is exact: PASS or FAIL.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import asdict, dataclass

import numpy as np

from .confidence import ACCEPTED, FAIL, PASS, Interval, Statistic, bootstrap, estimates, floor_verdict, verdict

OVERHEAD_LIMITS = {1: 0.05, 4: 0.15}
"""Window -> largest allowed slowdown of verify_W relative to verify_0."""

P_STAR_LIMIT = 0.20
"""The request's bound on p*, on the decoder's wall clock and on GPU time alike (docs/spec.md §5)."""
P_STAR_WINDOWS = (4, 8)
STORE_RATIO_LIMIT = 1.25
"""The window's cost over the floor of its extra bytes."""

PLAIN, SERIAL = "plain", "serial"
FLOORS = (SERIAL, PLAIN)
"""The floors the rollback gates can judge the window's stores against (``fuzz.bench.store_floor``), the
default first."""


@dataclass(frozen=True)
class Gate:
    """One verdict. ``measured`` is None when it could not be measured (an undefined p*)."""

    name: str
    config: str
    measured: float | None
    threshold: float
    comparison: str
    """``"<="`` (a timing gate, judged by ``interval``) or ``"=="`` (an exact memory gate)."""
    unit: str
    """``"%"`` (values are fractions, shown as percent), ``"x"`` (a ratio), ``"bytes"``, or ``""`` (a plain count)."""
    interval: Interval | None = None
    """The bootstrap interval of a timing gate (None with fewer than two rounds: inconclusive)."""
    floor: float | None = None
    """The value the gate would have with the window's stores at the memory floor (p* gates; None elsewhere)."""
    floor_interval: Interval | None = None
    """The bootstrap interval of ``floor`` (None without a floor): decides ``FLOOR-BOUND``."""
    floor_name: str = "floor"
    """How the report names the floor (``floor`` or ``serial floor``)."""

    @property
    def judgement(self) -> tuple[str, str]:
        """(verdict, reason): PASS / FAIL / INCONCLUSIVE / FLOOR-BOUND, and why when inconclusive."""
        if self.comparison == "==":
            return (PASS if self.measured == self.threshold else FAIL), ""
        measured = verdict(self.interval, self.threshold)
        if self.floor is None:
            return measured
        if self.floor_interval is None:
            return verdict(None, self.threshold)
        return floor_verdict(measured, self.floor_interval, self.threshold)

    @property
    def verdict(self) -> str:
        return self.judgement[0]

    @property
    def passed(self) -> bool:
        """PASS, or FLOOR-BOUND (a gate the memory floor puts out of any kernel's reach)."""
        return self.verdict in ACCEPTED

    def show(self, value: float | None) -> str:
        if value is None or not np.isfinite(value):
            return "undefined"
        if self.unit == "%":
            return f"{100 * value:.2f}%"
        if self.unit == "x":
            return f"{value:.2f}x"
        return f"{value:,.0f} {self.unit}".rstrip()

    @property
    def floor_text(self) -> str:
        """``floor 12.10% [11.00%, 13.20%]``, or empty for a gate without a floor."""
        if self.floor is None:
            return ""
        spread = "" if self.floor_interval is None else \
            f" [{self.show(self.floor_interval.low)}, {self.show(self.floor_interval.high)}]"
        return f"{self.floor_name} {self.show(self.floor)}{spread}"

    @property
    def interval_text(self) -> str:
        """``[12.10%, 14.02%]``, or empty for an exact gate."""
        if self.interval is None:
            return ""
        return f"[{self.show(self.interval.low)}, {self.show(self.interval.high)}]"

    @property
    def margin(self) -> str:
        """How far beyond the threshold a FAIL is: e.g. ``"by 3.10 pp"`` or ``"by +4,096 bytes"``; else empty."""
        if self.verdict != FAIL:
            return ""
        if self.measured is None or not np.isfinite(self.measured):
            return "not measurable"
        excess = self.measured - self.threshold
        if self.unit == "%":
            return f"by {100 * excess:.2f} pp"
        if self.unit == "x":
            return f"by {excess:.2f}x"
        return f"by {excess:+,.0f} {self.unit}".rstrip()

    def record(self) -> dict[str, object]:
        """JSON-ready, with the values as printed (``measured_text``, ``threshold_text``, ``interval_text``)."""
        kind, reason = self.judgement
        return {**asdict(self), "verdict": kind, "reason": reason, "passed": self.passed, "margin": self.margin,
                "measured_text": self.show(self.measured), "threshold_text": self.show(self.threshold),
                "interval_text": self.interval_text, "floor_text": self.floor_text}


def _estimate(round_medians: Mapping[Hashable, np.ndarray], statistic: Statistic) -> tuple[float | None,
                                                                                            Interval | None]:
    """``statistic`` of the series' mean round medians, and its bootstrap interval (None under two rounds)."""
    rounds = min(len(m) for m in round_medians.values())
    interval = bootstrap(round_medians, statistic) if rounds >= 2 else None
    return statistic(estimates(round_medians)), interval


def timing_gate(name: str, config: str, round_medians: Mapping[Hashable, np.ndarray], statistic: Statistic,
                limit: float, unit: str = "%", floor: Statistic | None = None, floor_name: str = "floor") -> Gate:
    """An ``at most limit`` gate on ``statistic`` of the series' round medians, with its bootstrap interval;
    ``floor``: the same quantity with the window's stores at the memory floor, over the same series and rounds."""
    measured, interval = _estimate(round_medians, statistic)
    if floor is None:
        return Gate(name, config, measured, limit, "<=", unit, interval)
    floor_value, floor_interval = _estimate(round_medians, floor)
    return Gate(name, config, measured, limit, "<=", unit, interval,
                np.inf if floor_value is None else floor_value, floor_interval, floor_name)


def overhead(verify_w: float, verify_0: float) -> float | None:
    """Relative slowdown of the windowed call; None (undefined) where ``verify_0`` timed at zero (a timer coarser
    than the call: see docs/benchmark.md)."""
    if verify_0 <= 0:
        return None
    return (verify_w - verify_0) / verify_0


def overhead_gates(config: str, verify: Mapping[int, np.ndarray]) -> list[Gate]:
    """The W=1 and W=4 overhead gates for one (dtype, shape, T), from the round medians by window (W=0 required)."""
    found = []
    for w, limit in OVERHEAD_LIMITS.items():
        if w in verify:
            def statistic(v: Mapping[Hashable, float], w: int = w) -> float | None:
                return overhead(v[w], v[0])

            found.append(timing_gate(f"W={w} overhead vs W=0", config, {0: verify[0], w: verify[w]}, statistic,
                                     limit))
    return found


PStarInputs = tuple[Mapping[Hashable, np.ndarray], Statistic, Statistic]
"""The round medians of the series p* depends on, p* as a statistic of them, and p* at the memory floor."""


def p_star_gates(config: str, seq_len: int, by_window: Mapping[int, PStarInputs], floor: str = SERIAL) -> list[Gate]:
    """The in-kernel p* gates for one (dtype, shape, T) (none where T = 1): per window, its series, p* on GPU time
    and floor p* (of the ``floor`` of ``FLOORS``)."""
    if seq_len <= 1:
        return []
    return [timing_gate(f"in-kernel p* W={w}", config, medians, p_star, P_STAR_LIMIT, floor=floor_p_star,
                        floor_name=_floor_name(floor))
            for w, (medians, p_star, floor_p_star) in sorted(by_window.items()) if w in P_STAR_WINDOWS]


def store_ratio_gates(config: str, seq_len: int,
                      by_window: Mapping[int, tuple[Mapping[Hashable, np.ndarray], Statistic]],
                      floor: str = SERIAL) -> list[Gate]:
    """The stores-vs-floor gates for one (dtype, shape, T): per window ``2 <= W <= T`` of ``P_STAR_WINDOWS``, the
    series and ``(verify_W - verify_0) / floor`` (of the ``floor`` of ``FLOORS``) as a statistic."""
    return [timing_gate(f"stores vs {_floor_name(floor)} W={w}", config, medians, ratio, STORE_RATIO_LIMIT, unit="x")
            for w, (medians, ratio) in sorted(by_window.items()) if w in P_STAR_WINDOWS and w <= seq_len]


def _floor_name(floor: str) -> str:
    return "serial floor" if floor == SERIAL else "floor"


def decoder_p_star_gates(config: str, seq_len: int,
                         by_window: Mapping[int, tuple[Mapping[Hashable, np.ndarray], Statistic]]) -> list[Gate]:
    """The headline p* gates for one (dtype, shape, T) (none where T = 1): per window, the decoder's wall-clock
    series and p* as a statistic of them."""
    if seq_len <= 1:
        return []
    return [timing_gate(f"p* W={w}", config, medians, p_star, P_STAR_LIMIT)
            for w, (medians, p_star) in sorted(by_window.items()) if w in P_STAR_WINDOWS]


def memory_gates(config: str, expected: int, bound_bytes: int, growth: dict[str, int]) -> list[Gate]:
    """Live bytes equal to the declared bytes, and zero growth (the largest counter change)."""
    worst = max(growth.values(), key=abs)
    return [
        Gate("memory live bytes", config, float(bound_bytes), float(expected), "==", "bytes"),
        Gate("memory growth (bytes, buffers, allocations)", config, float(worst), 0.0, "==", ""),
    ]

"""The verdicts of SPEC §5: each gate with its measured value, threshold, PASS/FAIL and the margin.

Gates per (dtype, shape, T):

- ``W=1 overhead``: (verify_1 - verify_0) / verify_0 <= 5%;
- ``W=4 overhead``: (verify_4 - verify_0) / verify_0 <= 15%;
- ``p* W=4``, ``p* W=8`` (only where T > 1): the break-even rejection probability <= 20%
  (an undefined p* - selecting saves nothing - fails);

and per (dtype, shape, T, W): ``memory live bytes`` == the declared bytes, and ``memory growth``
== 0 (live bytes, live buffers and allocations over many select-and-resume cycles).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

OVERHEAD_LIMITS = {1: 0.05, 4: 0.15}
"""Window -> largest allowed slowdown of verify_W relative to verify_0."""

P_STAR_LIMIT = 0.20
P_STAR_WINDOWS = (4, 8)


@dataclass(frozen=True)
class Gate:
    """One verdict. ``measured`` is None when it could not be measured (which fails the gate)."""

    name: str
    config: str
    measured: float | None
    threshold: float
    comparison: str
    """``"<="`` or ``"=="``."""
    unit: str
    """``"%"`` (values are fractions, shown as percent), ``"bytes"``, or ``""`` (a plain count)."""

    @property
    def passed(self) -> bool:
        if self.measured is None:
            return False
        if self.comparison == "<=":
            return self.measured <= self.threshold
        return self.measured == self.threshold

    def show(self, value: float | None) -> str:
        if value is None:
            return "undefined"
        if self.unit == "%":
            return f"{100 * value:.2f}%"
        return f"{value:,.0f} {self.unit}".rstrip()

    @property
    def margin(self) -> str:
        """How far from the threshold: e.g. ``"by 3.10 pp"`` or ``"by 4,096 bytes"``; empty on a pass."""
        if self.passed:
            return ""
        if self.measured is None:
            return "not measurable"
        excess = self.measured - self.threshold
        if self.unit == "%":
            return f"by {100 * excess:.2f} pp"
        return f"by {excess:+,.0f} {self.unit}".rstrip()

    def record(self) -> dict[str, object]:
        """JSON-ready, with the values as printed (``measured_text``, ``threshold_text``)."""
        return {**asdict(self), "passed": self.passed, "margin": self.margin,
                "measured_text": self.show(self.measured), "threshold_text": self.show(self.threshold)}


def overhead(verify_w: float, verify_0: float) -> float:
    """Relative slowdown of the windowed call."""
    return (verify_w - verify_0) / verify_0


def overhead_gates(config: str, verify: dict[int, float]) -> list[Gate]:
    """The W=1 and W=4 overhead gates for one (dtype, shape, T), from p50 by window (W=0 required)."""
    return [
        Gate(f"W={w} overhead vs W=0", config, overhead(verify[w], verify[0]), limit, "<=", "%")
        for w, limit in OVERHEAD_LIMITS.items() if w in verify
    ]


def p_star_gates(config: str, seq_len: int, p_star: dict[int, float | None]) -> list[Gate]:
    """The p* gates for one (dtype, shape, T), from p* by window (none where T = 1)."""
    if seq_len <= 1:
        return []
    return [Gate(f"p* W={w}", config, p_star[w], P_STAR_LIMIT, "<=", "%") for w in P_STAR_WINDOWS if w in p_star]


def memory_gates(config: str, expected: int, bound_bytes: int, growth: dict[str, int]) -> list[Gate]:
    """Live bytes equal to the declared bytes, and zero growth (the largest counter change)."""
    worst = max(growth.values(), key=abs)
    return [
        Gate("memory live bytes", config, float(bound_bytes), float(expected), "==", "bytes"),
        Gate("memory growth (bytes, buffers, allocations)", config, float(worst), 0.0, "==", ""),
    ]

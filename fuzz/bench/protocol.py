"""The measurement protocol of docs/spec.md §5: warm-ups, measured iterations, repetitions, percentiles.

A *sampler* is any function ``sample(n) -> n timings in nanoseconds``; ``run_protocol`` calls it
once with ``warmups`` (discarded) and then with ``iterations``, ``repetitions`` times over. Every
repetition repeats its own warm-ups, so the repetitions are independent measurements. Percentiles
are taken over the pooled samples of all repetitions; each repetition's p50 is kept to show the
spread between them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

Sampler = Callable[[int], np.ndarray]
"""``sample(n)`` runs ``n`` measured operations and returns ``n`` durations in nanoseconds."""


@dataclass(frozen=True)
class Protocol:
    """How many warm-ups, measured iterations and repetitions; ``batch`` sizes pipelined wall samples."""

    warmups: int = 20
    iterations: int = 200
    repetitions: int = 3
    batch: int = 20
    """Calls per sample of the pipelined wall clock (calls submitted back to back, one fence)."""

    def __post_init__(self) -> None:
        for name in ("warmups", "iterations", "repetitions", "batch"):
            if getattr(self, name) < 1:
                raise ValueError(f"Protocol: {name} must be >= 1, got {getattr(self, name)}")


FULL = Protocol()
"""docs/spec.md §5 as written: 20 warm-ups, 200 measured iterations, 3 repetitions."""

QUICK = Protocol(warmups=10, iterations=50, repetitions=3, batch=10)
"""The reduced protocol of ``--quick`` (a software adapter, a couple of minutes)."""


@dataclass(frozen=True)
class Timing:
    """The result of one protocol run: which clock, and the samples of each repetition (ns)."""

    clock: str
    repetitions: tuple[tuple[float, ...], ...]

    @property
    def pooled(self) -> np.ndarray:
        return np.concatenate([np.asarray(r, dtype=np.float64) for r in self.repetitions])

    @property
    def p50(self) -> float:
        return float(np.percentile(self.pooled, 50))

    @property
    def p95(self) -> float:
        return float(np.percentile(self.pooled, 95))

    @property
    def repetition_p50s(self) -> list[float]:
        return [float(np.percentile(r, 50)) for r in self.repetitions]

    def summary(self) -> dict[str, object]:
        """JSON-ready: clock, p50/p95 in microseconds, per-repetition p50s, sample count."""
        return {
            "clock": self.clock,
            "p50_us": self.p50 / 1e3,
            "p95_us": self.p95 / 1e3,
            "repetition_p50_us": [v / 1e3 for v in self.repetition_p50s],
            "samples": int(self.pooled.size),
        }


def chunked(sample: Sampler, size: int) -> Sampler:
    """``sample`` called in chunks of at most ``size`` (a timestamp query set holds at most 4096 queries)."""

    def run(n: int) -> np.ndarray:
        return np.concatenate([sample(min(size, n - start)) for start in range(0, n, size)])

    return run


def run_protocol(protocol: Protocol, clock: str, sample: Sampler, iterations: int | None = None) -> Timing:
    """Warm up and measure ``protocol.repetitions`` times; ``iterations`` overrides the protocol's count."""
    count = protocol.iterations if iterations is None else iterations
    runs = []
    for _ in range(protocol.repetitions):
        sample(protocol.warmups)
        samples = np.asarray(sample(count), dtype=np.float64)
        if samples.shape != (count,):
            raise RuntimeError(f"run_protocol: sampler returned {samples.shape} samples, expected ({count},)")
        runs.append(tuple(samples.tolist()))
    return Timing(clock, tuple(runs))


def protocol_dict(protocol: Protocol) -> dict[str, int]:
    """The protocol as JSON-ready numbers."""
    return asdict(protocol)


GPU_CLOCK = "gpu-timestamp"
"""Kernel time between a compute pass's beginning and end timestamps (no host in the loop)."""

FENCED_CLOCK = "wall-fenced"
"""Host wall time of one call plus a readback that waits for the queue: a per-call round trip."""

HOST_CLOCK = "host"
"""Host wall time of a CPU-only operation (e.g. creating a bind group): nothing to wait for."""

PIPELINED_CLOCK = "wall-pipelined"
"""Host wall time of ``batch`` calls submitted back to back and one fence, divided by ``batch``."""


def fenced_wall_sampler(step: Callable[[], None], fence: Callable[[], None]) -> Sampler:
    """Samples of one ``step`` followed by ``fence``, timed on the host (``FENCED_CLOCK``)."""

    def sample(n: int) -> np.ndarray:
        times = np.empty(n)
        for i in range(n):
            start = time.perf_counter_ns()
            step()
            fence()
            times[i] = time.perf_counter_ns() - start
        return times

    return sample


def pipelined_wall_sampler(step: Callable[[], None], fence: Callable[[], None], batch: int) -> Sampler:
    """Samples of ``batch`` steps and one fence, per step (``PIPELINED_CLOCK``)."""

    def sample(n: int) -> np.ndarray:
        times = np.empty(n)
        for i in range(n):
            start = time.perf_counter_ns()
            for _ in range(batch):
                step()
            fence()
            times[i] = (time.perf_counter_ns() - start) / batch
        return times

    return sample


def paired_wall_sampler(first: Callable[[], None], second: Callable[[], None], fence: Callable[[], None],
                        batch: int) -> Sampler:
    """Samples of ``first`` minus ``second`` on the pipelined wall clock, per step: each sample times a batch of
    each (``batch`` steps, then ``fence``) back to back, in alternating order, so that drift of the host between
    samples cancels in the difference and neither step always goes first."""
    def timed(step: Callable[[], None]) -> float:
        start = time.perf_counter_ns()
        for _ in range(batch):
            step()
        fence()
        return (time.perf_counter_ns() - start) / batch

    def sample(n: int) -> np.ndarray:
        times = np.empty(n)
        for i in range(n):
            if i % 2:
                later = timed(second)
                times[i] = timed(first) - later
            else:
                earlier = timed(first)
                times[i] = earlier - timed(second)
        return times

    return sample


def wall_timings(protocol: Protocol, step: Callable[[], None], fence: Callable[[], None]) -> dict[str, Timing]:
    """Both wall clocks of one operation under ``protocol`` (the same number of calls measured in each)."""
    return {
        FENCED_CLOCK: run_protocol(protocol, FENCED_CLOCK, fenced_wall_sampler(step, fence)),
        PIPELINED_CLOCK: run_protocol(protocol, PIPELINED_CLOCK, pipelined_wall_sampler(step, fence, protocol.batch),
                                      iterations=max(1, protocol.iterations // protocol.batch)),
    }

"""Runs `lafuzz campaign` in this process (give `-j 1`) with every backend call timed, then prints, per backend and
per kind of backend object (in process, or crash-isolated), the calls, their seconds, the calls over 40 ms (those
that compiled a shader, started a worker or restarted one) and the median, then the slowest calls of the ORT builds:

    .venv/bin/python docs/results/2026-12-03-first-run-bounds/call_times.py campaign -j 1 --seed 4215104394 --time 90s
"""

import atexit
import sys
import time
from collections import Counter

from fuzz.campaign import unit

CALLS: list[tuple[str, str, float, str]] = []


def _timed(method):  # type: ignore[no-untyped-def]
    def run(self, case, *args, **kwargs):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        try:
            return method(self, case, *args, **kwargs)
        finally:
            CALLS.append((self.name, type(self.inner).__name__, time.perf_counter() - started, case.summary()))
    return run


def report() -> None:
    for (name, kind), _ in sorted(Counter((n, k) for n, k, _, _ in CALLS).items()):
        took = sorted(d for n, k, d, _ in CALLS if (n, k) == (name, kind))
        slow = [d for d in took if d > 0.04]
        print(f"{name} [{kind}]: {len(took)} calls, {sum(took):.1f} s; {len(slow)} over 40 ms: {sum(slow):.1f} s; "
              f"median {1000 * took[len(took) // 2]:.1f} ms")
    for took, name, case in sorted((d, n, s) for n, _, d, s in CALLS if n.startswith("ort-"))[-12:]:
        print(f"  {took:.2f} s {name} {case}")


unit.CountingBackend.run = _timed(unit.CountingBackend.run)
unit.CountingBackend.run_chain = _timed(unit.CountingBackend.run_chain)
atexit.register(report)

from fuzz.cli import main  # noqa: E402  (after the calls are wrapped)

sys.exit(main(sys.argv[1:]))

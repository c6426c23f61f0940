"""Per-call costs of the worker-process builds, each in one process: its start, a new model (session and run),
the same model again, a W = 3 case in prefix mode (one run of a prefix model), a crash and the next case (a fresh
worker). Run from the repository root: .venv/bin/python docs/results/2026-12-03-web-builds/costs.py ort-node ..."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.append("tests")

from support.ort_cases import fixed_case

from fuzz.backends import Backend, Crashed, create


def seconds(call: Callable[[], Any]) -> float:
    started = time.monotonic()
    call()
    return time.monotonic() - started


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def crashes(backend: Backend) -> bool:
    try:
        backend.run(fixed_case("linear", layout="inverse").with_attrs(kv_num_heads=0))
    except Crashed:
        return True
    return False


def measure(name: str) -> str:
    started = time.monotonic()
    b = create(name)
    start = time.monotonic() - started
    new = [seconds(lambda i=i: b.run(fixed_case("gated_delta", layout="inverse", seed=i, d=8 + 8 * i)))
           for i in range(3)]
    again = [seconds(lambda i=i: b.run(fixed_case("gated_delta", layout="inverse", seed=10 + i))) for i in range(5)]
    prefix_new = seconds(lambda: b.run(fixed_case("delta", window=3, layout="inverse", seed=1)))
    prefix = [seconds(lambda i=i: b.run(fixed_case("delta", window=3, layout="inverse", seed=20 + i)))
              for i in range(5)]
    started = time.monotonic()
    crashed = crashes(b)
    crash = time.monotonic() - started
    after = seconds(lambda: b.run(fixed_case("linear", layout="inverse")))
    b.close()
    return (f"{name}: start {start:.2f} s; new model (session + run) median {median(new):.3f} s; same model again "
            f"median {median(again) * 1000:.1f} ms; W = 3 prefix case: new {prefix_new:.3f} s, again median "
            f"{median(prefix) * 1000:.1f} ms; kv_num_heads = 0 {'crashed' if crashed else 'did not crash'} in "
            f"{crash:.2f} s; next case (fresh worker) {after:.2f} s")


if __name__ == "__main__":
    for backend_name in sys.argv[1:]:
        print(measure(backend_name))

"""How far the GatedDeltaNet kernels stand from the float64 oracle over drawn cases: each property of
``fuzz.engine.gdn_checks`` on ``N`` derandomized examples per kernel backend, the worst error/tolerance ratio per
tensor. Usage: ``.venv/bin/python docs/results/2026-12-06-gated-delta-net/agreement.py [N]`` from the checkout."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz import environment
from fuzz.backends import Backend, create
from fuzz.engine.checking import CheckResult
from fuzz.engine.gdn_checks import check_gdn_agree, check_gdn_resume, check_replay_agree
from fuzz.model.case import Case
from fuzz.ops.gated_delta_net.strategies import gdn_cases
from fuzz.ops.state_replay.strategies import replay_cases

Check = Callable[[Case, Sequence[Backend]], CheckResult]


def measure(label: str, strategy: st.SearchStrategy[Case], check: Check, backends: list[Backend], n: int) -> str:
    worst: dict[str, float] = {}
    counts = [0, 0]
    start = time.perf_counter()

    @settings(max_examples=n, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(case: Case) -> None:
        result = check(case, backends)
        counts[0] += 1
        counts[1] += result.comparisons
        for part, ratio in result.parts.items():
            who, _, tensor = part.partition("|")
            if who != "oracle":
                key = "resumed state" if tensor.startswith("state after") else tensor
                worst[key] = max(worst.get(key, 0.0), ratio)

    run()
    ratios = ", ".join(f"{k} {v:.3g}" for k, v in worst.items())
    return f"{label}: {counts[0]} cases, {counts[1]} comparisons, {time.perf_counter() - start:.1f} s; worst {ratios}"


def main(n: int) -> None:
    environment.prepare()
    oracle = create("oracle")
    for name in ("wgpu-gdn", "wgpu-gdn-dawn"):
        kernel = create(name)
        runs: list[tuple[str, Any, Check, list[Backend]]] = [
            ("gdn-backends-agree", gdn_cases(), check_gdn_agree, [oracle, kernel]),
            ("gdn-resume", gdn_cases(capture=True, dtypes=("float32",)), check_gdn_resume, [kernel]),
            ("replay-agree", replay_cases(), check_replay_agree, [oracle, kernel]),
        ]
        for label, strategy, check, backends in runs:
            print(f"{name} {measure(label, strategy, check, backends, n)}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)

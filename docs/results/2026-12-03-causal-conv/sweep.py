"""CausalConvWithState drawn cases on ORT's CPU and WebGPU EPs and the ONNX reference, against the oracle.

Run from the repository root: ``.venv/bin/python docs/results/2026-12-03-causal-conv/sweep.py [N]``. Draws N cases
(derandomized, so the same N gives the same cases) at W = 0 and N with W > 0 (served through prefix mode), from
``ConvLimits.ci()`` with ndim 1 (what ORT runs), and counts per backend: agreed with the oracle under the suite's
tolerance model, unsupported (with the reason), crashed, and disagreeing, each with the documented issue that
covers it, if any. The WebGPU EP runs crash-isolated.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from dataclasses import replace

import numpy as np
from hypothesis import HealthCheck, given, settings

from fuzz import environment

environment.prepare()

from fuzz.backends import BackendError, Unsupported, create  # noqa: E402
from fuzz.corpus.classifier import Classifier  # noqa: E402
from fuzz.engine.compare import MismatchError, assert_agrees_with_oracle  # noqa: E402
from fuzz.ops.causal_conv.strategies import ConvLimits  # noqa: E402
from fuzz.ops.causal_conv.testing import TESTING as CAUSAL_CONV_TESTING  # noqa: E402


def drawn(n: int, min_window: int, max_window: int) -> list:
    cases = []
    limits = replace(ConvLimits.ci(), ndims=(1,), max_window=max_window)

    @settings(max_examples=n, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(CAUSAL_CONV_TESTING.cases(limits, min_window=min_window))
    def collect(case) -> None:
        cases.append(case)

    collect()
    return cases


def main(n: int) -> None:
    backends = [create("ort-cpu"), create("ort-webgpu", isolate=True), create("onnx-reference")]
    classifier = Classifier.for_backends(backends)
    for label, cases in (("W = 0", drawn(n, 0, 0)), ("W > 0", drawn(n, 1, 8))):
        print(f"{label}: {len(cases)} cases ({sum(c.dtype == np.float16 for c in cases)} float16)")
        for backend in backends:
            counts: Counter = Counter()
            worst = 0.0
            started = time.perf_counter()
            for case in cases:
                known = classifier.affecting(backend.name, case)
                tag = f" [{known.id}]" if known else ""
                try:
                    result = backend.run(case)
                except Unsupported as err:
                    counts[f"unsupported: {err.message.splitlines()[0][:70]}"] += 1
                    continue
                except BackendError as err:
                    counts[f"{err.outcome.value}{tag}"] += 1
                    continue
                try:
                    worst = max(worst, *assert_agrees_with_oracle(case, (np.asarray(result[0]), np.asarray(result[1]))))
                    counts[f"agreed{tag}"] += 1
                except MismatchError:
                    counts[f"disagreed{tag}"] += 1
            seconds = time.perf_counter() - started
            print(f"  {backend.name:<15} {dict(sorted(counts.items()))}  worst agreeing ratio {worst:.3g}, "
                  f"{seconds:.1f} s")
        print()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 500)

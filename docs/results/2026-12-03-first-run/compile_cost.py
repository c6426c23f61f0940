"""Cold and warm cost of the kernel's pipelines in one process: the first call of each head size (it
compiles its geometry class) against the second. Run with an empty cache for cold figures:

    LAFUZZ_CACHE_DIR=$(mktemp -d) .venv/bin/python docs/results/2026-12-03-first-run/compile_cost.py wgpu 4,64,256

(``LP_NATIVE_VECTOR_WIDTH=256`` for lavapipe's full SIMD width, ``PREFILL=chunked`` for the chunked prefill.)
CPU time is the whole process's (lavapipe compiles on its own threads), so a busy machine inflates it less
than wall time."""

import os
import resource
import sys
import time

import numpy as np

from fuzz import environment

environment.prepare()

from kernels.linear_attention import linear_attention  # noqa: E402  (after the environment is set)


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def call(implementation: str, d: int, rng: np.random.Generator) -> None:
    x = rng.standard_normal((1, 1, d)).astype(np.float32)
    linear_attention(x, x, x, q_num_heads=1, kv_num_heads=1, update_rule="linear", implementation=implementation,
                     path="workgroup" if implementation == "wgpu" else "auto",
                     prefill=os.environ.get("PREFILL", "token"))


def main() -> None:
    implementation, sizes = sys.argv[1], [int(s) for s in sys.argv[2].split(",")]
    rng = np.random.default_rng(0)
    call(implementation, 2, rng)  # the device, outside the figures
    total = 0.0
    for d in sizes:
        c0, w0 = cpu(), time.perf_counter()
        call(implementation, d, rng)
        c1, w1 = cpu(), time.perf_counter()
        call(implementation, d, rng)
        c2 = cpu()
        total += (c1 - c0) - (c2 - c1)
        print(f"{implementation} d={d}: first call {c1 - c0:.2f} s CPU ({w1 - w0:.2f} s wall), "
              f"second {1000 * (c2 - c1):.1f} ms CPU")
    print(f"compiling: {total:.1f} s CPU ({os.environ.get('LP_NATIVE_VECTOR_WIDTH')}-bit SIMD)")


if __name__ == "__main__":
    main()

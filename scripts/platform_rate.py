"""The WGSL kernels' rate and compile cost on several WebGPU platforms, over one fixed set of cases.

Each named backend runs the same float32 cases (a grid of head sizes, lengths and rules for LinearAttention; of
channels and lengths for the convolution; or, with ``--large``, three LinearAttention calls at models' sizes):
once cold (the pass that compiles its pipelines), then ``--rounds`` times warm. Every answer is checked against
the float64 oracle. One line per backend: pipelines compiled and the seconds of the calls that compiled them, the
cold pass, the warm rate in cases per second, and the worst error/tolerance ratio. For a cold compile on lavapipe
too, run with ``MESA_SHADER_CACHE_DISABLE=true``::

    PYTHONPATH=. nice .venv/bin/python scripts/platform_rate.py --backends wgpu,wgpu-swiftshader,wgpu-conv
"""

from __future__ import annotations

import argparse
import time
from itertools import product

from fuzz import environment
from fuzz.backends import Backend, Unsupported, create
from fuzz.campaign.unit import CountingBackend
from fuzz.engine.compare import assert_agrees_with_oracle
from fuzz.model.case import Case
from fuzz.ops.causal_conv.strategies import ConvLayout, ConvShape, build_conv_case
from fuzz.ops.linear_attention.strategies import Layout, Numerics, Shape, build_case

NUMERICS = Numerics(magnitude="unit", keys="normalised", decay="moderate", beta="uniform", seed=1)


def la_cases() -> list[Case]:
    """LinearAttention: head sizes across the kernel's geometry classes, decode and a short prefill, two rules."""
    cases = []
    for d, t, rule in product((4, 16, 33, 64, 128), (1, 8), ("linear", "gated_delta")):
        gated = rule == "gated_delta"
        shape = Shape(batch=1, seq_len=t, q_heads=2, kv_heads=2, key_heads=2, d_k=d, d_v=d, state_window=2)
        layout = Layout(update_rule=rule, dtype="float32", decay_per_row=False if gated else None,
                        beta_shared=False if gated else None, has_past=True, scale=None)
        cases.append(build_case(shape, layout, NUMERICS))
    return cases


def large_cases() -> list[Case]:
    """LinearAttention at the sizes models use: heads of 128 and 256, a long call of small heads."""
    cases = []
    for d, heads, t in ((128, 8, 16), (256, 2, 64), (32, 8, 256)):
        shape = Shape(batch=2, seq_len=t, q_heads=heads, kv_heads=heads, key_heads=heads, d_k=d, d_v=d, state_window=2)
        layout = Layout(update_rule="gated_delta", dtype="float32", decay_per_row=False, beta_shared=False,
                        has_past=True, scale=None)
        cases.append(build_case(shape, layout, NUMERICS))
    return cases


def conv_cases() -> list[Case]:
    """CausalConvWithState: a hybrid layer's channel counts, decode and a short prefill, kernel size 4."""
    cases = []
    for channels, t in product((4, 64, 1024), (1, 8)):
        shape = ConvShape(batch=1, seq_len=t, state_window=2, ndim=1, channels_last=False, channel_shape=(channels,),
                          spatial=(), kernel=(4,), dilation=1)
        layout = ConvLayout(activation="silu", dtype="float32", has_bias=True, has_past=True, write_defaults=False)
        cases.append(build_conv_case(shape, layout, NUMERICS))
    return cases


def measure(backend: Backend, cases: list[Case], rounds: int) -> str:
    """One line: what ``backend`` compiled, its cold pass, its warm rate and its worst ratio over ``cases``."""
    counted = CountingBackend(backend)
    runnable = [c for c in cases if c.op.name in backend.capabilities().ops]
    worst = 0.0
    started = time.perf_counter()
    for case in runnable:
        try:
            worst = max(worst, *assert_agrees_with_oracle(case, counted.run(case), label=backend.name))
        except Unsupported:
            continue
    cold = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(rounds):
        for case in runnable:
            counted.run(case)
    warm = time.perf_counter() - started
    return (f"{backend.name:24} {len(runnable):3} cases  {counted.compiled:3} pipelines compiled in "
            f"{counted.compile_seconds:6.2f} s  cold pass {cold:6.2f} s  warm {rounds * len(runnable) / warm:7.1f} "
            f"cases/s  worst ratio {worst:.3g}  [{backend.capabilities().device}]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="wgpu,wgpu-swiftshader,wgpu-conv,wgpu-conv-swiftshader")
    parser.add_argument("--rounds", type=int, default=3, help="warm passes over the cases (default 3)")
    parser.add_argument("--large", action="store_true", help="LinearAttention at models' sizes instead of the grid")
    args = parser.parse_args()
    environment.prepare()
    cases = large_cases() if args.large else la_cases() + conv_cases()
    for name in args.backends.split(","):
        backend = create(name.strip())
        try:
            print(measure(backend, cases, args.rounds), flush=True)
        finally:
            backend.close()


if __name__ == "__main__":
    main()

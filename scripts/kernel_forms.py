"""Every form of the LinearAttention kernel on one adapter, against the oracle: the reductions, the GPU's wide
geometry (32 row groups, staged checkpoint stores), the chunked prefill and the specialised pipelines, at head sizes
from 4 to 256. Whether a platform compiles and runs all of them, where its backends run only some (SwiftShader's
takes ``auto`` alone; docs/platforms.md). One line per form: ``ok`` and the worst error/tolerance ratio, or the error.

    VK_DRIVER_FILES=/usr/lib/chromium/vk_swiftshader_icd.json PYTHONPATH=. nice .venv/bin/python \\
        scripts/kernel_forms.py --adapter SwiftShader
"""

from __future__ import annotations

import argparse
from typing import Any

from fuzz import environment
from fuzz.engine.compare import assert_agrees_with_oracle
from fuzz.ops.linear_attention.strategies import Layout, Numerics, Shape, build_case
from kernels.linear_attention import linear_attention
from kernels.options import WIDE_ROW_GROUPS, KernelOptions

FORMS: dict[str, dict[str, Any]] = {
    "auto": {}, "workgroup": {"path": "workgroup"}, "scalar": {"path": "scalar"},
    "wide": {"max_row_groups": WIDE_ROW_GROUPS}, "chunked": {"prefill": "chunked"}, "specialised": {"specialise": True},
}
"""Each form as the ``KernelOptions`` fields that select it."""

SIZES = ((4, 3), (33, 70), (128, 5), (256, 2))
"""``(d, T)``: a small head, a long call past two chunks, the sizes models use (staged in the wide geometry)."""


def check(adapter: str, form: dict[str, Any]) -> float:
    """The worst ratio of one form over ``SIZES`` (gated delta rule, per-row decay, W = 2); raises on a mismatch."""
    options = KernelOptions("wgpu", adapter, **form)
    numerics = Numerics(magnitude="unit", keys="normalised", decay="moderate", beta="uniform", seed=3)
    layout = Layout(update_rule="gated_delta", dtype="float32", decay_per_row=True, beta_shared=False, has_past=True,
                    scale=None)
    worst = 0.0
    for d, t in SIZES:
        shape = Shape(batch=1, seq_len=t, q_heads=2, kv_heads=2, key_heads=2, d_k=d, d_v=d, state_window=2)
        case = build_case(shape, layout, numerics)
        worst = max(worst, *assert_agrees_with_oracle(case, linear_attention(**case.kwargs(), options=options)))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adapter", required=True, help="text the adapter's name contains")
    args = parser.parse_args()
    environment.prepare()
    for name, form in FORMS.items():
        try:
            print(f"{name:12} ok, worst ratio {check(args.adapter, form):.4g}", flush=True)
        except Exception as err:  # a form the platform refuses or gets wrong is this script's answer
            print(f"{name:12} {type(err).__name__}: {str(err).splitlines()[0]}", flush=True)


if __name__ == "__main__":
    main()

"""LinearAttention in an upstream report (``EXPORT``): its layouts, sizes and tolerance depth in the schema's words.

repro.py locates a LinearAttention element by its heads (``D_V`` values wide), so no axis names are given.
"""

from __future__ import annotations

from typing import Any

from fuzz.export.op_export import OpExport
from fuzz.model.case import Case


def _layouts(d: Any) -> dict[str, str]:
    return {
        "query": "(B, T, H_q*d_k)",
        "key": "(B, T, n_k*d_k)",
        "value": "(B, T, H_kv*d_v)",
        "past_state": "(W, B, H_kv, d_k, d_v)" if d.state_window else "(B, H_kv, d_k, d_v)",
        "decay": "per key row (B, T, H_kv*d_k)" if d.decay_per_row else "per head (B, T, H_kv)",
        "beta": "shared (B, T, 1)" if d.beta_shared else "per head (B, T, H_kv)",
    }


def _sizes(d: Any) -> str:
    return (f"Sizes: B={d.batch}, T={d.seq_len}, H_q={d.q_heads}, H_kv={d.kv_heads}, n_k={d.key_heads}, "
            f"d_k={d.d_k}, d_v={d.d_v}, W={d.state_window}, effective scale={d.scale:.6g}.")


def _symbolic_shapes(case: Case) -> dict[str, tuple[str, ...]]:
    slot = ("B", "H_kv", "d_k", "d_v")
    return {"output": ("B", "T", "H_out_times_d_v"), "present_state": ("W", *slot) if case.state_window else slot}


EXPORT = OpExport(
    axis_names=lambda d: {},
    layouts=_layouts,
    sizes=_sizes,
    depth_words=lambda depth: f"T + d_k = {depth}",
    symbolic_shapes=_symbolic_shapes,
)

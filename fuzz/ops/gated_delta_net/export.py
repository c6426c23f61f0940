"""GatedDeltaNet in an upstream report (``EXPORT``): its three outputs' axes, its layouts, sizes and tolerance depth.

The capsule (``state_update``) is specified only over each request's captured prefix: its reference holds NaN
past it, and repro.py compares the specified entries alone.
"""

from __future__ import annotations

import numpy as np

from fuzz.export.op_export import OpExport
from fuzz.model.case import Case
from fuzz.model.ops import GATED_DELTA_NET
from fuzz.ops.gated_delta_net.tolerance import exact_gdn_answer, gdn_depth, worst_ratio
from oracles.gated_delta_net import GdnDims

TOKEN_AXES = {1: ["token"], 2: ["request", "position"]}
"""The token axes of ``output`` by their count: ``(N,)`` or ``(B, S)``."""


def _axis_names(d: GdnDims) -> dict[str, list[str]]:
    return {"output": [*TOKEN_AXES[len(d.token_shape)], "value head", "value column"],
            "final_state": ["request", "value head", "d_v row", "d_k column"],
            "state_update": ["request", "row element"]}


def _layouts(d: GdnDims) -> dict[str, str]:
    """The schema's layouts (``Op.layouts``), the query's and the decay's as this call spells them."""
    tokens = "(B, S" if len(d.token_shape) == 2 else "(N"
    spelled = {"query": f"{tokens}, 2*H_q*d_k + H_v*d_v) packed" if d.packed else f"{tokens}, H_q, d_k)",
               "key": f"{tokens}, H_k, d_k)", "value": f"{tokens}, H_v, d_v)",
               "decay": f"{tokens}, H_v, d_k) per key" if d.decay_per_key else f"{tokens}, H_v) per head",
               "beta": f"{tokens}, H_v)", "initial_state": "(B, H_v, d_v, d_k)"}
    return {**GATED_DELTA_NET.layouts, **spelled}


def _sizes(d: GdnDims) -> str:
    captured = f", captured per request {d.captured}" if d.capacity and d.capture_active else ""
    return (f"Sizes: B={d.batch}, N={d.total_tokens} (requests of {', '.join(map(str, d.lengths))} tokens), "
            f"H_q=H_k={d.q_heads}, H_v={d.v_heads}, d_k={d.d_k}, d_v={d.d_v}, capacity C={d.capacity}{captured}, "
            f"effective scale={d.scale:.6g}.")


def _disagreement(case: Case, outputs: tuple[np.ndarray, ...]) -> tuple[float, str]:
    """The worst error/tolerance ratio of ``outputs`` against the oracle, over the entries the contract specifies
    (as ``gdn-backends-agree`` judges them), and its element in words."""
    answer, dims = exact_gdn_answer(case.inputs, case.attrs), case.dims()
    worst, where = 0.0, "every element is exact"
    for name, actual in zip(case.op.outputs, outputs, strict=True):
        values, block = answer.part(name)
        if np.shape(actual) != values.shape:
            return float("inf"), f"{name} has shape {np.shape(actual)}, expected {values.shape}"
        ratio, flat = worst_ratio(actual, values, block, answer.stores[name], gdn_depth(dims))
        if ratio > worst:
            index = np.unravel_index(flat, values.shape)
            axes = ", ".join(f"{axis} {int(i)}" for axis, i in zip(_axis_names(dims)[name], index, strict=True))
            worst, where = ratio, f"{name}[{', '.join(str(int(i)) for i in index)}] ({axes})"
    return worst, where


def _symbolic_shapes(case: Case) -> dict[str, tuple[str, ...]]:
    """``output`` keeps the query's token axes (all but its last two, or its last one for packed QKV: no key and
    no value); the state and the capsule have theirs."""
    packed = "key" not in case.inputs and "value" not in case.inputs
    tokens = ("B", "S") if case.inputs["query"].ndim == (3 if packed else 4) else ("N",)
    return {"output": (*tokens, "H_v", "d_v"), "final_state": ("B", "H_v", "d_v", "d_k"),
            "state_update": ("B", "row_width")}


EXPORT = OpExport(
    axis_names=_axis_names,
    layouts=_layouts,
    sizes=_sizes,
    depth_words=lambda depth: f"the longest request's tokens + d_k + d_v = {depth}",
    symbolic_shapes=_symbolic_shapes,
    unspecified=("state_update",),
    disagreement=_disagreement,
)

"""The exact answer to a GatedDeltaNet call and the magnitudes its tolerances scale with.

The model is the suite's one (``fuzz.engine.tolerance.Budget``: half an ulp of the stored type, plus
``4 * depth * eps(float32) * (|exact| + block)``, plus underflow). What is particular to this op:

``depth``
    The longest request's tokens plus ``d_k`` plus ``d_v``: one state update per token, and the dot products of
    retrieval (over ``d_k``) and of the delta (over ``d_v``) behind each element.
``block``
    The tensor's largest exact magnitude (over the entries the contract specifies): the gates are computed inside
    the op and the state is float32 whatever the inputs' type, so an element that cancels to a small value still
    carries the rounding of the terms of its tensor's size. A wrong head, entry or token is off by the values' own
    size, far past it.

``final_state`` and the capsule are float32; ``output`` has the inputs' type. The capsule's entries past each
request's captured prefix are unspecified: NaN in the exact answer, never compared.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from fuzz.engine.tolerance import Budget, array_digest, remembered
from oracles.gated_delta_net import GdnDims, gated_delta_net, validate


@dataclass(frozen=True)
class TensorAnswer:
    """The float64 answers of an op whose outputs are compared one tensor at a time, by name."""

    tensors: Mapping[str, np.ndarray]
    stores: Mapping[str, np.dtype]
    """The type each output is stored in."""

    def part(self, tensor: str) -> tuple[np.ndarray, np.ndarray]:
        """``(values, block)`` of one output: the block is its largest specified magnitude, everywhere."""
        values = self.tensors[tensor]
        specified = ~np.isnan(values)
        magnitude = float(np.abs(values[specified]).max(initial=0.0))
        return values, np.full(values.shape, magnitude)

    @property
    def peak(self) -> float:
        return max((float(np.nanmax(np.abs(x), initial=0.0)) for x in self.tensors.values()), default=0.0)


def worst_ratio(actual: np.ndarray, values: np.ndarray, block: np.ndarray, store: np.dtype,
                depth: int) -> tuple[float, int]:
    """The largest error/tolerance ratio over the entries ``values`` specifies (not NaN), and where (flat index);
    a non-finite result where the answer is specified is an infinite ratio."""
    actual = np.asarray(actual, np.float64).reshape(values.shape)
    specified = ~np.isnan(values)
    exact = np.where(specified, values, 0.0)
    tolerance = Budget(storages=(np.dtype(store),), depth=depth).tolerance(exact, block)
    ratios = np.where(specified, np.abs(actual - exact) / np.maximum(tolerance, np.finfo(np.float64).tiny), 0.0)
    ratios = np.where(specified & ~np.isfinite(actual), np.inf, ratios)
    if not ratios.size:
        return 0.0, 0
    where = int(np.argmax(ratios))
    return float(ratios.flat[where]), where


def gdn_depth(dims: GdnDims) -> int:
    """Sequential operations behind one element: the longest request's tokens, ``d_k`` and ``d_v``."""
    return max(dims.lengths) + dims.d_k + dims.d_v


def exact_gdn_answer(inputs: dict[str, Any], attrs: dict[str, Any]) -> TensorAnswer:
    """The float64 oracle's outputs of one valid call, by output name (remembered by content)."""
    dims = validate(**inputs, **attrs)
    named = sorted(inputs.items())

    def answer() -> TensorAnswer:
        output, final, capsule = gated_delta_net(**inputs, **attrs)
        f32 = np.dtype(np.float32)
        return TensorAnswer({"output": output, "final_state": final, "state_update": capsule},
                            {"output": dims.dtype, "final_state": f32, "state_update": f32})

    return remembered(array_digest(f"GatedDeltaNet {dims!r} {sorted(attrs.items())!r}", named), answer)

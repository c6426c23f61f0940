"""Error bounds of the WGSL kernel against the float64 oracle: the one place they are stated.

The kernel reads inputs in their storage type, widens them exactly to f32, runs the whole
recurrence in f32 and rounds each stored value once to the storage type. The oracle runs the same
(widened) inputs in float64. So the error of every stored element is:

- the f32 computation error: a few units of f32 rounding (2^-24 ~ 6e-8) per accumulation step,
  over d_k-long dot products and T tokens, bounded here by ``F32_RELATIVE`` = 1e-5 times the
  largest magnitude of the reference tensor (the output, or the state), which holds with a wide
  margin for the well-conditioned inputs the tests draw (measured: ~1e-7);
- for float16 only, one rounding of the stored value: at most half an fp16 ulp, i.e.
  ``2^-11 * |value|`` for normal numbers and ``2^-25`` (half the subnormal spacing) below them.
"""

from __future__ import annotations

import numpy as np

F32_RELATIVE = 1e-5
"""f32 computation error, relative to the largest magnitude of the reference tensor."""

F16_ROUNDING = 2.0**-11
"""Half an fp16 ulp, relative: the one rounding of each stored float16 value."""

F16_SUBNORMAL_ROUNDING = 2.0**-25
"""Half the fp16 subnormal spacing: the absolute rounding error near zero."""


def error_bound(reference: np.ndarray, dtype: np.dtype | str) -> np.ndarray:
    """Element-wise bound on ``|kernel - oracle|`` for a tensor stored in ``dtype``."""
    reference = np.abs(np.asarray(reference, dtype=np.float64))
    computation = F32_RELATIVE * (float(reference.max()) if reference.size else 0.0)
    if np.dtype(dtype) == np.float16:
        rounding = F16_ROUNDING * (reference + computation) + F16_SUBNORMAL_ROUNDING
        return computation + rounding
    return np.full(reference.shape, computation)


def worst_ratio(actual: np.ndarray, reference: np.ndarray, dtype: np.dtype | str) -> float:
    """``max(|actual - reference| / bound)``: within bounds iff <= 1 (0 for exact agreement)."""
    error = np.abs(np.asarray(actual, dtype=np.float64) - np.asarray(reference, dtype=np.float64))
    bound = error_bound(reference, dtype)
    if not error.size:
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(error == 0, 0.0, error / bound)
    return float(np.nan_to_num(ratio, nan=np.inf).max())

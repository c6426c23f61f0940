"""The tolerance model of the suite: the only place tolerances are decided.

Every comparison of a result (the properties, the campaign, the tests through
``fuzz.engine.compare.assert_agrees_with_oracle``) takes its tolerance from ``Budget`` here, with
the magnitudes of the op's exact answer (``fuzz/ops/<op>/tolerance.py``, for LinearAttention ``Exact``);
no other module states a bound.

Derivation
----------
Each result is compared with the exact answer, which the float64 oracle gives (its own error,
``~1e-16`` relative, is negligible). A result may deviate from it by the sum of four terms:

``rounding``
    Half a unit in the last place of the stored type at the exact value: a result stored in
    fp16 (or fp32) is rounded once (docs/spec.md §2: each slot rounded once to the state's type).
    ``np.spacing`` gives the unit, subnormals included, so tiny fp16 answers get the absolute
    resolution of the format and no more.
``accumulation``
    ``ACCUMULATION_FACTOR * depth * eps(compute) * (|exact| + block)``. The recurrence runs in
    float32 for fp32 and fp16 inputs (docs/spec.md §2 allows f32 for fp16), float64 for the oracle.
    ``depth = tokens + d_k`` counts the sequential operations behind one element: one state
    update per token and a ``d_k``-long dot product in retrieval and readout. ``block`` is the
    magnitude of the terms behind the element (``Exact``: the running size of the update terms
    of its head, times ``scale * |q|`` for an output), because a sum that cancels to a small value
    still carries the rounding errors of its large terms. Worst-case bounds (``tokens * d_k``) are
    orders of magnitude looser than any correct float32 implementation; the linear bound with
    factor 4 keeps half an fp16 ulp the dominant term for fp16, so a result rounded twice
    (about one ulp off) is still caught.
``underflow``
    ``ACCUMULATION_FACTOR * depth * smallest_normal(compute)``: an operation whose result falls
    below the smallest normal number keeps only an absolute accuracy, and WGSL lets an
    implementation flush subnormal inputs and outputs of float operations to zero (WGSL §15.7.2),
    so such a result may lose all of itself. Negligible for normal values (about ``1e-37`` for
    float32); it keeps results in the float32 subnormal range from being reported as mismatches
    (the cases that showed it: docs/findings.md). The same loss on a
    *state* reaches an output multiplied by ``scale * |q|``: so the state magnitude behind every
    block is at least ``UNDERFLOW_FLOOR`` (float32's smallest normal over its epsilon), and the
    accumulation term (``eps * block``) then carries ``scale * |q| * smallest_normal`` per operation
    (a large query reading a subnormal state: docs/findings.md).
``reseeded``
    Only for results that resumed from a stored slot (select-and-resume, or a call continuing the
    state an earlier call stored): the slot was rounded to the stored type before the next call
    read it, so ``eps(storage) * block`` more.

Two results compared with each other (backend against backend) may deviate by the sum of their
own budgets. NaN never passes unless every side is NaN where the exact answer is; an infinity
must match the exact answer's infinity; a finite exact answer demands finite results. Bitwise
comparisons (poison invariance, aliasing) and exact zeros (leading slots) have no tolerance.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

ACCUMULATION_FACTOR = 4.0
"""Multiplier of the per-operation rounding error in the accumulation term (see module docstring)."""

COMPUTE_DTYPE: dict[np.dtype, np.dtype] = {
    np.dtype(np.float16): np.dtype(np.float32),
    np.dtype(np.float32): np.dtype(np.float32),
    np.dtype(np.float64): np.dtype(np.float64),
}
"""The arithmetic precision assumed behind a result of each stored type."""

UNDERFLOW_FLOOR = float(np.finfo(np.float32).smallest_normal / np.finfo(np.float32).eps)
"""Least state magnitude behind a block: ``eps(float32) * floor`` is float32's smallest normal number,
what one operation on a state may lose to underflow (flushed to zero); a readout multiplies that by
``scale * |q|``."""


def eps(dtype: np.dtype) -> float:
    """Machine epsilon of a float type."""
    return float(np.finfo(dtype).eps)


ANSWERS_KEPT = 8
"""Exact answers remembered by each op's exact answer (a case is answered when it is drawn, for its overflow
check, and again by every check of it: the oracle runs once)."""

_ANSWERS: OrderedDict[bytes, Any] = OrderedDict()

Answer = TypeVar("Answer")


def remembered(digest: bytes, compute: Callable[[], Answer]) -> Answer:
    """The answer remembered under ``digest`` (a digest of everything it depends on, the op included), or
    ``compute()``'s, remembered among the last ``ANSWERS_KEPT`` of any op."""
    if digest in _ANSWERS:
        _ANSWERS.move_to_end(digest)
        return _ANSWERS[digest]
    answer = compute()
    _ANSWERS[digest] = answer
    if len(_ANSWERS) > ANSWERS_KEPT:
        _ANSWERS.popitem(last=False)
    return answer


def array_digest(head: str, arrays: Iterable[tuple[str, np.ndarray | None]]) -> bytes:
    """A digest of ``head`` (the op and its validated sizes) and of named arrays: names, shapes, dtypes, bytes."""
    digest = hashlib.blake2b(head.encode(), digest_size=20)
    for name, array in arrays:
        if array is not None:
            digest.update(f"{name}{array.shape}{array.dtype.str}".encode())
            digest.update(np.ascontiguousarray(array).data)
    return digest.digest()


@dataclass(frozen=True)
class Budget:
    """What the tolerance of one comparison is made of, for computing it and explaining it."""

    storages: tuple[np.dtype, ...]
    """Stored type of each side compared against the exact answer (float64 = the oracle)."""
    depth: int
    reseeded: np.dtype | None = None
    """The stored type a resumed call's seed passed through, if it resumed from a stored slot."""

    def tolerance(self, exact: np.ndarray, block: np.ndarray) -> np.ndarray:
        """Per-element tolerance: the sum over the sides of rounding + accumulation + underflow (+ reseed)."""
        absolute = np.where(np.isfinite(exact), np.abs(exact), 0.0)
        total = np.zeros_like(absolute)
        for side in self.storages:
            storage = np.dtype(side)
            stored = np.minimum(absolute, np.finfo(storage).max).astype(storage)
            with np.errstate(over="ignore"):  # the spacing at the type's largest value is infinite: anything goes
                total += 0.5 * np.spacing(stored).astype(np.float64)
            compute = COMPUTE_DTYPE[storage]
            total += ACCUMULATION_FACTOR * self.depth * eps(compute) * (absolute + block)
            total += ACCUMULATION_FACTOR * self.depth * float(np.finfo(compute).smallest_normal)
            if self.reseeded is not None:
                total += eps(self.reseeded) * block
        return total

    def describe(self) -> str:
        reseed = f" + eps({np.dtype(self.reseeded).name})*block (reseeded)" if self.reseeded is not None else ""
        sides = " + ".join(
            f"[{np.dtype(s).name}: half-ulp + {ACCUMULATION_FACTOR:g}*{self.depth}*"
            f"eps({COMPUTE_DTYPE[np.dtype(s)].name})"
            f"*(|exact|+block) + underflow{reseed}]"
            for s in self.storages
        )
        return f"depth={self.depth} tokens+d_k; {sides}"

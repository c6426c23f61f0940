"""Three ways to roll a recurrent layer back after a rejected draft, and what each costs (pure math).

After a verify call over ``T`` draft tokens rejects with ``a`` tokens accepted (``0 <= a < T``), the state after
those ``a`` tokens is needed:

- **window** ``W`` (LinearAttention's ``state_window``): the call stored its last ``W`` states; it holds the one
  after ``a`` tokens when ``T - W < a``, and restoring is selecting that slot;
- **capsule** ``C`` (GatedDeltaNet's capture, docs/spec.md §8-9): the call recorded its first ``min(C, T)``
  transitions; it holds ``a <= C`` tokens, and restoring is replaying ``a`` entries over the source state;
- **rerun**: nothing is kept but the source state; restoring is a call over the ``a`` accepted tokens.

Every design keeps the source state (``a = 0`` costs nothing in any), and any ``a`` a design does not hold costs a
rerun in it too. So against rerunning, a design saves only on the accepted lengths it holds, and the request's
break-even rejection rate is ``p* = (verify_design - verify_0) / E[rerun(a) - restore(a) | rejection]``
(``fuzz.bench.rollback``'s p*, with each design's own held lengths).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .rollback import Acceptance, break_even, represented_rejections
from .workload import Shape

WINDOW, CAPSULE, RERUN = "window", "capsule", "rerun"

CAPSULE_DTYPE = np.dtype(np.float32)
"""The capsule is float32 whatever the call's dtype (docs/spec.md §8)."""

LAYERS = 30
"""Recurrent layers of the request's memory figure (docs/spec.md §5)."""


@dataclass(frozen=True)
class Design:
    """One rollback design: its kind and its size (``W`` of a window, ``C`` of a capsule, 0 for a rerun)."""

    kind: str
    size: int = 0

    def __post_init__(self) -> None:
        if self.kind not in (WINDOW, CAPSULE, RERUN) or (self.kind == RERUN) != (self.size == 0) or self.size < 0:
            raise ValueError(f"design: a window or capsule of size >= 1, or a rerun of size 0; got {self}")

    @property
    def label(self) -> str:
        return RERUN if self.kind == RERUN else f"{self.kind} {'W' if self.kind == WINDOW else 'C'}={self.size}"

    def held(self, seq_len: int) -> list[int]:
        """The accepted lengths ``1 <= a < T`` this design restores without a rerun."""
        if self.kind == WINDOW:
            return represented_rejections(seq_len, self.size)
        return [a for a in range(1, seq_len) if a <= self.size] if self.kind == CAPSULE else []

    def bytes_per_layer(self, shape: Shape, dtype: str) -> int:
        """What the design keeps per layer beyond the source state: ``W`` state slots in the call's dtype, ``C``
        capsule entries of ``H_v + H_k d_k + H_v d_v`` float32 per request (here ``H_k = H_q = H_v``), or nothing."""
        b, h, d_k, d_v = shape.slot_shape()
        if self.kind == WINDOW:
            return self.size * b * h * d_k * d_v * np.dtype(dtype).itemsize
        if self.kind == CAPSULE:
            return self.size * b * (h + shape.q_heads * d_k + h * d_v) * CAPSULE_DTYPE.itemsize
        return 0


def expected_restore(design: Design, seq_len: int, rerun: Mapping[int, float], restore: Mapping[int, float],
                     acceptance: Acceptance) -> float:
    """E[cost of restoring | rejection]: ``restore[a]`` where the design holds ``a``, ``rerun[a]`` for any other
    ``a >= 1``, nothing for ``a = 0``."""
    held = set(design.held(seq_len))
    probabilities = acceptance.probabilities(seq_len)
    return float(sum(probabilities[a] * (restore[a] if a in held else rerun[a]) for a in range(1, seq_len)))


def saving(design: Design, seq_len: int, rerun: Mapping[int, float], restore: Mapping[int, float],
           acceptance: Acceptance) -> float:
    """E[rerun(a) - restore(a) | rejection]: what the design saves per rejection against rerunning."""
    plain = expected_restore(Design(RERUN), seq_len, rerun, {}, acceptance)
    return plain - expected_restore(design, seq_len, rerun, restore, acceptance)


def p_star(design: Design, seq_len: int, verify: float, verify_0: float, rerun: Mapping[int, float],
           restore: Mapping[int, float], acceptance: Acceptance) -> float | None:
    """The design's break-even rejection rate; None where it saves nothing (a rerun, or ``T = 1``)."""
    return break_even(verify, verify_0, saving(design, seq_len, rerun, restore, acceptance))

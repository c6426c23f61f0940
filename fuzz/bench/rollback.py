"""The rollback value of the window: the break-even rejection probability p* of docs/spec.md §5 (pure math).

    p* = (verify_W - verify_0) / E[prefix_rerun - checkpoint_select | rejection]

verify_W is the p50 kernel time of the W-window call over T draft tokens, verify_0 the same at
W = 0. On a rejection with ``a`` accepted tokens (0 <= a < T; a = T is no rejection):

- without a window the caller reruns the accepted prefix: a W = 0 call over ``a`` tokens from the
  original past state (a = 0 costs nothing extra: the original past state is kept);
- with a window it selects a slot: one GPU slot copy (for a = 0, nothing).

The expectation runs over the acceptance distribution restricted to a < T. Only accepted
lengths the window represents (T - W < a) count: an unrepresented length needs a rerun in both
cases, so it contributes 0 to the difference (as does a = 0). With a rejection probability p, the
window pays for itself when p * E[...] > verify_W - verify_0, i.e. when p > p*.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Acceptance:
    """The distribution of accepted tokens ``a`` given a rejection (``0 <= a < T``).

    ``uniform``: a is uniform on 0..T-1. ``geometric`` with acceptance rate ``r``: each draft token
    is accepted with probability r independently, so P(a) ∝ r^a (1 - r), renormalised over a < T.
    """

    kind: str = "uniform"
    rate: float | None = None

    def __post_init__(self) -> None:
        if self.kind == "uniform" and self.rate is None:
            return
        if self.kind != "geometric" or self.rate is None or not 0.0 < self.rate < 1.0:
            raise ValueError(f"acceptance: 'uniform' or 'geometric:r' with 0 < r < 1, got {self.label}")

    @classmethod
    def parse(cls, text: str) -> Acceptance:
        """``uniform`` or ``geometric:R`` (e.g. ``geometric:0.7``)."""
        kind, _, rate = text.partition(":")
        try:
            return cls(kind, float(rate) if rate else None)
        except ValueError as err:
            raise ValueError(f"acceptance {text!r}: expected 'uniform' or 'geometric:R' with 0 < R < 1") from err

    @property
    def label(self) -> str:
        return self.kind if self.rate is None else f"{self.kind}:{self.rate:g}"

    def probabilities(self, seq_len: int) -> np.ndarray:
        """P(a | rejection) for a = 0..T-1."""
        if seq_len < 1:
            raise ValueError(f"acceptance: T must be >= 1, got {seq_len}")
        if self.rate is None:
            return np.full(seq_len, 1.0 / seq_len)
        weights = self.rate ** np.arange(seq_len) * (1.0 - self.rate)
        return weights / weights.sum()


def represented_rejections(seq_len: int, window: int) -> list[int]:
    """Accepted lengths ``1 <= a < T`` that the window represents (``T - W < a``)."""
    return [a for a in range(1, seq_len) if a > seq_len - window]


def expected_saving(seq_len: int, window: int, rerun: Mapping[int, float], select: Mapping[int, float],
                    acceptance: Acceptance) -> float:
    """E[prefix_rerun - checkpoint_select | rejection] over ``acceptance``.

    ``rerun[a]`` and ``select[a]`` are the costs for each represented ``a``; every other accepted
    length (a = 0, or unrepresented) contributes 0.
    """
    probabilities = acceptance.probabilities(seq_len)
    return float(sum(probabilities[a] * (rerun[a] - select[a]) for a in represented_rejections(seq_len, window)))


def break_even(verify_w: float, verify_0: float, saving: float) -> float | None:
    """p* = (verify_W - verify_0) / saving; None when the saving is not positive (p* is undefined then:
    selecting never beats rerunning, so no rejection rate pays for the window)."""
    if saving <= 0:
        return None
    return (verify_w - verify_0) / saving

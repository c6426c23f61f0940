"""Holding one call of an op against another project's reference, through a case's mapping (``support.fla_cases``,
``support.causal_conv1d_cases``): the output and the final state, and each window slot against the reference's state
after that prefix (a slot that stands for no position must be exact zeros)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np


class MappedCase(Protocol):
    """What the comparison needs of a ported case."""

    @property
    def state_window(self) -> int: ...

    @property
    def positions(self) -> int: ...

    def reference(self, drawn: dict[str, np.ndarray], steps: int | None = None) -> tuple[np.ndarray, np.ndarray]: ...

    def from_op(self, output: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...


Check = Callable[[np.ndarray, np.ndarray, str], None]
"""``check(reference, actual, what)``: raises when ``actual`` is not close enough to ``reference``."""


def check_against_reference(case: MappedCase, drawn: dict[str, np.ndarray], output: np.ndarray,
                            present: np.ndarray, check: Check) -> None:
    """``output`` and ``present`` (the op's results for ``case.op_case(drawn)``) against the case's reference."""
    window = case.state_window
    o_ref, state_ref = case.reference(drawn)
    o, state = case.from_op(output, present[-1] if window else present)
    check(o_ref, o, "output")
    check(state_ref, state, "final state" if not window else f"slot {window - 1}")
    for j in range(window - 1):
        tokens = case.positions - window + j + 1
        if tokens < 1:
            assert not np.any(present[j]), f"slot {j} stands for no position of the call: it must be zeros"
            continue
        check(case.reference(drawn, tokens)[1], case.from_op(output, present[j])[1], f"slot {j}")


def tight(reference: np.ndarray, actual: np.ndarray, what: str) -> None:
    """Two float64 evaluations of one recurrence on the same inputs: equal but for the order of operations."""
    scale = max(1.0, float(np.max(np.abs(reference), initial=0.0)))
    np.testing.assert_allclose(actual, reference, rtol=1e-9, atol=1e-9 * scale, err_msg=what)

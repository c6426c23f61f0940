"""The expected data of the upstream C++ tests: each call's outputs from the float64 oracle, stored in the call's
type, and the tolerance ORT's ``OpTester`` applies to them.

``OpTester`` passes an element when ``|expected - actual| <= abs_error + rel_error * |expected|`` (numpy's
``isclose``); ``matches`` is that rule, so the replay judges a run as the C++ test would. The tolerances follow
ORT's own tests of these ops: float32 at ``1e-4`` (LinearAttention's recurrence) and ``1e-5`` (the convolution,
whose states are copies), float16 at a relative ``5e-3`` (about ten half-ulps), with an absolute floor small
enough that a float16 accumulation of the convolution's taps (a defect of the WebGPU EP) still fails.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fuzz.export.gtest_cases import GtestCase
from fuzz.model.case import Case
from fuzz.model.ops import CAUSAL_CONV, LINEAR_ATTENTION


@dataclass(frozen=True)
class Tolerance:
    """``AddOutput``'s ``rel_error`` and ``abs_error``."""

    rel: float
    abs: float


TOLERANCES: dict[tuple[str, str], Tolerance] = {
    (LINEAR_ATTENTION.name, "float32"): Tolerance(rel=1e-4, abs=1e-4),
    (LINEAR_ATTENTION.name, "float16"): Tolerance(rel=5e-3, abs=1e-3),
    (CAUSAL_CONV.name, "float32"): Tolerance(rel=1e-5, abs=1e-5),
    (CAUSAL_CONV.name, "float16"): Tolerance(rel=5e-3, abs=1e-4),
}


@dataclass(frozen=True)
class Expected:
    """What one call must return: ``output`` and ``present_state`` in the call's type, and their tolerance."""

    output: np.ndarray
    present_state: np.ndarray
    tolerance: Tolerance

    def outputs(self) -> dict[str, np.ndarray]:
        return {"output": self.output, "present_state": self.present_state}


def expected(case: Case, *, pass_through: bool = False) -> Expected:
    """The oracle's answer to ``case`` rounded once to its type; with ``pass_through`` (``T = 0``), an empty output
    and the past state (zeros when absent) unchanged."""
    tolerance = TOLERANCES[(case.op.name, str(case.dtype))]
    if pass_through:
        dims = case.op.validate(**case.kwargs(), allow_empty_sequence=True)
        past = case.inputs.get("past_state")
        state = past if past is not None else np.zeros(dims.state_shape, dtype=case.dtype)
        return Expected(np.zeros(dims.output_shape, dtype=case.dtype), state.copy(), tolerance)
    output, state = case.op.oracle(**case.kwargs())
    return Expected(output.astype(case.dtype), state.astype(case.dtype), tolerance)


def placeholder(case: Case) -> Expected:
    """Zeros to declare as a refused call's outputs (``OpTester`` needs outputs; it compares none when the run
    must fail): ``output`` shaped like the op's first input, ``present_state`` like ``past_state`` (one element
    without it). ORT merges a declared shape that disagrees with its inference leniently, with a warning."""
    lead = case.inputs[case.op.lead_input]
    past = case.inputs.get("past_state")
    state_shape = past.shape if past is not None else (1,)
    tolerance = TOLERANCES[(case.op.name, str(case.dtype))]
    return Expected(np.zeros(lead.shape, dtype=case.dtype), np.zeros(state_shape, dtype=case.dtype), tolerance)


def expectations(test: GtestCase) -> tuple[Expected, ...]:
    """What each call of ``test`` must return (placeholders for a refusal)."""
    if test.error is not None:
        return tuple(placeholder(call) for call in test.calls)
    return tuple(expected(call, pass_through=test.pass_through) for call in test.calls)


def matches(expected: np.ndarray, actual: np.ndarray, tolerance: Tolerance) -> str | None:
    """None when ``actual`` passes ``OpTester``'s check against ``expected``; else what is wrong, in a line."""
    if expected.shape != actual.shape:
        return f"shape {actual.shape}, expected {expected.shape}"
    want = expected.astype(np.float64)
    got = actual.astype(np.float64)
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(want - got) <= tolerance.abs + tolerance.rel * np.abs(want))
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"{int(bad.sum())} of {bad.size} elements off, first at {index}: {got[index]!r}, expected "
            f"{want[index]!r} (rel {tolerance.rel:g}, abs {tolerance.abs:g})")

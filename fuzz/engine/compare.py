"""Comparison of results under the tolerance model of ``fuzz.engine.tolerance``, and the report
that names the worst element of a failed comparison in the operator's own terms.

``element_ratios`` compares two arrays given the exact answer and its blocks (what the properties
call); ``assert_agrees_with_oracle`` and ``assert_results_agree`` compare whole results of a case
with the float64 oracle's exact answer or with each other (what the tests call), so no test
states a bound of its own.
"""

from __future__ import annotations

import builtins
import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from fuzz.engine.op_testing import exact_for, for_op
from fuzz.engine.tolerance import Budget
from fuzz.model.case import Case
from fuzz.ops.linear_attention.testing import la_locate

TENSORS = ("output", "present_state")
"""The two results of a call, in the operator's order."""

RATIO_CAP = 1e6
"""Ratios above this (or infinite) are reported as this to ``hypothesis.target``, which needs finite values."""


class Match(enum.Enum):
    """How strictly two results must agree."""

    CLOSE = "close"
    """Within the tolerance model."""
    BITWISE = "bitwise"
    """Every bit identical (NaN payloads included)."""
    EQUAL = "equal"
    """Numerically equal, no tolerance (``-0.0 == 0.0``; NaN never equal)."""


@dataclass(frozen=True)
class Mismatch:
    """The worst element of a failed comparison, located in the operator's own terms."""

    property: str
    backends: tuple[str, str]
    """``(actual side, expected side)``."""
    tensor: str
    """``"output"`` or ``"present_state"``."""
    reason: str
    """``"value"``, ``"nan"``, ``"non-finite"``, ``"bits"``, ``"not-equal"`` or ``"shape"``."""
    slot: int | None
    batch: int | None
    head: int | None
    row: int | None
    """Token (output) or key row ``0..d_k-1`` (state)."""
    col: int | None
    """Value column ``0..d_v-1``."""
    actual: float | None
    expected: float | None
    error: float | None
    tolerance: float | None
    ratio: float
    failing: int
    """How many elements fail (all of them for a shape mismatch)."""
    total: int
    case_summary: str
    tolerance_model: str
    actual_shape: tuple[int, ...] = ()
    expected_shape: tuple[int, ...] = ()
    coordinates: tuple[tuple[str, int], ...] = ()
    """The element's other coordinates in the op's terms, for an op other than LinearAttention (whose are
    ``head``, ``row``, ``col``): ``(("channel", 2), ("position", 5))``."""

    def where(self) -> str:
        """``slot s, batch b, head h, token t, col c`` (only the coordinates that apply)."""
        row = "token" if self.tensor == "output" else "key row"
        named = self.coordinates or (("head", self.head), (row, self.row), ("value col", self.col))
        parts = [("slot", self.slot), ("batch", self.batch), *named]
        return ", ".join(f"{name} {value}" for name, value in parts if value is not None)

    def facts(self) -> dict[str, Any]:
        """Where and by how much the comparison failed, as JSON-ready values (for findings and reports)."""
        facts: dict[str, Any] = {"pair": "/".join(self.backends), "tensor": self.tensor, "slot": self.slot,
                                 "reason": self.reason, "where": self.where(), "ratio": float(self.ratio)}
        for name in ("error", "tolerance", "actual", "expected"):
            value = getattr(self, name)
            facts[name] = None if value is None else float(value)
        return facts

    def report(self) -> str:
        """Readable multi-line account of the failure."""
        a, b = self.backends
        width = max(len(a), len(b))
        if self.reason == "shape":
            return "\n".join([
                f"[{self.property}] {self.tensor}: shape {self.actual_shape} from {a}, "
                f"{self.expected_shape} from {b}",
                f"  case: {self.case_summary}",
            ])
        lines = [
            f"[{self.property}] {self.tensor} of {a} vs {b}: {self.reason} mismatch at {self.where()}",
            f"  {a:>{width}} = {self.actual!r}",
            f"  {b:>{width}} = {self.expected!r}",
            f"  |error| = {self.error:.6g}, tolerance = {self.tolerance:.6g}, ratio = {self.ratio:.4g}; "
            f"{self.failing} of {self.total} compared elements fail",
            f"  tolerance model: {self.tolerance_model}",
            f"  case: {self.case_summary}",
        ]
        return "\n".join(lines)


class MismatchError(AssertionError):
    """A comparison failed; ``mismatch`` holds the worst element."""

    def __init__(self, mismatch: Mismatch) -> None:
        super().__init__(mismatch.report())
        self.mismatch = mismatch


@dataclass(frozen=True)
class Where:
    """Who is compared, for the report: the property, the two sides and the case."""

    property: str
    backends: tuple[str, str]
    case: str | Case
    """The case compared, or its summary line: a case is summarised only for the report of a failure (a
    summary validates the case again; nearly every comparison passes)."""

    @builtins.property  # the field ``property`` shadows the builtin in this class body
    def case_summary(self) -> str:
        return self.case if isinstance(self.case, str) else self.case.summary()


Locator = Callable[[tuple[int, ...]], dict[str, Any]]
"""An element's index -> its coordinates in the op's terms (``fuzz.engine.op_testing.OpTesting.locate``)."""


def _located(index: tuple[int, ...], locate: Locator) -> dict[str, Any]:
    """The ``Mismatch`` fields that say where an element is (those the op does not use stay None)."""
    fields: dict[str, Any] = {"slot": None, "batch": None, "head": None, "row": None, "col": None}
    fields.update(locate(index))
    if "coordinates" in fields:
        fields["coordinates"] = tuple(fields["coordinates"])
    return fields


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def _assess(actual: np.ndarray, expected: np.ndarray, exact: np.ndarray, match: Match,
            budget: Budget, block: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per element: ``(error, tolerance, ratio, reason code)``; reason 0 = passes."""
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.abs(a - e)
    reason = np.zeros(a.shape, dtype=np.int8)
    if match is Match.BITWISE:
        tolerance = np.zeros_like(error)
        if actual.dtype != expected.dtype:
            reason[...] = 4
        else:
            reason[_bits(actual) != _bits(expected)] = 4
    elif match is Match.EQUAL:
        tolerance = np.zeros_like(error)
        reason[~(a == e)] = 5
    else:
        tolerance = budget.tolerance(exact, block)
        exact_nan, exact_inf = np.isnan(exact), np.isinf(exact)
        exact_finite = np.isfinite(exact)
        # where the exact answer reaches the largest value a side stores, its tolerance is infinite and an infinity
        # of the exact answer's sign is what rounding to that type gives (float16 past 65504, say)
        overflows = exact_finite & np.isinf(tolerance)
        for side in (a, e):
            reason[(exact_nan != np.isnan(side)) & (reason == 0)] = 2
            rounded_up = overflows & (np.sign(side) == np.sign(exact))
            wrong_inf = (exact_inf & (side != exact)) | (exact_finite & np.isinf(side) & ~rounded_up)
            reason[wrong_inf & (reason == 0)] = 3
        finite = np.isfinite(a) & np.isfinite(e)
        reason[finite & (error > tolerance) & (reason == 0)] = 1
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = error / tolerance  # an overflow is an infinite ratio, which is what it means
    # a passing element never counts against the ratio (0/0, NaN where NaN is expected); a
    # non-value failure (NaN, Inf, bits, equality) has no finite ratio
    ratio = np.where((reason == 0) & ~np.isfinite(ratio), 0.0, ratio)
    ratio = np.where(reason > 1, np.inf, ratio)
    return error, tolerance, ratio, reason


def _passing_ratios(actual: np.ndarray, expected: np.ndarray, exact: np.ndarray, match: Match, budget: Budget,
                    block: np.ndarray, selected: np.ndarray | None) -> np.ndarray | None:
    """The ratios ``element_ratios`` returns when every selected element passes, in a few array passes;
    None when one may fail (or a value is not finite), for ``_assess`` to say which and why.

    Nearly every comparison passes, and a passing one needs no reason codes: bitwise and exact
    comparisons that hold have ratio 0 everywhere; a tolerance comparison of finite values (exact
    answer included, so no NaN or infinity is expected) fails only where ``error > tolerance``.
    """
    if match is not Match.CLOSE:
        if match is Match.BITWISE and actual.dtype != expected.dtype:
            return None
        same = _bits(actual) == _bits(expected) if match is Match.BITWISE else actual == expected
        return np.zeros(exact.shape) if (same if selected is None else same | ~selected).all() else None
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    if not (np.isfinite(exact).all() and np.isfinite(a).all() and np.isfinite(e).all()):
        return None
    error = np.abs(a - e)
    tolerance = budget.tolerance(exact, block)
    failing = error > tolerance
    if (failing if selected is None else failing & selected).any():
        return None
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = error / tolerance
    if not np.isfinite(ratio).all():
        return None
    return ratio if selected is None else np.where(selected, ratio, 0.0)


_REASONS = {1: "value", 2: "nan", 3: "non-finite", 4: "bits", 5: "not-equal"}


def assert_close(actual: np.ndarray, expected: np.ndarray, **options: Any) -> float:
    """Compare ``actual`` with ``expected``; return the largest error/tolerance ratio, or raise.

    The options are those of ``element_ratios``; raises ``MismatchError`` naming the worst element.
    """
    return float(element_ratios(actual, expected, **options).max(initial=0.0))


def element_ratios(
    actual: np.ndarray,
    expected: np.ndarray,
    *,
    exact: np.ndarray,
    block: np.ndarray,
    tensor: str,
    depth: int,
    where: Where,
    d_v: int = 1,
    locate: Locator | None = None,
    match: Match = Match.CLOSE,
    storages: Sequence[np.dtype] | None = None,
    reseeded: np.dtype | None = None,
    mask: np.ndarray | None = None,
) -> np.ndarray:
    """Compare ``actual`` with ``expected``; return the error/tolerance ratio of every element, or raise.

    ``exact`` is the float64 answer (the oracle's), which sets the tolerance and the NaN/Inf
    expectations, and ``block`` the magnitude of its terms (``Exact.part``). ``storages`` are the
    stored types whose budgets add up (default: the dtypes of ``actual`` and ``expected``);
    ``reseeded`` is the stored type a resumed seed passed through; ``mask`` (broadcastable)
    limits which elements are compared (the others get ratio 0). Raises ``MismatchError`` naming
    the worst element: by ``locate`` (the op's coordinates), or as a LinearAttention element whose
    heads are ``d_v`` wide.
    """
    actual, expected, exact = np.asarray(actual), np.asarray(expected), np.asarray(exact, dtype=np.float64)
    sides = tuple(np.dtype(s) for s in (storages or (actual.dtype, expected.dtype)))
    budget = Budget(sides, depth, None if reseeded is None else np.dtype(reseeded))
    if actual.shape != expected.shape or actual.shape != exact.shape:
        raise MismatchError(Mismatch(
            property=where.property, backends=where.backends, tensor=tensor, reason="shape",
            slot=None, batch=None, head=None, row=None, col=None, actual=None, expected=None, error=None,
            tolerance=None, ratio=np.inf, failing=int(exact.size), total=int(exact.size),
            case_summary=where.case_summary, tolerance_model=budget.describe(),
            actual_shape=actual.shape, expected_shape=expected.shape,
        ))
    block = np.broadcast_to(block, exact.shape)
    masked = None if mask is None else np.broadcast_to(mask, exact.shape)
    passing = _passing_ratios(actual, expected, exact, match, budget, block, masked)
    if passing is not None:
        return passing
    error, tolerance, ratio, reason = _assess(actual, expected, exact, match, budget, block)
    selected = np.ones(exact.shape, dtype=bool) if masked is None else masked
    ratio = np.where(selected, ratio, 0.0)
    failing = selected & (reason > 0)
    if not failing.any():
        return ratio
    worst = np.unravel_index(int(np.argmax(np.where(failing, ratio, -1.0))), exact.shape)
    raise MismatchError(Mismatch(
        property=where.property, backends=where.backends, tensor=tensor, reason=_REASONS[int(reason[worst])],
        **_located(tuple(int(i) for i in worst), locate or partial(la_locate, d_v, tensor)),
        actual=actual[worst].item(), expected=expected[worst].item(), error=float(error[worst]),
        tolerance=float(tolerance[worst]), ratio=float(ratio[worst]), failing=int(failing.sum()),
        total=int(selected.sum()), case_summary=where.case_summary,
        tolerance_model="bitwise identity" if match is Match.BITWISE
        else ("exact equality" if match is Match.EQUAL else budget.describe()),
    ))


Result = tuple[np.ndarray, np.ndarray]
"""``(output, present_state)`` of one call."""


def assert_agrees_with_oracle(case: Case, result: Result, *, label: str = "result",
                              resumed_at: int | None = None) -> tuple[float, float]:
    """``result``, an implementation's answer to ``case``, against the float64 oracle's exact answer.

    The budget is that of the case's stored type alone, over ``depth = T + d_k``. ``resumed_at``:
    the call continued, after that many tokens, from the state an earlier call stored (the
    ``reseeded`` term). Returns the worst error/tolerance ratio of ``(output, present_state)``;
    raises ``MismatchError`` (its message is the report) naming the worst element.
    """
    return _against_exact(case, [(label, result)], resumed_at)


def assert_results_agree(case: Case, first: Result, second: Result, *, labels: tuple[str, str],
                         resumed_at: int | None = None) -> tuple[float, float]:
    """Two answers to ``case`` (implementation against implementation) within the sum of their budgets.

    As ``assert_agrees_with_oracle``, with the oracle's exact answer still setting the tolerance
    and the NaN/Inf expectations.
    """
    return _against_exact(case, list(zip(labels, (first, second), strict=True)), resumed_at)


def _against_exact(case: Case, sides: list[tuple[str, Result]], resumed_at: int | None) -> tuple[float, float]:
    """Compare one labelled result with the exact answer, or two with each other; worst ratio per tensor."""
    dims = case.dims()
    summary = case.summary()
    op = for_op(case.op)
    for label, result in sides:
        for tensor, values in zip(TENSORS, result, strict=True):
            if values.dtype != case.dtype:
                raise AssertionError(f"{tensor} of {label} is {values.dtype}, not {case.dtype}; case: {summary}")
    exact = exact_for(case)
    if resumed_at is not None:
        exact = exact.reseeded_at(resumed_at, case.dtype)
    labels = (sides[0][0], sides[-1][0] if len(sides) == 2 else "oracle")
    where = Where("results-agree" if len(sides) == 2 else "agrees-with-oracle", labels, summary)
    worst = []
    for index, tensor in enumerate(TENSORS):
        values, block = exact.part(tensor)
        arrays = [result[index] for _, result in sides]
        ratios = element_ratios(
            arrays[0], arrays[-1] if len(arrays) == 2 else values, exact=values, block=block, tensor=tensor,
            depth=op.depth(dims, tensor, None), where=where, locate=partial(op.locate, dims, tensor),
            storages=[case.dtype] * len(arrays), reseeded=None if resumed_at is None else case.dtype,
        )
        worst.append(float(ratios.max(initial=0.0)))
    return worst[0], worst[1]

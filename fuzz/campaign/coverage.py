"""Coverage you can see: every axis of each op's contract cut into buckets, and the interactions where bugs hide.

``buckets(case)`` names the buckets one case falls in, as ``"axis: bucket"`` labels (also Hypothesis
``event()``s); ``universe()`` lists every bucket a campaign can reach, so a summary shows each one with
its count, zeros included, and names the buckets never reached. The ``op`` axis counts the cases of each
op; each op's own axes come from its package (``fuzz/ops/<op>/coverage.py``, its ``COVERAGE``) through the
registry; ``op_axes()`` says which axes are whose, ``reached_by_op`` counts each op's buckets.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from typing import cast

from fuzz.campaign.bucketing import OpCoverage
from fuzz.model.case import Case
from fuzz.model.ops import Op
from fuzz.model.pack import slice_of, slices
from fuzz.ops import registry


def coverage_of(op: Op | str) -> OpCoverage:
    """The coverage of ``op`` (an ``Op`` or its name): its package's ``COVERAGE``."""
    return cast(OpCoverage, registry.part(op, "coverage").COVERAGE)


@cache
def _op_axes(packages: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    return {op: tuple(coverage_of(op).axes) for op in registry.op_names()}


def op_axes() -> dict[str, tuple[str, ...]]:
    """Each registered op's own axes (the ``op`` axis is everyone's)."""
    return _op_axes(registry.PACKAGES)


@cache
def _universe(packages: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    axes = {axis: buckets for op in registry.op_names() for axis, buckets in coverage_of(op).axes.items()}
    return {"op": registry.op_names(), **axes}


def universe() -> dict[str, tuple[str, ...]]:
    """Every axis and its buckets: the ``op`` axis, then each registered op's axes."""
    return _universe(registry.PACKAGES)


def buckets(case: Case, *, chunked: bool = False) -> list[str]:
    """The ``"axis: bucket"`` labels of one case (an invalid case: its broken rule and dtype), its op first;
    ``chunked``: a chunked prefill checks the case (its chunks are then counted). A packed case's labels are those
    of its slices, the cases it checks (``fuzz.model.pack``: every slice has one shape)."""
    if slices(case) > 1:
        case = slice_of(case, 0)
    found = coverage_of(case.op).buckets(case, chunked)
    return [f"op: {case.op.name}", *(f"{axis}: {bucket}" for axis, bucket in found.items())]


def table(counts: Counter) -> dict[str, dict[str, int]]:
    """Every bucket of ``universe()`` with its count (zeros included), plus any label outside it, by axis."""
    rows = {axis: {bucket: 0 for bucket in names} for axis, names in universe().items()}
    for label, count in counts.items():
        axis, _, bucket = label.partition(": ")
        rows.setdefault(axis, {})[bucket] = rows.get(axis, {}).get(bucket, 0) + count
    return rows


def counted(label: str) -> bool:
    """Whether an ``"axis: bucket"`` label is one of ``universe()``'s buckets (those the progress line counts)."""
    axis, _, bucket = label.partition(": ")
    return bucket in universe().get(axis, ())


def reached(counts: Counter, axes: tuple[str, ...] | None = None) -> tuple[int, int]:
    """``(buckets reached, buckets)`` of ``axes`` (default: all of ``universe()``)."""
    chosen = {axis: universe()[axis] for axis in (axes or universe())}
    total = sum(len(names) for names in chosen.values())
    hit = sum(1 for axis, names in chosen.items() for b in names if counts.get(f"{axis}: {b}", 0))
    return hit, total


def axes_of(ops: list[str]) -> tuple[str, ...]:
    """The axes of a campaign of ``ops``: each op's own (what its progress line counts)."""
    return tuple(axis for op in ops for axis in op_axes()[op])


def reached_by_op(counts: Counter) -> dict[str, tuple[int, int]]:
    """Op name -> ``(buckets reached, buckets)`` of its own axes."""
    return {op: reached(counts, axes) for op, axes in op_axes().items()}


def never_reached(rows: dict[str, dict[str, int]]) -> list[str]:
    """The ``"axis: bucket"`` labels of ``universe()`` with a count of zero."""
    return [f"{axis}: {b}" for axis, names in universe().items() for b in names if not rows.get(axis, {}).get(b)]

"""What the coverage buckets of every op share: what an op's coverage is (``OpCoverage``), integer ranges as
buckets, and how a case binds its state."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from fuzz.model.case import Case


@dataclass(frozen=True)
class OpCoverage:
    """One op's coverage (its package's ``COVERAGE``): its axes, each with every bucket it has, and the buckets one
    case of the op falls in. Axis names are the campaign's, shared by every op: an op's are its own (the
    convolution's begin with ``conv``)."""

    axes: Mapping[str, tuple[str, ...]]
    buckets: Callable[[Case, bool], dict[str, str]]
    """``buckets(case, chunked)``: axis -> bucket of one case of the op (an invalid case: its broken rule and
    dtype); ``chunked``: a chunked prefill checked it."""


OPEN = 1 << 30
"""The upper edge of a last, open bucket."""


def in_range(value: int, edges: tuple[tuple[int, int], ...]) -> str:
    """The bucket of ``value`` among ``edges``: ``"3"``, ``"2-8"`` or ``"33+"``."""
    lo, hi = next(e for e in edges if e[0] <= value <= e[1])
    return str(lo) if lo == hi else (f"{lo}+" if hi == OPEN else f"{lo}-{hi}")


STATE_BINDINGS = ("no past", "past", "aliased past", "poisoned past")


def state_binding(case: Case) -> str:
    """How the case binds its state: one of ``STATE_BINDINGS``."""
    if case.poison:
        return "poisoned past"
    if case.aliased:
        return "aliased past"
    return "past" if "past_state" in case.inputs else "no past"

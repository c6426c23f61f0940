"""What the coverage buckets of every op share: integer ranges as buckets, and how a case binds its state."""

from __future__ import annotations

from fuzz.model.case import Case

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

"""Integer ranges as coverage buckets: ``(lowest, highest)`` edges, the last one possibly open."""

from __future__ import annotations

OPEN = 1 << 30
"""The upper edge of a last, open bucket."""


def in_range(value: int, edges: tuple[tuple[int, int], ...]) -> str:
    """The bucket of ``value`` among ``edges``: ``"3"``, ``"2-8"`` or ``"33+"``."""
    lo, hi = next(e for e in edges if e[0] <= value <= e[1])
    return str(lo) if lo == hi else (f"{lo}+" if hi == OPEN else f"{lo}-{hi}")

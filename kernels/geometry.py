"""The kernel's geometry as a caller that picks sizes sees it: which class a call's head sizes fall in.

A fuzzing campaign cuts its coverage along the kernel's geometry classes and draws head sizes on both
sides of their edges, where an off-by-one in the kernel would hide (``fuzz.campaign.coverage``,
``fuzz.campaign.swarm``). This is the description it needs, and all of it: how a call of given head sizes
splits the state (rows per invocation, row groups, tiles of ``d_v``), whether it stages its checkpoint
stores, and the chunk of the chunked prefill. How the kernel compiles a class (``kernels.shader.KernelSpec``)
stays the kernel's own business.

Two geometries exist: a device's whose subgroups are narrower than ``kernels.options.WIDE_ROW_GROUPS`` (a
software adapter such as lavapipe, and every device on the workgroup path), and a GPU's with subgroups of
32 (``wide``; lavapipe runs it only when asked, as the ``wgpu-wide`` backend does).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from .options import WIDE_ROW_GROUPS
from .shader import CHUNK_SIZE, MAX_ROW_GROUPS, KernelSpec

__all__ = ["CHUNK_SIZE", "MAX_D_K", "DkClass", "Geometry", "d_k_classes", "geometry"]

MAX_D_K = 256
"""Largest key head size (that of the ORT WebGPU EP); it bounds each invocation's private row block."""


@dataclass(frozen=True)
class Geometry:
    """How the kernel splits the state of a call of some head sizes."""

    rows_per_invocation: int
    """Rows of ``d_k`` each invocation keeps."""
    row_groups: int
    """Invocations sharing one column of the state."""
    d_v_tiles: int
    """Workgroups along ``d_v``."""
    staged_stores: bool
    """Checkpoint stores go through workgroup memory (only where more than 16 row groups share a column)."""


def geometry(d_k: int, d_v: int, *, dtype: str = "float32", wide: bool = False) -> Geometry:
    """The geometry of a call with head sizes ``d_k`` and ``d_v`` of ``dtype``, on a GPU's wide geometry or not."""
    spec = KernelSpec.for_sizes(dtype, d_k, d_v, WIDE_ROW_GROUPS if wide else MAX_ROW_GROUPS)
    return Geometry(rows_per_invocation=spec.rows_per_thread, row_groups=spec.row_groups,
                    d_v_tiles=-(-d_v // spec.columns), staged_stores=spec.staged_stores)


@dataclass(frozen=True)
class DkClass:
    """A run of key head sizes that split alike: ``lowest..highest`` inclusive."""

    lowest: int
    highest: int
    rows_per_invocation: int
    row_groups: int


@cache
def d_k_classes(*, wide: bool = False) -> tuple[DkClass, ...]:
    """Every class of ``d_k`` from 1 to ``MAX_D_K``, in order: where rows per invocation or row groups change."""
    classes: list[DkClass] = []
    for d_k in range(1, MAX_D_K + 1):
        split = geometry(d_k, 1, wide=wide)
        last = classes[-1] if classes else None
        if last is not None and (last.rows_per_invocation, last.row_groups) == (split.rows_per_invocation,
                                                                                split.row_groups):
            classes[-1] = DkClass(last.lowest, d_k, last.rows_per_invocation, last.row_groups)
        else:
            classes.append(DkClass(d_k, d_k, split.rows_per_invocation, split.row_groups))
    return tuple(classes)

"""The kernel's public geometry (``kernels.geometry``) says what its pipelines do: the same split of the state,
tiles and staging as the ``KernelSpec`` a call compiles, on either geometry."""

from __future__ import annotations

import itertools

import pytest

from kernels.geometry import MAX_D_K, d_k_classes, geometry
from kernels.options import WIDE_ROW_GROUPS
from kernels.shader import MAX_ROW_GROUPS, KernelSpec

SIZES = (1, 3, 4, 5, 8, 9, 16, 17, 33, 64, 65, 96, 128, 129, 192, 193, 255, 256)


@pytest.mark.parametrize("wide", [False, True])
def test_geometry_is_what_the_kernel_compiles(wide: bool) -> None:
    bound = WIDE_ROW_GROUPS if wide else MAX_ROW_GROUPS
    for dtype, d_k, d_v in itertools.product(("float32", "float16"), SIZES, SIZES):
        spec = KernelSpec.for_sizes(dtype, d_k, d_v, bound)
        split = geometry(d_k, d_v, dtype=dtype, wide=wide)
        assert (split.rows_per_invocation, split.row_groups, split.staged_stores) == \
            (spec.rows_per_thread, spec.row_groups, spec.staged_stores), (dtype, d_k, d_v)
        assert (split.d_v_tiles - 1) * spec.columns < d_v <= split.d_v_tiles * spec.columns, (dtype, d_k, d_v)
    staged = [d for d in SIZES if geometry(d, d, wide=wide).staged_stores]
    assert staged == ([d for d in SIZES if d > 64] if wide else []), "a GPU's geometry stages exactly above 64"


@pytest.mark.parametrize("wide", [False, True])
def test_d_k_classes_cover_every_size_once_and_change_at_each_edge(wide: bool) -> None:
    classes = d_k_classes(wide=wide)
    assert classes[0].lowest == 1 and classes[-1].highest == MAX_D_K
    for before, after in itertools.pairwise(classes):
        assert after.lowest == before.highest + 1
        assert (before.rows_per_invocation, before.row_groups) != (after.rows_per_invocation, after.row_groups)
    for c in classes:
        for d_k in (c.lowest, c.highest):
            split = geometry(d_k, 1, wide=wide)
            assert (split.rows_per_invocation, split.row_groups) == (c.rows_per_invocation, c.row_groups)

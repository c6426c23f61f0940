"""How many pipelines cover every geometry class of the token loop (each implementation, lavapipe's bound of 16 row
groups, the subgroup reduction where lavapipe's subgroups of 4 allow it) and of a GPU's geometry (32 row groups):

    .venv/bin/python docs/results/2026-12-03-first-run-bounds/geometry_classes.py
"""

from collections import Counter
from dataclasses import replace

from kernels.options import WIDE_ROW_GROUPS
from kernels.shader import KernelSpec

LAVAPIPE_SUBGROUP = 4
token, wide = set(), set()
for dtype in ("float32", "float16"):
    for d_k in range(1, 257):
        for d_v in range(1, 257):
            spec = KernelSpec.for_sizes(dtype, d_k, d_v)
            token.add(replace(spec, reduction="subgroup") if spec.row_groups <= LAVAPIPE_SUBGROUP else spec)
            wide.add(KernelSpec.for_sizes(dtype, d_k, d_v, WIDE_ROW_GROUPS))
print(f"token loop: {len(token)} classes; a GPU's geometry: {len(wide)}")
by_rows = Counter((s.dtype, s.rows_per_thread, s.row_groups) for s in token)
print("classes per (dtype, rows per invocation, row groups):", dict(sorted(by_rows.items())))

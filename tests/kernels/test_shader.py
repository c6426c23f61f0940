"""The WGSL a pipeline compiles: loops over an invocation's rows written out with constant indices, and a GPU's
geometry within WebGPU's default limits."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from kernels.shader import (
    MAX_INVOCATIONS,
    MAX_WORKGROUP_BYTES,
    SPECIALISED_FIELDS,
    UNROLL_MAX_ROWS,
    CallParams,
    KernelSpec,
    render,
    unroll_rows,
)


def test_a_loop_on_one_line_is_written_out_once_per_row() -> None:
    source = "    for (var k = 0u; k < RPT; k++) { s[k] = a * s[k]; }\n"
    assert unroll_rows(source, 3) == ("    { const k = 0u; s[k] = a * s[k]; } { const k = 1u; s[k] = a * s[k]; } "
                                      "{ const k = 2u; s[k] = a * s[k]; }\n")


def test_a_loop_over_several_lines_keeps_its_body_and_what_follows() -> None:
    source = "\n".join([
        "  for (var k = 0u; k < RPT; k++) {",
        "      let i = row0 + k;",
        "      if (i < DK) { x = x + s[k]; }",
        "  }",
        "  y = x;",
    ])
    body = ["      let i = row0 + k;", "      if (i < DK) { x = x + s[k]; }"]
    assert unroll_rows(source, 2).split("\n") == [
        "  { const k = 0u;", *body, "  }", "  { const k = 1u;", *body, "  }", "  y = x;"]


def test_other_loops_are_left_alone() -> None:
    source = "for (var t = 0u; t < seq_len; t++) { x = x + 1.0; }\nfor (var k = 0u; k < ROWG; k++) { y = k; }"
    assert unroll_rows(source, 4) == source


@pytest.mark.parametrize("source", [
    "for (var k = 0u; k < RPT; k++) { s[k] = 0.0;",
    "for (var k = 0u; k < RPT; k++) { if (i < DK) { s[k] = 0.0; }",
    "  for (var k = 0u; k < RPT; k++) {\n    s[k] = 0.0;\n}",
])
def test_a_loop_it_cannot_delimit_is_an_error(source: str) -> None:
    with pytest.raises(ValueError, match="line 1"):
        unroll_rows(source, 2)


@pytest.mark.parametrize(("d_k", "d_v", "row_groups"), [(3, 5, 16), (128, 128, 16), (128, 128, 32), (256, 64, 32)])
def test_every_token_loop_pipeline_indexes_its_rows_by_constants(d_k: int, d_v: int, row_groups: int) -> None:
    spec = KernelSpec.for_sizes("float32", d_k, d_v, row_groups)
    source = render(spec)
    assert re.search(r"^\s*for \(var \w+ = 0u; \w+ < RPT;", source, re.MULTILINE) is None
    assert f"const k = {spec.rows_per_thread - 1}u;" in source
    assert f"const k = {spec.rows_per_thread}u;" not in source


def test_rows_past_the_unroll_bound_keep_their_loops() -> None:
    spec = KernelSpec.for_sizes("float32", 256, 64, 2)
    assert spec.rows_per_thread > UNROLL_MAX_ROWS
    source = render(spec)
    assert re.search(r"^\s*for \(var \w+ = 0u; \w+ < RPT;", source, re.MULTILINE) is not None
    assert "const k =" not in source


def test_the_chunked_prefill_keeps_its_loops() -> None:
    spec = replace(KernelSpec.for_sizes("float32", 128, 128), chunked=True)
    assert "const k =" not in render(spec)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("d_v", [3, 8, 12, 16, 64, 67, 128, 256])
def test_a_gpu_geometry_fits_the_workgroup_limits(dtype: str, d_v: int) -> None:
    """At 32 row groups (a GPU's bound) every class fits WebGPU's default invocation and workgroup-memory
    limits, covers d_v, and staged vector stores take twice the columns wherever they fit."""
    for d_k in range(1, 257):
        spec = KernelSpec.for_sizes(dtype, d_k, d_v, 32)
        assert spec.invocations <= MAX_INVOCATIONS and spec.workgroup_bytes <= MAX_WORKGROUP_BYTES, spec
        tiles = -(-d_v // spec.columns)
        assert spec.columns % spec.lanes == 0 and (tiles - 1) * spec.columns < d_v <= tiles * spec.columns, spec
        if spec.staged_stores and spec.lanes > 1 and d_v >= 16 and (dtype == "float16" or d_k <= 128):
            assert spec.columns == 16, spec


@pytest.mark.parametrize("chunked", [False, True], ids=["token", "chunked"])
def test_a_specialised_pipeline_has_the_call_shape_written_in(chunked: bool) -> None:
    """``KernelSpec.specialised``: the sizes and layouts of the call become constants of the source, and only
    they; the batch, length, window, seed and scale are still read from the uniform. Two shapes of one geometry
    class are one generic pipeline and two specialised ones."""
    generic = replace(KernelSpec.for_sizes("float32", 100, 96), chunked=chunked)
    uniform = CallParams(batch=3, seq_len=7, scale=0.5, seed_offset=0, window=2, d_k=100, d_v=96, q_heads=8,
                         kv_heads=4, key_heads=2, decay_mode=2, beta_mode=1, seed_mode=1)
    spec = generic.specialised(uniform)
    assert spec.constants == tuple((name, getattr(uniform, name)) for name in SPECIALISED_FIELDS)
    source, reference = render(spec), render(generic)
    for name in SPECIALISED_FIELDS:
        assert f"params.{name}" in reference and re.search(rf"\bparams\.{name}\b", source) is None, name
    assert "let DK = 100u;" in source and "let HKV = 4u;" in source
    for name in ("batch", "seq_len", "window"):
        assert f"params.{name}" in source, name
    assert replace(spec, constants=()) == generic
    other = generic.specialised(replace(uniform, d_k=99))
    assert KernelSpec.for_sizes("float32", 99, 96) == KernelSpec.for_sizes("float32", 100, 96) and other != spec


@pytest.mark.parametrize(("dtype", "d_k", "d_v", "row_groups", "paired"), [
    ("float16", 128, 128, 32, True),  # staged, 16 vector columns a tile, d_v % 8 == 0
    ("float16", 128, 8, 32, True),  # a tile of two vector columns
    ("float16", 128, 12, 32, False),  # an odd count of vector columns in d_v
    ("float32", 128, 128, 32, False),  # fp32 stores 16 bytes a vector already
    ("float16", 128, 128, 16, False),  # direct stores
    ("float16", 128, 6, 32, False),  # scalar columns
])
def test_paired_stores_are_kept_where_their_pairs_exist(dtype: str, d_k: int, d_v: int, row_groups: int,
                                                        paired: bool) -> None:
    """Staged fp16 vector columns with an even count of them in d_v store pairs; the chunked prefill and the
    scalar path never do, and every section marker, nested ones included, is resolved."""
    spec = KernelSpec.for_sizes(dtype, d_k, d_v, row_groups)
    assert spec.paired_stores == paired
    source = render(spec)
    assert not re.search(r"^\s*// \[\[/?\w+\]\]$", source, re.MULTILINE)
    assert ("alias PRESENT = vec4<u32>;" in source) == paired
    assert source.count("alias PRESENT") == source.count("var<storage, read_write> present_state") == 1
    for other in (replace(spec, chunked=True), replace(spec, lanes=1)):
        assert not other.paired_stores
        assert "alias PRESENT = vec4<u32>;" not in render(other)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_the_staged_tile_is_read_out_before_the_next_token_writes_it(dtype: str) -> None:
    """Staged checkpoints: every invocation writes its rows into the tile, a barrier, each stores elements other
    invocations wrote, and a second barrier before the next token writes the tile again. With the subgroup
    reduction nothing else stands between the two tokens (the workgroup reduction's next ``column_total`` has a
    barrier), and lavapipe, whose subgroups hold 8 invocations, never runs that path at 32 row groups: a race
    there shows only on a GPU, so the source is checked."""
    spec = replace(KernelSpec.for_sizes(dtype, 128, 128, 32), reduction="subgroup")
    assert spec.staged_stores
    code = re.sub(r"//.*", "", render(spec))
    loop = code.split("for (var t = 0u; t < seq_len; t++) {", 1)[1]
    written, read_out = loop.split("workgroupBarrier();", 1)
    assert "stage[" in written and "stage[" in read_out, "the tile is written, a barrier, then read out"
    after_last_read = read_out.rsplit("stage[", 1)[1].split("cur = next;", 1)[0]
    assert "workgroupBarrier();" in after_last_read, \
        "the next token may write the tile before every invocation has stored its elements"

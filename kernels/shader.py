"""The kernel's interface to its WGSL: the compile-time geometry of a pipeline and the per-call uniform.

A pipeline is specialised only on what must be a constant: the storage type, the split of the
state over a workgroup (``KernelSpec``: columns of d_v per workgroup, row groups per column, rows
per invocation, which sizes a private array and the reduction tree), the columns each invocation
moves at once (4 as one vector where d_v % 4 == 0, else 1) and how a column's partial sums meet
(workgroup memory and a barrier, or subgroup shuffles). Sizes, heads, rule, layouts,
window and seed arrive per call in the uniform (``CallParams``), so one compiled pipeline serves
every call whose head sizes fall in the same geometry class: a handful of pipelines cover every
call up to ``d_k = 256``, and a fuzzing campaign compiles them once instead of once per variant.

The geometry is rounded up (row groups to a power of two, columns to a power of two of d_v) so that
many sizes share one class; the invocations and rows this adds are masked off in the shader.

That generic pipeline is what a campaign on a software adapter wants, where each compilation costs seconds.
On a GPU a pipeline can also be specialised on a call's sizes and layouts (``KernelSpec.specialised``):
the same template with those fields of the uniform written in as constants, one pipeline per call shape,
which makes decode, mostly fixed cost there, faster (docs/benchmark.md#kernel-history).
"""

from __future__ import annotations

import re
from dataclasses import astuple, dataclass, replace
from functools import cache
from importlib import resources
from typing import ClassVar

import numpy as np

from oracles.validation import DELTA_RULES, GATED_RULES, Dims

MAX_INVOCATIONS = 256
"""Invocations per workgroup: WebGPU's default maxComputeInvocationsPerWorkgroup."""

MAX_COLUMNS = 64
"""Most columns of d_v per workgroup; d_v is tiled in chunks of ``KernelSpec.columns``."""

MAX_WORKGROUP_BYTES = 16384
"""Workgroup memory per workgroup: WebGPU's default maxComputeWorkgroupStorageSize."""

MAX_ROW_GROUPS = 16
"""Most invocations sharing one column: d_k is split into at most this many blocks of rows."""

ROW_QUANTUM = 4
"""Rows per invocation come in multiples of this (4 up to d_k = 64, 8 up to 128, ...): few classes."""

UNROLL_MAX_ROWS = 16
"""Most rows per invocation whose loops ``render`` writes out. Every default geometry stays within it (at
most 16 rows: 16 row groups at d_k = 256); only small row-group bounds exceed it (2 row groups at d_k = 256
hold 128 rows each), and those keep their loops: written out that often, a pipeline takes lavapipe minutes
to compile (docs/oracle-and-kernel.md#design)."""

SPECIALISED_FIELDS = ("d_k", "d_v", "q_heads", "kv_heads", "key_heads", "decay_mode", "beta_mode")
"""The uniform's fields a pipeline specialised on a call (``KernelSpec.specialised``) takes as constants: the
sizes and layouts that address the inputs and the state. The loads of the seed and the first token then need
not wait for the uniform, and their index arithmetic folds (docs/benchmark.md#kernel-history). The batch size,
the call's length, window and seed stay in the uniform (written in too, they added nothing): a caller that
varies them (a decoder batching requests, speculative drafts of several lengths) reuses one pipeline."""

BINDINGS = ("query", "key", "value", "decay", "beta", "past_state", "output", "present_state")
"""The storage buffers at bindings 1.. (binding 0 is the uniform), as the WGSL declares them."""

STAND_IN = "value"
"""The input bound in place of one the call does not have (decay, beta, past_state): never read. It is
``value`` because the kernel declares it with the state's element type (a 4-vector where d_v % 4 == 0),
so it always holds at least one such element, as a binding of that type requires."""

VECTOR_LANES = 4
"""Columns of d_v per invocation where d_v % 4 == 0: one 16-byte (fp16: 8-byte) access per row."""

REDUCTIONS = ("workgroup", "subgroup")
"""How a column's partial sums over d_k meet: workgroup memory and a barrier, or subgroup shuffles."""

CHUNK_SIZE = 16
"""Tokens per chunk of the chunked prefill (``kernels/chunked.wgsl``): its two pair matrices take
``2 * CHUNK_SIZE**2`` floats (2 KiB) of workgroup memory, its pseudo-values ``CHUNK_SIZE`` registers of
each invocation's columns."""

TEMPLATES = {False: "linear_attention.wgsl", True: "chunked.wgsl"}
"""``KernelSpec.chunked`` -> the template it compiles: the token loop, or the chunked prefill."""

SHARED_BLOCKS = ("PRELUDE", "TILE")
"""Blocks of the token loop's template (``// <<prelude>>`` ... ``// <</prelude>>``, and ``tile``) that the
chunked prefill's template renders at its ``{{PRELUDE}}`` and ``{{TILE}}``: the declarations (types,
geometry, uniform, bindings, ``column_total``) and the first statements of ``main`` (what an invocation
covers, the leading zero slots, the seed). A variant of the token loop changes both prefills there."""

_ROW_LOOP = re.compile(r"^(?P<indent>\s*)for \(var (?P<var>\w+) = 0u; (?P=var) < RPT; (?P=var)\+\+\) \{(?P<rest>.*)$")
_BLOCK = re.compile(r"// <<(\w+)>>\n(.*?)// <</\1>>\n", re.DOTALL)
_SECTION = re.compile(r"^[ \t]*// \[\[(\w+)\]\]\n(.*?)^[ \t]*// \[\[/\1\]\]\n", re.DOTALL | re.MULTILINE)


def _next_power_of_two(n: int) -> int:
    return 1 << (n - 1).bit_length()


@dataclass(frozen=True)
class KernelSpec:
    """What a compiled pipeline is specialised on; the key of the pipeline cache."""

    dtype: str
    """``"float32"`` or ``"float16"``: the storage type of every input and output."""
    rows_per_thread: int
    """Rows of d_k each invocation keeps in private memory."""
    row_groups: int
    """Invocations per column (a power of two); together they hold ``row_groups * rows_per_thread >= d_k`` rows."""
    columns: int
    """Columns of d_v per workgroup."""
    lanes: int = 1
    """Adjacent columns of d_v each invocation owns (``VECTOR_LANES`` or 1); divides d_v."""
    reduction: str = "workgroup"
    """One of ``REDUCTIONS``; ``"subgroup"`` needs a subgroup size of at least ``row_groups``."""
    chunked: bool = False
    """The chunked prefill (``kernels/chunked.wgsl``) instead of the token loop; same geometry."""
    even_columns: bool = False
    """d_v holds an even count of ``VECTOR_LANES``-column vectors (d_v % 8 == 0), which lets staged fp16
    checkpoints go out two vectors per store (``paired_stores``). Set only for staged fp16 vector columns, where
    it changes the pipeline, so that other geometry classes do not split in two."""
    constants: tuple[tuple[str, int], ...] = ()
    """Fields of the uniform compiled in as constants, ``(name, value)`` (``specialised``); none: the generic
    pipeline of the geometry class, which reads every size from the uniform."""

    @classmethod
    def for_dims(cls, dims: Dims, max_row_groups: int = MAX_ROW_GROUPS) -> KernelSpec:
        """The geometry class of a validated call."""
        return cls.for_sizes(str(dims.dtype), dims.d_k, dims.d_v, max_row_groups)

    @classmethod
    def for_sizes(cls, dtype: str, d_k: int, d_v: int, max_row_groups: int = MAX_ROW_GROUPS) -> KernelSpec:
        """The geometry class of a call of these head sizes (vector columns where d_v allows them,
        the workgroup reduction: ``LinearAttentionKernel`` picks the reduction the device allows).
        ``max_row_groups`` (a power of two) trades invocations per column against rows per invocation."""
        rows = ROW_QUANTUM * -(-d_k // (max_row_groups * ROW_QUANTUM))
        groups = _next_power_of_two(-(-d_k // rows))
        widest = min(_next_power_of_two(d_v), MAX_COLUMNS)
        columns = min(widest, MAX_INVOCATIONS // groups)
        lanes = VECTOR_LANES if d_v % VECTOR_LANES == 0 else 1
        spec = cls(dtype=dtype, rows_per_thread=rows, row_groups=groups, columns=columns, lanes=lanes)
        # staged vector stores write whole rows of the tile: twice the columns halve the rows a warp's
        # stores touch, which made the window cheaper on a GPU (docs/benchmark.md#window-store-cost)
        if spec.staged_stores and lanes > 1:
            wider = replace(spec, columns=2 * columns)
            if wider.columns <= widest and wider.workgroup_bytes <= MAX_WORKGROUP_BYTES:
                spec = wider
            if dtype == "float16" and d_v % (2 * VECTOR_LANES) == 0:
                spec = replace(spec, even_columns=True)
        return spec

    def specialised(self, uniform: CallParams) -> KernelSpec:
        """This geometry with ``SPECIALISED_FIELDS`` of ``uniform`` compiled in: one pipeline per call shape
        instead of one per geometry class, for adapters where a compilation is cheap beside the calls it serves."""
        return replace(self, constants=tuple((name, getattr(uniform, name)) for name in SPECIALISED_FIELDS))

    @property
    def staged_stores(self) -> bool:
        """Checkpoint stores go through workgroup memory exactly where a column has more than
        ``MAX_ROW_GROUPS`` row groups: there a warp's direct stores would each hit another row, and staging
        them is faster; at 16 row groups or fewer it is slower (docs/benchmark.md#window-store-cost)."""
        return self.row_groups > MAX_ROW_GROUPS

    @property
    def paired_stores(self) -> bool:
        """The token loop's staged fp16 checkpoints go out two adjacent vectors (16 bytes) per store instruction
        rather than one (8 bytes): a slot's stores cost about the same per instruction whatever it carries, so
        this halves their count (docs/benchmark.md#window-store-cost). Needs vector columns, an even count of
        them in d_v and in a tile, and the token loop (the chunked prefill stores directly)."""
        return (self.dtype == "float16" and self.lanes == VECTOR_LANES and self.staged_stores and self.even_columns
                and not self.chunked and (self.columns // self.lanes) % 2 == 0)

    @property
    def sections(self) -> frozenset[str]:
        """The template sections (``// [[name]]``) this pipeline keeps: its reduction, its column width, how it
        stores checkpoints (``staged`` or ``direct``) and how it sees ``present_state`` (``paired`` or
        ``single``)."""
        return frozenset((self.reduction, "vector" if self.lanes > 1 else "scalar",
                          "staged" if self.staged_stores else "direct",
                          "paired" if self.paired_stores else "single"))

    @property
    def workgroup_bytes(self) -> int:
        """Workgroup memory the token loop's pipeline may declare: the staged checkpoint tile (``ROWG * RPT * COLS``
        stored elements and one of padding per row group) and the workgroup reduction's two banks of
        partial sums (counted whichever reduction the device picks). The chunked prefill stages nothing and
        adds its 2 KiB of pair matrices to the partial sums."""
        cols = self.columns // self.lanes
        stored = self.lanes * (2 if self.dtype == "float16" else 4)
        stage = (self.row_groups * self.rows_per_thread * cols + self.row_groups) * stored if self.staged_stores else 0
        return stage + 2 * self.row_groups * cols * self.lanes * 4

    @property
    def invocations(self) -> int:
        """Invocations per workgroup: row groups times the columns of invocations."""
        return self.row_groups * self.columns // self.lanes

    def workgroups(self, dims: Dims) -> tuple[int, int, int]:
        """The dispatch size of a call: (tiles of d_v, kv heads, batch)."""
        return -(-dims.d_v // self.columns), dims.kv_heads, dims.batch


DECAY_MODES = {None: 0, False: 1, True: 2}
"""``Dims.decay_per_row`` -> ``params.decay_mode``: none, one gate per head, one per row."""

BETA_MODES = {None: 0, False: 1, True: 2}
"""``Dims.beta_shared`` -> ``params.beta_mode``: none, one beta per head, one shared by all heads."""

SEED_ZERO, SEED_PAST, SEED_PRESENT = 0, 1, 2
"""``params.seed_mode``: no past state, read ``past_state``, read ``present_state`` (aliased binding)."""


@dataclass(frozen=True)
class CallParams:
    """The per-call uniform, field for field the WGSL ``Params`` struct (16 words, 64 bytes)."""

    batch: int
    seq_len: int
    scale: float
    seed_offset: int
    """Element offset of the seed slot in the seed binding (0 when the slot is bound on its own)."""
    window: int
    d_k: int
    d_v: int
    q_heads: int
    kv_heads: int
    key_heads: int
    decay_mode: int
    beta_mode: int
    seed_mode: int
    zeros_known: int = 0
    """1: the present state's leading ``W - T`` slots already hold exact zeros and are not stored again
    (``BoundCall.encode`` picks the uniform with it set only where the host knows that); 0: store them."""

    WORDS: ClassVar[int] = 16

    @classmethod
    def for_call(cls, dims: Dims, aliased: bool, seed_offset: int) -> CallParams:
        """The uniform of a validated call; decay and beta a rule does not use are not read."""
        decay = dims.decay_per_row if dims.update_rule in GATED_RULES else None
        beta = dims.beta_shared if dims.update_rule in DELTA_RULES else None
        seed = (SEED_PRESENT if aliased else SEED_PAST) if dims.has_past else SEED_ZERO
        return cls(batch=dims.batch, seq_len=dims.seq_len, scale=dims.scale, seed_offset=seed_offset,
                   window=dims.state_window, d_k=dims.d_k, d_v=dims.d_v, q_heads=dims.q_heads,
                   kv_heads=dims.kv_heads, key_heads=dims.key_heads, decay_mode=DECAY_MODES[decay],
                   beta_mode=BETA_MODES[beta], seed_mode=seed)

    @property
    def aliased(self) -> bool:
        """The seed is read from ``present_state``: past and present are one read-write buffer."""
        return self.seed_mode == SEED_PRESENT

    def source(self, binding: str) -> str:
        """The tensor bound at ``binding``: itself, or ``STAND_IN`` for an optional input these
        parameters never read (decay or beta the rule does not use, past_state when there is no
        past or it is aliased to present_state)."""
        optional = {"decay": self.decay_mode, "beta": self.beta_mode, "past_state": self.seed_mode == SEED_PAST}
        return binding if optional.get(binding, True) else STAND_IN

    def pack(self) -> np.ndarray:
        """The uniform's bytes as ``WORDS`` uint32 (``scale`` as its float32 bits, the rest zero padding)."""
        words = np.zeros(self.WORDS, dtype=np.uint32)
        values = astuple(self)
        words[: len(values)] = [int(np.float32(v).view(np.uint32)) if isinstance(v, float) else v for v in values]
        return words


@cache
def kernel_file(name: str) -> str:
    """The text of a file of the ``kernels`` package (a WGSL template)."""
    return resources.files("kernels").joinpath(name).read_text()


def fill_template(source: str, placeholders: dict[str, str], constants: tuple[tuple[str, int], ...] = ()) -> str:
    """``source`` with each ``{{NAME}}`` of ``placeholders`` replaced by its text, and each uniform field of
    ``constants`` (``params.NAME`` wherever the template reads it) by its value as a ``u32`` constant: how a
    template becomes one pipeline's WGSL, generic or specialised on a call's shape."""
    for name, text in placeholders.items():
        source = source.replace("{{" + name + "}}", text)
    for name, value in constants:
        source = re.sub(rf"\bparams\.{name}\b", f"{value}u", source)
    return source


@cache
def template_source(name: str, token_template: str | None = None) -> str:
    """The text of template ``name`` (one of ``TEMPLATES``' values): the token loop's as it is, the chunked
    prefill's with the ``SHARED_BLOCKS`` of ``token_template`` (default: the token loop's own) in place of
    their placeholders. What ``render`` specialises, and what a variant of the kernel (a patched copy)
    starts from."""
    source = kernel_file(name)
    if name == TEMPLATES[False]:
        return source
    token = token_template or template_source(TEMPLATES[False])
    blocks = {m.group(1).upper(): m.group(2) for m in _BLOCK.finditer(token)}
    for placeholder in SHARED_BLOCKS:
        if placeholder not in blocks:
            raise ValueError(f"the token-loop template has no <<{placeholder.lower()}>> block for the chunked prefill")
        source = source.replace("{{" + placeholder + "}}", blocks[placeholder])
    return source


def unroll_rows(source: str, rows: int) -> str:
    """``source`` with every loop over an invocation's rows, ``for (var k = 0u; k < RPT; k++) { ... }`` (on one
    line, or with its closing brace on a line of its own at the loop's indentation), written out ``rows``
    times, each copy a block that declares ``k`` a constant.

    Why: the private arrays a loop indexes (the state rows ``s``, the key rows) are then indexed
    by constants only, so the GPU compiler keeps them in registers. Left as loops, NVIDIA's Vulkan compiler
    did not, and the token loop ran 1.6-1.9x slower with the same bits (docs/benchmark.md#kernel-history).

    Raises:
        ValueError: a loop over ``RPT`` that closes neither on its own line nor on a line of its own at
            its indentation.
    """
    lines = source.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        loop = _ROW_LOOP.match(lines[i])
        if loop is None:
            out.append(lines[i])
            i += 1
            continue
        indent, var, rest = loop["indent"], loop["var"], loop["rest"].strip()
        if rest:
            body = rest.removesuffix("}").strip()
            if not rest.endswith("}") or body.count("{") != body.count("}"):
                raise ValueError(f"line {i + 1}: a loop over RPT must close on its line or on a line of its own: "
                                 f"{lines[i]!r}")
            out.append(indent + " ".join(f"{{ const {var} = {n}u; {body} }}" for n in range(rows)))
            i += 1
            continue
        try:
            end = lines.index(indent + "}", i + 1)
        except ValueError:
            raise ValueError(f"line {i + 1}: no closing brace at the indentation of {lines[i]!r}") from None
        for n in range(rows):
            out += [f"{indent}{{ const {var} = {n}u;", *lines[i + 1:end], indent + "}"]
        i = end + 1
    return "\n".join(out)


def render(spec: KernelSpec, template: str | None = None, subgroup_enable: str = "") -> str:
    """The WGSL source of one pipeline, from ``template`` (default: ``template_source`` of the spec's
    template, ``TEMPLATES[spec.chunked]``; another is a variant of the kernel under test, e.g. an engineer's
    change or a deliberately broken copy).

    Of the template's sections marked ``// [[name]]`` ... ``// [[/name]]`` only those of ``spec.sections``
    are kept, the uniform's fields in ``spec.constants`` become those constants, and the token loop's loops
    over the rows of an invocation are written out (``unroll_rows``) up to ``UNROLL_MAX_ROWS`` rows (the chunked
    prefill keeps its loops: written out, its calls on lavapipe took twice as long, and no GPU runs it by
    default; docs/oracle-and-kernel.md#design); ``subgroup_enable`` is the directive the subgroup reduction needs on the
    implementation compiling it (``GpuDevice.subgroup_enable``).
    """
    store = "f16" if spec.dtype == "float16" else "f32"
    enables = ["enable f16;" if store == "f16" else "", subgroup_enable if spec.reduction == "subgroup" else ""]
    vector = spec.lanes > 1
    replacements = {
        "ENABLE": "\n".join(e for e in enables if e),
        "STORE": store,
        "VEC": f"vec{spec.lanes}<f32>" if vector else "f32",
        "SVEC": f"vec{spec.lanes}<{store}>" if vector else store,
        "LANES": str(spec.lanes),
        "COLS": str(spec.columns // spec.lanes),
        "ROWG": str(spec.row_groups),
        "RPT": str(spec.rows_per_thread),
        "CHUNK": str(CHUNK_SIZE),
    }
    source = template if template is not None else template_source(TEMPLATES[spec.chunked])
    # sections nest: each pass resolves the outermost, until none is left
    kept = None
    while kept != source:
        kept, source = source, _SECTION.sub(lambda m: m.group(2) if m.group(1) in spec.sections else "", source)
    source = fill_template(source, replacements, spec.constants)
    if spec.chunked or spec.rows_per_thread > UNROLL_MAX_ROWS:
        return source
    return unroll_rows(source, spec.rows_per_thread)

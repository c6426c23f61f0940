"""Specialise the WGSL template to one kernel variant: the WGSL source and its binding list.

Everything that changes the code (dtype, sizes, heads, rule, layouts, window, binding) is baked
into the source as constants, so the compiler sees fixed loop bounds and a fixed-size private
block of a state column. The split of the state over a workgroup (columns of d_v per workgroup,
row groups per column, rows per invocation) is derived from d_k and d_v here. Only the bindings
a variant really uses are declared: with ``layout="auto"`` an unused binding would vanish from
the layout and break the bind group.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

from oracles.validation import DELTA_RULES, GATED_RULES, Dims

MAX_INVOCATIONS = 256
"""Invocations per workgroup: WebGPU's default maxComputeInvocationsPerWorkgroup."""

MAX_COLUMNS = 64
"""Most columns of d_v per workgroup; d_v is tiled in chunks of ``KernelSpec.columns``."""

MAX_ROW_GROUPS = 16
"""Most invocations sharing one column: d_k is split into at most this many blocks of rows."""

MIN_ROWS = 4
"""Fewest rows of d_k per invocation (a smaller d_k is not split): a reduction costs a barrier."""

MAX_FUSED = 4
"""Most column totals one reduction (one barrier) carries: readouts of one token and the next
token's retrieval. Workgroup memory is 2 banks x MAX_FUSED x MAX_INVOCATIONS f32 = 8 KiB at most."""


@dataclass(frozen=True)
class KernelSpec:
    """Everything a compiled kernel is specialised on; the key of the pipeline cache."""

    dtype: str
    """``"float32"`` or ``"float16"``: the storage type of every input and output."""
    d_k: int
    d_v: int
    q_heads: int
    kv_heads: int
    key_heads: int
    update_rule: str
    decay: str | None
    """``"head"``, ``"row"`` or None (not bound: the rule does not use it)."""
    beta: str | None
    """``"head"``, ``"shared"`` or None (not bound: the rule does not use it)."""
    has_past: bool
    state_window: int
    aliased: bool
    """Past and present state are one read-write buffer (only meaningful with ``has_past``)."""

    @classmethod
    def from_dims(cls, dims: Dims, aliased: bool) -> KernelSpec:
        """The variant that runs a validated call; decay/beta unused by the rule are not bound."""
        decay = None
        if dims.update_rule in GATED_RULES:
            decay = "row" if dims.decay_per_row else "head"
        beta = None
        if dims.update_rule in DELTA_RULES:
            beta = "shared" if dims.beta_shared else "head"
        return cls(
            dtype=str(dims.dtype), d_k=dims.d_k, d_v=dims.d_v, q_heads=dims.q_heads,
            kv_heads=dims.kv_heads, key_heads=dims.key_heads, update_rule=dims.update_rule,
            decay=decay, beta=beta, has_past=dims.has_past, state_window=dims.state_window,
            aliased=aliased and dims.has_past,
        )

    @property
    def rows_per_thread(self) -> int:
        """Rows of d_k each invocation keeps in private memory (the last row group may hold fewer)."""
        return max(MIN_ROWS, -(-self.d_k // MAX_ROW_GROUPS))

    @property
    def row_groups(self) -> int:
        """Invocations per column; each one's row block starts below d_k, so none is empty."""
        return -(-self.d_k // self.rows_per_thread)

    @property
    def ragged(self) -> bool:
        """The last row group holds fewer rows than the others: row loops must stop at d_k."""
        return self.d_k % self.rows_per_thread != 0

    @property
    def readouts(self) -> int:
        """Query heads that read this kv head, each writing its own output head."""
        return self.q_heads // self.kv_heads if self.q_heads >= self.kv_heads else 1

    @property
    def fused_readouts(self) -> int:
        """Readouts per reduction; delta rules keep one slot of each reduction for a retrieval."""
        return min(self.readouts, MAX_FUSED - (self.beta is not None))

    @property
    def reduction_width(self) -> int:
        """Column totals per reduction: a batch of readouts, plus the retrieval for delta rules."""
        return self.fused_readouts + (self.beta is not None)

    @property
    def columns(self) -> int:
        """Columns of d_v per workgroup."""
        return min(self.d_v, MAX_COLUMNS, MAX_INVOCATIONS // self.row_groups)

    @property
    def tiles(self) -> int:
        """Workgroups along d_v."""
        return -(-self.d_v // self.columns)

    @property
    def inputs(self) -> tuple[str, ...]:
        """Input names bound as read-only storage, in binding order (after the uniform)."""
        names = ["query", "key", "value"]
        if self.decay is not None:
            names.append("decay")
        if self.beta is not None:
            names.append("beta")
        if self.has_past and not self.aliased:
            names.append("past_state")
        return tuple(names)

    @property
    def bindings(self) -> tuple[tuple[int, str, bool], ...]:
        """``(binding, name, writable)`` of every storage buffer the kernel declares."""
        rows = [(i + 1, name, False) for i, name in enumerate(self.inputs)]
        first = len(rows) + 1
        rows += [(first, "output", True), (first + 1, "present_state", True)]
        return tuple(rows)


@cache
def _template() -> str:
    return resources.files("kernels").joinpath("linear_attention.wgsl").read_text()


def _rows(spec: KernelSpec, body: str, indent: str = "        ") -> str:
    """A loop over this invocation's rows: ``k`` indexes the private block, ``i`` the row of d_k."""
    guard = "if (i >= DK) { break; } " if spec.ragged else ""
    return f"{indent}for (var k = 0u; k < RPT; k++) {{ let i = row0 + k; {guard}{body} }}"


def _store(spec: KernelSpec, target: str, value: str, indent: str = "        ") -> str:
    """Store this invocation's rows into one slot of present_state (tail-tile invocations store nothing)."""
    loop = _rows(spec, f"present_state[{target} + head_base + i * DV] = {value};", indent + "    ")
    return f"{indent}if (live) {{\n{loop}\n{indent}}}"


def _query_head(spec: KernelSpec, g: int) -> tuple[str, str]:
    """``(query head, output head)`` of this kv head's ``g``-th readout, as WGSL expressions."""
    if spec.q_heads >= spec.kv_heads:
        # standard GQA: kv head h serves query heads h*G .. h*G+G-1, each its own output head
        head = f"h * {spec.readouts}u + {g}u"
        return head, head
    # inverse GQA: kv head h is read by query head h / (HKV / HQ) and writes output head h
    return "h / (HKV / HQ)", "h"


def _load_token(spec: KernelSpec, x: str, bt: str, indent: str) -> str:
    """Load one token's inputs (flat token index ``bt``) into registers named with suffix ``x``.

    ``k{x}``: this invocation's key rows; ``q{x}``: its rows of the first readout's query;
    ``v{x}``: the value of this column; ``g{x}``: exp of the decay (a scalar per head, or one per
    row); ``b{x}``: beta. Only what the rule uses is loaded.
    """
    lines = [
        f"var k{x}: array<f32, RPT>;",
        f"var q{x}: array<f32, RPT>;",
        _rows(spec, f"k{x}[k] = f32(key[(({bt}) * NK + kh) * DK + i]);", ""),
        _rows(spec, f"q{x}[k] = f32(query[(({bt}) * HQ + {_query_head(spec, 0)[0]}) * DK + i]);", ""),
        f"var v{x} = f32(value[(({bt}) * HKV + h) * DV + vcol]);",
    ]
    if spec.decay == "head":
        lines.append(f"var g{x} = exp(f32(decay[({bt}) * HKV + h]));")
    elif spec.decay == "row":
        lines.append(f"var g{x}: array<f32, RPT>;")
        lines.append(_rows(spec, f"g{x}[k] = exp(f32(decay[(({bt}) * HKV + h) * DK + i]));", ""))
    if spec.beta is not None:
        index = f"({bt})" if spec.beta == "shared" else f"({bt}) * HKV + h"
        lines.append(f"var b{x} = f32(beta[{index}]);")
    return "\n".join(indent + line for line in lines)


def _retrieval_part(spec: KernelSpec, x: str, indent: str) -> str:
    """Accumulate into ``p[NRED - 1]`` this invocation's part of the retrieval for the token whose
    inputs are the registers with suffix ``x``, on the current (not yet decayed) ``s``.

    Decaying S first and then taking S^T k is the same sum as S^T k scaled by a per-head gate, or
    S^T (gate * k), element-wise, with per-row gates; ``_retrieval_total`` applies a per-head gate to the total.
    """
    key = f"g{x}[k] * k{x}[k]" if spec.decay == "row" else f"k{x}[k]"
    return _rows(spec, f"p[NRED - 1u] = p[NRED - 1u] + s[k] * ({key});", indent)


def _retrieval_total(spec: KernelSpec, x: str) -> str:
    """The retrieval from the column total ``tot[NRED - 1]`` (see ``_retrieval_part``)."""
    return f"g{x} * tot[NRED - 1u]" if spec.decay == "head" else "tot[NRED - 1u]"


_PARTS = "var p = array<f32, NRED>();"
"""The partial sums of one reduction, zeroed explicitly: lavapipe (through naga and Tint alike) was
seen to keep the previous iteration's values in a loop-scoped ``var`` declared without initialiser."""


def _reduce(indent: str) -> str:
    """The column totals ``tot`` of the partial sums ``p`` (every invocation of the column gets them)."""
    return f"{indent}let tot = column_totals(p, bank, lid.x, lid.y);\n{indent}bank ^= 1u;"


def _first(spec: KernelSpec) -> str:
    """Before the loop: token 0's inputs into registers and, for delta rules, its retrieval on the seed."""
    text = _load_token(spec, "c", "b * seq_len", "    ")
    if spec.beta is None:
        return text
    return (
        f"{text}\n"
        "    var r: f32;\n"
        "    {\n"
        f"        {_PARTS}\n"
        f"{_retrieval_part(spec, 'c', '        ')}\n"
        f"{_reduce('        ')}\n"
        f"        r = {_retrieval_total(spec, 'c')};\n"
        "    }"
    )


def _decay(spec: KernelSpec) -> str:
    if spec.decay == "head":
        return _rows(spec, "s[k] = gc * s[k];")
    if spec.decay == "row":
        return _rows(spec, "s[k] = gc[k] * s[k];")
    return ""


def _update(spec: KernelSpec) -> str:
    if spec.beta is None:
        return _rows(spec, "s[k] = s[k] + kc[k] * vc;")
    return "        let u = bc * (vc - r);\n" + _rows(spec, "s[k] = s[k] + kc[k] * u;")


def _readout(spec: KernelSpec) -> str:
    """Readouts of this token, fused with the next token's retrieval; then the next token's registers
    become the current ones.

    The readouts go in batches of ``spec.fused_readouts``, one reduction (one barrier) per batch;
    the next token's retrieval (delta rules) rides in the last slot of the last batch. At the last
    token the "next" registers hold the last token again (in-bounds loads) and that retrieval is unused.
    """
    out_heads = max(spec.q_heads, spec.kv_heads)
    per = spec.fused_readouts
    batches = [range(start, min(start + per, spec.readouts)) for start in range(0, spec.readouts, per)]
    blocks = []
    for number, batch in enumerate(batches):
        lines = ["        {", f"            {_PARTS}"]
        for n, g in enumerate(batch):
            qh = _query_head(spec, g)[0]
            query = "qc[k]" if g == 0 else f"f32(query[(bt * HQ + {qh}) * DK + i])"
            lines.append(_rows(spec, f"p[{n}u] = p[{n}u] + s[k] * {query};", "            "))
        last = number == len(batches) - 1
        if last and spec.beta is not None:
            lines.append(_retrieval_part(spec, "n", "            "))
        lines.append(_reduce("            "))
        lines.append("            if (live && lid.y == 0u) {")
        for n, g in enumerate(batch):
            target = f"(bt * {out_heads}u + {_query_head(spec, g)[1]}) * DV + col"
            lines.append(f"                output[{target}] = STORE(params.scale * tot[{n}u]);")
        lines.append("            }")
        if last and spec.beta is not None:
            lines.append(f"            r = {_retrieval_total(spec, 'n')};")
        lines.append("        }")
        blocks.append("\n".join(lines))
    names = ["k", "q", "v"] + (["g"] if spec.decay else []) + (["b"] if spec.beta else [])
    blocks.append("        " + " ".join(f"{name}c = {name}n;" for name in names))
    return "\n".join(blocks)


def _seed(spec: KernelSpec) -> str:
    if not spec.has_past:
        return "    // no past state: s stays as WGSL initialises it, zero"
    source = "present_state" if spec.aliased else "past_state"
    return (
        "    if (live) {\n"
        + _rows(spec, f"s[k] = f32({source}[params.seed_offset + head_base + i * DV]);") + "\n"
        "    }"
    )


def _window_store(spec: KernelSpec) -> str:
    if spec.state_window == 0:
        return ""
    # slot j holds the state after T - W + j + 1 tokens: token t (0-based) goes to j = t + W - T
    return (
        "        if (t + W >= seq_len) {\n"
        "            let slot = (t + W - seq_len) * slot_elems;\n"
        + _store(spec, "slot", "STORE(s[k])", "            ")
        + "\n        }"
    )


def _final_store(spec: KernelSpec) -> str:
    if spec.state_window == 0:
        return _store(spec, "0u", "STORE(s[k])", "    ")
    # leading W - T slots represent no token of this call: exact zeros
    return (
        "    for (var j = 0u; j + seq_len < W; j++) {\n"
        + _store(spec, "j * slot_elems", "STORE(0.0)")
        + "\n    }"
    )


def render(spec: KernelSpec) -> str:
    """The WGSL source of one kernel variant."""
    store = "f16" if spec.dtype == "float16" else "f32"
    declarations = [
        f"@group(0) @binding({binding}) var<storage, {'read_write' if writable else 'read'}> "
        f"{name}: array<STORE>;"
        for binding, name, writable in spec.bindings
    ]
    replacements = {
        "ENABLE": "enable f16;" if store == "f16" else "",
        "STORE": store,
        "DK": str(spec.d_k),
        "DV": str(spec.d_v),
        "HQ": str(spec.q_heads),
        "HKV": str(spec.kv_heads),
        "NK": str(spec.key_heads),
        "W": str(spec.state_window),
        "COLS": str(spec.columns),
        "ROWG": str(spec.row_groups),
        "RPT": str(spec.rows_per_thread),
        "NRED": str(spec.reduction_width),
        "BINDINGS": "\n".join(declarations),
        "SEED": _seed(spec),
        "FIRST": _first(spec),
        "NEXT": _load_token(spec, "n", "btn", "        "),
        "DECAY": _decay(spec),
        "UPDATE": _update(spec),
        "READOUT": _readout(spec),
        "WINDOW_STORE": _window_store(spec),
        "FINAL_STORE": _final_store(spec),
    }
    source = _template()
    for name, text in replacements.items():
        source = source.replace("{{" + name + "}}", text)
    return source

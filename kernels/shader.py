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


def _reduce(part: str) -> str:
    """The column total of ``part`` (every invocation of the column gets it); flips the bank."""
    return f"column_total({part}, bank, lid.x, lid.y); bank ^= 1u;"


def _store(spec: KernelSpec, target: str, value: str, indent: str = "        ") -> str:
    """Store this invocation's rows into one slot of present_state (tail-tile invocations store nothing)."""
    loop = _rows(spec, f"present_state[{target} + head_base + i * DV] = {value};", indent + "    ")
    return f"{indent}if (live) {{\n{loop}\n{indent}}}"


def _decay(spec: KernelSpec) -> str:
    if spec.decay == "head":
        return "        let gate = exp(f32(decay[bt * HKV + h]));\n" + _rows(spec, "s[k] = gate * s[k];")
    if spec.decay == "row":
        return _rows(spec, "s[k] = exp(f32(decay[(bt * HKV + h) * DK + i])) * s[k];")
    return ""


def _update(spec: KernelSpec) -> str:
    if spec.beta is None:
        return _rows(spec, "s[k] = s[k] + f32(key[kbase + i]) * v;")
    beta_index = "bt" if spec.beta == "shared" else "bt * HKV + h"
    return (
        "        var rp = 0.0;\n"
        + _rows(spec, "rp = rp + s[k] * f32(key[kbase + i]);") + "\n"
        f"        let r = {_reduce('rp')}\n"
        f"        let u = f32(beta[{beta_index}]) * (v - r);\n"
        + _rows(spec, "s[k] = s[k] + f32(key[kbase + i]) * u;")
    )


def _readout(spec: KernelSpec) -> str:
    out_heads = max(spec.q_heads, spec.kv_heads)
    if spec.q_heads >= spec.kv_heads:
        # standard GQA: this kv head serves query heads h*G .. h*G+G-1, each its own output head
        group = spec.q_heads // spec.kv_heads
        head_loop = f"for (var g = 0u; g < {group}u; g++) {{ let qh = h * {group}u + g; let oh = qh;"
    else:
        # inverse GQA: kv head h is read by query head h / (HKV / HQ) and writes output head h
        head_loop = "{ let qh = h / (HKV / HQ); let oh = h;"
    return (
        f"        {head_loop}\n"
        "            var op = 0.0;\n"
        + _rows(spec, "op = op + s[k] * f32(query[(bt * HQ + qh) * DK + i]);", "            ") + "\n"
        f"            let o = {_reduce('op')}\n"
        "            if (live && lid.y == 0u) {\n"
        f"                output[(bt * {out_heads}u + oh) * DV + col] = STORE(params.scale * o);\n"
        "            }\n"
        "        }"
    )


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
        "BINDINGS": "\n".join(declarations),
        "SEED": _seed(spec),
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

"""Specialise the WGSL template to one kernel variant: the WGSL source and its binding list.

Everything that changes the code (dtype, sizes, heads, rule, layouts, window, binding) is baked
into the source as constants, so the compiler sees fixed loop bounds and a fixed-size private
state column. Only the bindings a variant really uses are declared: with ``layout="auto"`` an
unused binding would vanish from the layout and break the bind group.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

from oracles.validation import DELTA_RULES, GATED_RULES, Dims

MAX_WORKGROUP = 64
"""Largest workgroup (columns of d_v per workgroup); d_v is tiled in chunks of this size."""


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
    def workgroup(self) -> int:
        return min(self.d_v, MAX_WORKGROUP)

    @property
    def tiles(self) -> int:
        """Workgroups along d_v."""
        return -(-self.d_v // self.workgroup)

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


def _store_loop(target: str, value: str, indent: str = "        ") -> str:
    return f"{indent}for (var i = 0u; i < DK; i++) {{ present_state[{target} + head_base + i * DV] = {value}; }}"


def _decay(spec: KernelSpec) -> str:
    if spec.decay == "head":
        return (
            "        let gate = exp(f32(decay[bt * HKV + h]));\n"
            "        for (var i = 0u; i < DK; i++) { s[i] = gate * s[i]; }"
        )
    if spec.decay == "row":
        return "        for (var i = 0u; i < DK; i++) { s[i] = exp(f32(decay[(bt * HKV + h) * DK + i])) * s[i]; }"
    return ""


def _update(spec: KernelSpec) -> str:
    if spec.beta is None:
        return "        for (var i = 0u; i < DK; i++) { s[i] = s[i] + f32(key[kbase + i]) * v; }"
    beta_index = "bt" if spec.beta == "shared" else "bt * HKV + h"
    return (
        "        var r = 0.0;\n"
        "        for (var i = 0u; i < DK; i++) { r = r + s[i] * f32(key[kbase + i]); }\n"
        f"        let u = f32(beta[{beta_index}]) * (v - r);\n"
        "        for (var i = 0u; i < DK; i++) { s[i] = s[i] + f32(key[kbase + i]) * u; }"
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
        "            var o = 0.0;\n"
        "            for (var i = 0u; i < DK; i++) { o = o + s[i] * f32(query[(bt * HQ + qh) * DK + i]); }\n"
        f"            output[(bt * {out_heads}u + oh) * DV + col] = STORE(params.scale * o);\n"
        "        }"
    )


def _seed(spec: KernelSpec) -> str:
    if not spec.has_past:
        return "    for (var i = 0u; i < DK; i++) { s[i] = 0.0; }"
    source = "present_state" if spec.aliased else "past_state"
    offset = "(W - 1u) * slot_elems" if spec.state_window else "0u"
    return f"    for (var i = 0u; i < DK; i++) {{ s[i] = f32({source}[{offset} + head_base + i * DV]); }}"


def _window_store(spec: KernelSpec) -> str:
    if spec.state_window == 0:
        return ""
    # slot j holds the state after T - W + j + 1 tokens: token t (0-based) goes to j = t + W - T
    return (
        "        if (t + W >= seq_len) {\n"
        "            let slot = (t + W - seq_len) * slot_elems;\n"
        + _store_loop("slot", "STORE(s[i])", "            ")
        + "\n        }"
    )


def _final_store(spec: KernelSpec) -> str:
    if spec.state_window == 0:
        return _store_loop("0u", "STORE(s[i])", "    ")
    # leading W - T slots represent no token of this call: exact zeros
    return (
        "    for (var j = 0u; j + seq_len < W; j++) {\n"
        + _store_loop("j * slot_elems", "STORE(0.0)")
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
        "WG": str(spec.workgroup),
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

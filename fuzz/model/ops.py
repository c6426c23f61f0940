"""The operators under test, each as one ``Op``: its contract in code and what the suite needs to know of it.

An ``Op`` says everything about an operator that does not depend on how it is tested: its ONNX name and
domain, its inputs (which are required, which run along the sequence), its attributes and their schema
defaults, its validation and float64 oracle (``oracles``), the second formulation of its window (each
slot from a ``W = 0`` prefix run), where its sequence axis is, and the op's part of a case's one-line
summary. The two windowed ops (``OPS``) have the same windowed state: ``past_state``/``present_state``,
the window attribute ``state_window`` and the window axis first. GatedDeltaNet and GatedDeltaNetStateReplay
(``ALL_OPS``) roll back by replaying a capsule instead: they have no window, and their outputs are three and one
(``Op.outputs``, all of which ``oracle`` returns). How an op is *tested* (its strategies, tolerances, bad
inputs) sits one layer up, in each op's package (``fuzz/ops/<op>/``).

An ``Op`` pickles by name (``op_named``), so a case crosses into a worker process as a reference.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import oracles
import oracles.causal_conv as conv
import oracles.gated_delta_net as gdn
from oracles.validation import INPUT_NAMES as LA_INPUTS
from oracles.validation import ValidationError

OracleFn = Callable[..., tuple[np.ndarray, ...]]
"""An implementation with the oracle's signature: the op's inputs and attributes by name, returning its outputs in
``Op.outputs`` order (``(output, present_state)`` for the windowed ops)."""


@dataclass(frozen=True, eq=False)
class Op:
    """One operator: its contract in code and the facts about it that every layer above shares."""

    name: str
    """The ONNX op type (``"LinearAttention"``), also its name in corpus entries and reports."""
    input_names: tuple[str, ...]
    """The inputs in schema order; the first one carries the call's dtype and sequence length."""
    required_inputs: tuple[str, ...]
    sequence_inputs: tuple[str, ...]
    """Inputs that run along the sequence (cut to a prefix, split between calls)."""
    attribute_defaults: Mapping[str, Any]
    """Schema defaults of the optional attributes (a required attribute has none)."""
    attribute_names: tuple[str, ...]
    """Every attribute, in the order a report lists them."""
    validate: Callable[..., Any]
    """The contract's input rules (``oracles``): ``validate(**inputs, **attrs)`` returns the call's dims or
    raises ``ValidationError``; ``allow_empty_sequence=True`` lets ``T = 0`` through."""
    oracle: OracleFn
    """The float64 reference."""
    window_by_prefix: Callable[[OracleFn, dict[str, np.ndarray | None], dict[str, Any]], np.ndarray]
    """The window's second formulation: ``present_state`` of a ``W > 0`` call from ``W = 0`` prefix runs of any
    implementation with the oracle's signature."""
    sequence_axis: Callable[[Mapping[str, Any]], int]
    """The sequence axis of the sequence inputs (and of ``output``), from the attributes as set."""
    describe: Callable[[Mapping[str, np.ndarray], Mapping[str, Any]], list[str]]
    """The op's part of a case's summary line (sizes, attributes, layouts, dtype)."""
    domain: str = "com.microsoft"
    outputs: tuple[str, ...] = ("output", "present_state")
    """The outputs in schema order, as ``oracle`` returns them."""
    state_input: str = "past_state"
    state_output: str = "present_state"
    window_attribute: str = "state_window"
    window_axis: int = 0
    """The state's window axis (``W > 0``): slot ``j`` is ``state[j]``."""
    layouts: Mapping[str, str] = field(default_factory=dict)
    """Each input's shape in the schema's letters, for reports."""
    fixed_types: Mapping[str, str] = field(default_factory=dict)
    """Inputs and outputs whose element type is fixed by the schema (``"float32"``, ``"int32"``), whatever the
    call's dtype: GatedDeltaNet's state, gates and counts. The others take the first input's type."""
    shared_inputs: tuple[str, ...] = ()
    """Inputs without a batch axis, which every batch entry of a call reads (the others have the batch axis first,
    after the window axis of a windowed state)."""
    windowed: bool = True
    """Whether the op keeps a window of states (``state_window``): the window's properties apply to it only then."""

    @property
    def lead_input(self) -> str:
        return self.input_names[0]

    def __reduce__(self) -> tuple[Callable[[str], Op], tuple[str]]:
        return op_named, (self.name,)

    def __repr__(self) -> str:
        return f"<op {self.name}>"


def _la_describe(inputs: Mapping[str, np.ndarray], attrs: Mapping[str, Any]) -> list[str]:
    q = inputs["query"]
    parts = [
        f"rule={attrs.get('update_rule', 'gated_delta')}",
        f"W={attrs.get('state_window', 0)}",
        f"B={q.shape[0]} T={q.shape[1]}",
        f"Hq={attrs.get('q_num_heads')} Hkv={attrs.get('kv_num_heads')}",
    ]
    try:
        call: dict[str, Any] = {**inputs, **attrs}
        d = oracles.validate(**call)
        parts.append(f"nk={d.key_heads} dk={d.d_k} dv={d.d_v}")
        if d.decay_per_row is not None:
            parts.append("decay=per-row" if d.decay_per_row else "decay=per-head")
        if d.beta_shared is not None:
            parts.append("beta=shared" if d.beta_shared else "beta=per-head")
    except ValueError as err:
        parts.append(f"INVALID({err})")
    parts.append(str(q.dtype))
    if "scale" in attrs:
        parts.append(f"scale={attrs['scale']:.6g}")
    return parts


LINEAR_ATTENTION = Op(
    name="LinearAttention",
    input_names=LA_INPUTS,
    required_inputs=("query", "key", "value"),
    sequence_inputs=("query", "key", "value", "decay", "beta"),
    attribute_defaults={"update_rule": "gated_delta", "scale": 0.0, "state_window": 0},
    attribute_names=("q_num_heads", "kv_num_heads", "update_rule", "scale", "chunk_size", "state_window"),
    validate=oracles.validate,
    oracle=oracles.linear_attention,
    window_by_prefix=oracles.window_by_prefix,
    sequence_axis=lambda attrs: 1,
    describe=_la_describe,
    layouts={"query": "(B, T, H_q*d_k)", "key": "(B, T, n_k*d_k)", "value": "(B, T, H_kv*d_v)",
             "past_state": "(B, H_kv, d_k, d_v), (W, ...) for W > 0", "decay": "(B, T, H_kv) or (B, T, H_kv*d_k)",
             "beta": "(B, T, H_kv) or (B, T, 1)"},
)


def _conv_sequence_axis(attrs: Mapping[str, Any]) -> int:
    """Axis 1 channels last; the last axis channels first, whatever ``ndim`` says (so an invalid ``ndim``
    still names an axis the input has)."""
    return 1 if attrs.get("channels_last", 0) == 1 else -1


def _conv_describe(inputs: Mapping[str, np.ndarray], attrs: Mapping[str, Any]) -> list[str]:
    x = inputs["input"]
    parts = ["conv", f"W={attrs.get('state_window', 0)}", f"act={attrs.get('activation', 'none')}"]
    try:
        call: dict[str, Any] = {**inputs, **attrs}
        d = conv.validate(**call)
    except ValidationError as err:
        return [*parts, f"shape={tuple(x.shape)}", f"INVALID({err})", str(x.dtype)]
    layout = "channels-last" if d.channels_last else "channels-first"
    spatial = f" S={'x'.join(map(str, d.spatial))}" if d.spatial else ""
    kernel = "x".join(map(str, d.kernel))
    parts += [f"B={d.batch} T={d.seq_len} C={d.channels}{spatial}", f"k={kernel} dil={d.dilation} L={d.state_length}",
              f"ndim={d.ndim} {layout}" + (f" d={d.channel_shape}" if d.channels_last else ""),
              "bias" if d.has_bias else "no-bias", str(x.dtype)]
    return parts


CAUSAL_CONV = Op(
    name="CausalConvWithState",
    input_names=conv.INPUT_NAMES,
    required_inputs=("input", "weight"),
    sequence_inputs=("input",),
    attribute_defaults={"activation": "none", "ndim": 1, "dilation": 1, "channels_last": 0, "state_window": 0},
    attribute_names=("ndim", "activation", "dilation", "channels_last", "state_window"),
    validate=conv.validate,
    oracle=conv.causal_conv_with_state,
    window_by_prefix=conv.window_by_prefix,
    sequence_axis=_conv_sequence_axis,
    describe=_conv_describe,
    layouts={"input": "(B, C, *S, T), or (B, T, d_1, ..., d_n) channels last", "weight": "(C, 1, k_1, ..., k_ndim)",
             "bias": "(C,)", "past_state": "(B, C, *S, L), or (B, L, d_1, ..., d_n) channels last; (W, ...) for W > 0"},
    shared_inputs=("weight", "bias"),
)

def _no_window(run: OracleFn, inputs: dict[str, np.ndarray | None], attrs: dict[str, Any]) -> np.ndarray:
    """The ops without a window of states have no second formulation of one: they roll back by replay."""
    raise ValidationError("state_window", "an op with a window of states (this one rolls back by replaying its "
                          "state-update capsule, docs/spec.md §10)", "none")


def _gdn_describe(inputs: Mapping[str, np.ndarray], attrs: Mapping[str, Any]) -> list[str]:
    parts = [f"gdn rule={attrs.get('update_rule', 'gated_delta')}", f"C={attrs.get('state_update_capacity', 0)}"]
    try:
        call: dict[str, Any] = {**inputs, **attrs}
        d = gdn.validate(**call)
    except ValidationError as err:
        return [*parts, f"query={tuple(inputs['query'].shape)}", f"INVALID({err})", str(inputs["query"].dtype)]
    ragged = "cu_seqlens" in inputs
    parts += [f"B={d.batch} N={d.total_tokens}" + (f" lens={','.join(map(str, d.lengths))}" if ragged else ""),
              f"Hq=Hk={d.q_heads} Hv={d.v_heads} dk={d.d_k} dv={d.d_v}",
              f"rank{d.rank}" + (" packed" if d.packed else "") + (" ragged" if ragged else "")]
    if d.decay_per_key is not None:
        parts.append("decay=per-key" if d.decay_per_key else "decay=per-head")
    parts += [f"gate={d.gate_activation}", f"beta={d.beta_activation}", f"l2={int(d.qk_l2_norm)}"]
    if d.capacity:
        parts.append(f"captured={','.join(map(str, d.captured))}" + ("" if d.capture_active else " inactive"))
    parts.append(str(d.dtype))
    return parts


GATED_DELTA_NET = Op(
    name="GatedDeltaNet",
    input_names=gdn.INPUT_NAMES,
    required_inputs=("query",),
    sequence_inputs=("query", "key", "value", "decay", "beta"),
    attribute_defaults={"update_rule": "gated_delta", "scale": 0.0, "chunk_size": 64, "gate_activation": "none",
                        "beta_activation": "none", "qk_l2_norm": 0, "state_update_capacity": 0},
    attribute_names=("update_rule", "scale", "chunk_size", "gate_activation", "beta_activation", "qk_l2_norm",
                     "state_update_capacity"),
    validate=gdn.validate,
    oracle=gdn.gated_delta_net,
    window_by_prefix=_no_window,
    sequence_axis=lambda attrs: 0,  # the token axis N (a rank-4 spelling's (B, S) pair starts there too)
    describe=_gdn_describe,
    outputs=("output", "final_state", "state_update"),
    windowed=False,
    state_input="initial_state",
    state_output="final_state",
    fixed_types={**dict.fromkeys(("decay", "beta", "initial_state", "a_log", "dt_bias", "final_state", "state_update"),
                                 "float32"),
                 **dict.fromkeys(("cu_seqlens", "capture_count", "state_update_active"), "int32")},
    layouts={"query": "(N, H_q, d_k) or (B, S, H_q, d_k); packed (N, 2 H_q d_k + H_v d_v)",
             "key": "(N, H_k, d_k)", "value": "(N, H_v, d_v)", "cu_seqlens": "(B + 1,) int32",
             "decay": "(N, H_v) or (N, H_v, d_k) float32", "beta": "(N, H_v) float32",
             "initial_state": "(B, H_v, d_v, d_k) float32", "a_log": "(H_v,) float32", "dt_bias": "(H_v,) float32",
             "capture_count": "(B,) int32", "state_update_active": "(1,) int32"},
)


def _replay_validate(allow_empty_sequence: bool = False, **call: Any) -> gdn.ReplayDims:
    """``validate_replay`` as every op's ``validate`` is called; a replay has no sequence, so the flag that
    lets an empty one through changes nothing."""
    return gdn.validate_replay(**call)


def _replay_oracle(**call: Any) -> tuple[np.ndarray, ...]:
    return (gdn.gated_delta_net_state_replay(**call),)


def _replay_describe(inputs: Mapping[str, np.ndarray], attrs: Mapping[str, Any]) -> list[str]:
    sizes = " ".join(f"{name.split('_')[0]}={inputs[name].size}" for name in gdn.REPLAY_INPUTS[:3] if name in inputs)
    meta = inputs.get("metadata")
    fields = "" if meta is None else " ".join(f"{f}={int(v)}" for f, v in zip(gdn.DESCRIPTOR_FIELDS, meta.ravel(),
                                                                            strict=False))
    return ["replay", sizes, fields]


GATED_DELTA_NET_STATE_REPLAY = Op(
    name="GatedDeltaNetStateReplay",
    input_names=gdn.REPLAY_INPUTS,
    required_inputs=gdn.REPLAY_INPUTS,
    sequence_inputs=(),
    attribute_defaults={},
    attribute_names=(),
    validate=_replay_validate,
    oracle=_replay_oracle,
    window_by_prefix=_no_window,
    sequence_axis=lambda attrs: 0,
    describe=_replay_describe,
    outputs=("destination_out",),
    windowed=False,
    state_input="source_backing",
    state_output="destination_out",
    fixed_types={"metadata": "int64"},
    layouts={"source_backing": "(n,) float32", "capsule_backing": "(m,) float32",
             "destination_backing": "(p,) float32, the output's own buffer", "metadata": "(11,) int64, on the CPU"},
    shared_inputs=gdn.REPLAY_INPUTS,
)

OPS: dict[str, Op] = {op.name: op for op in (LINEAR_ATTENTION, CAUSAL_CONV)}
"""The ops with a window of states (``state_window``), by ONNX name: the window's properties apply to these."""

ALL_OPS: dict[str, Op] = {**OPS, **{op.name: op for op in (GATED_DELTA_NET, GATED_DELTA_NET_STATE_REPLAY)}}
"""Every op, by ONNX name: ``OPS`` and GatedDeltaNet with its replay, which roll back by replay instead."""


def op_named(name: str) -> Op:
    """The op called ``name``; ``KeyError`` naming the known ones."""
    try:
        return ALL_OPS[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}; known: {', '.join(ALL_OPS)}") from None

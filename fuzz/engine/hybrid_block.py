"""The hybrid block: a gated DeltaNet layer's two windows rolled back together, as a property.

A hybrid model's layer runs CausalConvWithState (window ``W``) over its q/k/v projection, then LinearAttention
(window ``W``) on the result split into query, key and value (``oracles.block``). A speculative decoder verifies
``T`` draft tokens through both, accepts the first ``a``, selects the matching slot of both states and resumes
with the next tokens; ``hybrid-block`` demands that this equal running only the accepted prefix (and the next
tokens) from the original states: for ``a = 0``, that both original past states are kept.

A case is a CausalConvWithState case (the layer's projected tokens, the convolution's weight, bias and past
state, the window) whose notes say where the draft ends, what was accepted, and describe the LinearAttention
half (``Block``: its heads, rule and layouts, and the seed its decay, beta and past state are drawn from), so a
saved case replays as it ran. The strategy draws small layers and, where the limits admit its elements, the
real layer of Qwen3.5's gated DeltaNet (``REAL_LAYER``).

On two kernels of one device (``Backend.resident_kernel``) the block runs device-resident, the q/k/v split and
both selects on the GPU (``fuzz.backends.device_block``); on a backend that runs both ops, through its ``run``
(prefix mode where its window is). Either way the check reruns the accepted prefix and the next tokens from
the original states, on the same backends, and compares under the tolerance model:

- the convolution's outputs of the accepted prefix and of the resumed call, and the resumed state, with the
  rerun's;
- LinearAttention's, with a rerun from its original state over the convolution outputs the block produced
  (those the convolution's comparison has just held to its rerun's), so that each op is judged on exactly the
  inputs it was given and the tolerance model holds for both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

import oracles
from fuzz.backends import Backend
from fuzz.backends.device_block import run_block_resident
from fuzz.engine.checking import Check, CheckResult, Property
from fuzz.model.block import BlockCall, BlockResult, BlockRun
from fuzz.model.case import Case
from fuzz.model.chain import ACCEPT_MODES, token_spans
from fuzz.model.findings import PropertyFailure
from fuzz.model.ops import CAUSAL_CONV, LINEAR_ATTENTION
from fuzz.ops.causal_conv.strategies import ConvLayout, ConvLimits, ConvShape, build_conv_case
from fuzz.ops.causal_conv.tolerance import exact_conv_answer
from fuzz.ops.linear_attention.strategies import (
    DELTA_KEY_NORM_CAP,
    betas,
    decays,
    head_layouts,
    numerics,
    one_of_values,
    seq_lens,
    shift_to_fit,
    values,
)
from fuzz.ops.linear_attention.tolerance import exact_answer
from oracles.block import QkvWidths, split_qkv
from oracles.rollback import represented_acceptances
from oracles.validation import DELTA_RULES, GATED_RULES, UPDATE_RULES

PROPERTY = "hybrid-block"


@dataclass(frozen=True)
class LayerSizes:
    """A gated DeltaNet layer's heads and the convolution's kernel."""

    q_heads: int
    key_heads: int
    kv_heads: int
    d_k: int
    d_v: int
    kernel: int

    @property
    def widths(self) -> QkvWidths:
        return QkvWidths(self.q_heads * self.d_k, self.key_heads * self.d_k, self.kv_heads * self.d_v)


REAL_LAYER = LayerSizes(q_heads=16, key_heads=16, kv_heads=32, d_k=128, d_v=128, kernel=4)
"""Qwen3.5's gated DeltaNet layer (as Qwen3-Next's): 16 query and key heads and 32 value heads of 128, so the
convolution has 2 * 16 * 128 + 32 * 128 = 8192 channels, with a kernel of 4 (and SiLU)."""

REAL_SHARE = 0.25
"""The share of cases drawn at ``REAL_LAYER``'s sizes where the limits admit their elements."""

REAL_MAX_TOKENS = 16
"""The most tokens of a case at ``REAL_LAYER``'s sizes, whatever the limits admit: its LinearAttention state holds
half a million values a slot, which the float64 oracle keeps for every token (a conv tier of long prompts admits
the layer's channels at hundreds of tokens: gigabytes)."""


@dataclass(frozen=True)
class Block:
    """The LinearAttention half of a hybrid case, as its notes hold it (JSON-ready)."""

    q_heads: int
    kv_heads: int
    key_heads: int
    d_k: int
    d_v: int
    update_rule: str
    decay_per_row: bool | None
    """Decay per key row, per head (False), or none (None, for rules without a decay)."""
    beta_shared: bool | None
    """One beta for every head, one per head (False), or none (None, for rules without a delta)."""
    magnitude: str
    decay: str
    beta: str
    seed: int
    """The seed LinearAttention's past state, decay and beta are drawn from."""
    past_shift: int = 0
    """The past state is divided by ``2^past_shift`` (so that no stored result overflows the dtype)."""

    @property
    def widths(self) -> QkvWidths:
        return QkvWidths(self.q_heads * self.d_k, self.key_heads * self.d_k, self.kv_heads * self.d_v)

    def notes(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def of(cls, case: Case) -> Block:
        """The block a hybrid case's notes describe."""
        return cls(**case.notes["block"])

    def attrs(self, window: int) -> dict[str, Any]:
        return {"q_num_heads": self.q_heads, "kv_num_heads": self.kv_heads, "update_rule": self.update_rule,
                "state_window": window}

    def arrays(self, batch: int, seq_len: int, window: int, dtype: np.dtype) -> dict[str, np.ndarray]:
        """LinearAttention's past state, and its decay and beta over all ``seq_len`` tokens of the case."""
        rng = np.random.default_rng(self.seed)
        slot = (batch, self.kv_heads, self.d_k, self.d_v)
        arrays = {"past_state": values(rng, (window, *slot), self.magnitude, dtype) / 2.0**self.past_shift}
        if self.decay_per_row is not None:
            arrays["decay"] = decays(rng, (batch, seq_len, self.kv_heads * (self.d_k if self.decay_per_row else 1)),
                                     self.decay)
        if self.beta_shared is not None:
            arrays["beta"] = betas(rng, (batch, seq_len, 1 if self.beta_shared else self.kv_heads), self.beta)
        return {name: x.astype(dtype) for name, x in arrays.items()}


# ---- the cases ----------------------------------------------------------------------------------

def _layer(draw: st.DrawFn, limits: ConvLimits, tokens: int, real: bool | None) -> tuple[LayerSizes, bool]:
    """The layer's sizes: ``REAL_LAYER`` in ``REAL_SHARE`` of the cases whose limits admit it and that are at most
    ``REAL_MAX_TOKENS`` long (always for ``real``, never for ``real=False``), else a small layer of at most
    ``limits.max_channels`` channels where that allows one head of each."""
    real_elements = REAL_LAYER.widths.channels * (tokens + REAL_LAYER.kernel - 1)
    admitted = real_elements <= limits.max_elements and tokens <= REAL_MAX_TOKENS
    if real or (real is None and admitted and draw(st.integers(0, 99)) < 100 * REAL_SHARE):
        return REAL_LAYER, True
    heads = 1 if limits.max_channels < 6 else 2 if limits.max_channels < 12 else 4
    q_heads, kv_heads, key_heads = draw(head_layouts(heads))
    cap = max(1, min(8, limits.max_channels // (q_heads + key_heads + kv_heads)))
    return LayerSizes(q_heads, key_heads, kv_heads, draw(st.integers(1, cap)), draw(st.integers(1, cap)),
                      draw(one_of_values(limits.kernel_sizes))), False


@st.composite
def hybrid_cases(draw: st.DrawFn, limits: ConvLimits, real: bool | None = None) -> Case:
    """A hybrid block case: a draft of ``T`` tokens (``T = W`` and ``T = W - 1`` often), the next 1 to
    ``max_next_tokens``, an acceptance the window represents (or 0, first, so failures shrink to it), the
    resume path asked for and the binding, and the layer (``_layer``): channels, kernel, dilation, layout,
    activation, bias and dtype from ``limits``; the real layer runs one batch entry, dilation 1 and SiLU (``real``
    draws it always, or never)."""
    w = draw(st.integers(1, limits.max_window))
    draft = draw(seq_lens(limits, w))
    following = draw(st.integers(1, limits.max_next_tokens))
    accepted = draw(one_of_values((0, *represented_acceptances(draft, w))))
    layer, real = _layer(draw, limits, draft + following, real)
    channels = layer.widths.channels
    room = max(1, limits.max_elements // (channels * (draft + following + layer.kernel - 1)))
    shape = ConvShape(
        batch=1 if real else draw(st.integers(1, max(1, min(limits.max_batch, room)))), seq_len=draft + following,
        state_window=w, ndim=1, channels_last=draw(one_of_values(limits.channels_last)), channel_shape=(channels,),
        spatial=(), kernel=(layer.kernel,), dilation=1 if real else draw(st.integers(1, limits.max_dilation)))
    layout = ConvLayout(activation="silu" if real else draw(one_of_values(limits.activations)),
                        dtype=draw(one_of_values(limits.dtypes)), has_bias=draw(one_of_values(limits.biases)),
                        has_past=True, write_defaults=draw(st.booleans()))
    rule = "gated_delta" if real else draw(one_of_values(UPDATE_RULES))
    num = draw(numerics())
    block = Block(
        q_heads=layer.q_heads, kv_heads=layer.kv_heads, key_heads=layer.key_heads, d_k=layer.d_k, d_v=layer.d_v,
        update_rule=rule,
        decay_per_row=(False if real else draw(one_of_values((False, True)))) if rule in GATED_RULES else None,
        beta_shared=(False if real else draw(one_of_values((False, True)))) if rule in DELTA_RULES else None,
        magnitude=num.magnitude, decay=num.decay, beta=num.beta, seed=num.seed + 1)
    notes = {"draft_len": draft, "accepted": accepted, "accept_mode": draw(one_of_values(ACCEPT_MODES)),
             "block": block.notes()}
    case, block = _fitted(build_conv_case(shape, layout, num, aliased=draw(st.booleans()), notes=notes), block)
    return case.with_(notes={**case.notes, "block": block.notes()})


def _conv_output(case: Case) -> np.ndarray:
    """The convolution's output over every token of the case, rounded to its dtype as a stored tensor is."""
    return exact_conv_answer(dict(case.inputs), dict(case.attrs)).output.astype(case.dtype)


def _halved(case: Case) -> Case:
    """The convolution's tokens, past state and bias halved (exactly), so its output shrinks."""
    return case.with_inputs(**{name: (x / case.dtype.type(2)).astype(case.dtype) for name, x in case.inputs.items()
                               if name in ("input", "past_state", "bias")})


def _la_peak(case: Case, block: Block) -> float:
    """The largest LinearAttention result over the whole case, from its past state, on the stored conv output."""
    dims = case.dims()
    query, key, value = split_qkv(_conv_output(case), block.widths, dims.channels_last)
    inputs = {"query": query, "key": key, "value": value,
              **block.arrays(dims.batch, dims.seq_len, dims.state_window, case.dtype)}
    return exact_answer(inputs, block.attrs(dims.state_window)).peak


def _keys_too_long(case: Case, block: Block) -> bool:
    """A delta rule's key of L2 norm above ``DELTA_KEY_NORM_CAP``: ``beta * |k|^2`` could reach 2, where the
    delta update amplifies the state."""
    if block.update_rule not in DELTA_RULES:
        return False
    _, key, _ = split_qkv(_conv_output(case), block.widths, bool(case.attr("channels_last")))
    heads = key.astype(np.float64).reshape(*key.shape[:2], block.key_heads, block.d_k)
    return bool(np.linalg.norm(heads, axis=-1).max(initial=0.0) > DELTA_KEY_NORM_CAP)


def _fitted(case: Case, block: Block) -> tuple[Case, Block]:
    """The case and block scaled so that a delta rule's keys stay short (``_keys_too_long``) and no stored result
    of either op overflows the dtype: LinearAttention's past state divided by a power of two where that suffices,
    else the convolution's inputs halved (its output, and so q, k and v, shrink with them), until both hold.
    Halving is exact; it repeats because SiLU is not linear."""
    for _ in range(64):
        if _keys_too_long(case, block):
            case = _halved(case)
            continue
        shift = shift_to_fit(_la_peak(case, block), case.dtype)
        if not shift:
            return case, block
        shifted = Block(**{**block.notes(), "past_shift": block.past_shift + shift})
        if not shift_to_fit(_la_peak(case, shifted), case.dtype):
            return case, shifted
        case = _halved(case)
    return case, block


# ---- running the block ----------------------------------------------------------------------------

def block_run(case: Case) -> BlockRun:
    """The draft call and the resumed one a hybrid case describes (``BlockRun``)."""
    block = Block.of(case)
    dims = case.dims()
    draft, total = int(case.notes["draft_len"]), dims.seq_len
    arrays = block.arrays(dims.batch, total, dims.state_window, case.dtype)
    attrs = block.attrs(dims.state_window)
    past = {"past_state": arrays.pop("past_state")}

    def call(start: int, stop: int, seed: dict[str, np.ndarray]) -> BlockCall:
        tokens = {name: x[:, start:stop] for name, x in arrays.items()}
        conv = token_spans(case, (start, stop))
        return BlockCall(conv if seed else conv.with_inputs(past_state=None), {**tokens, **seed}, attrs)

    return BlockRun(draft=call(0, draft, past), resume=call(draft, total, {}), accepted=int(case.notes["accepted"]),
                    widths=block.widths, channels_last=dims.channels_last, aliased=case.aliased,
                    mode=case.notes.get("accept_mode", "rebind"))


def _la_case(call: BlockCall, conv_output: np.ndarray, run: BlockRun, past: np.ndarray | None) -> Case:
    """LinearAttention's call on a convolution output: q, k and v split from it, the call's other inputs."""
    query, key, value = split_qkv(conv_output, run.widths, run.channels_last)
    inputs = {**call.la_inputs, "query": query, "key": key, "value": value}
    if past is not None:
        inputs["past_state"] = past
    return Case(inputs=inputs, attrs=dict(call.la_attrs), aliased=run.aliased, op=LINEAR_ATTENTION)


def la_calls(case: Case) -> tuple[Case, Case]:
    """LinearAttention's two calls in a hybrid case (the draft, then the resumed call from a past state of the
    window's shape), their query, key and value zeros: their shapes and attributes, for what is asked before the
    block runs (which documented issues affect the case: ``fuzz.corpus.known_issues``)."""
    run = block_run(case)
    past = run.draft.la_inputs["past_state"]
    draft, resume = (_la_case(call, np.zeros(call.conv.dims().output_shape, case.dtype), run, past)
                     for call in (run.draft, run.resume))
    return draft, resume


def _on_host(c: Check, conv: Backend, la: Backend, run: BlockRun) -> tuple[BlockResult, BlockResult] | None:
    """The draft and the resumed call through each backend's ``run``, the slots selected on the host; None
    (recorded as a skip) where either cannot run a call here."""
    dtype = run.draft.conv.dtype
    conv_past, la_past = run.draft.conv.inputs["past_state"], run.draft.la_inputs["past_state"]
    first = _call_on_host(c, conv, la, run, run.draft, conv_past, la_past, "past_state")
    if first is None:
        return None
    drafted = run.draft.conv.seq_len
    conv_seed = oracles.next_past_state(first.conv_state.astype(dtype), conv_past, drafted, run.accepted)
    la_seed = oracles.next_past_state(first.state.astype(dtype), la_past, drafted, run.accepted)
    resumed = _call_on_host(c, conv, la, run, run.resume, conv_seed, la_seed, "selected on the host")
    return None if resumed is None else (first, resumed)


def _call_on_host(c: Check, conv: Backend, la: Backend, run: BlockRun, call: BlockCall, conv_seed: np.ndarray | None,
                  la_seed: np.ndarray | None, seeded_by: str) -> BlockResult | None:
    conv_case = call.conv.with_inputs(past_state=conv_seed)
    got = c.run(conv, conv_case)
    if got is None:
        return None
    la_case = _la_case(call, got[0].astype(conv_case.dtype), run, la_seed)
    la_check = Check(PROPERTY, la_case)
    answer = la_check.run(la, la_case)
    if answer is None:
        c.result.skipped.update(la_check.result.skipped)
        return None
    return BlockResult(got[0], got[1], answer[0], answer[1], seeded_by)


# ---- the property ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Pair:
    """The backends a block runs on: the convolution's and LinearAttention's (one backend for both, or two
    kernels of one device, ``resident``)."""

    conv: Backend
    la: Backend
    resident: bool

    @property
    def names(self) -> tuple[str, ...]:
        return (self.conv.name,) if self.conv is self.la else (self.conv.name, self.la.name)


def block_pairs(backends: Sequence[Backend]) -> tuple[list[Pair], dict[str, str]]:
    """Every pair a block runs on, and why each backend in none is left out.

    A backend that runs both ops on the host (or in another process) is a pair by itself; a backend with a
    device-resident kernel (``Backend.resident_kernel``) of one op pairs with each of the other op's on the
    same device.
    """
    conv_op, la_op = CAUSAL_CONV.name, LINEAR_ATTENTION.name
    pairs: list[Pair] = []
    left_out: dict[str, str] = {}
    resident = [(b, k) for b in backends if (k := b.resident_kernel()) is not None]
    for b in backends:
        ops = b.capabilities().ops
        if b.resident_kernel() is None:
            if conv_op in ops and la_op in ops:
                pairs.append(Pair(b, b, False))
            else:
                left_out[b.name] = f"runs {', '.join(ops)} alone: the block needs both ops on one backend"
    for conv, conv_kernel in resident:
        if conv_op not in conv.capabilities().ops:
            continue
        partners = [la for la, k in resident if la_op in la.capabilities().ops and k.device is conv_kernel.device]
        pairs += [Pair(conv, la, True) for la in partners]
        if not partners:
            left_out[conv.name] = "no LinearAttention kernel on its device"
    for la, _ in resident:
        if la_op in la.capabilities().ops and not any(p.la is la for p in pairs):
            left_out[la.name] = "no CausalConvWithState kernel on its device"
    return pairs, left_out


def _along(case: Case, x: np.ndarray, positions: slice) -> np.ndarray:
    index: list[slice] = [slice(None)] * x.ndim
    index[case.op.sequence_axis(case.attrs)] = positions
    return x[tuple(index)]


def _check_pair(case: Case, run: BlockRun, pair: Pair, result: CheckResult) -> None:
    """The block on one pair against the rerun of the accepted prefix and the next tokens, on the same pair."""
    accepted, drafted = run.accepted, int(case.notes["draft_len"])
    following = case.seq_len - drafted
    conv_rerun = token_spans(case, (0, accepted), (drafted, case.seq_len))
    c = Check(PROPERTY, conv_rerun)
    runner = (lambda _: run_block_resident(pair.conv, pair.la, run)) if pair.resident else None
    calls = c.attempt(pair.conv, case, runner) if runner else _on_host(c, pair.conv, pair.la, run)
    rerun = None if calls is None else c.run(pair.conv, conv_rerun)
    if calls is None or rerun is None:
        _merge(result, c.result)
        return
    first, resumed = calls
    dtype = case.dtype
    label = "+".join(pair.names)
    labels = (f"{label} resumed a={accepted} ({resumed.seeded_by})", f"{label} rerun")
    window = case.state_window
    represented = np.arange(window) >= window - following
    conv_shared: dict[str, Any] = {"exact": c.exact(), "labels": labels, "backends": pair.names}
    if accepted:
        c.compare(_along(case, first.conv_output, slice(0, accepted)), _along(case, rerun[0], slice(0, accepted)),
                  tensor="output", rows=slice(0, accepted), detail=":conv-accepted", **conv_shared)
    c.compare(resumed.conv_output, _along(case, rerun[0], slice(accepted, None)), tensor="output",
              rows=slice(accepted, None), detail=":conv-resumed", **conv_shared)
    c.compare(resumed.conv_state, rerun[1], tensor="present_state", mask=c.slots(represented), detail=":conv-state",
              **conv_shared)
    _merge(result, c.result)

    produced = np.concatenate([_along(case, first.conv_output, slice(0, accepted)), resumed.conv_output],
                              axis=case.op.sequence_axis(case.attrs)).astype(dtype)
    spans = ((0, accepted), (drafted, case.seq_len))
    tokens = {name: np.concatenate([x[:, a:b] for a, b in spans], axis=1)
              for name, x in block_run_tokens(run).items()}
    la_rerun = _la_case(BlockCall(conv_rerun, tokens, run.draft.la_attrs), produced, run,
                        run.draft.la_inputs["past_state"])
    la = Check(PROPERTY, la_rerun)
    again = la.run(pair.la, la_rerun)
    if again is not None:
        answer = la.exact()
        shared: dict[str, Any] = {"labels": labels, "backends": pair.names}
        if accepted:
            la.compare(first.output[:, :accepted], again[0][:, :accepted], exact=answer, tensor="output",
                       rows=slice(0, accepted), tokens=accepted, detail=":accepted", **shared)
        reseeded = {"exact": answer.reseeded_at(accepted, dtype), "reseeded": dtype} if accepted else {"exact": answer}
        la.compare(resumed.output, again[0][:, accepted:], tensor="output", rows=slice(accepted, None),
                   tokens=accepted + following, detail=":resumed", **reseeded, **shared)
        la.compare(resumed.state, again[1], tensor="present_state", mask=la.slots(represented),
                   tokens=accepted + following, detail=":state", **reseeded, **shared)
    _merge(result, la.result)


def block_run_tokens(run: BlockRun) -> dict[str, np.ndarray]:
    """LinearAttention's per-token inputs (decay, beta) over the draft and the resumed call, back to back."""
    return {name: np.concatenate([run.draft.la_inputs[name], run.resume.la_inputs[name]], axis=1)
            for name in run.resume.la_inputs}


def _merge(into: CheckResult, part: CheckResult) -> None:
    into.max_ratio = max(into.max_ratio, part.max_ratio)
    into.comparisons += part.comparisons
    into.skipped.update(part.skipped)
    for key, value in part.parts.items():
        into.parts[key] = max(into.parts.get(key, 0.0), value)


def check_hybrid_block(case: Case, backends: Sequence[Backend]) -> CheckResult:
    """On every pair (``block_pairs``): the block verified over a draft, rolled back to the accepted prefix in
    both windows and resumed, equals a rerun of the accepted prefix and the next tokens from the original
    states. A failure names the hybrid case (its saved entry replays the whole block)."""
    run = block_run(case)
    pairs, left_out = block_pairs(backends)
    result = CheckResult(skipped=dict(left_out))
    if not pairs:
        result.skipped["*"] = "no backend pair runs both ops"
    for pair in pairs:
        try:
            _check_pair(case, run, pair, result)
        except PropertyFailure as failure:
            raise PropertyFailure(failure.finding.with_(case=case, id="")) from failure
    return result


HYBRID_BLOCK = Property(
    PROPERTY, "a gated DeltaNet layer (CausalConvWithState, then LinearAttention on its output) rolled back to an "
    "accepted prefix in both windows and resumed equals a rerun of that prefix from the original states",
    hybrid_cases, check_hybrid_block, ops=(CAUSAL_CONV.name,), backend_ops=(CAUSAL_CONV.name, LINEAR_ATTENTION.name))
"""The hybrid block as a property: conv units draw its cases (``ConvLimits``)."""

"""The cases of the upstream C++ tests (``lafuzz gtest``): one ``GtestCase`` per ``TEST``, built-in or from a
corpus entry.

A ``GtestCase`` is one or two calls of an op (two for select-and-resume) and what each call must do: return
values (the expected data is worked out elsewhere, ``fuzz.export.gtest_expected``) or fail with a fragment of
ONNX Runtime's message. The built-in set covers the feature request's correctness plan for both ops (docs/spec.md
§4, §7) and the findings that were defects (docs/findings.md); every value is drawn from a seeded generator, so
the rendered file is the same on every run. The message fragments are words ORT 1.31.1's CPU and CUDA EPs share;
the replay (``fuzz.export.gtest_replay``) checks each against a real ORT, so a fragment that drifts fails there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fuzz.corpus.entry import read_entry
from fuzz.model.case import Case
from fuzz.model.findings import KnownMark
from fuzz.model.ops import CAUSAL_CONV, LINEAR_ATTENTION, Op
from oracles.rollback import next_past_state, slot_for_accepted
from oracles.validation import MAX_STATE_WINDOW, ValidationError

DEFAULT_ENTRIES = (
    "backends-agree/ort-webgpu-shared-beta",
    "error-parity/ort-webgpu-kv-heads-zero",
    "error-parity/ort-webgpu-unvalidated-shapes",
    "error-parity/ort-webgpu-empty-sequence",
    "backends-agree/ort-webgpu-conv-kernel-size-one",
    "backends-agree/ort-webgpu-conv-float16-accumulation",
    "error-parity/ort-webgpu-conv-empty-activation",
    "aliasing/ort-cuda-conv-aliased-state",
)
"""The corpus entries (relative to the corpus) a default export carries: each documented defect of an EP."""

PAST_SHAPE = "Input 'past_state' is expected to have shape"
"""The start of ORT's message for a past state of the wrong shape (both ops, every window)."""
POISONS = {"nan": np.nan, "inf": np.inf, "huge": -1e4}
"""What fills the past slots ``0 .. W-2`` that must never be read (``huge``: the poison of ORT's own window
tests)."""


@dataclass(frozen=True)
class GtestCase:
    """One ``TEST`` of the generated file."""

    name: str
    """The test's name (``TEST(<suite>, <name>)``): CamelCase, unique within its op's file."""
    why: str
    """The comment above the test: what it proves, in a sentence or two."""
    calls: tuple[Case, ...]
    """The op's calls, in order (two for select-and-resume: the draft, then the resumed call)."""
    error: str | None = None
    """A fragment of ORT's message when the (single) call must be refused; None when it must return values."""
    pass_through: bool = False
    """``T = 0`` at ``W = 0``: the past state must come back unchanged (the CPU EP's answer; the CUDA EP's refusal
    is allowed by the contract, so that EP is left out of this test)."""
    origin: str = "built-in"
    """``built-in``, or the corpus entry the case came from."""
    known: KnownMark | None = None
    """The corpus entry's documented defect (its backend fails the test until it is fixed), if it has one."""

    @property
    def op(self) -> Op:
        return self.calls[0].op

    @property
    def windowed(self) -> bool:
        """Whether a call has ``W`` in ``1 .. 8`` (then only an EP that implements the window runs it; a ``W`` out
        of range is refused by the schema, on every EP)."""
        return any(0 < call.state_window <= MAX_STATE_WINDOW for call in self.calls)


def _values(rng: np.random.Generator, shape: tuple[int, ...], low: float, high: float, dtype: str) -> np.ndarray:
    return rng.uniform(low, high, shape).astype(dtype)


def _windowed_past(slot: np.ndarray, window: int, poison: str | None) -> np.ndarray:
    """A ``(W, ...)`` past state holding ``slot`` in slot ``W - 1`` and ``poison`` (zeros if None) before it."""
    fill = 0.0 if poison is None else POISONS[poison]
    past = np.full((window, *slot.shape), fill, dtype=slot.dtype)
    past[window - 1] = slot
    return past


def attention(*, rule: str = "gated_delta", batch: int = 1, q_heads: int = 2, kv_heads: int = 2,
              key_heads: int | None = None, d_k: int = 4, d_v: int = 4, seq_len: int = 4, window: int = 0,
              past: bool = True, decay_per_row: bool = False, shared_beta: bool = False, dtype: str = "float32",
              poison: str | None = None, seed: int = 0) -> Case:
    """A valid LinearAttention call: inputs in ``[-0.5, 0.5)``, decay in ``[-0.5, -0.05)``, beta in
    ``[0.1, 0.9)``, a past state in ``[-0.1, 0.1)``. Both optional gates are given whatever the rule (the op
    checks their shapes even where its rule ignores them)."""
    rng = np.random.default_rng(seed)
    key_heads = kv_heads if key_heads is None else key_heads
    inputs = {
        "query": _values(rng, (batch, seq_len, q_heads * d_k), -0.5, 0.5, dtype),
        "key": _values(rng, (batch, seq_len, key_heads * d_k), -0.5, 0.5, dtype),
        "value": _values(rng, (batch, seq_len, kv_heads * d_v), -0.5, 0.5, dtype),
        "decay": _values(rng, (batch, seq_len, kv_heads * (d_k if decay_per_row else 1)), -0.5, -0.05, dtype),
        "beta": _values(rng, (batch, seq_len, 1 if shared_beta else kv_heads), 0.1, 0.9, dtype),
    }
    if past:
        slot = _values(rng, (batch, kv_heads, d_k, d_v), -0.1, 0.1, dtype)
        inputs["past_state"] = _windowed_past(slot, window, poison) if window else slot
    attrs = {"q_num_heads": q_heads, "kv_num_heads": kv_heads, "update_rule": rule, "state_window": window}
    return Case(inputs=inputs, attrs=attrs, poison=poison, op=LINEAR_ATTENTION)


def convolution(*, batch: int = 1, channels: int = 3, kernel: int = 4, seq_len: int = 4, window: int = 0,
                dilation: int = 1, channels_last: bool = False, activation: str = "silu", bias: bool = True,
                past: bool = True, dtype: str = "float32", poison: str | None = None, seed: int = 0) -> Case:
    """A valid ``ndim = 1`` CausalConvWithState call: input and past state in ``[-1, 1)``, weight and bias in
    ``[-0.5, 0.5)``."""
    rng = np.random.default_rng(seed)
    state_length = (kernel - 1) * dilation
    layout: Callable[[int, int], tuple[int, int, int]] = (
        (lambda n, c: (batch, n, c)) if channels_last else (lambda n, c: (batch, c, n)))
    inputs = {
        "input": _values(rng, layout(seq_len, channels), -1.0, 1.0, dtype),
        "weight": _values(rng, (channels, 1, kernel), -0.5, 0.5, dtype),
    }
    if bias:
        inputs["bias"] = _values(rng, (channels,), -0.5, 0.5, dtype)
    if past:
        slot = _values(rng, layout(state_length, channels), -1.0, 1.0, dtype)
        inputs["past_state"] = _windowed_past(slot, window, poison) if window else slot
    attrs = {"activation": activation, "dilation": dilation, "channels_last": int(channels_last),
             "state_window": window}
    return Case(inputs=inputs, attrs=attrs, poison=poison, op=CAUSAL_CONV)


def resumed(draft: Case, accepted: int, next_tokens: int, seed: int) -> Case:
    """The call after ``draft`` when the decoder accepts ``accepted`` of its tokens: slot
    ``accepted - (T - W) - 1`` of the draft's window (the float64 oracle's, stored in the draft's type) in slot
    ``W - 1`` of its past state, the draft's earlier slots left as they are (never read), and ``next_tokens``
    fresh tokens drawn like the draft's (docs/spec.md §3)."""
    if slot_for_accepted(draft.seq_len, draft.state_window, accepted) is None:
        raise ValueError("resumed: accepting no token keeps the original past state; there is no slot to resume")
    _, window = draft.op.oracle(**draft.kwargs())
    past = next_past_state(window.astype(draft.dtype), draft.inputs.get("past_state"), draft.seq_len, accepted)
    fresh = _fresh_tokens(draft, next_tokens, seed)
    return draft.with_inputs(past_state=past, **fresh).with_(poison=None)


def _fresh_tokens(draft: Case, tokens: int, seed: int) -> dict[str, np.ndarray]:
    """New values for ``draft``'s sequence inputs over ``tokens`` positions, in the ranges the builders draw."""
    rng = np.random.default_rng(seed)
    axis = draft.op.sequence_axis(draft.attrs)
    ranges = {"decay": (-0.5, -0.05), "beta": (0.1, 0.9), "input": (-1.0, 1.0)}
    fresh = {}
    for name in draft.op.sequence_inputs:
        if name in draft.inputs:
            shape = list(draft.inputs[name].shape)
            shape[axis] = tokens
            low, high = ranges.get(name, (-0.5, 0.5))
            fresh[name] = _values(rng, tuple(shape), low, high, str(draft.dtype))
    return fresh


def _empty_sequence_case() -> Case:
    """``T = 0`` with a past state at ``W = 0``."""
    case = attention(rule="linear", q_heads=1, kv_heads=1, d_k=2, d_v=2, seq_len=1, seed=40)
    return case.with_inputs(**{n: case.inputs[n][:, :0] for n in ("query", "key", "value", "decay", "beta")})


def _la_window_cases() -> list[GtestCase]:
    w = GtestCase
    draft = attention(window=4, seq_len=4, seed=30)
    return [
        w("Window1_SingleToken", "W = 1 is the W = 0 result with a leading window axis of one.",
          (attention(window=1, seq_len=1, seed=1),)),
        w("Window1_FiveTokens", "W = 1 over five tokens keeps only the state after the last token.",
          (attention(window=1, seq_len=5, seed=2),)),
        w("Window4_FullCall", "W = T = 4: slot j is the state after the first j + 1 tokens.",
          (attention(window=4, seq_len=4, seed=3),)),
        w("Window4_LongerCall", "T = 6 > W = 4: the window holds the states after tokens 3 to 6.",
          (attention(window=4, seq_len=6, seed=4),)),
        w("Window4_ShortCall", "T = 2 < W = 4: slots 0 and 1 stand for no token of this call and are zero.",
          (attention(window=4, seq_len=2, seed=5),)),
        w("Window8_FullCall", "W = T = 8, the largest window.", (attention(window=8, seq_len=8, seed=6),)),
        w("Window8_ShortCall", "T = 3 < W = 8: the five leading slots are zero.",
          (attention(window=8, seq_len=3, seed=7),)),
        w("Window8_SingleToken_NoPast", "T = 1 < W = 8 with no past state: seven zero slots, then one state.",
          (attention(window=8, seq_len=1, past=False, seed=8),)),
        w("Window4_ZeroFilledLeadingSlots_NoPast",
          "Without a past state the leading slots of a short call are still exact zeros, not uninitialised memory.",
          (attention(window=4, seq_len=1, past=False, seed=9),)),
        w("Window4_PoisonedPastSlotsNaN", "Past slots 0 .. W-2 hold NaN: only slot W-1 may be read.",
          (attention(window=4, seq_len=3, poison="nan", seed=10),)),
        w("Window4_PoisonedPastSlotsInf", "Past slots 0 .. W-2 hold +Inf: only slot W-1 may be read.",
          (attention(window=4, seq_len=2, poison="inf", seed=11),)),
        w("Window8_PoisonedPastSlotsLarge", "Past slots 0 .. W-2 hold -1e4, as ORT's own window tests poison them.",
          (attention(window=8, seq_len=8, poison="huge", seed=12),)),
        w("Window4_AliasedPastAndPresent",
          "Aliasing: OpTester binds past_state and present_state to separate buffers and cannot bind one buffer to "
          "both, so this test holds the values an aliased binding must give (those of separate buffers); the "
          "aliased binding itself is run through IOBinding by `lafuzz gtest --replay`.",
          (attention(window=4, seq_len=3, seed=13).with_(aliased=True),)),
        w("Window4_SelectAndResume",
          "Select-and-resume over two calls: a draft of 4 tokens, 2 accepted, so the next call resumes from slot 1 "
          "of the draft's window (copied into its slot W-1) and must give what one run over the accepted prefix "
          "and the next 3 tokens gives.",
          (draft, resumed(draft, accepted=2, next_tokens=3, seed=31))),
        w("Window3_StandardGqa", "H_q = 4 query heads share H_kv = 2 states (GQA), window of 3.",
          (attention(q_heads=4, kv_heads=2, window=3, seq_len=5, seed=14),)),
        w("Window3_InverseGqa", "H_q = 2 < H_kv = 4 (inverse GQA): one output head per kv head.",
          (attention(q_heads=2, kv_heads=4, window=3, seq_len=2, seed=15),)),
        w("Window3_SharedKeyHeads", "n_k = 1 key head shared by H_kv = 2 kv heads.",
          (attention(q_heads=2, kv_heads=2, key_heads=1, window=3, seq_len=4, seed=16),)),
        w("Window2_Batch2", "B = 2: each slot is one contiguous (B, H_kv, d_k, d_v) block.",
          (attention(batch=2, window=2, seq_len=3, seed=17),)),
        w("Window4_Float16", "float16: each slot is stored once in float16.",
          (attention(window=4, seq_len=3, dtype="float16", seed=18),)),
        w("Window8_Float16_ShortCall", "float16, T = 2 < W = 8.",
          (attention(window=8, seq_len=2, dtype="float16", seed=19),)),
        *(w(f"Window{window}_{_camel(rule)}Rule{suffix}",
            f"update_rule = {rule}{detail}, window of {window}.",
            (attention(rule=rule, window=window, seq_len=3, decay_per_row=per_row, shared_beta=shared, seed=seed),))
          for window, rule, per_row, shared, suffix, detail, seed in (
              (2, "linear", False, False, "", "", 20),
              (3, "gated", False, False, "_DecayPerHead", " with a (B, T, H_kv) decay", 21),
              (3, "gated", True, False, "_DecayPerKeyRow", " with a (B, T, H_kv * d_k) decay", 22),
              (4, "delta", False, False, "_BetaPerHead", " with a (B, T, H_kv) beta", 23),
              (4, "delta", False, True, "_SharedBeta", " with a (B, T, 1) beta", 24),
              (5, "gated_delta", True, False, "_DecayPerKeyRow", " with a (B, T, H_kv * d_k) decay", 25),
              (5, "gated_delta", False, True, "_SharedBeta", " with a (B, T, 1) beta", 26),
          )),
        w("Window1_EmptySequenceIsRefused",
          "T = 0 with W > 0 is outside the contract; the CUDA EP refuses it (a WebGPU kernel may too, never crash).",
          (attention(rule="linear", q_heads=1, kv_heads=1, d_k=1, d_v=1, seq_len=0, window=1, past=False,
                     seed=27),), error="sequence length must be positive"),
        w("Window2_UnwindowedPastStateIsRefused",
          "At W = 2 past_state must be (W, B, H_kv, d_k, d_v); a 4-D one is refused.",
          (attention(window=2, seq_len=2, seed=28).with_inputs(
              past_state=attention(seq_len=2, seed=28).inputs["past_state"]),), error=PAST_SHAPE),
    ]


def _la_unwindowed_cases() -> list[GtestCase]:
    w = GtestCase
    return [
        *(w(f"{_camel(rule)}Rule_NoWindow", f"update_rule = {rule} at W = 0, on every EP with the kernel.",
            (attention(rule=rule, seq_len=3, seed=50 + i),)) for i, rule in enumerate(
                ("linear", "gated", "delta", "gated_delta"))),
        w("GatedDeltaRule_NoWindow_Float16", "float16 at W = 0, on every EP with the kernel.",
          (attention(seq_len=3, dtype="float16", seed=54),)),
        w("DeltaRule_SharedBeta_NoWindow",
          "A (B, T, 1) beta is one gate for every head; the WebGPU EP (plugin 0.4.0) gave wrong results for it.",
          (attention(rule="delta", q_heads=1, kv_heads=2, seq_len=2, shared_beta=True, seed=55),)),
        w("GatedDeltaRule_SharedBeta_InverseGqa_NoWindow",
          "A shared beta with inverse GQA and a per-row decay at W = 0.",
          (attention(q_heads=1, kv_heads=4, seq_len=3, shared_beta=True, decay_per_row=True, seed=56),)),
        w("NoWindow_AliasedPastAndPresent",
          "Aliasing at W = 0, as in Window4_AliasedPastAndPresent: the values of separate buffers, which an aliased "
          "binding must give too.", (attention(seq_len=3, seed=57).with_(aliased=True),)),
        w("EmptySequence_PassesStateThrough",
          "T = 0 at W = 0: the CPU EP returns an empty output and the past state unchanged (the WebGPU EP of plugin "
          "0.4.0 crashed). The CUDA EP refuses T = 0, which the contract also allows, so it is left out here.",
          (_empty_sequence_case(),), pass_through=True),
    ]


@dataclass(frozen=True)
class Breach:
    """One rule broken in a valid call: attributes set, an input dropped, or an input of another shape."""

    attrs: dict[str, object] | None = None
    drop: str | None = None
    reshape: tuple[str, tuple[int, ...]] | None = None

    def applied(self, case: Case, seed: int) -> Case:
        if self.attrs is not None:
            return case.with_attrs(**self.attrs)
        if self.drop is not None:
            return case.with_inputs(**{self.drop: None})
        assert self.reshape is not None, "Breach: nothing to break"
        name, shape = self.reshape
        return case.with_inputs(**{name: _values(np.random.default_rng(seed), shape, -0.5, 0.0, str(case.dtype))})


INVALID_ATTENTION: tuple[tuple[str, str, Breach, str], ...] = (
    ("StateWindowAboveMaxIsRefused", "state_window = 9 is above the schema's cap of 8.",
     Breach(attrs={"state_window": 9}), "state_window must be in [0, 8]"),
    ("KvNumHeadsZeroIsRefused", "kv_num_heads = 0 must be refused; the WebGPU EP (plugin 0.4.0) died of SIGFPE.",
     Breach(attrs={"kv_num_heads": 0}), "kv_num_heads"),
    ("ValueHiddenNotDivisibleByKvHeadsIsRefused", "value's hidden size 8 is not a multiple of kv_num_heads = 3.",
     Breach(attrs={"kv_num_heads": 3}), "divisible by kv_num_heads"),
    ("UnknownUpdateRuleIsRefused", "update_rule must be one of linear, gated, delta, gated_delta.",
     Breach(attrs={"update_rule": "gated_linear"}),
     "update_rule must be one of: linear, gated, delta, gated_delta"),
    ("MissingDecayIsRefused", "The gated rules need a decay.", Breach(drop="decay"),
     "decay input is required for update_rule=gated_delta"),
    ("MissingBetaIsRefused", "The delta rules need a beta.", Breach(drop="beta"),
     "beta input is required for update_rule=gated_delta"),
    ("DecayOfRankTwoIsRefused",
     "A decay of rank 2 is refused (the WebGPU EP of plugin 0.4.0 did not validate decay's shape at W = 0).",
     Breach(reshape=("decay", (1, 4))), "decay must be rank 3"),
    ("DecayWithWrongLastDimensionIsRefused", "decay's last axis must be H_kv or H_kv * d_k.",
     Breach(reshape=("decay", (1, 4, 3))), "decay last dim must be H_kv or H_kv*d_k"),
    ("BetaWithWrongLastDimensionIsRefused", "beta's last axis must be H_kv or 1 (unvalidated on WebGPU 0.4.0).",
     Breach(reshape=("beta", (1, 4, 3))), "beta last dim must be H_kv or 1"),
    ("PastStateWithWrongShapeIsRefused", "past_state must be (B, H_kv, d_k, d_v) at W = 0 (unvalidated on "
     "WebGPU 0.4.0).", Breach(reshape=("past_state", (1, 2, 4, 3))), PAST_SHAPE),
    ("FiveDimensionalPastStateAtWindowZeroIsRefused", "A 5-D past_state at W = 0 is refused.",
     Breach(reshape=("past_state", (1, 1, 2, 4, 4))), PAST_SHAPE),
    ("QueryOfRankTwoIsRefused", "query must be (B, T, H_q * d_k).", Breach(reshape=("query", (4, 8))),
     "query must have rank >= 3"),
    ("SequenceMismatchIsRefused", "key must have query's sequence length.",
     Breach(reshape=("key", (1, 3, 8))), "sequence"),
)
"""The refusals of LinearAttention: name, why, how a valid gated_delta call (``H_q = H_kv = 2``, ``d_k = d_v = 4``,
``T = 4``) is broken, and the fragment of ORT's message the test expects."""


def _refusals(base: Callable[[], Case], table: Iterable[tuple[str, str, Breach, str]],
              seed: int) -> list[GtestCase]:
    cases = []
    for i, (name, why, change, fragment) in enumerate(table):
        broken = change.applied(base(), seed + i)
        try:
            broken.dims()
        except ValidationError:
            cases.append(GtestCase(name, why, (broken,), error=fragment))
            continue
        raise AssertionError(f"gtest case {name}: the broken call is still valid: {broken.summary()}")
    return cases


INVALID_CONVOLUTION: tuple[tuple[str, str, Breach, str], ...] = (
    ("StateWindowAboveMaxIsRefused", "state_window = 9 is above the schema's cap of 8.",
     Breach(attrs={"state_window": 9}), "state_window must be in [0, 8]"),
    ("UnknownActivationIsRefused", "activation must be none, silu or swish.",
     Breach(attrs={"activation": "relu"}), "activation must be one of: none, silu, swish"),
    ("DilationZeroIsRefused", "dilation must be at least 1.", Breach(attrs={"dilation": 0}), "dilation must be >= 1"),
    ("WeightWithWrongChannelsIsRefused", "weight must be (C, 1, k).",
     Breach(reshape=("weight", (4, 1, 4))),
     "must match input channels"),
    ("BiasWithWrongSizeIsRefused", "bias must be (C,).", Breach(reshape=("bias", (4,))), "bias must"),
    ("PastStateWithWrongLengthIsRefused", "past_state must be (B, C, (k - 1) * dilation).",
     Breach(reshape=("past_state", (1, 3, 2))), PAST_SHAPE),
)
"""The refusals of CausalConvWithState, against a valid call (``C = 3``, ``k = 4``, ``T = 4``, silu, bias, past)."""


def _conv_cases() -> list[GtestCase]:
    w = GtestCase
    draft = convolution(window=4, seq_len=4, seed=130)
    return [
        w("Window1_SingleToken", "W = 1 is the W = 0 result with a leading window axis of one.",
          (convolution(window=1, seq_len=1, seed=101),)),
        w("Window4_FullCall", "W = T = 4: slot j is the state after the first j + 1 positions.",
          (convolution(window=4, seq_len=4, seed=102),)),
        w("Window4_ShortCall", "T = 2 < W = 4: the two leading slots are zero.",
          (convolution(window=4, seq_len=2, seed=103),)),
        w("Window8_LongerCall", "T = 10 > W = 8.", (convolution(window=8, seq_len=10, seed=104),)),
        w("Window8_ShortCall_NoPast", "T = 3 < W = 8 without a past state: five zero slots.",
          (convolution(window=8, seq_len=3, past=False, seed=105),)),
        w("Window4_PoisonedPastSlotsNaN", "Past slots 0 .. W-2 hold NaN: only slot W-1 may be read.",
          (convolution(window=4, seq_len=3, poison="nan", seed=106),)),
        w("Window4_PoisonedPastSlotsInf", "Past slots 0 .. W-2 hold +Inf.",
          (convolution(window=4, seq_len=5, poison="inf", seed=107),)),
        w("Window4_Dilation2", "dilation = 2: the state holds (k - 1) * 2 positions.",
          (convolution(window=4, seq_len=3, dilation=2, seed=108),)),
        w("Window3_ChannelsLast", "channels_last = 1: (B, T, C) input, (W, B, L, C) state.",
          (convolution(window=3, seq_len=4, channels_last=True, seed=109),)),
        w("Window3_NoActivationNoBias", "activation = none, no bias.",
          (convolution(window=3, seq_len=2, activation="none", bias=False, seed=110),)),
        w("Window2_Batch2", "B = 2.", (convolution(batch=2, window=2, seq_len=3, seed=111),)),
        w("Window4_Float16", "float16: the states are copies, exact in any type.",
          (convolution(window=4, seq_len=3, dtype="float16", seed=112),)),
        w("Window4_AliasedPastAndPresent",
          "Aliasing: OpTester cannot bind one buffer as both past_state and present_state; this test holds the "
          "values an aliased binding must give (those of separate buffers), and `lafuzz gtest --replay` runs the "
          "aliased binding through IOBinding.",
          (convolution(window=4, seq_len=3, channels_last=True, seed=113).with_(aliased=True),)),
        w("Window4_SelectAndResume",
          "Select-and-resume: a draft of 4 positions, 3 accepted; the next call resumes from slot 2 and must give "
          "what one run over the accepted prefix and the next 2 positions gives.",
          (draft, resumed(draft, accepted=3, next_tokens=2, seed=131))),
        w("Window4_KernelSizeOne", "k = 1: the state is empty (L = 0), the window a stack of empty slots.",
          (convolution(window=4, seq_len=2, kernel=1, seed=114),)),
        w("NoWindow_Silu", "W = 0 on every EP with the kernel.", (convolution(seq_len=5, seed=115),)),
        w("NoWindow_AliasedPastAndPresent", "Aliasing at W = 0: the values of separate buffers.",
          (convolution(seq_len=3, channels_last=True, seed=117).with_(aliased=True),)),
        w("NoWindow_Float16", "float16 at W = 0 on every EP with the kernel.",
          (convolution(seq_len=5, dtype="float16", seed=116),)),
        *_refusals(lambda: convolution(seq_len=4, seed=120), INVALID_CONVOLUTION, seed=140),
    ]


def _camel(rule: str) -> str:
    return "".join(part.capitalize() for part in rule.split("_"))


def builtin_cases() -> dict[str, list[GtestCase]]:
    """The built-in cases by op name."""
    attention_cases = [
        *_la_window_cases(),
        *_la_unwindowed_cases(),
        *_refusals(lambda: attention(seq_len=4, seed=60), INVALID_ATTENTION, seed=70),
    ]
    return {LINEAR_ATTENTION.name: attention_cases, CAUSAL_CONV.name: _conv_cases()}


def entry_case(directory: Path) -> GtestCase:
    """The test of a corpus entry: its case, expected to return the oracle's values, or, when the contract
    refuses it, to be refused with ORT's message naming what the oracle names (the input or attribute); at
    ``T = 0`` and ``W = 0`` the past state passed through."""
    entry = read_entry(directory)
    case = entry.finding.case
    name = "Corpus_" + "".join(_camel(part.replace("-", "_")) for part in (directory.parent.name, directory.name))
    why = (f"Regression from lafuzz corpus entry {directory.parent.name}/{directory.name}"
           + (f": {entry.finding.known.explanation}" if entry.finding.known else "."))
    origin = f"corpus/{directory.parent.name}/{directory.name}"
    known = entry.finding.known
    try:
        case.dims()
    except ValidationError as error:
        if case.seq_len == 0 and case.state_window == 0:
            return GtestCase(name, why, (case,), pass_through=True, origin=origin, known=known)
        return GtestCase(name, why, (case,), error=error.input.split(".")[0], origin=origin, known=known)
    return GtestCase(name, why, (case,), origin=origin, known=known)


def entry_cases(corpus: Path, entries: Iterable[str]) -> dict[str, list[GtestCase]]:
    """The tests of ``entries`` (directories relative to ``corpus``), by op name."""
    by_op: dict[str, list[GtestCase]] = {LINEAR_ATTENTION.name: [], CAUSAL_CONV.name: []}
    for relative in entries:
        case = entry_case(corpus / relative)
        by_op[case.op.name].append(case)
    return by_op

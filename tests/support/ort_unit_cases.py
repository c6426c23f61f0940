"""The cases of ONNX Runtime's own C++ unit tests of ``com.microsoft`` LinearAttention and CausalConvWithState,
as data: sizes, attributes, how each input is filled, and the few facts upstream states as numbers.

Upstream (microsoft/onnxruntime, as stored by the project's code index; read on 2026-12-03):

- ``onnxruntime/test/contrib_ops/linear_attention_op_test.cc``, the version with the ``state_window`` tests
  (103,936 characters). The index holds it without naming its commit; its other stored versions, at
  ``a058135613fc272ad9d6f25b954d8133635ded04`` and ``0a7aa69056c2c4eb7675dde9abec0e1ff5523410``, hold
  a subset of these cases (no window, no rejections) and no case the one ported here lacks.
- ``onnxruntime/test/contrib_ops/causal_conv_with_state_op_test.cc``, the version with the dilation and
  ``state_window`` tests (77,970 characters; commit likewise unnamed). Its version at
  ``0f9cfdce5da39fceb2624d6c370daa8a78a7b279`` holds the cases without dilation or window.

No expected output there is written as numbers: each test computes it at run time with a float32 C++
reference (the window's slots by rerunning that reference over each prefix). So only the cases' parameters
are ported, and the tests hold our oracle against ORT's CPU EP (``W = 0``; its window through prefix runs)
and against the kernel. The numbers upstream does state are kept as facts: the inputs written out, the
conv state ``[2, 3]`` after feeding ``1, 2, 3`` one token at a time, and the rules each rejection names.

Inputs follow upstream's recipe: a tensor is written in head-major order ``(B, H, T, D)`` (decay and beta
``(B, H, T)``), filled from its flat index ``i`` in float32 (``Wave``), then packed as the op takes it
(``(B, T, H*D)``, ``(B, T, H)``). NumPy's float32 ``sin`` may differ from the C library's ``sinf`` in the
last bit: harmless, since every side runs on the same arrays. No code or text of the upstream files is
copied here; the cases are restated from what they test.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

import ml_dtypes  # onnx's own dependency: NumPy's bfloat16
import numpy as np

from fuzz.model.case import Case
from fuzz.model.ops import CAUSAL_CONV, LINEAR_ATTENTION, Op

LA_UPSTREAM = "onnxruntime/test/contrib_ops/linear_attention_op_test.cc"
CONV_UPSTREAM = "onnxruntime/test/contrib_ops/causal_conv_with_state_op_test.cc"

POISON = -1e4
"""What upstream's window tests write in past slots ``0..W-2``, which must never be read."""


@dataclass(frozen=True)
class Wave:
    """``offset + amplitude * f(i * frequency + phase)`` at flat index ``i``, in float32; ``f`` is
    ``sin``, ``cos`` or ``abs_sin`` (``|sin|``)."""

    fn: str
    amplitude: float
    frequency: float
    phase: float = 0.0
    offset: float = 0.0

    def values(self, count: int) -> np.ndarray:
        f32 = np.float32
        x = np.arange(count, dtype=f32) * f32(self.frequency) + f32(self.phase)
        y = np.cos(x) if self.fn == "cos" else np.sin(x)
        if self.fn == "abs_sin":
            y = np.abs(y)
        return (f32(self.offset) + f32(self.amplitude) * y).astype(f32)


@dataclass(frozen=True)
class Fill:
    """Every element the same value."""

    value: float


Spec = tuple[float, ...] | Wave | Fill
"""How upstream fills one tensor: its values written out, a wave, or a constant."""


def filled(spec: Spec, shape: tuple[int, ...]) -> np.ndarray:
    """The float32 tensor ``spec`` describes, in ``shape`` (row-major, as upstream's flat vectors)."""
    count = int(np.prod(shape))
    if isinstance(spec, Wave):
        flat = spec.values(count)
    elif isinstance(spec, Fill):
        flat = np.full(count, spec.value, dtype=np.float32)
    else:
        flat = np.asarray(spec, dtype=np.float32)
        if flat.size != count:
            raise ValueError(f"{flat.size} values written for a tensor of shape {shape}")
    return flat.reshape(shape)


def _seeded(slot: np.ndarray, window: int) -> np.ndarray:
    """The past state seeding a call: ``slot`` itself at ``W = 0``, else a window with ``slot`` last and
    ``POISON`` in every other slot, as upstream's window tests build it."""
    if not window:
        return slot
    past = np.full((window, *slot.shape), POISON, dtype=np.float32)
    past[-1] = slot
    return past


def _packed(heads_first: np.ndarray) -> np.ndarray:
    """``(B, H, T, D)`` -> ``(B, T, H*D)``; ``(B, H, T)`` -> ``(B, T, H)``."""
    if heads_first.ndim == 3:
        return np.ascontiguousarray(heads_first.transpose(0, 2, 1))
    b, h, t, d = heads_first.shape
    return np.ascontiguousarray(heads_first.transpose(0, 2, 1, 3).reshape(b, t, h * d))


@dataclass(frozen=True)
class LinearAttentionUnitCase:
    """One upstream LinearAttention test: sizes, rule, and how each input is filled (None: absent)."""

    name: str
    rule: str
    batch: int
    q_heads: int
    kv_heads: int
    key_heads: int
    seq_len: int
    d_k: int
    d_v: int
    query: Spec
    key: Spec
    value: Spec
    past: Spec | None = None
    decay: Spec | None = None
    decay_per_row: bool = False
    """Decay ``(B, T, H_kv*d_k)`` (one gate per key row) rather than ``(B, T, H_kv)``."""
    beta: Spec | None = None
    scale_set: bool = True
    """Upstream sets ``scale = 1/sqrt(d_k)`` in float32; False leaves the attribute out (its default)."""
    state_window: int = 0
    cuda_only: bool = False
    """Upstream runs it on the CUDA EP alone (every ``W > 0`` test, since only that EP has the window)."""
    slow: bool = False
    """A second or more on some side (the oracle, the CPU EP, the kernel on lavapipe): ``pytest.mark.slow``."""

    def case(self) -> Case:
        """The call as the suite runs it; a windowed past state has its slots ``0..W-2`` set to ``POISON``."""
        b, t, hkv = self.batch, self.seq_len, self.kv_heads
        inputs = {
            "query": _packed(filled(self.query, (b, self.q_heads, t, self.d_k))),
            "key": _packed(filled(self.key, (b, self.key_heads, t, self.d_k))),
            "value": _packed(filled(self.value, (b, hkv, t, self.d_v))),
        }
        if self.past is not None:
            inputs["past_state"] = _seeded(filled(self.past, (b, hkv, self.d_k, self.d_v)), self.state_window)
        if self.decay is not None:
            rows = (self.d_k,) if self.decay_per_row else ()
            inputs["decay"] = _packed(filled(self.decay, (b, hkv, t, *rows)))
        if self.beta is not None:
            inputs["beta"] = _packed(filled(self.beta, (b, hkv, t)))
        attrs: dict[str, Any] = {"update_rule": self.rule, "q_num_heads": self.q_heads, "kv_num_heads": hkv}
        if self.scale_set:
            attrs["scale"] = float(np.float32(1.0) / np.sqrt(np.float32(self.d_k)))
        if self.state_window:
            attrs["state_window"] = self.state_window
        return Case(inputs=inputs, attrs=attrs, op=LINEAR_ATTENTION, notes={"upstream": self.name})


# ---- LinearAttention: the values upstream writes out (H = 1, d_k = d_v = 4) --------------------------
Q = (1.0, 0.0, 0.5, -0.5, 0.5, 1.0, -0.5, 0.0, 0.0, -1.0, 1.0, 0.5)
K = (0.5, 0.5, 0.0, 1.0, 1.0, 0.0, 1.0, 0.5, -0.5, 1.0, 0.5, 0.0)
V = (1.0, 2.0, 3.0, 4.0, 2.0, 1.0, 0.0, 3.0, 3.0, 0.0, 1.0, 2.0)
ROW_DECAY = (-0.1, -0.2, -0.05, -0.15, -0.2, -0.1, -0.3, -0.05, -0.05, -0.15, -0.1, -0.2)
HEAD_DECAY = (-0.1, -0.2, -0.05)
BETA = (0.8, 0.6, 0.9)

# ---- LinearAttention: the waves upstream fills larger tensors with ----------------------------------
HEAD_GATE = Wave("abs_sin", -0.05, 0.3, offset=-0.1)
"""The per-head decay most tests share."""
BETA_WAVE = Wave("sin", 0.3, 0.31, offset=0.5)


FAST, SLOW, SLOWEST = (0.13, 0.17, 0.23), (0.013, 0.017, 0.023), (0.0013, 0.0017, 0.0023)
"""The frequencies of query (sin), key (cos) and value (sin, phase 0.5) in upstream's waves."""


class Qkv(TypedDict):
    """How query, key and value are filled (a ``**``-able part of a case)."""

    query: Spec
    key: Spec
    value: Spec


def _qkv(amplitude: float, frequencies: tuple[float, float, float]) -> Qkv:
    """Query, key and value of one amplitude at the given frequencies."""
    fq, fk, fv = frequencies
    return {"query": Wave("sin", amplitude, fq), "key": Wave("cos", amplitude, fk),
            "value": Wave("sin", amplitude, fv, phase=0.5)}


def _small(name: str, rule: str, t: int, **inputs: Any) -> LinearAttentionUnitCase:
    """A hand-written case: B = H = 1, d_k = d_v = 4, the first ``t`` tokens of ``Q``, ``K``, ``V``."""
    return LinearAttentionUnitCase(name, rule, 1, 1, 1, 1, t, 4, 4, Q[: 4 * t], K[: 4 * t], V[: 4 * t], **inputs)


def _standard_gqa(name: str, rule: str, q: int, kv: int, d_k: int, d_v: int) -> LinearAttentionUnitCase:
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    return LinearAttentionUnitCase(name, rule, 2, q, kv, kv, 10, d_k, d_v, **_qkv(0.1, SLOW), past=Fill(0.01),
                                   decay=HEAD_GATE if gated else None, beta=BETA_WAVE if delta else None)


def _window(name: str, b: int, nk: int, t: int, d_k: int, d_v: int, w: int, past: bool = True,
            slow: bool = False) -> LinearAttentionUnitCase:
    return LinearAttentionUnitCase(name, "gated_delta", b, 2, 2, nk, t, d_k, d_v, **_qkv(0.5, FAST),
                                   past=Wave("cos", 0.1, 0.07) if past else None, decay=HEAD_GATE, beta=BETA_WAVE,
                                   state_window=w, cuda_only=True, slow=slow)


CHUNK_QKV = _qkv(0.1, SLOW)
MULTI_BATCH = Qkv(query=Wave("sin", 1.0, 0.3), key=Wave("cos", 1.0, 0.5), value=Wave("sin", 1.0, 0.7, 1.0))
ROW_GATE = Wave("abs_sin", -0.05, 0.07, offset=-0.05)

FIXED_SHAPE_BATCH = 66
"""Upstream sizes this test's batch to ``ceil(SMs / 2)`` of the CUDA device it runs on; 66 is an H100's or
H200's (132 SMs)."""

LINEAR_ATTENTION_CASES: tuple[LinearAttentionUnitCase, ...] = (
    _small("LinearRule_SingleToken", "linear", 1),
    _small("LinearRule_MultiToken", "linear", 3),
    _small("LinearRule_WithInitialState", "linear", 2, past=Fill(0.1)),
    _small("GatedRule_SingleToken", "gated", 1, past=Fill(1.0), decay=ROW_DECAY[:4], decay_per_row=True),
    _small("GatedRule_MultiToken", "gated", 3, past=Fill(0.5), decay=ROW_DECAY, decay_per_row=True),
    _small("DeltaRule_SingleToken", "delta", 1, past=Fill(0.5), beta=BETA[:1]),
    _small("DeltaRule_MultiToken", "delta", 3, beta=BETA),
    _small("GatedDeltaRule_SingleToken", "gated_delta", 1, past=Fill(1.0), decay=ROW_DECAY[:4],
           decay_per_row=True, beta=BETA[:1]),
    _small("GatedDeltaRule_MultiToken", "gated_delta", 3, past=Fill(0.5), decay=ROW_DECAY, decay_per_row=True,
           beta=BETA),
    _small("GatedRule_BroadcastDecay", "gated", 3, past=Fill(0.5), decay=HEAD_DECAY),
    _small("GatedDeltaRule_BroadcastDecay", "gated_delta", 3, past=Fill(0.5), decay=HEAD_DECAY, beta=BETA),
    LinearAttentionUnitCase("LinearRule_MultiBatchMultiHead", "linear", 2, 2, 2, 2, 2, 4, 4, **MULTI_BATCH),
    LinearAttentionUnitCase("GatedDeltaRule_MultiBatchMultiHead", "gated_delta", 2, 2, 2, 2, 2, 4, 4, **MULTI_BATCH,
                            past=Fill(0.1), decay=Wave("sin", -0.1, 0.2, offset=-0.1), decay_per_row=True,
                            beta=Wave("sin", 0.3, 1.0, offset=0.5)),
    _small("LinearRule_DefaultScale", "linear", 1, scale_set=False),
    LinearAttentionUnitCase("GatedDeltaRule_LongerSequence", "gated_delta", 1, 2, 2, 2, 16, 8, 8, **_qkv(0.1, FAST),
                            past=Fill(0.01), decay=ROW_GATE, decay_per_row=True, beta=BETA_WAVE),
    LinearAttentionUnitCase("GatedDeltaRule_Qwen35Like", "gated_delta", 1, 2, 2, 2, 8, 128, 128,
                            **_qkv(0.05, SLOW), past=Fill(0.01), decay=HEAD_GATE, beta=BETA_WAVE),
    LinearAttentionUnitCase("GatedDeltaRule_NonPowerOf2DK", "gated_delta", 1, 1, 1, 1, 3, 3, 4,
                            query=Wave("sin", 0.5, 0.3), key=Wave("cos", 0.5, 0.5), value=Wave("sin", 0.5, 0.7, 1.0),
                            past=Fill(0.5), decay=HEAD_GATE, beta=BETA_WAVE),
    LinearAttentionUnitCase("LinearRule_LargerDims", "linear", 1, 2, 2, 2, 4, 16, 64, **_qkv(0.1, FAST)),
    LinearAttentionUnitCase("GatedRule_LargerDims", "gated", 1, 2, 2, 2, 4, 32, 64, **_qkv(0.1, FAST),
                            past=Fill(0.01), decay=ROW_GATE, decay_per_row=True),
    LinearAttentionUnitCase("GatedDeltaRule_LargerDims", "gated_delta", 2, 2, 2, 2, 4, 32, 64, **_qkv(0.1, FAST),
                            past=Fill(0.01), decay=ROW_GATE, decay_per_row=True, beta=BETA_WAVE),
    LinearAttentionUnitCase("GatedDeltaRule_KGQA_Small", "gated_delta", 1, 4, 4, 2, 3, 4, 4, **_qkv(0.5, FAST),
                            past=Fill(0.1), decay=HEAD_GATE, beta=BETA_WAVE),
    LinearAttentionUnitCase("LinearRule_KGQA", "linear", 1, 4, 4, 2, 3, 4, 4, **_qkv(0.5, FAST)),
    LinearAttentionUnitCase("GatedDeltaRule_Qwen35_KGQA", "gated_delta", 1, 32, 32, 16, 4, 128, 128,
                            **_qkv(0.05, SLOW), past=Fill(0.01), decay=HEAD_GATE, beta=BETA_WAVE, slow=True),
    LinearAttentionUnitCase("GatedDeltaRule_InverseGQA_Small", "gated_delta", 1, 2, 4, 4, 3, 4, 4, **_qkv(0.5, FAST),
                            past=Fill(0.1), decay=HEAD_GATE, beta=BETA_WAVE),
    LinearAttentionUnitCase("LinearRule_InverseGQA", "linear", 1, 2, 4, 4, 3, 4, 4, **_qkv(0.5, FAST)),
    LinearAttentionUnitCase("GatedDeltaRule_InverseGQA_LargerDims", "gated_delta", 1, 2, 8, 4, 4, 16, 64,
                            **CHUNK_QKV, past=Fill(0.01), decay=HEAD_GATE, beta=BETA_WAVE),
    LinearAttentionUnitCase("LinearRule_MultiChunk", "linear", 1, 2, 2, 2, 200, 32, 64, **CHUNK_QKV, slow=True),
    LinearAttentionUnitCase("GatedRule_MultiChunk_PerDimDecay", "gated", 1, 2, 2, 2, 150, 32, 64, **CHUNK_QKV,
                            past=Fill(0.01), decay=ROW_GATE, decay_per_row=True, slow=True),
    LinearAttentionUnitCase("DeltaRule_MultiChunk", "delta", 2, 2, 2, 2, 130, 32, 64, **CHUNK_QKV,
                            beta=Wave("sin", 0.3, 0.031, offset=0.5), slow=True),
    LinearAttentionUnitCase("GatedDeltaRule_MultiChunk_Qwen35Like", "gated_delta", 1, 2, 2, 2, 192, 128, 128,
                            **_qkv(0.05, SLOWEST), past=Fill(0.01), decay=Wave("abs_sin", -0.05, 0.03, offset=-0.1),
                            beta=Wave("sin", 0.3, 0.031, offset=0.5), slow=True),
    LinearAttentionUnitCase("GatedDeltaRule_MultiChunk_PerDimDecay", "gated_delta", 1, 3, 3, 3, 175, 64, 64,
                            query=Wave("sin", 0.08, 0.011), key=Wave("cos", 0.08, 0.019),
                            value=Wave("sin", 0.08, 0.017, phase=0.3), past=Fill(0.005),
                            decay=Wave("abs_sin", -0.04, 0.05, offset=-0.04), decay_per_row=True,
                            beta=Wave("sin", 0.4, 0.023, offset=0.4), slow=True),
    _standard_gqa("GatedDeltaRule_StandardGQA_N2", "gated_delta", 4, 2, 32, 64),
    _standard_gqa("GatedDeltaRule_StandardGQA_N4", "gated_delta", 8, 2, 32, 64),
    _standard_gqa("GatedDeltaRule_StandardGQA_N8", "gated_delta", 16, 2, 32, 64),
    _standard_gqa("GatedDeltaRule_StandardGQA_N16", "gated_delta", 16, 1, 32, 64),
    _standard_gqa("LinearRule_StandardGQA_N4", "linear", 8, 2, 32, 64),
    _standard_gqa("GatedRule_StandardGQA_N4", "gated", 8, 2, 32, 64),
    _standard_gqa("DeltaRule_StandardGQA_N4", "delta", 8, 2, 32, 64),
    _standard_gqa("GatedDeltaRule_StandardGQA_N4_Dim128", "gated_delta", 8, 2, 128, 128),
    _window("GatedDeltaRule_StateWindow", 1, 2, 5, 4, 4, 3),
    _window("GatedDeltaRule_StateWindow_MultiBatch", 2, 2, 5, 4, 4, 3),
    _window("GatedDeltaRule_StateWindow_DecodeColKernel", 2, 1, 4, 128, 128, 3),
    _window("GatedDeltaRule_StateWindow_DecodeWarpKernel", 1, 1, 4, 256, 64, 3, slow=True),
    _window("GatedDeltaRule_StateWindow_FixedShapeKernel", FIXED_SHAPE_BATCH, 1, 17, 128, 128, 4, slow=True),
    _window("GatedDeltaRule_StateWindow_WiderThanSequence", 2, 1, 2, 128, 128, 5, past=False),
    _window("GatedDeltaRule_StateWindow_WiderThanSequenceWithPastState", 2, 1, 2, 128, 128, 5),
)


@dataclass(frozen=True)
class CausalConvUnitCase:
    """One upstream CausalConvWithState test (channels first, ``ndim = 1``): sizes, attributes, fills."""

    name: str
    batch: int
    channels: int
    seq_len: int
    kernel_size: int
    activation: str
    input: Spec
    weight: Spec
    bias: Spec | None = None
    past: Spec | None = None
    dilation: int = 1
    """Upstream sets the attribute only when it is not 1."""
    state_window: int = 0
    dtypes: tuple[str, ...] = ("float32", "float16")
    """Upstream runs each case in float32 and float16, from the same float32 values, except where noted."""
    cuda_only: bool = False

    @property
    def state_length(self) -> int:
        return (self.kernel_size - 1) * self.dilation

    def case(self, dtype: str) -> Case:
        """The call in ``dtype``; a windowed past state has its slots ``0..W-2`` set to ``POISON``."""
        b, c, length = self.batch, self.channels, self.state_length
        arrays = {"input": filled(self.input, (b, c, self.seq_len)),
                  "weight": filled(self.weight, (c, 1, self.kernel_size))}
        if self.bias is not None:
            arrays["bias"] = filled(self.bias, (c,))
        if self.past is not None:
            arrays["past_state"] = _seeded(filled(self.past, (b, c, length)), self.state_window)
        attrs: dict[str, Any] = {"activation": self.activation}
        if self.dilation != 1:
            attrs["dilation"] = self.dilation
        if self.state_window:
            attrs["state_window"] = self.state_window
        inputs = {name: x.astype(dtype) for name, x in arrays.items()}
        return Case(inputs=inputs, attrs=attrs, op=CAUSAL_CONV, notes={"upstream": self.name})


# ---- CausalConvWithState: the values upstream writes out -------------------------------------------------
X4 = (1.0, 2.0, 3.0, 4.0, 0.5, 1.5, 2.5, 3.5)
X3 = (1.0, 2.0, 3.0, 0.5, 1.5, 2.5)
W3 = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
BIAS2 = (0.1, -0.2)
STATE2 = (-1.0, 0.5, 0.3, -0.7)


def _large(name: str, dilation: int) -> CausalConvUnitCase:
    return CausalConvUnitCase(name, 2, 8, 16, 4, "silu", Wave("sin", 1.0, 0.1), Wave("cos", 0.5, 0.2),
                              bias=tuple(0.01 * i for i in range(8)),
                              past=Wave("sin", 0.5, 0.3), dilation=dilation)


def _conv_window(name: str, b: int, c: int, t: int, k: int, w: int, past: bool) -> CausalConvUnitCase:
    return CausalConvUnitCase(name, b, c, t, k, "silu", Wave("sin", 0.5, 0.37), Wave("cos", 0.25, 0.21),
                              bias=tuple(0.01 * i for i in range(c)), past=Wave("sin", 0.5, 0.3) if past else None,
                              state_window=w, dtypes=("float32",), cuda_only=True)


CAUSAL_CONV_CASES: tuple[CausalConvUnitCase, ...] = (
    CausalConvUnitCase("BasicNoStateNoBias", 1, 2, 4, 3, "none", X4, W3),
    CausalConvUnitCase("BasicWithBias", 1, 2, 4, 3, "none", X4, W3, bias=BIAS2),
    CausalConvUnitCase("BasicWithState", 1, 2, 3, 3, "none", X3, W3, past=STATE2),
    CausalConvUnitCase("WithStateAndBias", 1, 2, 3, 3, "none", X3, W3, bias=BIAS2, past=STATE2),
    CausalConvUnitCase("SiluActivationNoState", 1, 2, 4, 3, "silu", X4, W3),
    CausalConvUnitCase("SiluActivationWithState", 1, 2, 3, 3, "silu", X3, W3, past=STATE2),
    CausalConvUnitCase("SiluActivationWithBiasAndState", 1, 2, 4, 3, "silu", X4, W3, bias=BIAS2, past=STATE2),
    CausalConvUnitCase("KernelSize2", 1, 2, 4, 2, "silu", X4, (0.3, 0.7, 0.4, 0.6), past=(0.5, -0.3)),
    CausalConvUnitCase("KernelSize4", 1, 1, 5, 4, "none", (1.0, 2.0, 3.0, 4.0, 5.0), (0.1, 0.2, 0.3, 0.4),
                       past=(-1.0, 0.0, 0.5)),
    CausalConvUnitCase("MultiBatch", 2, 2, 3, 3, "silu", (*X3, -1.0, 0.0, 1.0, 0.2, 0.4, 0.6), W3, bias=(0.1, -0.1),
                       past=(-0.5, 0.5, 0.3, -0.3, 0.1, -0.1, 0.7, 0.8)),
    CausalConvUnitCase("SingleTokenDecode", 1, 4, 1, 4, "silu", (0.5, -0.3, 1.2, 0.8),
                       (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, -0.1, -0.2, 0.1, 0.2, 0.3, 0.3, 0.3, 0.3),
                       bias=(0.0, 0.1, -0.1, 0.0),
                       past=(1.0, 2.0, 3.0, -1.0, 0.0, 1.0, 0.5, 0.5, 0.5, -0.2, 0.4, -0.6)),
    CausalConvUnitCase("SingleTokenDecodeMultiBatch", 2, 2, 1, 3, "silu", (0.5, -0.3, 1.2, 0.8), W3,
                       past=(1.0, 2.0, -1.0, 0.0, 0.5, 0.5, -0.2, 0.4)),
    _large("LargerDimensions", 1),
    CausalConvUnitCase("DilatedNoState", 1, 2, 6, 3, "none", (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.5, 1.5, 2.5, 3.5, 4.5,
                                                              5.5), W3, dilation=2),
    CausalConvUnitCase("DilatedWithStateAndBias", 2, 2, 5, 3, "silu", Wave("sin", 1.0, 0.4), W3, bias=(0.05, -0.05),
                       past=Wave("cos", 0.5, 0.25), dilation=2),
    CausalConvUnitCase("DilatedSingleTokenDecode", 1, 2, 1, 3, "none", (1.0, -2.0), W3,
                       past=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, -0.1, -0.2, -0.3, -0.4, -0.5, -0.6), dilation=3),
    _large("DilatedLargerDimensions", 2),
    CausalConvUnitCase("DilationOneMatchesDefault", 1, 2, 4, 3, "none", X4, W3, past=STATE2, dtypes=("float32",)),
    CausalConvUnitCase("DilatedSequenceVsTokenByToken", 1, 2, 5, 3, "none", (1.0, 2.0, 3.0, 4.0, 5.0, 0.5, 1.5, 2.5,
                                                                              3.5, 4.5), W3, bias=(0.05, -0.05),
                       past=Fill(0.0), dilation=2),
    _conv_window("StateWindow", 1, 3, 5, 4, 3, True),
    _conv_window("StateWindow_BatchedPrefill", 2, 8, 6, 4, 3, True),
    _conv_window("StateWindow_LongPrefill", 2, 8, 140, 4, 5, True),
    _conv_window("StateWindow_DecodeFixedK", 2, 8, 1, 4, 3, False),
    _conv_window("StateWindow_DecodeGenericK", 2, 8, 1, 7, 3, False),
    _conv_window("StateWindow_DecodeFixedKWithPastState", 2, 8, 1, 4, 3, True),
    _conv_window("StateWindow_DecodeGenericKWithPastState", 2, 8, 1, 7, 3, True),
)


@dataclass(frozen=True)
class TokenByToken:
    """Upstream feeds a sequence to its reference whole and one token at a time, and expects the same outputs
    and final state (within 1e-5); ``final_state``, where given, is the state upstream states as numbers."""

    name: str
    channels: int
    kernel_size: int
    activation: str
    tokens: tuple[tuple[float, ...], ...]
    """Each token's value per channel."""
    weight: tuple[float, ...]
    bias: tuple[float, ...]
    dilation: int = 1
    final_state: tuple[float, ...] | None = None
    tolerance: float = 1e-5

    def case(self, tokens: tuple[tuple[float, ...], ...], past: np.ndarray) -> Case:
        """A float32 call over ``tokens`` from ``past`` (``(1, C, L)``)."""
        attrs: dict[str, Any] = {"activation": self.activation}
        if self.dilation != 1:
            attrs["dilation"] = self.dilation
        x = np.asarray(tokens, dtype=np.float32).T[None]
        inputs = {"input": np.ascontiguousarray(x), "weight": filled(self.weight, (self.channels, 1, self.kernel_size)),
                  "bias": filled(self.bias, (self.channels,)), "past_state": past.astype(np.float32)}
        return Case(inputs=inputs, attrs=attrs, op=CAUSAL_CONV, notes={"upstream": self.name})


TOKEN_BY_TOKEN: tuple[TokenByToken, ...] = (
    TokenByToken("StateContinuity", 1, 3, "none", ((1.0,), (2.0,), (3.0,)), (0.2, 0.3, 0.5), (0.1,),
                 final_state=(2.0, 3.0)),
    TokenByToken("SequenceVsTokenByToken", 2, 3, "none", tuple(zip(X4[:4], X4[4:], strict=True)), W3, (0.05, -0.05)),
    TokenByToken("DilatedSequenceVsTokenByToken", 2, 3, "none",
                 tuple(zip((1.0, 2.0, 3.0, 4.0, 5.0), (0.5, 1.5, 2.5, 3.5, 4.5), strict=True)), W3, (0.05, -0.05),
                 dilation=2),
)


@dataclass(frozen=True)
class RejectionCase:
    """An upstream test that expects the op to refuse a call, and what its expected message names."""

    name: str
    op: Op
    shapes: Mapping[str, tuple[int, ...]]
    """Each input present, filled with ``fill``."""
    attrs: dict[str, Any]
    names: tuple[str, ...]
    """The inputs and attributes whose rules the call breaks, the one upstream's expected message names first;
    our refusal must name one of them."""
    fill: float = 1.0
    cuda_only: bool = False

    def case(self) -> Case:
        inputs = {name: np.full(shape, self.fill, dtype=np.float32) for name, shape in self.shapes.items()}
        return Case(inputs=inputs, attrs=dict(self.attrs), op=self.op, notes={"upstream": self.name})


ONE_TOKEN = {"query": (1, 1, 1), "key": (1, 1, 1), "value": (1, 1, 1)}
HEADS_OF_TWO = {"update_rule": "linear", "q_num_heads": 2, "kv_num_heads": 2}
NO_WIDTH = {"query": (1, 1, 0), "key": (1, 1, 0), "value": (1, 1, 0)}
"""Upstream's head-count overflow tests pass inputs of width 0, so ``d_k = 0`` breaks a rule of ``query`` too."""
CONV_TWO = {"input": (1, 1, 2), "weight": (1, 1, 2)}

REJECTION_CASES: tuple[RejectionCase, ...] = (
    RejectionCase("StateWindowAboveMaxIsRejected", LINEAR_ATTENTION, ONE_TOKEN,
                  {"update_rule": "linear", "q_num_heads": 1, "kv_num_heads": 1, "state_window": 9}, ("state_window",)),
    RejectionCase("RejectsQNumHeadsOverflow", LINEAR_ATTENTION, NO_WIDTH,
                  {"update_rule": "linear", "scale": 1.0, "q_num_heads": 2**32, "kv_num_heads": 1},
                  ("q_num_heads", "query")),
    RejectionCase("RejectsKvNumHeadsOverflow", LINEAR_ATTENTION, NO_WIDTH,
                  {"update_rule": "linear", "scale": 1.0, "q_num_heads": 1, "kv_num_heads": 2**32},
                  ("kv_num_heads", "query")),
    RejectionCase("CudaRejectsNonDivisibleQueryHidden", LINEAR_ATTENTION,
                  {"query": (1, 1, 3), "key": (1, 1, 4), "value": (1, 1, 4)}, HEADS_OF_TWO, ("query",),
                  fill=0.1, cuda_only=True),
    RejectionCase("CudaRejectsNonDivisibleValueHidden", LINEAR_ATTENTION,
                  {"query": (1, 1, 4), "key": (1, 1, 4), "value": (1, 1, 3)}, HEADS_OF_TWO, ("value",),
                  fill=0.1, cuda_only=True),
    RejectionCase("CudaRejectsInvalidDecayRank", LINEAR_ATTENTION,
                  {"query": (1, 1, 4), "key": (1, 1, 4), "value": (1, 1, 4), "decay": (1, 2)}, HEADS_OF_TWO, ("decay",),
                  fill=0.1, cuda_only=True),
    RejectionCase("DilationBelowOneIsRejected", CAUSAL_CONV, CONV_TWO, {"activation": "none", "dilation": 0},
                  ("dilation",)),
    RejectionCase("StateWindowAboveMaxIsRejected", CAUSAL_CONV, CONV_TWO, {"activation": "none", "state_window": 9},
                  ("state_window",)),
)


@dataclass(frozen=True)
class OutsideContract:
    """An upstream test this suite does not port as a call, and why (docs/spec.md)."""

    name: str
    op: str
    reason: str
    case: Case | None = field(default=None, compare=False)
    """The call (sizes as upstream's), where it is one of the op; our oracle refuses it."""


BFLOAT16 = "bfloat16 is outside the contract's types (spec §1, §7: float32 and float16); no WebGPU kernel takes it"

OUTSIDE_CONTRACT: tuple[OutsideContract, ...] = (
    OutsideContract("StateWindowRejectsEmptySequence", "LinearAttention",
                    "T = 0 is outside the contract (spec §2): an EP may refuse it (CUDA does) or pass the state on",
                    Case(inputs={n: np.zeros((1, 0, 1), np.float32) for n in ("query", "key", "value")},
                         attrs={"update_rule": "linear", "q_num_heads": 1, "kv_num_heads": 1, "state_window": 1})),
    OutsideContract("StateWindowRejectsEmptySequence", "CausalConvWithState",
                    "T = 0 is outside the contract (spec §7): an EP may refuse it (CUDA does) or pass the state on",
                    Case(inputs={"input": np.zeros((1, 3, 0), np.float32), "weight": np.ones((3, 1, 2), np.float32)},
                         attrs={"activation": "none", "state_window": 1}, op=CAUSAL_CONV)),
    OutsideContract("BFloat16_Cuda", "LinearAttention", BFLOAT16,
                    Case(inputs={n: np.zeros((2, 4, 16), ml_dtypes.bfloat16) for n in ("query", "key", "value")},
                         attrs={"q_num_heads": 2, "kv_num_heads": 2})),
    OutsideContract("BFloat16_Cuda", "CausalConvWithState", BFLOAT16,
                    Case(inputs={"input": np.zeros((2, 4, 6), ml_dtypes.bfloat16),
                                 "weight": np.zeros((4, 1, 3), ml_dtypes.bfloat16)},
                         attrs={"activation": "silu"}, op=CAUSAL_CONV)),
    OutsideContract("ContribOpVarlenLinearAttentionV1Test.*", "VarlenLinearAttention",
                    "another operator (packed ragged batches, checkpoints), not LinearAttention"),
    OutsideContract("ContribOpVarlenCausalConvWithStateTest.*", "VarlenCausalConvWithState",
                    "another operator (packed ragged batches, checkpoints), not CausalConvWithState"),
)

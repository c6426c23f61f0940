"""The catalogue of known findings in real implementations: each documented defect as a ``KnownIssue``.

Each entry says which backend is at fault, which cases it affects (its predicate, beside it here) and how it fails
(a ``Kind``: ``MISMATCH`` for a wrong result on valid input, the error-parity kind for invalid input). A wrong
result comes with a model of what the implementation actually computes (the oracle run on the inputs as the
implementation misreads them), so a test can prove the finding is still exactly what it was. A fixed
implementation makes the documenting tests fail: that is the signal to retire the entry. What an entry is
(``fuzz.corpus.known_issue``) and how a finding is classified against the catalogue (``fuzz.corpus.classifier``)
live apart.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from packaging.specifiers import SpecifierSet

from fuzz.backends.registry import WORKER_BUILDS
from fuzz.corpus.known_issue import Build, KnownIssue
from fuzz.model.case import Case
from fuzz.model.findings import Kind
from fuzz.model.ops import CAUSAL_CONV
from oracles.validation import DELTA_RULES, GATED_RULES, ValidationError


def _broken_input(case: Case) -> str:
    """The input or attribute that validation rejects ('' for a valid case)."""
    try:
        case.dims()
    except ValidationError as err:
        return err.input
    return ""


def _shared_beta_affects(case: Case) -> bool:
    beta = case.inputs.get("beta")
    try:
        dims = case.dims()
    except ValidationError:
        return False
    return dims.update_rule in DELTA_RULES and beta is not None and beta.shape[2] == 1 and dims.kv_heads > 1


def _shared_beta_as_per_head(case: Case) -> Case:
    """Beta ``(B, T, 1)`` read as if it were ``(B, T, H_kv)``: element ``(b, t, h)`` taken from flat
    index ``(b*T + t)*H_kv + h``; indices past the tensor's end read zeros (as observed on lavapipe)."""
    beta = case.inputs["beta"]
    batch, seq_len, _ = beta.shape
    heads = int(case.attrs["kv_num_heads"])
    flat = beta.reshape(-1)
    index = np.arange(batch * seq_len * heads).reshape(batch, seq_len, heads)
    misread = np.where(index < flat.size, flat[np.minimum(index, flat.size - 1)], 0).astype(beta.dtype)
    return case.with_inputs(beta=misread)


CUDA_EP: Build = {
    "implementation": "onnxruntime",
    "versions": SpecifierSet("==1.31.1"),
    "seen_with": "the CUDA EP of onnxruntime-gpu (CUDA 13) on an NVIDIA H200",
}

CUDA_SHARED_MEMORY_PER_BLOCK = 232448
"""Opt-in shared memory per block that ORT's CUDA EP reported for the H200 (bytes)."""


def _cuda_state_exceeds_shared_memory(case: Case) -> bool:
    """The CUDA EP's recurrent kernel keeps a whole ``d_k x d_v`` state (plus a ``d_k`` and a ``d_v``
    vector) in shared memory as 4-byte values; its column kernel, the only fallback, needs ``d_k`` in
    {64, 128} and ``d_v % 32 == 0``. The byte count is the one its message gave for ``d_k = d_v = 255``
    (262140 bytes): ``4 * (d_k*d_v + d_k + d_v)``."""
    try:
        dims = case.dims()
    except ValidationError:
        return False
    column_kernel = dims.d_k in (64, 128) and dims.d_v % 32 == 0
    needed = 4 * (dims.d_k * dims.d_v + dims.d_k + dims.d_v)
    return not column_kernel and needed > CUDA_SHARED_MEMORY_PER_BLOCK


def _cuda_conv_aliased_state(case: Case) -> bool:
    """A valid aliased CausalConvWithState call (past and present state one buffer) like the cases seen: channels
    last, a window, either dtype. Channels first is checked in full."""
    if case.op.name != CAUSAL_CONV.name:
        return False
    try:
        dims = case.dims()
    except ValidationError:
        return False
    return case.aliased and "past_state" in case.inputs and bool(dims.channels_last) and dims.state_window >= 1


WEBGPU_EP: Build = {
    "implementation": "onnxruntime-ep-webgpu",
    "versions": SpecifierSet("==0.4.0"),
    "seen_with": "onnxruntime 1.31.1 (lavapipe) and 1.30.0 (NVIDIA H200)",
}

def _valid_float16(case: Case) -> bool:
    """A valid case stored in float16."""
    try:
        case.dims()
    except ValidationError:
        return False
    return case.dtype == np.float16


def _kernel_of_size_one(case: Case) -> bool:
    """A convolution whose causal kernel has one tap (the state holds no position), valid or not."""
    weight = case.inputs.get("weight")
    return weight is not None and weight.ndim >= 3 and weight.shape[-1] == 1


WEBGPU_EP_CONV: dict[str, Any] = {**WEBGPU_EP, "seen_with": "onnxruntime 1.31.1 (lavapipe)"}
"""Where a WebGPU EP CausalConvWithState issue not yet met on a GPU was seen; the others, met by campaigns on the
H200 too (docs/results/2026-12-03-h200-conv-cuda-block/), take ``WEBGPU_EP``."""

KNOWN_ISSUES: tuple[KnownIssue, ...] = (
    KnownIssue(
        id="ort-webgpu-shared-beta",
        backend="ort-webgpu",
        **WEBGPU_EP,
        kind=Kind.MISMATCH,
        summary=(
            "A shared beta of shape (B, T, 1) is indexed as if it were (B, T, H_kv) by the delta rules "
            "(delta, gated_delta) when H_kv > 1: head h of token t in batch b uses the beta at flat "
            "index (b*T + t)*H_kv + h, and reads past the end of the tensor. Outputs and states are "
            "wrong by up to the size of the output itself (relative error ~0.1 to 1.4)."
        ),
        applies=_shared_beta_affects,
        misread=_shared_beta_as_per_head,
    ),
    KnownIssue(
        id="ort-webgpu-kv-heads-zero",
        backend="ort-webgpu",
        **WEBGPU_EP,
        kind=Kind.CRASH,
        summary="kv_num_heads = 0 kills the process with SIGFPE (an integer division by zero) instead of an error.",
        applies=lambda case: case.attrs.get("kv_num_heads") == 0,
    ),
    KnownIssue(
        id="ort-webgpu-empty-sequence",
        backend="ort-webgpu",
        **WEBGPU_EP,
        kind=Kind.CRASH,
        summary=(
            "T = 0 kills the process with SIGSEGV, for every rule and dtype, with or without a past "
            "state; the contract allows a rejection or a pass-through, never a crash."
        ),
        applies=lambda case: case.seq_len == 0,
    ),
    KnownIssue(
        id="ort-webgpu-unvalidated-shapes",
        backend="ort-webgpu",
        **WEBGPU_EP,
        kind=Kind.ACCEPTED_INVALID,
        summary=(
            "At W = 0 the shapes of decay, beta and past_state are not validated (wrong rank, wrong "
            "last dimension, batch or sequence mismatch, a 5-D past): the EP returns values where the "
            "CPU EP names the broken rule."
        ),
        applies=lambda case: _broken_input(case) in ("decay", "beta", "past_state"),
    ),
    KnownIssue(
        id="ort-webgpu-conv-kernel-size-one",
        backend="ort-webgpu",
        **WEBGPU_EP_CONV,
        kind=Kind.CRASH,
        summary=(
            "CausalConvWithState with a kernel of one tap (weight (C, 1, 1): a state of (k - 1) * dilation = 0 "
            "positions) kills the process with SIGSEGV, with or without a past state, for any T; the CPU EP "
            "returns the output and an empty present_state (B, C, 0)."
        ),
        applies=_kernel_of_size_one,
        op=CAUSAL_CONV.name,
    ),
    KnownIssue(
        id="ort-webgpu-conv-float16-accumulation",
        backend="ort-webgpu",
        **WEBGPU_EP,
        kind=Kind.MISMATCH,
        summary=(
            "CausalConvWithState in float16 computes in float16 arithmetic, the sum of the taps and the SiLU alike: "
            "outputs are off by up to about 1.6 float16 epsilons of the terms' magnitude (|bias| + sum |w x|), "
            "hundreds of ulps of a result that cancels, and one tap of z = -4 gives a SiLU 1.3 ulps off, where the "
            "CPU EP computes in float32 and rounds once (within half an ulp). float32 agrees."
        ),
        applies=_valid_float16,
        op=CAUSAL_CONV.name,
    ),
    KnownIssue(
        id="ort-webgpu-conv-empty-activation",
        backend="ort-webgpu",
        **WEBGPU_EP,
        kind=Kind.ACCEPTED_INVALID,
        summary=(
            "CausalConvWithState with activation = '' (an empty string, not one of none, silu, swish) is run as "
            "if it were 'none', where the CPU EP refuses it ('activation must be one of: none, silu, swish'); "
            "other unknown names ('relu', 'SILU', 'gelu') are refused."
        ),
        applies=lambda case: case.attrs.get("activation") == "",
        op=CAUSAL_CONV.name,
    ),
    KnownIssue(
        id="ort-cuda-large-heads-unsupported",
        backend="ort-cuda",
        **CUDA_EP,
        kind=Kind.REJECTED_VALID,
        summary=(
            "Valid cases whose d_k x d_v state does not fit in one block's shared memory (e.g. d_k = d_v = 255, "
            "or 256, with d_k not 64 or 128) are refused: 'recurrent kernel requires 262140 bytes of opt-in "
            "shared memory per block, but the device supports 232448 bytes. No compatible fallback exists "
            "(column kernel requires d_k in {64,128} and d_v % 32 == 0)'. A clear refusal, not a wrong "
            "result, but head sizes up to 256 are in the contract (the WebGPU EP serves them)."
        ),
        applies=_cuda_state_exceeds_shared_memory,
    ),
    KnownIssue(
        id="ort-cuda-conv-aliased-state",
        backend="ort-cuda",
        **CUDA_EP,
        kind=Kind.MISMATCH,
        summary=(
            "CausalConvWithState with past_state and present_state bound to one buffer gives a present_state that "
            "differs from the separate binding's, and not on every run (a race between reading the past state and "
            "writing the window, by the look of it). Seen by two campaigns on an H200 on 2026-12-03, channels last "
            "both times: float16, W = 7, T = 5, C = 14, kernel 3, dilation 2 (8 of 784 elements); float32, W = 8, "
            "T = 7, C = 30, kernel 3, dilation 2 (64 of 3840). Channels first was never seen to differ."
        ),
        applies=_cuda_conv_aliased_state,
        op=CAUSAL_CONV.name,
    ),
)


ORT_NODE: Build = {
    "implementation": "onnxruntime-node",
    "versions": SpecifierSet("==1.30.0"),
    "seen_with": "its WebGPU EP (Dawn) under Node 20 on lavapipe",
}
ORT_WEB: Build = {
    "implementation": "onnxruntime-web",
    "versions": SpecifierSet("==1.30.0"),
    "seen_with": "dist/ort.webgpu.min.mjs in headless Chromium 156 (SwiftShader adapter)",
}
ORT_WEBGPU_1_27: Build = {
    "implementation": "onnxruntime-webgpu",
    "versions": SpecifierSet("==1.27.0"),
    "seen_with": "its built-in WebGPU EP on lavapipe",
}
WORKER_BUILD_STACKS: dict[str, Build] = dict(zip(WORKER_BUILDS, (ORT_NODE, ORT_WEB, ORT_WEBGPU_1_27), strict=True))
"""Where each other WebGPU build of ONNX Runtime (``fuzz.backends.registry.WORKER_BUILDS``, each in a worker
process of its own) was seen, by backend name."""

SEEN_IN_OTHER_BUILDS = {
    "ort-webgpu-shared-beta": ("ort-node", "ort-web", "ort-webgpu-builtin"),
    "ort-webgpu-kv-heads-zero": ("ort-node", "ort-web", "ort-webgpu-builtin"),
    "ort-webgpu-empty-sequence": ("ort-node", "ort-web"),
    "ort-webgpu-unvalidated-shapes": ("ort-node", "ort-web", "ort-webgpu-builtin"),
    "ort-webgpu-conv-kernel-size-one": ("ort-node", "ort-web"),
    "ort-webgpu-conv-float16-accumulation": ("ort-node", "ort-webgpu-builtin"),
    "ort-webgpu-conv-empty-activation": ("ort-node", "ort-web", "ort-webgpu-builtin"),
}
"""Defects of the plugin seen in other builds too (``lafuzz matrix``, and their tests). In ORT Web, kv_num_heads = 0
traps the wasm instance ("divide by zero"), which leaves it unusable: a crash. ORT Web refuses T = 0 from inside a
WebGPU call (createBindGroup throws), which leaves its WebGPU backend unusable: the next run never settles (seen
2026-12-03), so that is a crash too; so is its CausalConvWithState with a kernel of one tap, which throws in
createBindGroup (or clearBuffer at T = 0). 1.27.0 refuses T = 0 cleanly; it refuses some unvalidated shapes (the
corpus case) and returns values for others (a rank-2 decay of gated_delta with a past state). ORT Node's WebGPU EP
crashes on a CausalConvWithState kernel of one tap as the plugin does, where 1.27.0 refuses it (its own issue,
below); both compute the op's float16 in float16, to the plugin's bits on the cases campaigns found, and both run
activation = '' as 'none'."""


def _in_build(known: KnownIssue, backend: str) -> KnownIssue:
    """``known`` as seen in another build: same cases and kind, that build's backend, id and versions."""
    return replace(known, id=known.id.replace("ort-webgpu", backend, 1), backend=backend,
                   **WORKER_BUILD_STACKS[backend])


def _gqa_query_heads(case: Case) -> bool:
    try:
        dims = case.dims()
    except ValidationError:
        return False
    return dims.q_heads > dims.kv_heads


KNOWN_ISSUES += tuple(_in_build(known, backend) for known in KNOWN_ISSUES for backend in SEEN_IN_OTHER_BUILDS.get(
    known.id, ()))
def _unused_input_given(case: Case) -> bool:
    """A valid case that feeds ``decay`` to a rule without gating or ``beta`` to one without the delta update."""
    try:
        dims = case.dims()
    except ValidationError:
        return False
    return (("decay" in case.inputs and dims.update_rule not in GATED_RULES)
            or ("beta" in case.inputs and dims.update_rule not in DELTA_RULES))


KNOWN_ISSUES += (
    KnownIssue(
        id="ort-webgpu-builtin-unused-inputs-refused",
        backend="ort-webgpu-builtin",
        **ORT_WEBGPU_1_27,
        kind=Kind.REJECTED_VALID,
        summary=(
            "An optional input the update rule does not use (decay for linear or delta, beta for linear or "
            "gated) is refused: 'WebGPU validation failed. In entries[4], binding index 4 not present in the "
            "bind group layout'. The contract ignores it, and later releases do."
        ),
        applies=_unused_input_given,
    ),
    KnownIssue(
        id="ort-webgpu-builtin-gqa-output-heads",
        backend="ort-webgpu-builtin",
        **ORT_WEBGPU_1_27,
        kind=Kind.MISMATCH,
        summary=(
            "With more query heads than kv heads (GQA, q_num_heads > kv_num_heads) the output has H_kv * d_v "
            "columns instead of H_q * d_v: this release predates the operator's GQA contract."
        ),
        applies=_gqa_query_heads,
    ),
)

CONV_ATTRIBUTES_1_27 = ("channels_last", "dilation")
"""CausalConvWithState attributes that onnxruntime-webgpu 1.27.0's schema lacks."""


def _valid_conv_with_attribute_1_27_lacks(case: Case) -> bool:
    """A valid case whose node carries an attribute 1.27.0's schema does not have (its default value too)."""
    return _broken_input(case) == "" and any(name in case.attrs for name in CONV_ATTRIBUTES_1_27)


def _valid_kernel_of_size_one(case: Case) -> bool:
    return _broken_input(case) == "" and _kernel_of_size_one(case)


KNOWN_ISSUES += (
    KnownIssue(
        id="ort-webgpu-builtin-conv-attributes-refused",
        backend="ort-webgpu-builtin",
        **ORT_WEBGPU_1_27,
        kind=Kind.REJECTED_VALID,
        summary=(
            "This release's schema of CausalConvWithState has no channels_last and no dilation attribute: a node "
            "that carries either, even at its default value, fails to load ('Unrecognized attribute: channels_last "
            "for operator CausalConvWithState'), so every channels-last or dilated case is refused. Later releases "
            "take both."
        ),
        applies=_valid_conv_with_attribute_1_27_lacks,
        op=CAUSAL_CONV.name,
    ),
    KnownIssue(
        id="ort-webgpu-builtin-conv-kernel-size-one-refused",
        backend="ort-webgpu-builtin",
        **ORT_WEBGPU_1_27,
        kind=Kind.REJECTED_VALID,
        summary=(
            "CausalConvWithState with a kernel of one tap (weight (C, 1, 1), an empty state) is refused: 'WebGPU "
            "validation failed. Binding entry buffer not set' (the empty present_state has no buffer), where the "
            "CPU EP returns the output and an empty present_state. The plugin and ORT Node crash on it instead."
        ),
        applies=_valid_kernel_of_size_one,
        op=CAUSAL_CONV.name,
    ),
    KnownIssue(
        id="ort-webgpu-builtin-conv-empty-sequence-one-tap",
        backend="ort-webgpu-builtin",
        **ORT_WEBGPU_1_27,
        kind=Kind.CRASH,
        summary=(
            "CausalConvWithState with T = 0 (outside the contract) and a kernel of one tap, without a past state, "
            "kills the process with SIGSEGV; with a past state it is refused, and T = 0 with more taps returns an "
            "empty output. The contract allows a rejection or a pass-through, never a crash."
        ),
        applies=lambda case: _kernel_of_size_one(case) and case.seq_len == 0 and "past_state" not in case.inputs,
        op=CAUSAL_CONV.name,
    ),
)


def issue(issue_id: str) -> KnownIssue:
    """The documented issue with this id; raises ``KeyError`` naming the known ids."""
    for known in KNOWN_ISSUES:
        if known.id == issue_id:
            return known
    raise KeyError(f"no known issue {issue_id!r}; known: {', '.join(i.id for i in KNOWN_ISSUES)}")



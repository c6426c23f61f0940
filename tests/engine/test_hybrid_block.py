"""The hybrid block (``fuzz.engine.hybrid_block``): its cases, its pairs of backends, the block at a real layer's
sizes on the kernels, and a wrong select on the GPU caught and shrunk."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from support.sampling import sample

from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.unit import run_unit
from fuzz.engine.hybrid_block import REAL_LAYER, Block, block_pairs, block_run, check_hybrid_block, hybrid_cases
from fuzz.model.case import Case
from fuzz.model.findings import Kind
from fuzz.ops.causal_conv.strategies import ConvLimits
from kernels.linear_attention import LinearAttentionKernel
from kernels.resident import Selection
from oracles import validate
from oracles.block import split_qkv
from oracles.rollback import represented_acceptances

REAL = ConvLimits(max_batch=1, max_seq_len=4, max_next_tokens=2, max_window=4, max_elements=1 << 16)
"""Limits that admit the real layer (8192 channels over a few tokens)."""


@given(hybrid_cases(ConvLimits.ci()))
def test_a_case_describes_a_valid_block(case: Case) -> None:
    """The convolution's channels are the q/k/v widths; the draft, acceptance and resume are a rollback the
    window represents; both ops' calls are valid; the case survives its serialisation."""
    dims = case.dims()
    block = Block.of(case)
    assert dims.channels == block.widths.channels and dims.state_window >= 1 and "past_state" in case.inputs
    draft = case.notes["draft_len"]
    assert 1 <= draft < dims.seq_len
    assert case.notes["accepted"] in {0, *represented_acceptances(draft, dims.state_window)}
    run = block_run(case)
    query, key, value = split_qkv(np.zeros(run.draft.conv.dims().output_shape, case.dtype), run.widths,
                                  run.channels_last)
    la = validate(query, key, value, **run.draft.la_inputs, **run.draft.la_attrs)
    assert la.state_window == dims.state_window and la.d_k == block.d_k and la.seq_len == draft
    assert Block.of(Case.from_parts(case.metadata(), case.inputs)) == block


def test_the_real_layer_is_drawn_where_the_limits_admit_it() -> None:
    drawn = sample(hybrid_cases(REAL), 40)
    real = [c for c in drawn if c.dims().channels == REAL_LAYER.widths.channels]
    assert real and len(real) < len(drawn), "a share of the cases, not all"
    assert all(c.dims().kernel == (4,) and Block.of(c).kv_heads == 32 for c in real)
    assert not any(c.dims().channels == REAL_LAYER.widths.channels for c in sample(hybrid_cases(ConvLimits.ci()), 40))


def test_pairs_are_one_backend_for_both_ops_or_two_kernels_of_one_device(need) -> None:
    oracle, cpu, reference = need("oracle"), need("ort-cpu"), need("onnx-reference")
    conv, la, la_dawn = need("wgpu-conv"), need("wgpu"), need("wgpu-dawn")
    pairs, left_out = block_pairs([oracle, cpu, reference, conv, la, la_dawn])
    assert {(p.conv.name, p.la.name, p.resident) for p in pairs} == {
        ("oracle", "oracle", False), ("ort-cpu", "ort-cpu", False), ("onnx-reference", "onnx-reference", False),
        ("wgpu-conv", "wgpu", True)}
    assert set(left_out) == {"wgpu-dawn"}


F16_MISSING = "lacks WebGPU feature 'shader-f16'"
"""How a kernel's device without float16 says so (Dawn on an NVIDIA H200 via Vulkan lacks it; lavapipe has it)."""


def _unable_to_run(case: Case, reason: str) -> bool:
    """A skip the device excuses: a float16 case on a device without ``shader-f16``. Any other skip is a fault."""
    return case.dtype == np.float16 and F16_MISSING in reason


@pytest.mark.parametrize("dawn_f16", ["as the device has it", "Dawn without shader-f16"])
def test_the_block_holds_at_the_real_layer_on_the_kernels(need, monkeypatch: pytest.MonkeyPatch, dawn_f16: str) -> None:
    """Qwen3.5's layer (8192 channels, 32 value heads of 128), device-resident on both WebGPU implementations,
    some cases accepting tokens and some none. A pair whose device lacks float16 may sit out the float16 cases
    only (saying so); every pair runs the float32 ones, and a pair that runs makes its comparisons."""
    backends = [need("wgpu-conv"), need("wgpu"), need("wgpu-conv-dawn"), need("wgpu-dawn")]
    if dawn_f16 == "Dawn without shader-f16":
        device = backends[2].kernel.device
        monkeypatch.setattr(device, "features", device.features - {"shader-f16"})
    pairs, left_out = block_pairs(backends)
    assert len(pairs) == 2 and not left_out, left_out
    cases = sample(hybrid_cases(REAL, real=True), 6)
    assert {c.notes["accepted"] > 0 for c in cases} == {True, False}
    ran = {(p.conv.name, p.la.name): 0 for p in pairs}
    for case in cases:
        result = check_hybrid_block(case, backends)
        assert all(_unable_to_run(case, why) for why in result.skipped.values()), dict(result.skipped)
        running = [p for p in ran if not set(p) & set(result.skipped)]
        assert running and result.comparisons >= 4 * len(running), (result.comparisons, dict(result.skipped))
        for pair in running:
            ran[pair] += 1
    assert all(ran.values()), f"a pair ran no case: {ran}"
    if dawn_f16 == "Dawn without shader-f16":
        assert ran[("wgpu-conv-dawn", "wgpu-dawn")] < len(cases), "no float16 case to sit out"


def test_a_select_skipped_on_the_gpu_is_caught_and_shrunk(need, monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    """LinearAttention's kernel resuming from its seed whatever was accepted (the convolution's select still
    right): the block on the kernels disagrees with the rerun, and the case shrinks to a small one."""
    conv, la = need("wgpu-conv"), need("wgpu")
    select = LinearAttentionKernel.accept

    def stays(self: LinearAttentionKernel, call, accepted, saved_seed=None, mode="rebind") -> Selection:
        return select(self, call, 0, saved_seed, mode)

    monkeypatch.setattr(LinearAttentionKernel, "accept", stays)
    result = run_unit(WorkUnit("hybrid-block", 0, 0), [conv, la], limits=ConvLimits.ci(), settings=settings(),
                      save_dir=tmp_path)
    finding = result.finding
    assert finding is not None and finding.kind == Kind.MISMATCH, "the skipped select went unnoticed"
    assert finding.case.notes["accepted"] >= 1 and finding.case.notes.get("block"), finding.case.summary()
    assert finding.case.dims().channels <= 3 and finding.case.seq_len <= 3, finding.case.summary()

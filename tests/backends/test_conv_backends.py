"""CausalConvWithState on the real backends: ORT's CPU and WebGPU EPs at W = 0 against the oracle on many drawn
cases, their window through prefix mode, the ONNX project's reference as a peer where the contracts overlap,
and the WebGPU EP's documented crash on a kernel of one tap, still there."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from support.sampling import sample

from fuzz.backends import Backend, Crashed, Unsupported
from fuzz.corpus.known_issues import issue
from fuzz.engine.compare import MismatchError, assert_agrees_with_oracle
from fuzz.engine.op_testing import exact_for
from fuzz.engine.properties import check_backends_agree, check_error_parity
from fuzz.model.case import Case
from fuzz.model.findings import PropertyFailure
from fuzz.model.ops import CAUSAL_CONV
from fuzz.ops.causal_conv.strategies import ConvLimits
from fuzz.ops.causal_conv.testing import TESTING as CAUSAL_CONV_TESTING

W0 = replace(ConvLimits.ci(), max_window=0, ndims=(1,))
"""What ORT's EPs run natively: W = 0, ndim 1 (both layouts, every kernel, dilation and activation)."""


def _agree_on(backend: Backend, cases: list[Case]) -> int:
    """Run every case on ``backend`` and hold its answer to the oracle's; how many it ran."""
    ran = 0
    for case in cases:
        try:
            result = backend.run(case)
        except Unsupported:
            continue
        assert_agrees_with_oracle(case, (np.asarray(result[0]), np.asarray(result[1])), label=backend.name)
        ran += 1
    return ran


def test_a_two_call_continuation_joins_outputs_on_the_sequence_axis(need) -> None:
    """``run_continued`` splits and joins a conv call on its sequence axis (axis 1 in channels last, the last in
    channels first), and the second call resumes from the state the first wrote on the device."""
    cpu = need("ort-cpu")
    cases = [c for c in sample(CAUSAL_CONV_TESTING.cases(W0), 60) if c.seq_len >= 2 and c.dims().channels > 1]
    layouts = {c.attr("channels_last") for c in cases}
    assert layouts == {0, 1}, layouts
    for case in cases:
        split = case.seq_len // 2
        assert_agrees_with_oracle(case, cpu.run_continued(case, split), label="ort-cpu continued", resumed_at=split)


def test_ort_cpu_agrees_with_the_oracle_at_window_zero(need) -> None:
    """float32 and float16 (summed in float32, rounded once), both layouts, every kernel size and dilation."""
    cpu = need("ort-cpu")
    cases = sample(CAUSAL_CONV_TESTING.cases(W0), 200)
    assert {str(c.dtype) for c in cases} == {"float32", "float16"}
    assert _agree_on(cpu, cases) == len(cases)


DOCUMENTED = ("ort-webgpu-conv-kernel-size-one", "ort-webgpu-conv-float16-accumulation")


def test_ort_webgpu_agrees_with_the_oracle_at_window_zero(need) -> None:
    """Every case but those of its documented defects (below)."""
    webgpu = need("ort-webgpu", isolate=True)
    drawn = sample(CAUSAL_CONV_TESTING.cases(W0), 120)
    cases = [c for c in drawn if not any(issue(i).affects(c) for i in DOCUMENTED)]
    assert len(cases) > 40 and _agree_on(webgpu, cases) == len(cases)


def test_webgpu_float16_still_sums_in_float16(need) -> None:
    """The documented defect (``ort-webgpu-conv-float16-accumulation``) is still there: float16 cases with a few
    taps disagree with the contract, by what float16 arithmetic loses (a few epsilons of the terms, and values
    below float16's smallest normal, which WGSL lets it flush): retire it when this fails."""
    webgpu = need("ort-webgpu", isolate=True)
    limits = replace(W0, dtypes=("float16",), kernel_sizes=(4, 5, 7))
    cases = [c for c in sample(CAUSAL_CONV_TESTING.cases(limits), 40) if c.notes["magnitude"] != "small-int"]
    off = 0
    for case in cases:
        output, state = webgpu.run(case)
        exact = exact_for(case)
        half = np.finfo(np.float16)
        arithmetic = 4 * float(half.eps) * exact.output_block + (case.dims().taps + 2) * float(half.smallest_normal)
        assert np.all(np.abs(output.astype(np.float64) - exact.output) <= arithmetic), case.summary()
        try:
            assert_agrees_with_oracle(case, (output, state))
        except MismatchError:
            off += 1
    assert off > len(cases) // 2, f"only {off} of {len(cases)} float16 cases off: is the defect fixed?"


def test_window_through_prefix_mode_equals_the_oracles(need) -> None:
    """CPU and WebGPU refuse W > 0; their window comes from W = 0 runs over prefixes, one model per case."""
    limits = replace(ConvLimits.ci(), ndims=(1,), dtypes=("float32",), kernel_sizes=(2, 3, 4))
    cases = sample(CAUSAL_CONV_TESTING.cases(limits, min_window=1), 40)
    for name in ("ort-cpu", "ort-webgpu"):
        backend = need(name, isolate=name == "ort-webgpu")
        assert backend.capabilities().window == "prefix" and CAUSAL_CONV.name in backend.capabilities().ops
        assert _agree_on(backend, cases) == len(cases)


def test_ndim_above_one_is_unsupported_on_ort_not_refused(need) -> None:
    """ndim 2 and 3 are in the schema; ORT's kernels run ndim 1 only: a skip with ORT's reason, not a finding."""
    cases = sample(CAUSAL_CONV_TESTING.cases(replace(W0, ndims=(2, 3), dtypes=("float32",))), 5)
    for name in ("ort-cpu", "ort-webgpu"):
        backend = need(name, isolate=name == "ort-webgpu")
        for case in cases:
            with pytest.raises(Unsupported):
                backend.run(case)


def test_the_onnx_reference_is_a_peer_where_the_contracts_overlap(need) -> None:
    reference = need("onnx-reference")
    limits = replace(ConvLimits.ci(), ndims=(1,), channels_last=(False,), max_dilation=1, dtypes=("float32",))
    cases = sample(CAUSAL_CONV_TESTING.cases(limits), 80)
    assert any(c.state_window for c in cases) and _agree_on(reference, cases) == len(cases)
    outside = sample(CAUSAL_CONV_TESTING.cases(replace(ConvLimits.ci(), ndims=(1,), channels_last=(True,))), 3)
    for case in outside:
        with pytest.raises(Unsupported, match="no such attribute values"):
            reference.run(case)


def test_webgpu_kernel_of_one_tap_still_crashes(need) -> None:
    """The documented defect (``ort-webgpu-conv-kernel-size-one``) is still there: retire it when this fails."""
    webgpu = need("ort-webgpu", isolate=True)
    case = Case(inputs={"input": np.ones((1, 2, 3), np.float32), "weight": np.ones((2, 1, 1), np.float32)}, attrs={},
                op=CAUSAL_CONV)
    assert issue("ort-webgpu-conv-kernel-size-one").affects(case)
    with pytest.raises(Crashed):
        webgpu.run(case)
    with pytest.raises(PropertyFailure) as failure:
        check_backends_agree(case, [need("oracle"), webgpu])
    assert failure.value.finding.kind == "crash"


def test_webgpu_still_runs_an_empty_activation(need) -> None:
    """The documented defect (``ort-webgpu-conv-empty-activation``) is still there; retire it when this fails."""
    webgpu = need("ort-webgpu", isolate=True)
    case = Case(inputs={"input": np.ones((1, 1, 2), np.float32), "weight": np.ones((1, 1, 2), np.float32)},
                attrs={"activation": ""}, op=CAUSAL_CONV, notes={"broken_rule": "activation"})
    assert issue("ort-webgpu-conv-empty-activation").affects(case)
    with pytest.raises(PropertyFailure) as failure:
        check_error_parity(case, [need("oracle"), webgpu])
    assert failure.value.finding.kind == "accepted-invalid"

"""The CUDA EP: Unavailable with a reason where there is none; on a CUDA host, the native window."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.ort_cases import fixed_case

from fuzz.backends import Unavailable, create
from fuzz.corpus import entry as corpus
from fuzz.corpus.classifier import Classifier
from fuzz.engine.compare import assert_agrees_with_oracle, assert_results_agree


def _cuda():
    try:
        return create("ort-cuda")
    except Unavailable as err:
        pytest.skip(str(err))


def test_unavailable_says_why():
    import onnxruntime as ort

    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime has the CUDA EP")
    with pytest.raises(Unavailable, match="install onnxruntime-gpu"):
        create("ort-cuda")


@pytest.mark.parametrize("window", [1, 4, 8])
def test_native_window_agrees_with_oracle(window):
    backend = _cuda()
    assert backend.capabilities().window == "native"
    for rule, dtype in (("gated_delta", np.float32), ("delta", np.float16)):
        case = fixed_case(rule, dtype, window=window)
        assert_agrees_with_oracle(case, backend.run(case), label="ort-cuda")
        assert_agrees_with_oracle(case, backend.run(case.with_(aliased=True)), label="ort-cuda aliased")
        # a second call of at least W tokens writes every slot: the two calls end where one call ends
        long = fixed_case(rule, dtype, window=window, seq_len=window + 2)
        assert_agrees_with_oracle(long, backend.run_continued(long, 2), label="ort-cuda continued", resumed_at=2)


def test_short_second_call_zeroes_its_leading_slots():
    """docs/spec.md §2: a call with ``T < W`` writes exact zeros in its leading ``W - T`` slots, whatever the window it
    was seeded from held; its other slots and the output are the one call's."""
    backend = _cuda()
    case = fixed_case("gated_delta", window=8, seq_len=7)
    output, state = backend.run_continued(case, 4)
    assert not state[:5].any(), "a 3-token call left non-zero values in its 5 leading slots"
    whole_output, whole_state = backend.run(case)
    expected = whole_state.copy()
    expected[:5] = 0
    assert_results_agree(case, (output, state), (whole_output, expected), labels=("two calls", "one call"),
                         resumed_at=4)


def test_large_heads_are_refused_as_documented():
    """The documented refusal (``ort-cuda-large-heads-unsupported``) still happens; retire it when fixed."""
    backend = _cuda()
    case = fixed_case("delta", window=2, seq_len=1, d=255)
    assert Classifier.for_backends([backend]).affecting("ort-cuda", case) is not None
    with pytest.raises(Exception, match="shared memory"):
        backend.run(case)


@pytest.mark.parametrize(("d", "known"), [(255, True), (256, True), (128, False), (200, False)])
def test_large_heads_issue_covers_only_states_beyond_shared_memory(d, known):
    case = fixed_case("delta", window=2, seq_len=1, d=d)
    assert (Classifier().affecting("ort-cuda", case) is not None) == known


ALIASED_STATE = Path(__file__).resolve().parents[2] / "corpus" / "aliasing" / "ort-cuda-conv-aliased-state"


def test_aliased_conv_state_differs_as_documented():
    """The documented defect (``ort-cuda-conv-aliased-state``) still happens on the corpus case: in some of 20 runs
    the aliased binding's present_state is not the separate binding's bits (not in every run); retire it when
    fixed."""
    backend = _cuda()
    case = corpus.read_entry(ALIASED_STATE).finding.case
    assert Classifier.for_backends([backend]).affecting("ort-cuda", case) is not None
    separate = backend.run(case.with_(aliased=False))[1].view(np.uint16)
    differs = [not np.array_equal(backend.run(case)[1].view(np.uint16), separate) for _ in range(20)]
    assert any(differs), "now fixed: retire the issue"


def test_aliased_conv_state_issue_covers_the_aliased_case_only():
    finding = corpus.read_entry(ALIASED_STATE).finding
    classified = Classifier().classify(finding.with_(known=None, id=""))
    assert classified.known is not None and classified.known.issue == "ort-cuda-conv-aliased-state"
    assert Classifier().affecting("ort-cuda", finding.case.with_(aliased=False)) is None
    affecting = Classifier().affecting("ort-cuda", finding.case)
    assert affecting is not None and affecting.id == "ort-cuda-conv-aliased-state"


def _conv_cases(window: int) -> list:
    """Drawn CausalConvWithState cases with this window: both layouts, dilations, activations, float32 and float16."""
    from dataclasses import replace

    from hypothesis import HealthCheck, given, settings

    from fuzz.ops.causal_conv.strategies import ConvLimits
    from fuzz.ops.causal_conv.testing import TESTING as CAUSAL_CONV_TESTING

    limits = replace(ConvLimits.ci(), ndims=(1,), max_window=window)
    drawn = []

    @settings(max_examples=30, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(CAUSAL_CONV_TESTING.cases(limits, min_window=window))
    def collect(case) -> None:
        drawn.append(case)

    collect()
    return drawn


@pytest.mark.parametrize("window", [1, 4, 8])
def test_conv_native_window_agrees_with_oracle(window):
    """The CUDA EP runs CausalConvWithState's window itself (no prefix mode): every slot agrees with the oracle,
    and a second call of W positions, seeded on the device from the first call's window, ends where one call ends."""
    backend = _cuda()
    assert "CausalConvWithState" in backend.capabilities().ops
    for case in _conv_cases(window):
        backend.session(case)  # a W > 0 model is taken, not refused for prefix mode
        assert_agrees_with_oracle(case, backend.run(case), label="ort-cuda")
        if case.seq_len > window:
            split = case.seq_len - window
            assert_agrees_with_oracle(case, backend.run_continued(case, split), label="ort-cuda continued",
                                      resumed_at=split)

"""The CUDA EP: Unavailable with a reason where there is none; on a CUDA host, the native window."""

from __future__ import annotations

import numpy as np
import pytest
from support.ort_cases import fixed_case

from fuzz.backends import Unavailable, create
from fuzz.engine.compare import assert_agrees_with_oracle


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
        assert_agrees_with_oracle(case, backend.run_continued(case, 2), label="ort-cuda continued", resumed_at=2)

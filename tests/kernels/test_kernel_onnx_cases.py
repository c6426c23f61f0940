"""The ONNX project's backend node cases for LinearAttention (``ai.onnx``, opset 27, in the installed onnx package)
through the WGSL kernel (``com.microsoft`` LinearAttention at ``state_window = 0``: the contract the two share),
checked as the ONNX backend runner checks a backend, on each WebGPU implementation."""

from __future__ import annotations

import numpy as np
import pytest
from support.onnx_node_cases import LA_CASE_COUNT, LA_EXCLUDED, NodeCase, shared_linear_attention_cases
from test_kernel_parity import IMPLEMENTATIONS, kernel_or_skip

from kernels.linear_attention import linear_attention
from kernels.options import KernelOptions

CASES = shared_linear_attention_cases()
"""Every case inside the com.microsoft contract (``tests/oracles/test_linear_attention_onnx_cases.py`` checks that
exactly ``LA_EXCLUDED`` fall outside it)."""


def test_every_case_is_found() -> None:
    assert len(CASES) == LA_CASE_COUNT - len(LA_EXCLUDED), [c.name for c in CASES]
    assert {c.inputs["query"].dtype for c in CASES} == {np.dtype(np.float32), np.dtype(np.float16)}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_the_kernel_passes_the_onnx_backend_case(implementation: str, case: NodeCase) -> None:
    kernel_or_skip(implementation, case.inputs["query"].dtype.type)
    output, present_state = linear_attention(**case.call, options=KernelOptions(implementation))
    case.assert_outputs([output, present_state])

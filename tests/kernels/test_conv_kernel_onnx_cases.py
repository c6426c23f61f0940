"""The ONNX project's backend node cases for CausalConvWithState (``ai.onnx``, opset 27, in the installed onnx
package) through the WGSL kernel (``com.microsoft`` CausalConvWithState at ``state_window = 0``: the contract
the two share), checked as the ONNX backend runner checks a backend; the present state bit for bit too."""

from __future__ import annotations

import numpy as np
import pytest
from support.conv_cases import IMPLEMENTATIONS, conv_kernel_or_skip
from support.onnx_node_cases import CONV_CASE_COUNT, causal_conv_cases
from test_kernel_parity import assert_bitwise

from kernels.causal_conv import causal_conv
from kernels.options import ConvKernelOptions

CASES = causal_conv_cases()


def test_every_case_is_found() -> None:
    assert len(CASES) == CONV_CASE_COUNT, [c.name for c in CASES]
    assert {c.inputs["input"].dtype for c in CASES} == {np.dtype(np.float32), np.dtype(np.float16)}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_the_kernel_passes_the_onnx_backend_case(implementation: str, case) -> None:
    conv_kernel_or_skip(implementation, case.inputs["input"].dtype)
    output, present_state = causal_conv(**case.inputs, **case.attributes, options=ConvKernelOptions(implementation))
    case.assert_outputs([output, present_state])
    assert_bitwise(present_state, case.expected[1], f"{case.name}: present_state")

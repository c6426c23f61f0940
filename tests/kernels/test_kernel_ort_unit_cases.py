"""ONNX Runtime's own C++ unit-test cases of LinearAttention and CausalConvWithState (``support.ort_unit_cases``)
through the WGSL kernels on both WebGPU implementations, against the float64 oracle under the suite's tolerance
model; conv states bit for bit. Upstream's window cases (run there on the CUDA EP only) run natively here.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.conv_cases import IMPLEMENTATIONS, conv_kernel_or_skip
from support.ort_unit_cases import (
    CAUSAL_CONV_CASES,
    LINEAR_ATTENTION_CASES,
    CausalConvUnitCase,
    LinearAttentionUnitCase,
)
from test_kernel_parity import assert_bitwise, kernel_or_skip

from fuzz.engine.compare import assert_agrees_with_oracle
from kernels.causal_conv import causal_conv
from kernels.linear_attention import linear_attention
from kernels.options import ConvKernelOptions, KernelOptions

LA_PARAMS = [pytest.param(u, id=u.name, marks=[pytest.mark.slow] if u.slow else []) for u in LINEAR_ATTENTION_CASES]
CONV_PARAMS = [pytest.param(u, dtype, id=f"{u.name}-{dtype}") for u in CAUSAL_CONV_CASES for dtype in u.dtypes]


@pytest.mark.parametrize("unit", LA_PARAMS)
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_linear_attention_kernel_passes_the_ort_unit_case(implementation: str, unit: LinearAttentionUnitCase) -> None:
    case = unit.case()
    kernel_or_skip(implementation)
    result = linear_attention(**case.kwargs(), options=KernelOptions(implementation))
    assert_agrees_with_oracle(case, result, label=implementation)


@pytest.mark.parametrize(("unit", "dtype"), CONV_PARAMS)
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_conv_kernel_passes_the_ort_unit_case(implementation: str, unit: CausalConvUnitCase, dtype: str) -> None:
    case = unit.case(dtype)
    conv_kernel_or_skip(implementation, np.dtype(dtype).type)
    output, present = causal_conv(**case.kwargs(), options=ConvKernelOptions(implementation))
    assert_agrees_with_oracle(case, (output, present), label=implementation)
    _, exact_state = case.op.oracle(**case.kwargs())
    assert_bitwise(present, exact_state.astype(present.dtype), f"{unit.name}: present_state")

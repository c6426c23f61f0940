"""A subset of flash-linear-attention's and causal-conv1d's forward test rows (``support.fla_cases``,
``support.causal_conv1d_cases``) through the WGSL kernels on both WebGPU implementations: against the float64 oracle
under the suite's tolerance model, and, mapped back to the upstream project's conventions, against its reference
under that project's own criterion (FLA: RMS error ratio; causal-conv1d: ``allclose`` on outputs, equal states).
Few geometry classes, so few pipelines to compile."""

from __future__ import annotations

import numpy as np
import pytest
from support import causal_conv1d_cases, fla_cases
from support.causal_conv1d_cases import Conv1dCase
from support.causal_conv1d_reference import conv1d_close
from support.conv_cases import IMPLEMENTATIONS, conv_kernel_or_skip
from support.fla_cases import FlaCase
from support.fla_reference import error_ratio, fla_close
from support.upstream_reference import check_against_reference
from test_kernel_parity import kernel_or_skip

from fuzz.engine.compare import assert_agrees_with_oracle
from kernels.causal_conv import causal_conv
from kernels.linear_attention import linear_attention
from kernels.options import ConvKernelOptions, KernelOptions


@pytest.mark.parametrize("fla", fla_cases.KERNEL_CASES, ids=[c.name for c in fla_cases.KERNEL_CASES])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_linear_attention_kernel_passes_the_fla_row(implementation: str, fla: FlaCase) -> None:
    drawn = fla.draw()
    case = fla.op_case(drawn)
    kernel_or_skip(implementation, np.dtype(fla.dtype).type)
    output, present = linear_attention(**case.kwargs(), options=KernelOptions(implementation))
    assert_agrees_with_oracle(case, (output, present), label=implementation)

    def upstream_criterion(reference: np.ndarray, actual: np.ndarray, what: str) -> None:
        assert fla_close(reference, actual, fla.ratio), f"{what}: error ratio {error_ratio(reference, actual):.3g}"

    check_against_reference(fla, drawn, output, present, upstream_criterion)


CONV_ROWS = causal_conv1d_cases.KERNEL_CASES


@pytest.mark.parametrize("conv", CONV_ROWS, ids=[c.name for c in CONV_ROWS])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_conv_kernel_passes_the_causal_conv1d_row(implementation: str, conv: Conv1dCase) -> None:
    drawn = conv.draw()
    case = conv.op_case(drawn)
    conv_kernel_or_skip(implementation, np.dtype(conv.dtype).type)
    output, present = causal_conv(**case.kwargs(), options=ConvKernelOptions(implementation))
    assert_agrees_with_oracle(case, (output, present), label=implementation)

    def upstream_criterion(reference: np.ndarray, actual: np.ndarray, what: str) -> None:
        if what == "output":
            assert conv1d_close(reference, actual, conv.dtype), what
        else:
            np.testing.assert_array_equal(actual, reference.astype(actual.dtype), err_msg=what)

    check_against_reference(conv, drawn, output, present, upstream_criterion)

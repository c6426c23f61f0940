"""The ONNX project's backend node cases for ``ai.onnx`` CausalConvWithState (in the installed onnx package)
through our oracle: an independently written reference for the part of the contract the two ops share
(no window, ndim 1, channels first, no dilation).

The cases are made by the onnx package itself (``onnx.backend.test.case.node.causal_conv_with_state``: each
export seeds NumPy with 0 and records inputs and expected outputs with ``expect``; ``support.onnx_node_cases``
collects them); the outputs are checked at the tolerances the cases carry for ONNX's own backend runner, and the
carried state exactly.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from support.onnx_node_cases import CONV_CASE_COUNT, NodeCase, causal_conv_cases

from oracles.causal_conv import causal_conv_with_state

CASES = causal_conv_cases()


def test_the_onnx_package_has_the_cases() -> None:
    assert onnx.__version__ == "1.23.2"
    assert len(CASES) == CONV_CASE_COUNT, [case.name for case in CASES]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_node_case_through_the_oracle(case: NodeCase) -> None:
    output, present = causal_conv_with_state(**case.inputs, **case.attributes)
    expected_output, expected_state = case.expected
    np.testing.assert_allclose(output, expected_output.astype(np.float64), rtol=case.rtol, atol=case.atol)
    assert present.shape == expected_state.shape
    assert np.array_equal(present.astype(expected_state.dtype), expected_state)

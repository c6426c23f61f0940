"""The ONNX project's backend node cases for ``ai.onnx`` CausalConvWithState (in the installed onnx package)
through our oracle: an independently written reference for the part of the contract the two ops share
(no window, ndim 1, channels first, no dilation).

The cases are made by the onnx package itself (``onnx.backend.test.case.node.causal_conv_with_state``: each
export seeds NumPy with 0 and records inputs and expected outputs with ``expect``); the outputs are checked
at the tolerances the cases carry for ONNX's own backend runner, and the carried state exactly.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import helper

from oracles.causal_conv import causal_conv_with_state

CASE_MODULE = "onnx.backend.test.case.node.causal_conv_with_state"
OP = "CausalConvWithState"


def node_cases() -> list[Any]:
    """The ONNX node test cases of the op (the single-node models, not their function expansions).

    Importing the module that defines them runs their exports (a collection of every op's cases,
    ``collect_testcases(op)``, takes seconds longer and gives the same cases)."""
    registry = importlib.import_module("onnx.backend.test.case.node")
    registry._TargetOpType = OP  # expect() then records this op's cases only
    importlib.import_module(CASE_MODULE)
    return [case for case in registry._NodeTestCases
            if len(case.model.graph.node) == 1 and case.model.graph.node[0].op_type == OP]


CASES = node_cases()


def test_the_onnx_package_has_the_cases() -> None:
    assert onnx.__version__ == "1.23.2"
    assert len(CASES) == 13, [case.name for case in CASES]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_node_case_through_the_oracle(case: Any) -> None:
    node = case.model.graph.node[0]
    assert node.domain in ("", "ai.onnx")
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if "activation" in attrs:
        attrs["activation"] = attrs["activation"].decode()
    (inputs, outputs), = case.data_sets
    named = dict(zip([name for name in node.input if name], inputs, strict=True))
    output, present = causal_conv_with_state(**named, **attrs)
    expected_output, expected_state = outputs
    np.testing.assert_allclose(output, expected_output.astype(np.float64), rtol=case.rtol, atol=case.atol)
    assert present.shape == expected_state.shape
    assert np.array_equal(present.astype(expected_state.dtype), expected_state)

"""The ONNX project's backend node cases of one operator, as the installed ``onnx`` package generates them.

``onnx.backend.test.case.node.collect_testcases(op_type)`` generates every operator's cases to keep one
(10 s here); ``node_cases`` generates only the operator's own module, with the same seed (each export runs
after ``np.random.seed(0)``) and the same filter, so it yields the same cases. Each case holds its model (one
node), its input and expected output arrays, and the tolerances the ONNX backend runner checks them with.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from onnx import helper
from onnx.backend.test.case import node as node_cases_package
from onnx.backend.test.case.test_case import TestCase
from onnx.backend.test.runner import Runner

from oracles.causal_conv import INPUT_NAMES as CONV_INPUT_NAMES

CONV_CASE_COUNT = 13
"""The CausalConvWithState cases onnx 1.23.2 has: basic, bias, past state, both together, SiLU, swish, SiLU with
past state, a decode step, kernel size 1, B = C = 1, an input shorter than the state without past state, fp16,
fp16 SiLU."""


@dataclass(frozen=True)
class NodeCase:
    """One backend node case: its node's attributes and named inputs, the expected outputs, the tolerances."""

    name: str
    attributes: dict
    inputs: dict[str, np.ndarray]
    """By the operator's input names (``input_names``); an input the node leaves empty is absent."""
    expected: list[np.ndarray]
    rtol: float
    atol: float

    def assert_outputs(self, outputs: list[np.ndarray]) -> None:
        """The ONNX backend runner's own check of a backend's outputs (shape, dtype, ``assert_allclose``)."""
        Runner.assert_similar_outputs(self.expected, outputs, rtol=self.rtol, atol=self.atol)


def node_cases(op_type: str, module: str, input_names: tuple[str, ...]) -> list[NodeCase]:
    """The single-node cases of ``op_type`` from ``onnx.backend.test.case.node.<module>`` (not the ``_expanded``
    function-body variants), with their inputs named by position in ``input_names``."""
    name = f"{node_cases_package.__name__}.{module}"
    if name not in sys.modules:
        target: Any = op_type  # collect_testcases's filter (declared None there); the exports honour it
        node_cases_package._TargetOpType = target
        try:
            importlib.import_module(name)
        finally:
            node_cases_package._TargetOpType = None
    cases: list[TestCase] = list(node_cases_package._NodeTestCases)
    found = []
    for case in cases:
        assert case.model is not None and case.data_sets is not None
        nodes = case.model.graph.node
        if len(nodes) != 1 or nodes[0].op_type != op_type:
            continue
        (node,) = nodes
        for given, expected in case.data_sets:
            present = iter(given)
            inputs = {input_names[i]: next(present) for i, n in enumerate(node.input) if n}
            attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            attributes = {k: v.decode() if isinstance(v, bytes) else v for k, v in attributes.items()}
            found.append(NodeCase(case.name, attributes, inputs, list(expected), case.rtol, case.atol))
    return found


@cache
def causal_conv_cases() -> tuple[NodeCase, ...]:
    """The backend node cases of ``ai.onnx`` CausalConvWithState (opset 27), generated once per process."""
    return tuple(node_cases("CausalConvWithState", "causal_conv_with_state", CONV_INPUT_NAMES))

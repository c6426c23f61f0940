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
from oracles.validation import INPUT_NAMES as LA_INPUT_NAMES
from oracles.validation import ValidationError, validate

CONV_CASE_COUNT = 13
"""The CausalConvWithState cases onnx 1.23.2 has: basic, bias, past state, both together, SiLU, swish, SiLU with
past state, a decode step, kernel size 1, B = C = 1, an input shorter than the state without past state, fp16,
fp16 SiLU."""

LA_CASE_COUNT = 14
"""The LinearAttention cases onnx 1.23.2 has: each update rule (gated with per-row and per-head decay), gated delta
with a shared beta, GQA, MQA, a decode step, a prefill with past state, an explicit zero past state, an explicit
scale, fp16 with GQA, one token of the linear rule."""

LA_EXCLUDED: dict[str, str] = {}
"""The LinearAttention cases outside the com.microsoft contract, by name, with why (as
``outside_linear_attention_contract`` says): none in onnx 1.23.2."""

LA_ATTRIBUTES = ("q_num_heads", "kv_num_heads", "update_rule", "scale", "chunk_size")
"""The ai.onnx op's attributes: com.microsoft's by the same names and defaults, less ``state_window``."""


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

    @property
    def call(self) -> dict[str, Any]:
        """The inputs and attributes by name, as the operator's Python twins take them."""
        return {**self.inputs, **self.attributes}

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


@cache
def linear_attention_cases() -> tuple[NodeCase, ...]:
    """The backend node cases of ``ai.onnx`` LinearAttention (opset 27), generated once per process."""
    return tuple(node_cases("LinearAttention", "linear_attention", LA_INPUT_NAMES))


def shared_linear_attention_cases() -> list[NodeCase]:
    """The LinearAttention cases that are com.microsoft calls too: all but ``LA_EXCLUDED``."""
    return [case for case in linear_attention_cases() if case.name not in LA_EXCLUDED]


def outside_linear_attention_contract(case: NodeCase) -> str | None:
    """Why an ``ai.onnx`` LinearAttention case is no ``com.microsoft`` call at ``state_window = 0``; None if it is one.

    The inputs have the same names and order. What ai.onnx allows and com.microsoft does not: an attribute of its
    own, a state type unlike the activations' (its ``S`` and ``T``), bfloat16, and anything else our validation
    (``oracles.validation``) refuses.
    """
    extra = sorted(set(case.attributes) - set(LA_ATTRIBUTES))
    if extra:
        return f"ai.onnx attributes with no com.microsoft counterpart: {extra}"
    query, past = case.inputs["query"], case.inputs.get("past_state")
    if past is not None and past.dtype != query.dtype:
        return f"a {past.dtype} state with {query.dtype} activations: com.microsoft takes one dtype"
    try:
        validate(**case.call)
    except ValidationError as err:
        return f"outside our contract: {err}"
    return None

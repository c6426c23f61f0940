"""The ONNX project's backend node cases for ``ai.onnx`` LinearAttention (in the installed onnx package) through our
oracle: an independently written reference of the contract the two ops share (``state_window = 0``, ``H_q >= H_kv``,
one key head per kv head, one dtype).

The cases are made by the onnx package itself (``onnx.backend.test.case.node.linear_attention``; each export seeds
NumPy with 0 and records inputs and expected outputs with ``expect``). The oracle's float64 results, rounded once to
the call's dtype as the contract stores them, are checked as the ONNX backend runner checks a backend.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support.onnx_node_cases import (
    LA_CASE_COUNT,
    LA_EXCLUDED,
    NodeCase,
    linear_attention_cases,
    outside_linear_attention_contract,
    shared_linear_attention_cases,
)

from oracles import linear_attention

CASES = linear_attention_cases()

SHARED = shared_linear_attention_cases()


def test_the_onnx_package_has_the_cases() -> None:
    assert onnx.__version__ == "1.23.2"
    assert len(CASES) == LA_CASE_COUNT, [case.name for case in CASES]


def test_exactly_the_named_cases_fall_outside_our_contract() -> None:
    outside = {case.name: why for case in CASES if (why := outside_linear_attention_contract(case))}
    assert outside == LA_EXCLUDED


def test_what_ai_onnx_allows_beyond_our_contract_is_named() -> None:
    """A state type unlike the activations', an attribute of ai.onnx's own, bfloat16: each excluded, saying why."""
    (decode,) = (case for case in CASES if case.name == "test_linear_attention_decode_step")
    assert outside_linear_attention_contract(decode) is None
    half = {name: x.astype(np.float16) for name, x in decode.inputs.items() if name != "past_state"}
    bfloat16 = helper.tensor_dtype_to_np_dtype(TensorProto.BFLOAT16)
    brain = {name: x.astype(bfloat16) for name, x in decode.inputs.items()}
    variants = {
        "com.microsoft takes one dtype": replace(decode, inputs={**decode.inputs, **half}),
        "no com.microsoft counterpart: ['window']": replace(decode, attributes={**decode.attributes, "window": 1}),
        "outside our contract: query: expected dtype float32 or float16": replace(decode, inputs=brain),
    }
    for why, case in variants.items():
        assert why in (outside_linear_attention_contract(case) or ""), why


@pytest.mark.parametrize("case", SHARED, ids=[case.name for case in SHARED])
def test_node_case_through_the_oracle(case: NodeCase) -> None:
    output, present = linear_attention(**case.call)
    dtype = case.inputs["query"].dtype
    case.assert_outputs([output.astype(dtype), present.astype(dtype)])

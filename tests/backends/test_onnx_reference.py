"""LinearAttention on the ONNX project's reference (``onnx.reference``, ``ai.onnx`` opset 27): a peer of the oracle
where the two contracts overlap, its window through prefix mode, and ``Unsupported`` saying why outside."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from support.sampling import sample

from fuzz.backends import Unsupported
from fuzz.engine.compare import assert_agrees_with_oracle
from fuzz.model.ops import CAUSAL_CONV, LINEAR_ATTENTION
from fuzz.ops.linear_attention.strategies import Limits
from fuzz.ops.linear_attention.testing import TESTING as LINEAR_ATTENTION_TESTING
from oracles.validation import GATED_RULES

OUTSIDE = r"the ai\.onnx op (has no inverse GQA|reads one key head per kv head)"
"""How the backend says a valid case is outside the ai.onnx op's contract."""


def test_the_onnx_reference_is_a_linear_attention_peer_where_the_contracts_overlap(need) -> None:
    """Every valid case with ``H_q`` a multiple of ``H_kv`` and one key head per kv head runs and agrees with the
    oracle (float32 and float16, every rule, ``W`` 0 to 8, explicit scales, a decay the rule ignores left off);
    every other one is ``Unsupported`` naming the difference."""
    reference = need("onnx-reference")
    assert reference.capabilities().ops == (CAUSAL_CONV.name, LINEAR_ATTENTION.name)
    cases = sample(LINEAR_ATTENTION_TESTING.cases(replace(Limits.ci(), explicit_scales=True)), 120)
    ran = []
    for case in cases:
        dims = case.dims()
        if dims.q_heads < dims.kv_heads or dims.key_heads != dims.kv_heads:
            with pytest.raises(Unsupported, match=OUTSIDE):
                reference.run(case)
            continue
        output, present = reference.run(case)
        assert_agrees_with_oracle(case, (np.asarray(output), np.asarray(present)), label=reference.name)
        ran.append(case)
    assert len(ran) > len(cases) // 3, f"{len(ran)} of {len(cases)} in the overlap"
    assert {str(c.dtype) for c in ran} == {"float32", "float16"}
    assert {c.attr("update_rule") for c in ran} == {"linear", "gated", "delta", "gated_delta"}
    assert any(c.state_window for c in ran) and any(not c.state_window for c in ran)
    assert any(c.attr("scale") for c in ran), "an explicit scale"
    assert any("decay" in c.inputs and c.attr("update_rule") not in GATED_RULES for c in ran), "an ignored decay"


def test_an_invalid_linear_attention_case_is_not_asked(need) -> None:
    reference = need("onnx-reference")
    (case,) = sample(LINEAR_ATTENTION_TESTING.invalid_cases(Limits.ci()), 1)
    with pytest.raises(Unsupported, match="a peer for valid cases only"):
        reference.run(case)

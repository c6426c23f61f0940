"""GatedDeltaNet's strategies and bad inputs: valid cases within their limits, every refusal rule broken alone."""

from __future__ import annotations

import pytest
from support.sampling import broken_rules, sample

from fuzz.engine.op_testing import for_limits, for_op
from fuzz.model.ops import GATED_DELTA_NET
from fuzz.ops.gated_delta_net.bad_inputs import GDN_RULES
from fuzz.ops.gated_delta_net.strategies import GdnLimits
from oracles.validation import ValidationError

TESTING = for_op(GATED_DELTA_NET)
LIMITS = GdnLimits.ci()


def test_valid_cases_keep_to_their_limits() -> None:
    cases = sample(TESTING.cases(LIMITS), 200)
    dims = [case.dims() for case in cases]
    assert all(max(d.lengths) <= LIMITS.max_len and d.batch <= LIMITS.max_batch for d in dims)
    assert all(d.q_heads <= LIMITS.max_heads and d.group <= LIMITS.max_group for d in dims)
    assert all(max(d.d_k, d.d_v) <= LIMITS.max_d for d in dims)
    assert {str(d.dtype) for d in dims} == set(LIMITS.dtypes)
    assert any(d.capacity for d in dims) and any(not d.capacity for d in dims)
    assert for_limits(LIMITS) is TESTING


def test_resume_cases_capture_in_float32() -> None:
    dims = [case.dims() for case in sample(TESTING.resume_cases(LIMITS), 50)]
    assert all(d.capacity >= 1 and d.capture_active and str(d.dtype) == "float32" for d in dims)


def test_every_rule_is_broken_alone_and_refused() -> None:
    broken = broken_rules(TESTING.invalid_cases(LIMITS), 600)
    assert broken == set(GDN_RULES), set(GDN_RULES) - broken


@pytest.mark.parametrize(("rule", "field"), [
    ("standard-gqa", "value heads H_v"), ("per-key-decay-with-capture", "decay"),
    ("capture-count-without-capacity", "capture_count"), ("capacity-without-capture-count", "capture_count"),
    ("capacity-above-8", "state_update_capacity"), ("cu-seqlens-decreasing", "cu_seqlens"),
    ("cu-seqlens-past-the-end", "cu_seqlens"), ("a-log-without-qwen", "a_log"), ("qwen-without-a-log", "a_log"),
])
def test_the_schemas_refusals_are_refused_for_their_own_reason(rule: str, field: str) -> None:
    """The rules the schema states: the refusal names the input or attribute the rule is about, not another."""
    cases = [c for c in sample(TESTING.invalid_cases(LIMITS), 600) if c.notes["broken_rule"] == rule]
    assert cases
    for case in cases[:5]:
        with pytest.raises(ValidationError) as refused:
            case.dims()
        assert refused.value.input == field, (rule, str(refused.value))

"""ONNX Runtime's own C++ unit-test cases of LinearAttention and CausalConvWithState through our oracle.

The cases are data (``support.ort_unit_cases``, which names the upstream files). Upstream computes its expected
values at run time with a float32 C++ reference, so each valid case is held here against ORT's CPU EP at
``W = 0`` (a windowed case through the CPU EP's prefix runs, slot by slot) under the suite's tolerance model.
Upstream's refusals must be ours too, naming the same input or attribute; the numbers upstream does state (the
conv state ``[2, 3]``) must come out exactly; the cases this suite does not port are listed with the reason.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from support.ort_unit_cases import (
    CAUSAL_CONV_CASES,
    LINEAR_ATTENTION_CASES,
    OUTSIDE_CONTRACT,
    REJECTION_CASES,
    TOKEN_BY_TOKEN,
    CausalConvUnitCase,
    LinearAttentionUnitCase,
    OutsideContract,
    RejectionCase,
    TokenByToken,
)

from fuzz.backends import Backend
from fuzz.backends.base import Rejected
from fuzz.engine.compare import assert_agrees_with_oracle
from fuzz.model.ops import op_named
from oracles.validation import ValidationError

Need = Callable[..., Backend]

LA_PARAMS = [pytest.param(u, id=u.name, marks=[pytest.mark.slow] if u.slow else []) for u in LINEAR_ATTENTION_CASES]
CONV_PARAMS = [pytest.param(u, dtype, id=f"{u.name}-{dtype}") for u in CAUSAL_CONV_CASES for dtype in u.dtypes]


def test_every_upstream_case_is_ported_or_listed() -> None:
    """54 LinearAttention tests (46 calls, 6 refusals, 2 left out) and 32 CausalConvWithState tests (26 calls,
    2 chains of single tokens, 2 refusals, 2 left out) of the dense ops; the Varlen ops are other operators."""
    by_op = {op: [c for c in OUTSIDE_CONTRACT if c.op == op] for op in ("LinearAttention", "CausalConvWithState")}
    la_refusals = [r for r in REJECTION_CASES if r.op.name == "LinearAttention"]
    assert (len(LINEAR_ATTENTION_CASES), len(la_refusals), len(by_op["LinearAttention"])) == (46, 6, 2)
    chains = [t for t in TOKEN_BY_TOKEN if t.name not in {c.name for c in CAUSAL_CONV_CASES}]
    conv_refusals = len(REJECTION_CASES) - len(la_refusals)
    assert (len(CAUSAL_CONV_CASES), len(chains), conv_refusals, len(by_op["CausalConvWithState"])) == (26, 2, 2, 2)
    assert len({u.name for u in LINEAR_ATTENTION_CASES}) == 46 and len({u.name for u in CAUSAL_CONV_CASES}) == 26
    windows = [u.state_window for u in LINEAR_ATTENTION_CASES if u.state_window]
    assert len(windows) == 7 and sum(u.state_window > 0 for u in CAUSAL_CONV_CASES) == 7


@pytest.mark.parametrize("unit", LA_PARAMS)
def test_linear_attention_case_agrees_with_ort_cpu(unit: LinearAttentionUnitCase, need: Need) -> None:
    case = unit.case()
    assert case.dims().state_window == unit.state_window
    assert_agrees_with_oracle(case, need("ort-cpu").run(case), label="ort-cpu")


@pytest.mark.parametrize(("unit", "dtype"), CONV_PARAMS)
def test_causal_conv_case_agrees_with_ort_cpu(unit: CausalConvUnitCase, dtype: str, need: Need) -> None:
    case = unit.case(dtype)
    output, present = need("ort-cpu").run(case)
    assert_agrees_with_oracle(case, (output, present), label="ort-cpu")
    _, exact_state = case.op.oracle(**case.kwargs())
    assert np.array_equal(present, exact_state.astype(present.dtype)), "a conv state is copied input, bit for bit"


@pytest.mark.parametrize("unit", REJECTION_CASES, ids=[f"{r.op.name}-{r.name}" for r in REJECTION_CASES])
def test_upstream_refusal_is_ours(unit: RejectionCase, need: Need) -> None:
    case = unit.case()
    with pytest.raises(ValidationError) as refused:
        case.op.oracle(**case.kwargs())
    assert refused.value.input.split(".")[0] in unit.names, str(refused.value)
    with pytest.raises(Rejected):
        need("ort-cpu").run(case)


@pytest.mark.parametrize("unit", TOKEN_BY_TOKEN, ids=[t.name for t in TOKEN_BY_TOKEN])
def test_token_by_token_equals_the_whole_sequence(unit: TokenByToken, need: Need) -> None:
    """Upstream's check of its own reference, on ours: one call over the sequence equals one call per token
    (within upstream's 1e-5), and the CPU EP agrees on the whole call."""
    state_length = (unit.kernel_size - 1) * unit.dilation
    start = np.zeros((1, unit.channels, state_length), np.float32)
    whole = unit.case(unit.tokens, start)
    output, final = whole.op.oracle(**whole.kwargs())
    state, outputs = start, []
    for token in unit.tokens:
        step = unit.case((token,), state)
        out, present = step.op.oracle(**step.kwargs())
        outputs.append(out[..., 0])
        state = present.astype(np.float32)
    np.testing.assert_allclose(np.stack(outputs, axis=-1), output, rtol=0, atol=unit.tolerance)
    np.testing.assert_array_equal(state, final)
    if unit.final_state is not None:
        assert final.ravel().tolist() == list(unit.final_state)
    assert_agrees_with_oracle(whole, need("ort-cpu").run(whole), label="ort-cpu")


@pytest.mark.parametrize("left", OUTSIDE_CONTRACT, ids=[f"{c.op}-{c.name}" for c in OUTSIDE_CONTRACT])
def test_left_out_for_its_stated_reason(left: OutsideContract) -> None:
    """A call of the op is refused by the oracle (as the CUDA EP refuses ``T = 0``), for the reason given."""
    if left.case is None:
        with pytest.raises(KeyError):
            op_named(left.op)
        return
    assert left.case.op.name == left.op
    with pytest.raises(ValidationError):
        left.case.op.oracle(**left.case.kwargs())
    if left.reason.startswith("T = 0"):
        assert left.case.seq_len == 0
    else:
        assert left.reason.startswith("bfloat16") and left.case.dtype.name == "bfloat16"

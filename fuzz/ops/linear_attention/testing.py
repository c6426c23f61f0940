"""How the engine tests LinearAttention (``TESTING``): its strategies, its exact answer and where an element is."""

from __future__ import annotations

from typing import Any

from fuzz.engine.chains import chain_cases
from fuzz.engine.op_testing import Coordinates, OpTesting
from fuzz.model.ops import LINEAR_ATTENTION
from fuzz.ops.linear_attention import tolerance
from fuzz.ops.linear_attention.bad_inputs import RULES, invalid_cases
from fuzz.ops.linear_attention.strategies import Limits, cases, resume_cases


def _exact(inputs: dict[str, Any], attrs: dict[str, Any]) -> Any:
    return tolerance.exact_answer(inputs, attrs)


def _depth(dims: Any, tensor: str, tokens: int | None) -> int:
    """Tokens (one state update each) plus ``d_k`` (the dot products of retrieval and readout)."""
    return (dims.seq_len if tokens is None else tokens) + dims.d_k


def la_locate(d_v: int, tensor: str, index: tuple[int, ...]) -> Coordinates:
    """``output`` ``(B, T, H_out*d_v)``: batch, token, head, value column; a state: slot, batch, head, key row,
    value column."""
    if tensor == "output":
        batch, token, column = index
        return {"slot": None, "batch": batch, "head": column // d_v, "row": token, "col": column % d_v}
    slot = index[0] if len(index) == 5 else None
    batch, head, row, col = index[-4:]
    return {"slot": slot, "batch": batch, "head": head, "row": row, "col": col}


TESTING = OpTesting(
    op=LINEAR_ATTENTION, limits_type=Limits, cases=cases, resume_cases=resume_cases, invalid_cases=invalid_cases,
    rules=RULES, exact=_exact, depth=_depth, chain_cases=chain_cases,
    locate=lambda dims, tensor, index: la_locate(dims.d_v, tensor, index),
)

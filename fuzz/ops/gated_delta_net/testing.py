"""How the engine tests GatedDeltaNet (``TESTING``): its strategies, bad inputs, exact answer and where an element
is. It has no window of states: the windowed properties do not apply to it (``fuzz.engine.properties``), its own
(``fuzz.engine.gdn_checks``) and ``error-parity`` do."""

from __future__ import annotations

import bisect
from typing import Any

from fuzz.engine.op_testing import Coordinates, OpTesting
from fuzz.model.ops import GATED_DELTA_NET
from fuzz.ops.gated_delta_net.bad_inputs import GDN_RULES, invalid_gdn_cases
from fuzz.ops.gated_delta_net.decoder_chain import decoder_chain_cases
from fuzz.ops.gated_delta_net.strategies import GdnLimits, capture_cases, gdn_cases
from fuzz.ops.gated_delta_net.tolerance import exact_gdn_answer, gdn_depth
from oracles.gated_delta_net import GdnDims


def _locate(dims: GdnDims, tensor: str, index: tuple[int, ...]) -> Coordinates:
    """An element of ``output`` (token, value head, column), ``final_state`` (request, value head, row, column) or
    ``state_update`` (request, position in its row)."""
    if tensor == "output":
        lead = len(dims.token_shape)
        token = index[0] * dims.token_shape[-1] + index[1] if lead == 2 else index[0]
        request = bisect.bisect_right(dims.starts, token) - 1
        return {"slot": None, "batch": request, "coordinates": (("token", token), ("value head", index[lead]),
                                                                ("column", index[lead + 1]))}
    if tensor == "final_state":
        return {"slot": None, "batch": index[0], "coordinates": (("value head", index[1]), ("d_v row", index[2]),
                                                                 ("d_k column", index[3]))}
    return {"slot": None, "batch": index[0], "coordinates": (("row element", index[-1]),)}


def _depth(dims: Any, tensor: str, tokens: int | None) -> int:
    return gdn_depth(dims)


TESTING = OpTesting(
    op=GATED_DELTA_NET, limits_type=GdnLimits, cases=gdn_cases, resume_cases=capture_cases,
    invalid_cases=invalid_gdn_cases, rules=GDN_RULES, exact=exact_gdn_answer, depth=_depth, locate=_locate,
    chain_cases=decoder_chain_cases,
)

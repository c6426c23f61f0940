"""How the engine tests GatedDeltaNetStateReplay (``TESTING``): its strategies, bad descriptors, exact answer and
where an element is. It has no window and no sequence: its own properties (``fuzz.engine.gdn_checks``) and
``error-parity`` apply to it."""

from __future__ import annotations

from typing import Any

from fuzz.engine.op_testing import Coordinates, OpTesting
from fuzz.model.ops import GATED_DELTA_NET_STATE_REPLAY
from fuzz.ops.state_replay.bad_inputs import REPLAY_RULES, invalid_replay_cases
from fuzz.ops.state_replay.strategies import ReplayLimits, replay_cases
from fuzz.ops.state_replay.tolerance import exact_replay_answer, replay_depth
from oracles.gated_delta_net import ReplayDims


def _locate(dims: ReplayDims, tensor: str, index: tuple[int, ...]) -> Coordinates:
    """An element of the destination backing: outside the view, or its head, ``d_v`` row and ``d_k`` column."""
    offset = index[0] - dims.destination_offset
    if not 0 <= offset < dims.state_elements:
        return {"slot": None, "batch": None, "coordinates": (("backing element outside the view", index[0]),)}
    head, rest = divmod(offset, dims.d_v * dims.d_k)
    return {"slot": None, "batch": None, "coordinates": (("value head", head), ("d_v row", rest // dims.d_k),
                                                         ("d_k column", rest % dims.d_k))}


def _depth(dims: Any, tensor: str, tokens: int | None) -> int:
    return replay_depth(dims)


TESTING = OpTesting(
    op=GATED_DELTA_NET_STATE_REPLAY, limits_type=ReplayLimits, cases=replay_cases, resume_cases=replay_cases,
    invalid_cases=invalid_replay_cases, rules=REPLAY_RULES, exact=exact_replay_answer, depth=_depth, locate=_locate,
)

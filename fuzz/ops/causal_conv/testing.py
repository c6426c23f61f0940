"""How the engine tests CausalConvWithState (``TESTING``): its strategies, its exact answer and where an element is."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any

from hypothesis import strategies as st

from fuzz.engine.chains import window_chain_cases
from fuzz.engine.op_testing import Coordinates, OpTesting
from fuzz.engine.window_cases import resume_window_cases
from fuzz.model.case import Case
from fuzz.model.ops import CAUSAL_CONV
from fuzz.ops.causal_conv.bad_inputs import CONV_RULES, invalid_conv_cases
from fuzz.ops.causal_conv.strategies import ConvLimits, conv_cases
from fuzz.ops.causal_conv.tolerance import conv_depth, exact_conv_answer


def _locate(dims: Any, tensor: str, index: tuple[int, ...]) -> Coordinates:
    """An element of ``output`` or of a state slot: batch, channel (or channel axes), spatial indices, position."""
    slot = index[0] if tensor != "output" and dims.state_window else None
    rest = index[1:] if slot is not None else index
    batch = rest[0]
    if dims.channels_last:
        position, channels = rest[1], rest[2:]
        named = [(f"channel axis {i + 1}" if len(channels) > 1 else "channel", c) for i, c in enumerate(channels)]
    else:
        named = [("channel", rest[1]), *((f"spatial axis {i + 1}", s) for i, s in enumerate(rest[2:-1]))]
        position = rest[-1]
    what = "position" if tensor == "output" else "state position"
    return {"slot": slot, "batch": batch, "coordinates": (*named, (what, position))}


def _chain_cases(limits: ConvLimits) -> st.SearchStrategy[Case]:
    """Chains of ``ndim = 1`` calls: the kernels that run chains (``kernels.causal_conv``) run that alone."""
    return window_chain_cases(conv_cases, replace(limits, ndims=(1,)))


TESTING = OpTesting(
    op=CAUSAL_CONV, limits_type=ConvLimits, cases=conv_cases, resume_cases=partial(resume_window_cases, conv_cases),
    invalid_cases=invalid_conv_cases, rules=CONV_RULES, exact=exact_conv_answer,
    depth=lambda dims, tensor, tokens: conv_depth(dims, tensor), locate=_locate, chain_cases=_chain_cases,
)

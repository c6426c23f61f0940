"""The prefix formulation of CausalConvWithState's window: each slot from a ``W = 0`` run over a prefix.

Slot ``j`` is the ``present_state`` of a ``W = 0`` call over the first ``T - W + j + 1`` positions of the
causal axis, seeded with ``past_state[W-1]`` (``oracles.prefix.slots_by_prefix``). It shares nothing
with ``window_of`` but the ``W = 0`` operator, so it checks the window of any implementation, and the
oracle's own, through calls that have no window.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from oracles.prefix import Inputs, LinearAttentionFn, slots_by_prefix

from .validation import validate


def prefix_cutter(sequence_axis: int) -> Callable[[Inputs, int], Inputs]:
    """``cut(inputs, tokens)``: ``input`` restricted to its first ``tokens`` positions of ``sequence_axis``."""
    def cut(inputs: Inputs, tokens: int) -> Inputs:
        x = inputs["input"]
        assert x is not None
        return {**inputs, "input": np.take(x, np.arange(tokens), axis=sequence_axis)}
    return cut


def window_by_prefix(run: LinearAttentionFn, inputs: Inputs, attrs: dict[str, Any]) -> np.ndarray:
    """``present_state`` of a ``W > 0`` call, evaluated slot by slot through ``W = 0`` prefix runs of ``run``
    (any implementation with the oracle's signature). Returns float64, the shape of ``past_state``."""
    call: dict[str, Any] = {**inputs, **attrs}
    dims = validate(**call)
    return slots_by_prefix(run, inputs, attrs, seq_len=dims.seq_len, state_shape=dims.state_shape,
                           cut=prefix_cutter(dims.sequence_axis))

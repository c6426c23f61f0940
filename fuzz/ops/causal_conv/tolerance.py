"""The exact answer to a CausalConvWithState call and the magnitudes its tolerances scale with.

The tolerance model is the suite's one (``fuzz.engine.tolerance.Budget``: half an ulp of the stored type,
plus ``4 * depth * eps(compute) * (|exact| + block)``, plus underflow); this module supplies what is
particular to the convolution:

``output``
    ``z = bias + sum_taps w * x`` then the activation. The terms behind an element are the products and
    the bias, so its block is ``|bias| + sum_taps |w| |x|`` (a sum that cancels still carries the rounding
    errors of its large terms); SiLU multiplies an error of ``z`` by at most ``max |silu'| < 1.1``, so its
    block is ``1.1`` times that. ``depth`` is the number of products, plus one for the bias and one for the
    activation (``conv_depth``).
``present_state``
    Copies of input and past positions, no arithmetic: depth 0 and block 0, so the tolerance is half an ulp
    of the stored value, which a copy never needs and any changed bit exceeds.

A resumed call reads a slot that holds stored positions exactly (``reseeded_at`` changes nothing).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from fuzz.engine.tolerance import array_digest, remembered
from oracles.causal_conv import ConvDims, validate
from oracles.causal_conv.convolution import convolve, from_canonical, virtual_sequence, window_of

SILU_SLOPE = 1.1
"""An upper bound of ``|d silu(z) / dz|`` (its maximum is about 1.0998, near ``z = 2.4``)."""


@dataclass(frozen=True)
class ConvExact:
    """The float64 answer to one call, with the magnitude each element's tolerance scales with."""

    output: np.ndarray
    present_state: np.ndarray
    output_block: np.ndarray
    """``|bias| + sum_taps |w| |x|`` per output element (times ``SILU_SLOPE`` with an activation)."""
    peak: float
    """The largest magnitude of an output or a state value (what a stored type must hold)."""

    @property
    def state_block(self) -> np.ndarray:
        return np.zeros(self.present_state.shape)

    def part(self, tensor: str) -> tuple[np.ndarray, np.ndarray]:
        """``(values, block)`` of ``"output"`` or ``"present_state"``."""
        if tensor == "output":
            return self.output, self.output_block
        return self.present_state, self.state_block

    def reseeded_at(self, tokens: int, storage: np.dtype) -> ConvExact:
        """A call resumed from a stored slot: the slot holds stored positions exactly, nothing widens."""
        return self


def conv_depth(dims: ConvDims, tensor: str) -> int:
    """Sequential operations behind one element: every tap's product, the bias and the activation (``output``);
    none behind a state value, which is a copy."""
    return dims.taps + 2 if tensor == "output" else 0


def _answer(dims: ConvDims, inputs: dict[str, Any]) -> ConvExact:
    past, bias, weight = inputs.get("past_state"), inputs.get("bias"), inputs["weight"]
    virtual = virtual_sequence(dims, inputs["input"], past)
    magnitude = convolve(replace(dims, activation="none"), np.abs(virtual), np.abs(weight),
                         None if bias is None else np.abs(bias))
    slope = 1.0 if dims.activation == "none" else SILU_SLOPE
    output = from_canonical(dims, convolve(dims, virtual, weight, bias))
    block = from_canonical(dims, slope * magnitude)
    present = window_of(dims, virtual)
    peak = max(float(np.max(np.abs(output), initial=0.0)), float(np.max(np.abs(virtual), initial=0.0)))
    answer = ConvExact(output=output, present_state=present, output_block=block, peak=peak)
    for array in (answer.output, answer.present_state, answer.output_block):
        array.setflags(write=False)
    return answer


def exact_conv_answer(inputs: dict[str, Any], attrs: dict[str, Any]) -> ConvExact:
    """The float64 oracle's answer to one valid call with its tolerance blocks (remembered by content, like
    LinearAttention's; the past state enters only as slot ``W - 1``)."""
    dims = validate(**inputs, **attrs)
    past = inputs.get("past_state")
    seed = None if past is None else (past[-1] if dims.state_window else past)
    named = (("input", inputs["input"]), ("weight", inputs["weight"]), ("bias", inputs.get("bias")), ("seed", seed))
    return remembered(array_digest(repr(dims), named), lambda: _answer(dims, inputs))

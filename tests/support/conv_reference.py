"""The float64 answer to a CausalConvWithState call for the kernel's tests: the project's oracle
(``oracles.causal_conv``) with the suite's tolerance model for the op (``fuzz.ops.causal_conv.tolerance``).

The oracle is itself checked against the ONNX project's reference and its backend node cases
(``tests/oracles``), and each slot of its window against a ``W = 0`` prefix run (the engine's prefix-oracle
property). ``ConvReference.block`` and ``depth`` are what the tolerance model (``fuzz.engine.tolerance.Budget``)
scales with: the magnitude of an output's terms and the operations behind it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fuzz.engine.tolerance import Budget
from fuzz.ops.causal_conv.tolerance import conv_depth, exact_conv_answer
from oracles.causal_conv import validate


@dataclass(frozen=True)
class ConvReference:
    """The exact answer to a call, in the call's layout, and what its outputs are made of."""

    output: np.ndarray
    present_state: np.ndarray
    block: np.ndarray
    """``|bias| + sum_j |w_j x_j|`` of each output, times the largest slope of SiLU with an activation."""
    depth: int
    """Sequential operations behind one output: its products, the bias and the activation."""

    def assert_matches(self, output: np.ndarray, present_state: np.ndarray, what: str) -> None:
        """``output`` within the suite's tolerance model (one rounding to its type plus float32 sums of
        ``depth`` terms), ``present_state`` bit for bit: a state is made of input values and nothing is
        computed for it. The leading zero slots are compared as +0.0."""
        assert output.shape == self.output.shape, f"{what}: output shape {output.shape} vs {self.output.shape}"
        tolerance = Budget((output.dtype,), self.depth).tolerance(self.output, self.block)
        error = np.abs(output.astype(np.float64) - self.output)
        bad = ~(error <= tolerance)
        assert not bad.any(), (f"{what}: {int(bad.sum())} of {bad.size} outputs off, worst at "
                               f"{np.unravel_index(int(np.argmax(np.where(bad, error / tolerance, 0))), bad.shape)}")
        expected = np.ascontiguousarray(self.present_state, dtype=present_state.dtype)
        assert present_state.shape == expected.shape, f"{what}: state shape {present_state.shape} vs {expected.shape}"
        same = present_state.view(np.uint8) == expected.view(np.uint8)
        assert same.all(), f"{what}: present_state differs from the reference in {int((~same).sum())} bytes"


def reference(input: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None,
              past_state: np.ndarray | None = None, **attrs: Any) -> ConvReference:
    """The float64 answer to a valid call (any dtype in; float64 out), by the project's oracle."""
    inputs = {name: x for name, x in (("input", input), ("weight", weight), ("bias", bias),
                                      ("past_state", past_state)) if x is not None}
    exact = exact_conv_answer(inputs, dict(attrs))
    return ConvReference(exact.output, exact.present_state, exact.output_block,
                         conv_depth(validate(input, weight, bias, past_state, **attrs), "output"))

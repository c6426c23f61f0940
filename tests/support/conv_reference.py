"""An independent float64 reference for CausalConvWithState with every attribute of the kernel, built on
ONNX's own reference implementation of the ``ai.onnx`` op (``onnx.reference``: ndim 1, channels first, no
dilation, no window) and a second formulation of each attribute it lacks:

- ``channels_last``: the same call transposed to channels first and back;
- ``dilation``: an undilated kernel of ``(k - 1) * dilation + 1`` taps with zeros between the real ones
  (its state holds the same ``(k - 1) * dilation`` positions);
- ``state_window``: slot ``j`` is the state of a ``W = 0`` run over the first ``T - W + 1 + j`` tokens from
  slot ``W - 1`` of the past state; slots whose token index ``T - W + j`` is negative are zeros;
- the activation: SiLU applied here in float64 to the reference's output without one (``onnx.reference``
  evaluates its sigmoid in float32).

It shares no code with the kernel. ``ConvReference.block`` and ``depth`` are what the suite's tolerance model
(``fuzz.engine.tolerance.Budget``) scales with: the magnitude of an output's terms (``|bias| + sum_j |w_j x_j|``,
times the largest slope of SiLU with an activation) and the operations behind it (the products, the bias and
the activation).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from fuzz.engine.tolerance import Budget

OPSET = 27
"""The ``ai.onnx`` opset that introduced CausalConvWithState."""

SILU_SLOPE = 1.1
"""An upper bound of ``|silu'(z)|`` (about 1.0998 at most): how much SiLU can magnify an error of its input."""


@cache
def _evaluator(has_bias: bool, has_past: bool) -> ReferenceEvaluator:
    """``onnx.reference`` on one ``ai.onnx`` CausalConvWithState node (float64, no activation)."""
    inputs = ["input", "weight", "bias" if has_bias else "", "past_state" if has_past else ""]
    node = helper.make_node("CausalConvWithState", inputs, ["output", "present_state"])
    declared = [helper.make_tensor_value_info(n, TensorProto.DOUBLE, None) for n in inputs if n]
    results = [helper.make_tensor_value_info(n, TensorProto.DOUBLE, None) for n in ("output", "present_state")]
    graph = helper.make_graph([node], "causal_conv", declared, results)
    return ReferenceEvaluator(helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)]))


def _run(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, seed: np.ndarray | None
         ) -> tuple[np.ndarray, np.ndarray]:
    """A ``W = 0`` channels-first call through ``onnx.reference``: ``(output, present_state)``."""
    feeds = {"input": x, "weight": weight}
    if bias is not None:
        feeds["bias"] = bias
    if seed is not None:
        feeds["past_state"] = seed
    output, state = _evaluator(bias is not None, seed is not None).run(None, feeds)
    return np.asarray(output, dtype=np.float64), np.asarray(state, dtype=np.float64)


def _dilated(weight: np.ndarray, dilation: int) -> np.ndarray:
    """The undilated kernel equal to ``weight`` at ``dilation``: its taps ``dilation`` apart, zeros between."""
    channels, _, k = weight.shape
    wide = np.zeros((channels, 1, (k - 1) * dilation + 1))
    wide[:, :, ::dilation] = weight
    return wide


def _channels_first(x: np.ndarray, channels_last: bool) -> np.ndarray:
    """``(B, L, d_1, ..., d_n)`` as ``(B, C, L)`` when ``channels_last``, else ``x`` itself."""
    return np.moveaxis(x.reshape(*x.shape[:2], int(np.prod(x.shape[2:]))), 1, 2) if channels_last else x


def _back(x: np.ndarray, like: tuple[int, ...], channels_last: bool) -> np.ndarray:
    """A ``(B, C, L)`` array in the layout of a tensor shaped ``like`` (the inverse of ``_channels_first``)."""
    return np.moveaxis(x, 2, 1).reshape(like) if channels_last else x


@dataclass(frozen=True)
class ConvReference:
    """The exact answer to a call, in the call's layout, and what its outputs are made of."""

    output: np.ndarray
    present_state: np.ndarray
    block: np.ndarray
    """``|bias| + sum_j |w_j x_j|`` of each output, times ``SILU_SLOPE`` with an activation."""
    depth: int
    """Sequential operations behind one output: its ``k`` products, the bias and the activation."""

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
              past_state: np.ndarray | None = None, *, activation: str = "none", dilation: int = 1,
              channels_last: int = 0, state_window: int = 0) -> ConvReference:
    """The float64 answer to a valid ndim = 1 call (any dtype in; float64 out)."""
    last = bool(channels_last)
    x = _channels_first(input.astype(np.float64), last)
    w = _dilated(weight.astype(np.float64), dilation)
    b = None if bias is None else bias.astype(np.float64)
    seed_any = None if past_state is None else (past_state[-1] if state_window else past_state)
    seed = None if seed_any is None else _channels_first(seed_any.astype(np.float64), last)
    z, final = _run(x, w, b, seed)
    batch, channels, seq_len = x.shape
    state_len = w.shape[2] - 1
    padded = np.concatenate([np.zeros((batch, channels, state_len)) if seed is None else seed, x], axis=2)
    taps = np.stack([padded[:, :, j: j + seq_len] for j in range(w.shape[2])], axis=-1)
    block = np.abs(taps * w[None, :, 0, None, :]).sum(axis=-1) + (0.0 if b is None else np.abs(b)[None, :, None])
    output = z * (1.0 / (1.0 + np.exp(-z))) if activation in ("silu", "swish") else z
    slot_like = (batch, state_len, *input.shape[2:]) if last else (batch, channels, state_len)
    if state_window == 0:
        state = _back(final, slot_like, last)
    else:
        slots = []
        for j in range(state_window):
            tokens = seq_len - state_window + 1 + j
            slots.append(np.zeros(slot_like) if tokens < 1 else
                         _back(_run(x[:, :, :tokens], w, b, seed)[1], slot_like, last))
        state = np.stack(slots)
    slope = SILU_SLOPE if activation in ("silu", "swish") else 1.0
    return ConvReference(_back(output, input.shape, last), state, _back(slope * block, input.shape, last),
                         depth=weight.shape[2] + 2)

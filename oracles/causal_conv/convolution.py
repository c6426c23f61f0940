"""The float64 reference of CausalConvWithState: the contract of ``docs/spec.md §7`` as code.

One call reads a *virtual sequence* along the causal axis: the ``L`` positions of the seed state
(``past_state``, or its slot ``W-1``; zeros when absent) followed by the call's ``T`` positions.
Output position ``t`` is ``act(bias + sum_j w[j] * virtual[t + j * dilation])`` over the causal taps
``j`` (and, with ``ndim > 1``, over the other spatial taps of a zero-padded, centred neighbourhood);
the state after ``p`` positions is ``virtual[p : p + L]``, the last ``L`` positions read so far. The
window keeps the states after the last ``W`` positions, right-aligned, zeros where a slot holds no
position of this call.

Everything runs in one canonical layout, channels first ``(B, C, *S, positions)``; channels-last
tensors are moved into it and back. The loop over kernel taps is the definition of the operator
and stays a loop; each tap is applied to every batch, channel and position at once.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from .validation import ConvDims, validate


def to_canonical(dims: ConvDims, x: np.ndarray) -> np.ndarray:
    """An activation or state slot as float64 ``(B, C, *S, positions)``."""
    x = x.astype(np.float64)
    if not dims.channels_last:
        return x
    positions = x.shape[1]
    return x.reshape(dims.batch, positions, dims.channels).transpose(0, 2, 1)


def from_canonical(dims: ConvDims, x: np.ndarray) -> np.ndarray:
    """The inverse of ``to_canonical``: ``(B, C, *S, positions)`` back to the call's layout."""
    if not dims.channels_last:
        return x
    positions = x.shape[-1]
    return np.ascontiguousarray(x.transpose(0, 2, 1)).reshape(dims.batch, positions, *dims.channel_shape)


def seed_slot(dims: ConvDims, past_state: np.ndarray | None) -> np.ndarray:
    """The state the call starts from, canonical: ``past_state[W-1]`` (or the unwindowed state), zeros if absent."""
    if past_state is None:
        return np.zeros((dims.batch, dims.channels, *dims.spatial, dims.state_length))
    return to_canonical(dims, past_state[dims.state_window - 1] if dims.state_window else past_state)


def virtual_sequence(dims: ConvDims, input: np.ndarray, past_state: np.ndarray | None) -> np.ndarray:
    """The seed's ``L`` positions followed by the call's ``T``, canonical: ``(B, C, *S, L + T)``."""
    return np.concatenate([seed_slot(dims, past_state), to_canonical(dims, input)], axis=-1)


def _centred(size: int) -> tuple[int, int]:
    """Zero padding ``(before, after)`` of a non-causal axis for a kernel of ``size`` taps: centred, the odd
    one after (as ONNX ``Conv``'s ``SAME_UPPER``), so the output keeps the input's size."""
    before = (size - 1) // 2
    return before, size - 1 - before


def silu(z: np.ndarray) -> np.ndarray:
    """``z * sigmoid(z)``, written as ``z / (1 + exp(-z))`` (``exp`` overflows to inf for ``z << 0``: the result
    is then a signed zero, its limit)."""
    with np.errstate(over="ignore"):
        return z / (1.0 + np.exp(-z))


def convolve(dims: ConvDims, virtual: np.ndarray, weight: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """The output, canonical ``(B, C, *S, T)``, from the virtual sequence: bias, every tap, then the activation."""
    spatial_pads = [(0, 0), (0, 0), *(_centred(k) for k in dims.kernel[:-1]), (0, 0)]
    padded = np.pad(virtual, spatial_pads)
    w = weight.astype(np.float64)
    out = np.zeros((dims.batch, dims.channels, *dims.spatial, dims.seq_len))
    if bias is not None:
        out += bias.astype(np.float64).reshape(-1, *[1] * dims.ndim)
    for tap in itertools.product(*(range(k) for k in dims.kernel)):
        *around, along = tap
        start = along * dims.dilation
        window = (slice(None), slice(None), *(slice(i, i + s) for i, s in zip(around, dims.spatial, strict=True)),
                  slice(start, start + dims.seq_len))
        weights: tuple[Any, ...] = (slice(None), 0, *tap)
        out += w[weights].reshape(-1, *[1] * dims.ndim) * padded[window]
    return silu(out) if dims.activation in ("silu", "swish") else out


def state_after(dims: ConvDims, virtual: np.ndarray, positions: int) -> np.ndarray:
    """The state after the first ``positions`` positions of the call, canonical: the ``L`` positions of the
    virtual sequence that end there."""
    return virtual[..., positions:positions + dims.state_length]


def window_of(dims: ConvDims, virtual: np.ndarray) -> np.ndarray:
    """``present_state`` in the call's layout: the last state, or the right-aligned window of states.

    Slot ``j`` holds the state after the first ``T - W + j + 1`` positions; slots that hold no position
    of this call (``T < W``) are exact zeros.
    """
    if dims.state_window == 0:
        return from_canonical(dims, state_after(dims, virtual, dims.seq_len))
    present = np.zeros(dims.state_shape)
    for j in range(dims.state_window):
        positions = dims.seq_len - dims.state_window + j + 1
        if positions >= 1:
            present[j] = from_canonical(dims, state_after(dims, virtual, positions))
    return present


def causal_conv_with_state(
    input: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None = None,
    past_state: np.ndarray | None = None,
    *,
    activation: str = "none",
    ndim: int = 1,
    dilation: int = 1,
    channels_last: int = 0,
    state_window: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """The ONNX ``com.microsoft::CausalConvWithState`` operator, in float64.

    Same input and attribute names as the op. Returns ``(output, present_state)`` as float64 arrays:
    ``output`` has the shape of ``input``, ``present_state`` the shape of ``past_state`` for the given
    ``state_window``. Raises ``ValidationError`` for any input the contract forbids.
    """
    dims = validate(input, weight, bias, past_state, activation=activation, ndim=ndim, dilation=dilation,
                    channels_last=channels_last, state_window=state_window)
    virtual = virtual_sequence(dims, input, past_state)
    output = from_canonical(dims, convolve(dims, virtual, weight, bias))
    return output, window_of(dims, virtual)


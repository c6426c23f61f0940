"""Input validation for CausalConvWithState: every shape and attribute rule of the contract.

The same ``ValidationError`` as LinearAttention's (``oracles.validation``): every rule broken names
the input or attribute, what was expected and what was received. ``validate`` checks attributes
first, then each array on its own (type, dtype, rank), then how the arrays fit together, and
returns the call's ``ConvDims``.

Layouts (``docs/spec.md §7``):

- channels first (the default): ``input`` is ``(B, C, *S, T)`` with ``ndim`` spatial axes, the last
  one (of length ``T``) causal; one state slot is ``(B, C, *S, L)``;
- channels last (``ndim = 1`` only): ``input`` is ``(B, T, d_1, ..., d_n)`` with ``C = d_1 * ... * d_n``;
  one state slot is ``(B, L, d_1, ..., d_n)``;
- ``L = (k_causal - 1) * dilation`` positions, ``k_causal`` the kernel's last size; with
  ``state_window = W > 0`` the state gains a leading window axis of ``W`` slots.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from oracles.validation import MAX_STATE_WINDOW, ValidationError, check_array, check_int_attr

ACTIVATIONS = ("none", "silu", "swish")
"""The fused activations; ``silu`` and ``swish`` are two names of ``x * sigmoid(x)``."""

MAX_NDIM = 3
"""Largest number of spatial axes the schema allows."""

INPUT_NAMES = ("input", "weight", "bias", "past_state")
"""The operator's inputs, in the order of the ONNX schema."""


@dataclass(frozen=True)
class ConvDims:
    """The sizes and layout of one valid CausalConvWithState call, derived from its inputs."""

    batch: int
    channels: int
    seq_len: int
    spatial: tuple[int, ...]
    """Sizes of the spatial axes before the causal one (``ndim - 1`` of them; empty for ``ndim = 1``)."""
    channel_shape: tuple[int, ...]
    """The channel axes as the tensors hold them: ``(C,)`` channels first, ``(d_1, ..., d_n)`` channels last."""
    kernel: tuple[int, ...]
    """Kernel sizes ``(k_1, ..., k_ndim)``; the last one runs along the causal axis."""
    ndim: int
    dilation: int
    channels_last: bool
    activation: str
    state_window: int
    dtype: np.dtype
    has_past: bool
    has_bias: bool

    @property
    def state_length(self) -> int:
        """Positions a state holds along the causal axis: ``(k_causal - 1) * dilation``."""
        return (self.kernel[-1] - 1) * self.dilation

    @property
    def slot_shape(self) -> tuple[int, ...]:
        """Shape of one state: ``(B, C, *S, L)``, or ``(B, L, d_1, ..., d_n)`` channels last."""
        if self.channels_last:
            return (self.batch, self.state_length, *self.channel_shape)
        return (self.batch, self.channels, *self.spatial, self.state_length)

    @property
    def state_shape(self) -> tuple[int, ...]:
        """Shape of ``past_state`` and ``present_state``."""
        return (self.state_window, *self.slot_shape) if self.state_window else self.slot_shape

    @property
    def output_shape(self) -> tuple[int, ...]:
        """Shape of ``output``: the shape of ``input``."""
        if self.channels_last:
            return (self.batch, self.seq_len, *self.channel_shape)
        return (self.batch, self.channels, *self.spatial, self.seq_len)

    @property
    def sequence_axis(self) -> int:
        """The causal axis of ``input``, ``output`` and of one state slot."""
        return 1 if self.channels_last else 1 + self.ndim

    @property
    def taps(self) -> int:
        """Kernel taps summed per output element."""
        return math.prod(self.kernel)


def _attributes(activation: Any, ndim: Any, dilation: Any, channels_last: Any, state_window: Any
                ) -> tuple[str, int, int, bool, int]:
    if activation not in ACTIVATIONS:
        raise ValidationError("activation", f"one of {', '.join(ACTIVATIONS)}", repr(activation))
    ndim = check_int_attr("ndim", ndim, 1, MAX_NDIM)
    dilation = check_int_attr("dilation", dilation, 1, None)
    last = check_int_attr("channels_last", channels_last, 0, 1)
    if last and ndim != 1:
        raise ValidationError("channels_last", f"0 with ndim = {ndim} (channels last requires ndim = 1)", last)
    window = check_int_attr("state_window", state_window, 0, MAX_STATE_WINDOW)
    return str(activation), ndim, dilation, bool(last), window


def _activation_axes(x: np.ndarray, ndim: int, channels_last: bool
                     ) -> tuple[int, int, tuple[int, ...], tuple[int, ...]]:
    """``(C, T, spatial, channel_shape)`` of an ``input`` of the right rank."""
    if channels_last:
        if x.ndim < 3:
            raise ValidationError("input", "rank >= 3 (B, T, d_1, ..., d_n) with channels_last = 1",
                                  f"rank {x.ndim} with shape {x.shape}")
        return math.prod(x.shape[2:]), x.shape[1], (), tuple(x.shape[2:])
    if x.ndim != 2 + ndim:
        raise ValidationError("input", f"rank {2 + ndim} (B, C, spatial..., T) for ndim = {ndim}",
                              f"rank {x.ndim} with shape {x.shape}")
    return x.shape[1], x.shape[-1], tuple(x.shape[2:-1]), (x.shape[1],)


def validate(
    input: Any,
    weight: Any,
    bias: Any = None,
    past_state: Any = None,
    *,
    activation: Any = "none",
    ndim: Any = 1,
    dilation: Any = 1,
    channels_last: Any = 0,
    state_window: Any = 0,
    allow_empty_sequence: bool = False,
) -> ConvDims:
    """Check one CausalConvWithState call against the contract and return its sizes.

    Raises ``ValidationError`` on the first broken rule. ``T = 0`` is outside the contract and is
    rejected unless ``allow_empty_sequence`` (a backend that passes the state through may use it).
    """
    activation, ndim, dilation, last, window = _attributes(activation, ndim, dilation, channels_last, state_window)
    x = check_array("input", input, None)
    channels, seq_len, spatial, channel_shape = _activation_axes(x, ndim, last)
    w = check_array("weight", weight, 2 + ndim)
    b = None if bias is None else check_array("bias", bias, 1)
    for name, other in (("weight", w), ("bias", b), ("past_state", past_state)):
        if isinstance(other, np.ndarray) and other.dtype != x.dtype:
            raise ValidationError(name, f"the dtype of input ({x.dtype})", f"dtype {other.dtype}")

    if x.shape[0] < 1:
        raise ValidationError("input", "batch >= 1", f"shape {x.shape}")
    if channels < 1:
        raise ValidationError("input", "at least one channel", f"shape {x.shape}")
    if any(size < 1 for size in spatial):
        raise ValidationError("input", "spatial sizes >= 1", f"shape {x.shape}")
    if seq_len < 1 and not allow_empty_sequence:
        raise ValidationError("input", "sequence length T >= 1 (T = 0 is outside the contract)", f"shape {x.shape}")

    if w.shape[0] != channels:
        raise ValidationError("weight.shape[0]", f"the number of channels C = {channels}", w.shape[0])
    if w.shape[1] != 1:
        raise ValidationError("weight.shape[1]", "1 (a depthwise kernel: one input channel per group)", w.shape[1])
    kernel = tuple(int(k) for k in w.shape[2:])
    if min(kernel) < 1:
        raise ValidationError("weight", "kernel sizes >= 1", f"shape {w.shape}")
    if b is not None and b.shape != (channels,):
        raise ValidationError("bias", f"shape ({channels},) = (C,)", f"shape {b.shape}")

    dims = ConvDims(
        batch=x.shape[0], channels=channels, seq_len=seq_len, spatial=spatial, channel_shape=channel_shape,
        kernel=kernel, ndim=ndim, dilation=dilation, channels_last=last, activation=activation,
        state_window=window, dtype=x.dtype, has_past=past_state is not None, has_bias=b is not None,
    )
    if past_state is not None:
        past = check_array("past_state", past_state, None)
        if past.shape != dims.state_shape:
            slot = "(B, L, d_1, ..., d_n)" if last else "(B, C, spatial..., L)"
            layout = f"(W, {slot[1:]}" if window else slot
            raise ValidationError("past_state", f"shape {dims.state_shape} = {layout} with L = (k - 1) * dilation = "
                                  f"{dims.state_length} for state_window {window}", f"shape {past.shape}")
    return dims

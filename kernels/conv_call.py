"""The shape rules of a ``com.microsoft::CausalConvWithState`` call, as the WGSL kernel reads them.

``conv_dims`` checks a call's inputs and attributes against the contract of ONNX Runtime 1.31.1 (its
schema, and its CPU and CUDA kernels, which hold the same rules) and returns its ``ConvDims``; a broken
rule raises ``oracles.validation.ValidationError`` naming the input or attribute, what was expected and
what was received. ``ndim`` 2 and 3, valid in the schema but refused by ORT's CPU and CUDA kernels and by
this kernel, raise ``KernelUnsupported`` instead, so a caller can tell "invalid" from "not here". Only
shapes, dtypes and attributes are read, never values: device tensors pass zero-byte stand-ins.

``ConvDims`` has the fields and names of the float64 oracle's call description for ``ndim = 1``, so that
the kernel can validate through the oracle's rules once both live on one branch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from oracles.validation import MAX_STATE_WINDOW, ValidationError

from .device import KernelUnsupported

ACTIVATIONS = ("none", "silu", "swish")
"""The schema's fused activations; ``silu`` and ``swish`` are two names of ``x * sigmoid(x)``."""

CONV_DTYPES = (np.dtype(np.float32), np.dtype(np.float16))
"""The storage types the kernel runs (the schema also allows bfloat16, which WGSL has no type for)."""


@dataclass(frozen=True)
class ConvDims:
    """The sizes, layout and attributes of one valid call (ndim = 1)."""

    batch: int
    channels: int
    """Channels convolved independently: ``input.shape[1]``, or the product of the trailing axes when
    ``channels_last``."""
    seq_len: int
    spatial: tuple[int, ...]
    """Spatial axes before the causal one: none for ndim = 1."""
    channel_shape: tuple[int, ...]
    """The channel axes as the tensors hold them: ``(C,)``, or ``(d_1, ..., d_n)`` when ``channels_last``."""
    kernel: tuple[int, ...]
    """Kernel sizes: ``(k,)`` for ndim = 1."""
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
        """Positions a state holds: ``(k - 1) * dilation``, the span of the taps before the current one."""
        return (self.kernel[-1] - 1) * self.dilation

    @property
    def slot_shape(self) -> tuple[int, ...]:
        """One state: ``(B, C, L)``, or ``(B, L, d_1, ..., d_n)`` when ``channels_last``."""
        if self.channels_last:
            return (self.batch, self.state_length, *self.channel_shape)
        return (self.batch, self.channels, *self.spatial, self.state_length)

    @property
    def state_shape(self) -> tuple[int, ...]:
        """``past_state`` and ``present_state``: one slot, led by a window axis of extent ``W`` when ``W > 0``."""
        return (self.state_window, *self.slot_shape) if self.state_window else self.slot_shape

    @property
    def output_shape(self) -> tuple[int, ...]:
        """The input's shape, which the output has too."""
        if self.channels_last:
            return (self.batch, self.seq_len, *self.channel_shape)
        return (self.batch, self.channels, *self.spatial, self.seq_len)


def ndim_unsupported(ndim: int) -> KernelUnsupported:
    """The refusal of a valid ``ndim`` other than 1."""
    return KernelUnsupported(f"ndim = {ndim}: this kernel (like ONNX Runtime's CPU and CUDA kernels) runs ndim = 1")


def _int_attribute(name: str, value: object, low: int, high: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low \
            or (high is not None and value > high):
        raise ValidationError(name, f"an integer in [{low}, {high}]" if high is not None else f"an integer >= {low}",
                              repr(value))
    return int(value)


def conv_dims(
    input: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None = None,
    past_state: np.ndarray | None = None,
    *,
    ndim: int = 1,
    activation: str = "none",
    dilation: int = 1,
    channels_last: int = 0,
    state_window: int = 0,
) -> ConvDims:
    """The ``ConvDims`` of a call, or ``ValidationError`` for the first rule it breaks (``KernelUnsupported``
    for ``ndim`` 2 or 3)."""
    if activation not in ACTIVATIONS:
        raise ValidationError("activation", f"one of {', '.join(ACTIVATIONS)}", repr(activation))
    ndim = _int_attribute("ndim", ndim, 1, 3)
    dilation = _int_attribute("dilation", dilation, 1, None)
    last = _int_attribute("channels_last", channels_last, 0, 1)
    if last and ndim != 1:
        raise ValidationError("channels_last", f"0 with ndim = {ndim} (channels last requires ndim = 1)", last)
    window = _int_attribute("state_window", state_window, 0, MAX_STATE_WINDOW)
    if ndim != 1:
        raise ndim_unsupported(ndim)
    dtype = np.dtype(input.dtype)
    if dtype not in CONV_DTYPES:
        raise ValidationError("input", "dtype float32 or float16", f"dtype {dtype}")
    for name, array in (("weight", weight), ("bias", bias), ("past_state", past_state)):
        if array is not None and np.dtype(array.dtype) != dtype:
            raise ValidationError(name, f"the dtype of input ({dtype})", f"dtype {np.dtype(array.dtype)}")
    shape = tuple(int(n) for n in input.shape)
    if last:
        if len(shape) < 3:
            raise ValidationError("input", "rank >= 3 (B, T, d_1, ..., d_n) with channels_last = 1",
                                  f"rank {len(shape)} with shape {shape}")
        batch, seq_len, channel_shape = shape[0], shape[1], shape[2:]
    else:
        if len(shape) != 3:
            raise ValidationError("input", "rank 3 (B, C, T) for ndim = 1", f"rank {len(shape)} with shape {shape}")
        batch, seq_len, channel_shape = shape[0], shape[2], shape[1:2]
    channels = math.prod(channel_shape)
    if batch < 1 or channels < 1:
        raise ValidationError("input", "batch >= 1 and at least one channel", f"shape {shape}")
    if seq_len < 1:
        raise ValidationError("input", "sequence length T >= 1", f"shape {shape}")
    if weight.ndim != 3:
        raise ValidationError("weight", "rank 3 (C, 1, k)", f"rank {weight.ndim} with shape {weight.shape}")
    if weight.shape[0] != channels:
        raise ValidationError("weight.shape[0]", f"the number of channels C = {channels}", weight.shape[0])
    if weight.shape[1] != 1:
        raise ValidationError("weight.shape[1]", "1 (a depthwise kernel)", weight.shape[1])
    if weight.shape[2] < 1:
        raise ValidationError("weight", "kernel size >= 1", f"shape {weight.shape}")
    if bias is not None and bias.shape != (channels,):
        raise ValidationError("bias", f"shape ({channels},) = (C,)", f"shape {bias.shape}")
    dims = ConvDims(batch=batch, channels=channels, seq_len=seq_len, spatial=(), channel_shape=tuple(channel_shape),
                    kernel=(int(weight.shape[2]),), ndim=1, dilation=dilation, channels_last=bool(last),
                    activation=activation, state_window=window, dtype=dtype, has_past=past_state is not None,
                    has_bias=bias is not None)
    if past_state is not None and tuple(past_state.shape) != dims.state_shape:
        raise ValidationError("past_state", f"shape {dims.state_shape}", f"shape {tuple(past_state.shape)}")
    return dims

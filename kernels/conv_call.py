"""The shape rules of a ``com.microsoft::CausalConvWithState`` call, as the WGSL kernel reads them.

``conv_dims`` checks a call's inputs and attributes against the contract of ONNX Runtime 1.31.1 (its
schema, and its CPU and CUDA kernels, which hold the same rules) and returns its ``ConvDims``; a broken
rule raises ``oracles.validation.ValidationError`` naming the input, what was expected and what was
received. A rule the contract has but this kernel does not run (``ndim`` 2 or 3, which ORT's CPU and
CUDA kernels refuse too) raises ``KernelUnsupported`` instead, so a caller can tell "invalid" from
"not here". Only shapes and attributes are read, never values: device tensors pass zero-byte stand-ins.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oracles.validation import MAX_STATE_WINDOW, ValidationError

from .device import KernelUnsupported

ACTIVATIONS = ("none", "silu", "swish")
"""The schema's fused activations; ``swish`` is another name for ``silu``, ``x * sigmoid(x)``."""

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
    kernel_size: int
    dilation: int
    state_window: int
    channels_last: bool
    activation: str
    dtype: np.dtype
    has_bias: bool
    has_past: bool
    output_shape: tuple[int, ...]
    """The input's shape, which the output has too."""
    channel_axes: tuple[int, ...]
    """The channel axes of the input: ``(channels,)``, or ``d_1, ..., d_n`` when ``channels_last``."""

    @property
    def state_len(self) -> int:
        """Positions a state holds: ``(kernel_size - 1) * dilation``, the span of the taps before the current one."""
        return (self.kernel_size - 1) * self.dilation

    @property
    def slot_shape(self) -> tuple[int, ...]:
        """One state: ``(B, C, S)``, or ``(B, S, d_1, ..., d_n)`` when ``channels_last``."""
        if self.channels_last:
            return (self.batch, self.state_len, *self.channel_axes)
        return (self.batch, self.channels, self.state_len)

    @property
    def state_shape(self) -> tuple[int, ...]:
        """``past_state`` and ``present_state``: one slot, led by a window axis of extent ``W`` when ``W > 0``."""
        return (self.state_window, *self.slot_shape) if self.state_window else self.slot_shape


def _shape(array: np.ndarray | None) -> tuple[int, ...] | None:
    return None if array is None else tuple(int(n) for n in array.shape)


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
    if ndim not in (1, 2, 3):
        raise ValidationError("ndim", "1, 2 or 3", ndim)
    if activation not in ACTIVATIONS:
        raise ValidationError("activation", f"one of {', '.join(ACTIVATIONS)}", activation)
    if dilation < 1:
        raise ValidationError("dilation", ">= 1", dilation)
    if channels_last not in (0, 1):
        raise ValidationError("channels_last", "0 or 1", channels_last)
    if channels_last and ndim != 1:
        raise ValidationError("channels_last", "0 unless ndim = 1", channels_last)
    if not 0 <= state_window <= MAX_STATE_WINDOW:
        raise ValidationError("state_window", f"in [0, {MAX_STATE_WINDOW}]", state_window)
    if ndim != 1:
        raise KernelUnsupported(f"ndim = {ndim}: this kernel (like ONNX Runtime's CPU and CUDA kernels) runs ndim = 1")
    dtype = np.dtype(input.dtype)
    if dtype not in CONV_DTYPES:
        raise ValidationError("input.dtype", "float32 or float16", dtype)
    for name, array in (("weight", weight), ("bias", bias), ("past_state", past_state)):
        if array is not None and np.dtype(array.dtype) != dtype:
            raise ValidationError(f"{name}.dtype", f"the input's {dtype}", np.dtype(array.dtype))
    shape = _shape(input)
    assert shape is not None
    if channels_last:
        if len(shape) < 3:
            raise ValidationError("input.shape", "(batch, length, d_1, ..., d_n) with n >= 1 (channels_last = 1)",
                                  shape)
        batch, seq_len, axes = shape[0], shape[1], shape[2:]
        channels = int(np.prod(axes))
    else:
        if len(shape) != 3:
            raise ValidationError("input.shape", "(batch, channels, length)", shape)
        batch, channels, seq_len = shape
        axes = (channels,)
    if seq_len < 1:
        raise ValidationError("input length", ">= 1", seq_len)
    weight_shape = _shape(weight)
    if weight_shape is None or len(weight_shape) != 3:
        raise ValidationError("weight.shape", "(channels, 1, kernel_size)", weight_shape)
    if weight_shape[0] != channels or weight_shape[1] != 1 or weight_shape[2] < 1:
        raise ValidationError("weight.shape", f"({channels}, 1, k) with k >= 1", weight_shape)
    if bias is not None and _shape(bias) != (channels,):
        raise ValidationError("bias.shape", f"({channels},)", _shape(bias))
    dims = ConvDims(batch=batch, channels=channels, seq_len=seq_len, kernel_size=weight_shape[2], dilation=dilation,
                    state_window=state_window, channels_last=bool(channels_last), activation=activation, dtype=dtype,
                    has_bias=bias is not None, has_past=past_state is not None, output_shape=shape,
                    channel_axes=tuple(axes))
    if past_state is not None and _shape(past_state) != dims.state_shape:
        raise ValidationError("past_state.shape", f"{dims.state_shape}", _shape(past_state))
    return dims

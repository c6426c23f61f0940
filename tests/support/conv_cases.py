"""Inputs of CausalConvWithState calls for the kernel's tests, and the kernel of each WebGPU implementation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from kernels.causal_conv import CausalConvKernel, get_kernel
from kernels.device import DeviceUnavailable, FeatureMissing
from kernels.options import ConvKernelOptions
from oracles.causal_conv import ConvDims

IMPLEMENTATIONS = ("wgpu", "dawn")
DTYPES = (np.float32, np.float16)


def conv_kernel_or_skip(implementation: str, dtype: type = np.float32, specialise: bool | None = None
                        ) -> CausalConvKernel:
    """The process-wide kernel of an implementation, or a loud skip saying why it cannot run ``dtype``."""
    try:
        kernel = get_kernel(ConvKernelOptions(implementation, specialise=specialise))
    except DeviceUnavailable as err:
        pytest.skip(f"WebGPU implementation {implementation!r} unavailable: {err}")
    if np.dtype(dtype) == np.float16:
        try:
            kernel.device.require("shader-f16", "float16 CausalConvWithState")
        except FeatureMissing as err:
            pytest.skip(str(err))
    return kernel


@dataclass(frozen=True)
class ConvCall:
    """The sizes and attributes of a call; ``inputs`` draws its tensors."""

    batch: int = 1
    channel_axes: tuple[int, ...] = (5,)
    """``(C,)`` channels first; ``d_1, ..., d_n`` when ``channels_last``."""
    seq_len: int = 3
    kernel_size: int = 4
    dilation: int = 1
    state_window: int = 0
    channels_last: bool = False
    activation: str = "none"
    bias: bool = True
    past: bool = True
    dtype: type = np.float32
    attrs: dict[str, Any] = field(init=False, repr=False, compare=False)
    """The op's attributes, as ``causal_conv`` and ``reference`` take them."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "attrs", {"activation": self.activation, "dilation": self.dilation,
                                           "channels_last": int(self.channels_last),
                                           "state_window": self.state_window})

    @property
    def channels(self) -> int:
        return int(np.prod(self.channel_axes))

    @property
    def state_shape(self) -> tuple[int, ...]:
        """The shape of the past state (the oracle's ``ConvDims.state_shape``)."""
        return ConvDims(batch=self.batch, channels=self.channels, seq_len=self.seq_len, spatial=(),
                        channel_shape=self.channel_axes, kernel=(self.kernel_size,), ndim=1, dilation=self.dilation,
                        channels_last=self.channels_last, activation=self.activation, state_window=self.state_window,
                        dtype=np.dtype(self.dtype), has_past=self.past, has_bias=self.bias).state_shape

    def tokens(self, rng: np.random.Generator, seq_len: int | None = None) -> np.ndarray:
        """The input of ``seq_len`` tokens (default: the call's)."""
        t = self.seq_len if seq_len is None else seq_len
        shape = (self.batch, t, *self.channel_axes) if self.channels_last else (self.batch, self.channels, t)
        return rng.standard_normal(shape).astype(self.dtype)

    def inputs(self, rng: np.random.Generator) -> dict[str, Any]:
        """Standard-normal input, weight and bias, and a past state every slot of which is non-zero."""
        arrays = {"input": self.tokens(rng),
                  "weight": (rng.standard_normal((self.channels, 1, self.kernel_size)) / np.sqrt(self.kernel_size))}
        if self.bias:
            arrays["bias"] = 0.5 * rng.standard_normal(self.channels)
        if self.past:
            arrays["past_state"] = rng.uniform(0.5, 2.0, self.state_shape) * rng.choice([-1.0, 1.0], self.state_shape)
        return {name: x.astype(self.dtype) for name, x in arrays.items()}


def poisoned(past: np.ndarray) -> np.ndarray:
    """A windowed past state with every slot but W-1 set to NaN, +Inf and -Inf in turn."""
    bad = past.copy()
    bad[:-1] = np.resize(np.array([np.nan, np.inf, -np.inf], dtype=past.dtype), bad[:-1].shape)
    return bad


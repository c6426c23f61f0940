"""Hypothesis strategies for valid CausalConvWithState calls (``docs/spec.md §7``), named for the domain.

A case is drawn in three layers, as LinearAttention's are (``fuzz.ops.linear_attention.strategies``):

1. ``conv_shapes``: window, sequence length, ``ndim``, channels first or last (with one or two channel
   axes), the non-causal spatial sizes, kernel sizes, dilation and batch, under a ``ConvLimits`` cap;
2. ``conv_layouts``: activation, dtype, bias, past state, and whether attributes at their default value
   are written or left out;
3. numerics: a value regime and a seed (``fuzz.ops.linear_attention.strategies.numerics``), realised in one go.

Values whose results would overflow the dtype are scaled down by a power of two before the case is
returned, so a valid case never demands an out-of-range answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np
from hypothesis import strategies as st

from fuzz.model.case import Case
from fuzz.model.ops import CAUSAL_CONV, Op
from fuzz.ops.causal_conv.tolerance import exact_conv_answer
from fuzz.ops.linear_attention.strategies import (
    STRATEGY_CACHE,
    Numerics,
    one_of_values,
    seq_lens,
    shift_to_fit,
    valid_cases,
    values,
)
from oracles.causal_conv import ACTIVATIONS, MAX_NDIM
from oracles.validation import MAX_STATE_WINDOW

KERNEL_SIZES = (1, 2, 3, 4, 5, 7)
"""Causal kernel sizes: ``k = 1`` (an empty state) to the sizes models use (4) and beyond."""

NDIM_DRAWS = (1, 1, 1, 2, 3)
"""``ndim`` as drawn (repeats as weights): ONNX Runtime's EPs run ``ndim = 1`` only, so 2 and 3, which only
the oracle checks (against its own prefix formulation), get a fifth of the cases each."""


@dataclass(frozen=True)
class ConvLimits:
    """Size caps and feature choices for generated CausalConvWithState cases."""

    op: ClassVar[Op] = CAUSAL_CONV
    max_batch: int = 3
    max_seq_len: int = 10
    min_seq_len: int = 1
    max_channels: int = 8
    kernel_sizes: tuple[int, ...] = KERNEL_SIZES
    """The causal kernel sizes drawn."""
    max_dilation: int = 3
    max_window: int = MAX_STATE_WINDOW
    max_next_tokens: int = 3
    """Tokens of the second call in select-and-resume cases."""
    ndims: tuple[int, ...] = (1, 2, 3)
    channels_last: tuple[bool, ...] = (False, True)
    activations: tuple[str, ...] = ACTIVATIONS
    dtypes: tuple[str, ...] = ("float32", "float16")
    biases: tuple[bool, ...] = (False, True)
    max_spatial: int = 3
    """Cap on each spatial size before the causal axis (``ndim > 1``)."""
    max_elements: int = 1 << 12
    """Cap on the elements of the virtual sequence, ``B * C * S * (L + T)``."""

    def __post_init__(self) -> None:
        for name in ("max_batch", "max_seq_len", "max_channels", "max_dilation", "max_next_tokens", "max_spatial"):
            if getattr(self, name) < 1:
                raise ValueError(f"ConvLimits.{name} must be >= 1, got {getattr(self, name)}")
        if not 1 <= self.min_seq_len <= self.max_seq_len:
            raise ValueError(f"ConvLimits.min_seq_len must be in [1, {self.max_seq_len}], got {self.min_seq_len}")
        if not 0 <= self.max_window <= MAX_STATE_WINDOW:
            raise ValueError(f"ConvLimits.max_window must be in [0, {MAX_STATE_WINDOW}], got {self.max_window}")
        for name, universe in (("ndims", tuple(range(1, MAX_NDIM + 1))), ("channels_last", (False, True)),
                               ("activations", ACTIVATIONS), ("dtypes", ("float32", "float16")),
                               ("biases", (False, True))):
            chosen = getattr(self, name)
            if not chosen or set(chosen) - set(universe):
                raise ValueError(f"ConvLimits.{name} must be a non-empty subset of {universe}, got {chosen}")
        if not self.kernel_sizes or min(self.kernel_sizes) < 1:
            raise ValueError(f"ConvLimits.kernel_sizes must be sizes >= 1, got {self.kernel_sizes}")

    @classmethod
    def ci(cls) -> ConvLimits:
        """Small sizes for CI: every axis reached (T = W = 8, every ndim, both layouts)."""
        return cls(max_batch=2, max_seq_len=9, max_channels=4, max_dilation=2, max_next_tokens=2, max_spatial=2,
                   max_elements=512)

    @classmethod
    def default(cls) -> ConvLimits:
        """Interactive fuzzing: moderate sizes."""
        return cls()

    @classmethod
    def campaign(cls) -> ConvLimits:
        """The fixed campaign slice: as ``ci``, with the kernel sizes models use."""
        return cls(max_batch=2, max_seq_len=9, max_channels=6, kernel_sizes=(1, 2, 3, 4), max_dilation=2,
                   max_next_tokens=2, max_spatial=2, max_elements=1024)

    @classmethod
    def big(cls) -> ConvLimits:
        """Campaign sizes: many channels, long calls, wide kernels."""
        return cls(max_batch=4, max_seq_len=64, max_channels=256, max_dilation=4, max_next_tokens=4,
                   max_spatial=4, max_elements=1 << 18)

    def describe(self) -> str:
        """One line for logs and the report."""
        layouts = "/".join("last" if c else "first" for c in self.channels_last)
        return (f"CausalConvWithState: ndim {','.join(map(str, self.ndims))}, channels {layouts}, k in "
                f"{list(self.kernel_sizes)}, dilation<={self.max_dilation}, C<={self.max_channels}, T "
                f"{self.min_seq_len}-{self.max_seq_len}, B<={self.max_batch}, {','.join(self.activations)}, "
                f"{','.join(self.dtypes)}")


@dataclass(frozen=True)
class ConvShape:
    """The sizes of one call, named as in ``oracles.causal_conv.ConvDims``."""

    batch: int
    seq_len: int
    state_window: int
    ndim: int
    channels_last: bool
    channel_shape: tuple[int, ...]
    spatial: tuple[int, ...]
    kernel: tuple[int, ...]
    dilation: int

    @property
    def channels(self) -> int:
        return math.prod(self.channel_shape)

    @property
    def state_length(self) -> int:
        return (self.kernel[-1] - 1) * self.dilation

    @property
    def entry_elements(self) -> int:
        """Elements of one batch entry: its input and its state slots."""
        return self.channels * math.prod(self.spatial) * (self.seq_len + max(1, self.state_window) * self.state_length)


@dataclass(frozen=True)
class ConvLayout:
    """Everything about a call that is not a size or a value."""

    activation: str
    dtype: str
    has_bias: bool
    has_past: bool
    write_defaults: bool
    """Attributes at their default value written into the node (else left out: absent means the default)."""


# ---- layer 1: shapes --------------------------------------------------------------------------

@lru_cache(maxsize=STRATEGY_CACHE)
def conv_windows(limits: ConvLimits, min_window: int = 0) -> st.SearchStrategy[int]:
    """``state_window`` in ``min_window..limits.max_window``."""
    if min_window > limits.max_window:
        raise ValueError(f"conv_windows: min_window {min_window} exceeds ConvLimits.max_window {limits.max_window}")
    return st.integers(min_window, limits.max_window)


@lru_cache(maxsize=STRATEGY_CACHE)
@st.composite
def conv_shapes(draw: st.DrawFn, limits: ConvLimits, *, state_window: st.SearchStrategy[int] | None = None,
                seq_len: st.SearchStrategy[int] | None = None) -> ConvShape:
    """Sizes under ``limits``; ``state_window``/``seq_len`` strategies override the defaults (``seq_len``
    defaults to ``T >= 1`` with the window's edges ``T = W``, ``T = W - 1`` boosted)."""
    w = draw(state_window if state_window is not None else conv_windows(limits))
    t = draw(seq_len if seq_len is not None else seq_lens(limits, w))
    ndim = draw(one_of_values(tuple(n for n in NDIM_DRAWS if n in limits.ndims)))
    last = ndim == 1 and draw(one_of_values(limits.channels_last))
    spatial = tuple(draw(st.integers(1, limits.max_spatial)) for _ in range(ndim - 1))
    kernel = (*(draw(one_of_values((1, 2, 3))) for _ in range(ndim - 1)), draw(one_of_values(limits.kernel_sizes)))
    dilation = draw(st.integers(1, limits.max_dilation))
    room = max(1, limits.max_elements // (math.prod(spatial) * (t + (kernel[-1] - 1) * dilation)))
    max_channels = max(1, min(limits.max_channels, room))
    if last:
        axes = draw(st.integers(1, 2))
        first = draw(st.integers(1, max_channels))
        channel_shape = (first,) if axes == 1 else (first, draw(st.integers(1, max(1, max_channels // first))))
    else:
        channel_shape = (draw(st.integers(1, max_channels)),)
    batch = draw(st.integers(1, max(1, min(limits.max_batch, room // math.prod(channel_shape)))))
    return ConvShape(batch=batch, seq_len=t, state_window=w, ndim=ndim, channels_last=last,
                     channel_shape=channel_shape, spatial=spatial, kernel=kernel, dilation=dilation)


# ---- layer 2: layouts -------------------------------------------------------------------------

@lru_cache(maxsize=STRATEGY_CACHE)
@st.composite
def conv_layouts(draw: st.DrawFn, limits: ConvLimits, *, has_past: bool | None = None) -> ConvLayout:
    """Activation, dtype, bias, past state (``has_past`` forces it present or absent), written defaults."""
    return ConvLayout(
        activation=draw(one_of_values(limits.activations)), dtype=draw(one_of_values(limits.dtypes)),
        has_bias=draw(one_of_values(limits.biases)),
        has_past=draw(st.booleans()) if has_past is None else has_past, write_defaults=draw(st.booleans()),
    )


# ---- realising a case -------------------------------------------------------------------------

def _attributes(shape: ConvShape, layout: ConvLayout) -> dict[str, Any]:
    """The node's attributes: those off their default always, the others only when ``write_defaults``."""
    wanted = {"activation": layout.activation, "ndim": shape.ndim, "dilation": shape.dilation,
              "channels_last": int(shape.channels_last), "state_window": shape.state_window}
    defaults = CAUSAL_CONV.attribute_defaults
    return {k: v for k, v in wanted.items() if layout.write_defaults or v != defaults[k]}


def _overflow_shift(arrays: dict[str, np.ndarray], attrs: dict[str, Any], dtype: np.dtype) -> int:
    """Power of two by which ``input``, ``past_state`` and ``bias`` must shrink so every output fits the dtype.

    The sum before the activation is linear in them jointly, and ``|silu(z)| <= |z|``, so dividing all
    three by ``2^s`` brings every output below the limit the same way."""
    return shift_to_fit(exact_conv_answer(arrays, attrs).peak, dtype)


def build_conv_case(shape: ConvShape, layout: ConvLayout, num: Numerics, *, aliased: bool = False,
                    notes: dict[str, Any] | None = None) -> Case:
    """Realise one valid CausalConvWithState case from its three layers (deterministic in ``num.seed``)."""
    rng = np.random.default_rng(num.seed)
    dtype = np.dtype(layout.dtype)
    b, c, t, length = shape.batch, shape.channels, shape.seq_len, shape.state_length
    if shape.channels_last:
        activation_shape, slot = (b, t, *shape.channel_shape), (b, length, *shape.channel_shape)
    else:
        activation_shape, slot = (b, c, *shape.spatial, t), (b, c, *shape.spatial, length)
    arrays = {"input": values(rng, activation_shape, num.magnitude, dtype),
              "weight": values(rng, (c, 1, *shape.kernel), num.magnitude, dtype)}
    if layout.has_bias:
        arrays["bias"] = values(rng, (c,), num.magnitude, dtype)
    if layout.has_past:
        arrays["past_state"] = values(rng, (shape.state_window, *slot) if shape.state_window else slot,
                                      num.magnitude, dtype)
    arrays = {name: x.astype(dtype) for name, x in arrays.items()}
    attrs = _attributes(shape, layout)
    labels = {"magnitude": num.magnitude, "seed": num.seed, **(notes or {})}
    shift = _overflow_shift(arrays, attrs, dtype)
    if shift:
        for name in ("input", "past_state", "bias"):
            if name in arrays:
                arrays[name] = (arrays[name] / dtype.type(2.0**shift)).astype(dtype)
        labels["rescaled"] = f"input, past_state and bias / 2^{shift}"
    return Case(inputs=arrays, attrs=attrs, aliased=aliased, notes=labels, op=CAUSAL_CONV)


conv_cases = valid_cases(conv_shapes, conv_windows, conv_layouts, build_conv_case)
"""A valid CausalConvWithState case reaching every axis of the contract under ``limits`` (``valid_cases``'s
keywords: ``min_window``, ``has_past``, ``aliased``, ``state_window``, ``seq_len``, ``notes``)."""

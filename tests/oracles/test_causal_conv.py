"""The CausalConvWithState oracle: worked examples, every input rule with its one error, the layouts
agree with each other, and the window equals its second formulation (each slot from a W = 0 prefix run)."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest

from oracles import ValidationError
from oracles.causal_conv import causal_conv_with_state, validate, window_by_prefix

f32 = np.float32


def test_worked_example_by_hand() -> None:
    """k = 2, dilation 1, one channel: out[t] = w0 * virtual[t] + w1 * virtual[t + 1] + bias, state = last position."""
    x = np.array([[[1.0, 2.0, 3.0]]], f32)
    w = np.array([[[10.0, 1.0]]], f32)
    out, state = causal_conv_with_state(x, w, np.array([0.5], f32), np.array([[[4.0]]], f32))
    assert out.tolist() == [[[10 * 4 + 1 * 1 + 0.5, 10 * 1 + 1 * 2 + 0.5, 10 * 2 + 1 * 3 + 0.5]]]
    assert state.tolist() == [[[3.0]]]


def test_worked_example_dilated_window() -> None:
    """k = 2, dilation 2: the state holds 2 positions and tap 0 reads two positions back; W = 3 keeps
    the states after the last three positions, right-aligned."""
    x = np.array([[[1.0, 2.0, 3.0, 4.0]]], f32)
    w = np.array([[[1.0, 100.0]]], f32)
    past = np.zeros((3, 1, 1, 2), f32)
    past[2] = [[[5.0, 6.0]]]  # only slot W-1 is read: virtual sequence 5 6 1 2 3 4
    out, state = causal_conv_with_state(x, w, None, past, dilation=2, state_window=3)
    assert out.tolist() == [[[5 + 100 * 1, 6 + 100 * 2, 1 + 100 * 3, 2 + 100 * 4]]]
    assert state[:, 0, 0].tolist() == [[1.0, 2.0], [2.0, 3.0], [3.0, 4.0]]


def test_worked_example_silu_and_leading_zero_slots() -> None:
    """silu(z) = z * sigmoid(z); with T < W the slots before the call's first position are exact zeros."""
    x = np.array([[[2.0]]], f32)
    w = np.array([[[1.0, 1.0]]], f32)
    past = np.full((3, 1, 1, 1), 7.0, f32)
    out, state = causal_conv_with_state(x, w, None, past, activation="silu", state_window=3)
    z = 7.0 + 2.0
    assert out[0, 0, 0] == pytest.approx(z / (1 + np.exp(-z)), rel=1e-15)
    assert state[:, 0, 0, 0].tolist() == [0.0, 0.0, 2.0]


def test_kernel_size_one_has_an_empty_state() -> None:
    x = np.arange(6, dtype=f32).reshape(1, 2, 3)
    out, state = causal_conv_with_state(x, np.full((2, 1, 1), 2.0, f32), state_window=2)
    assert np.array_equal(out, 2 * x) and state.shape == (2, 1, 2, 0)


def _random_call(rng: np.random.Generator, *, ndim: int = 1, channels_last: int = 0, window: int = 0,
                 dtype: type = f32) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    batch, seq_len, dilation = int(rng.integers(1, 4)), int(rng.integers(1, 10)), int(rng.integers(1, 4))
    kernel = tuple(int(k) for k in rng.integers(1, 5, ndim))
    spatial = tuple(int(s) for s in rng.integers(1, 4, ndim - 1))
    channel_shape = tuple(int(d) for d in rng.integers(1, 4, int(rng.integers(1, 3)))) if channels_last else \
        (int(rng.integers(1, 5)),)
    channels = int(np.prod(channel_shape))
    length = (kernel[-1] - 1) * dilation
    shape = (batch, seq_len, *channel_shape) if channels_last else (batch, channels, *spatial, seq_len)
    slot = (batch, length, *channel_shape) if channels_last else (batch, channels, *spatial, length)
    inputs = {"input": rng.standard_normal(shape).astype(dtype),
              "weight": rng.standard_normal((channels, 1, *kernel)).astype(dtype)}
    if rng.random() < 0.5:
        inputs["bias"] = rng.standard_normal(channels).astype(dtype)
    if rng.random() < 0.7:
        inputs["past_state"] = rng.standard_normal((window, *slot) if window else slot).astype(dtype)
    attrs = {"activation": str(rng.choice(["none", "silu", "swish"])), "ndim": ndim, "dilation": dilation,
             "channels_last": channels_last, "state_window": window}
    return inputs, attrs


LAYOUTS = [(1, 0), (1, 1), (2, 0), (3, 0)]


@pytest.mark.parametrize(("ndim", "channels_last"), LAYOUTS)
def test_window_equals_prefix_formulation_and_its_last_slot_the_unwindowed_state(ndim: int, channels_last: int) -> None:
    """Slot j = the state of a W = 0 call over the first T - W + j + 1 positions (``oracles.causal_conv.prefix``),
    bit for bit; the output and slot W-1 do not depend on W."""
    rng = np.random.default_rng(1000 * ndim + channels_last)
    for _ in range(40):
        window = int(rng.integers(1, 9))
        inputs, attrs = _random_call(rng, ndim=ndim, channels_last=channels_last, window=window)
        output, present = causal_conv_with_state(**inputs, **attrs)
        assert np.array_equal(present, window_by_prefix(causal_conv_with_state, dict(inputs), attrs))
        past = inputs.get("past_state")
        plain = {**inputs, **({"past_state": past[-1]} if past is not None else {})}
        output0, state0 = causal_conv_with_state(**plain, **{**attrs, "state_window": 0})
        assert np.array_equal(output, output0) and np.array_equal(present[-1], state0)


def _channels_first(x: np.ndarray, channel_axes: int) -> np.ndarray:
    """``(..., positions, d_1, ..., d_n)`` as ``(..., C, positions)``."""
    return np.swapaxes(x.reshape(*x.shape[:-channel_axes], int(np.prod(x.shape[-channel_axes:]))), -1, -2)


def test_channels_last_computes_what_channels_first_computes() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        inputs, attrs = _random_call(rng, channels_last=1, window=int(rng.integers(0, 4)))
        axes = inputs["input"].ndim - 2
        first = {name: _channels_first(x, axes) if name in ("input", "past_state") else x for name, x in inputs.items()}
        out_last, state_last = causal_conv_with_state(**inputs, **attrs)
        out_first, state_first = causal_conv_with_state(**first, **{**attrs, "channels_last": 0})
        assert np.array_equal(_channels_first(out_last, axes), out_first)
        assert np.array_equal(_channels_first(state_last, axes), state_first)


def test_ndim_two_with_unit_leading_kernel_is_one_causal_row_per_spatial_index() -> None:
    """With k_1 = 1 the non-causal axis mixes nothing: each row h is the ndim = 1 op on that row."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 4, 6)).astype(f32)
    w = rng.standard_normal((3, 1, 1, 3)).astype(f32)
    past = rng.standard_normal((2, 3, 4, 4)).astype(f32)
    out, state = causal_conv_with_state(x, w, None, past, ndim=2, dilation=2, activation="silu")
    for h in range(4):
        row_out, row_state = causal_conv_with_state(x[:, :, h], w[..., 0, :], None, past[:, :, h], dilation=2,
                                                    activation="silu")
        assert np.array_equal(out[:, :, h], row_out) and np.array_equal(state[:, :, h], row_state)


def test_ndim_two_non_causal_axis_is_zero_padded_and_centred() -> None:
    """A 3-tap kernel on the non-causal axis reads the row above, itself and the row below (zeros outside)."""
    x = np.arange(1.0, 4.0, dtype=f32).reshape(1, 1, 3, 1)  # rows 1, 2, 3; one position
    w = np.array([1.0, 10.0, 100.0], f32).reshape(1, 1, 3, 1)
    out, _ = causal_conv_with_state(x, w, ndim=2)
    assert out[0, 0, :, 0].tolist() == [0 * 1 + 1 * 10 + 2 * 100, 1 + 2 * 10 + 3 * 100, 2 + 3 * 10 + 0 * 100]


def good(**overrides: Any) -> dict[str, Any]:
    """A valid call (B=2, C=3, T=4, k=3, dilation 2, W = 2, bias and past state), then ``overrides``."""
    call: dict[str, Any] = {
        "input": np.ones((2, 3, 4), f32), "weight": np.ones((3, 1, 3), f32), "bias": np.ones(3, f32),
        "past_state": np.zeros((2, 2, 3, 4), f32), "dilation": 2, "state_window": 2,
    }
    call.update(overrides)
    return {k: v for k, v in call.items() if v is not None}


BROKEN = {
    "activation": (good(activation="gelu"), "activation: expected one of none, silu, swish"),
    "activation type": (good(activation=1), "activation: expected one of"),
    "ndim zero": (good(ndim=0), "ndim: expected in [1, 3]"),
    "ndim four": (good(ndim=4), "ndim: expected in [1, 3]"),
    "ndim not an integer": (good(ndim=1.0), "ndim: expected an integer"),
    "dilation": (good(dilation=0), "dilation: expected >= 1"),
    "channels_last value": (good(channels_last=2), "channels_last: expected in [0, 1]"),
    "channels_last with ndim 2": (good(channels_last=1, ndim=2), "channels_last: expected 0 with ndim = 2"),
    "state_window range": (good(state_window=9), "state_window: expected in [0, 8]"),
    "state_window negative": (good(state_window=-1), "state_window: expected in [0, 8]"),
    "input not an array": (good(input=[[[1.0]]]), "input: expected a numpy.ndarray"),
    "input dtype": (good(input=np.ones((2, 3, 4), np.int32)), "input: expected dtype float32 or float16"),
    "input rank": (good(input=np.ones((2, 3, 4, 1), f32)), "input: expected rank 3"),
    "input rank channels last": (good(input=np.ones((2, 4), f32), channels_last=1), "input: expected rank >= 3"),
    "weight rank": (good(weight=np.ones((3, 3), f32)), "weight: expected rank 3"),
    "weight dtype": (good(weight=np.ones((3, 1, 3), np.float16)), "weight: expected the dtype of input"),
    "bias dtype": (good(bias=np.ones(3, np.float16)), "bias: expected the dtype of input"),
    "past dtype": (good(past_state=np.zeros((2, 2, 3, 4), np.float16)), "past_state: expected the dtype of input"),
    "batch zero": (good(input=np.ones((0, 3, 4), f32), past_state=None), "input: expected batch >= 1"),
    "no channels": (good(input=np.ones((2, 0, 4), f32), weight=np.ones((0, 1, 3), f32), bias=None, past_state=None),
                    "input: expected at least one channel"),
    "spatial zero": (good(input=np.ones((2, 3, 0, 4), f32), weight=np.ones((3, 1, 1, 3), f32), ndim=2,
                          past_state=None), "input: expected spatial sizes >= 1"),
    "T = 0": (good(input=np.ones((2, 3, 0), f32)), "T = 0 is outside the contract"),
    "weight channels": (good(weight=np.ones((4, 1, 3), f32)), "weight.shape[0]: expected the number of channels C = 3"),
    "weight group": (good(weight=np.ones((3, 2, 3), f32)), "weight.shape[1]: expected 1"),
    "kernel size zero": (good(weight=np.ones((3, 1, 0), f32)), "weight: expected kernel sizes >= 1"),
    "bias rank": (good(bias=np.ones((3, 1), f32)), "bias: expected rank 1"),
    "bias size": (good(bias=np.ones(4, f32)), "bias: expected shape (3,)"),
    "past unwindowed for W > 0": (good(past_state=np.zeros((2, 3, 4), f32)), "past_state: expected shape (2, 2, 3, 4)"),
    "past windowed for W = 0": (good(state_window=0), "past_state: expected shape (2, 3, 4)"),
    "past length ignores dilation": (good(past_state=np.zeros((2, 2, 3, 2), f32)), "L = (k - 1) * dilation = 4"),
    "past channels last layout": (good(input=np.ones((2, 4, 3), f32), channels_last=1), "(W, B, L, d_1, ..., d_n)"),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_each_rule_has_one_clear_error(name: str) -> None:
    call, message = BROKEN[name]
    with pytest.raises(ValidationError) as caught:
        causal_conv_with_state(**call)
    assert message in str(caught.value), str(caught.value)


def test_valid_call_and_the_error_travels_as_data() -> None:
    out, state = causal_conv_with_state(**good())
    assert out.shape == (2, 3, 4) and state.shape == (2, 2, 3, 4)
    with pytest.raises(ValidationError) as caught:
        validate(**good(dilation=0))
    err = pickle.loads(pickle.dumps(caught.value))
    assert (err.input, err.received) == ("dilation", 0)


def test_empty_sequence_allowed_only_when_asked() -> None:
    call = good(input=np.ones((2, 3, 0), f32))
    assert validate(**call, allow_empty_sequence=True).seq_len == 0

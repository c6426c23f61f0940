"""The CausalConvWithState kernel against the project's float64 oracle and against itself, on both WebGPU
implementations.

The reference (``support.conv_reference``) is the oracle (``oracles.causal_conv``), which is checked against
ONNX's own reference and its backend node cases in ``tests/oracles``. Outputs are held to the suite's
tolerance model; states are compared bit for bit (a state is made of input values, nothing is computed for
it). The sweep covers every W in 0..8 with every T from 1 to W+1, fp32 and fp16, both layouts (one and two
channel axes), kernel sizes 1-5, dilation 1-3, every activation, with and without bias and past state, both
state bindings; it runs on the generic pipeline of each dtype (one compilation per implementation and dtype).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from support.conv_cases import DTYPES, IMPLEMENTATIONS, ConvCall, conv_kernel_or_skip, poisoned
from support.conv_reference import ConvReference, reference
from test_kernel_parity import assert_bitwise

from fuzz.engine.tolerance import Budget
from kernels.causal_conv import CausalConvKernel, causal_conv
from kernels.device import KernelUnsupported
from kernels.options import ConvKernelOptions
from oracles.validation import ValidationError

ALIGNED = ConvCall(batch=1, channel_axes=(64,), kernel_size=4, seq_len=4, state_window=4)
"""A call whose slot (1 x 64 x 3 fp32 values, 768 bytes) starts at multiples of 256 bytes: its seed slot is
bound on its own and select-and-resume rebinds; ``replace(ALIGNED, channel_axes=(5,))`` is one whose slots
are not (the seed is read at an offset, and the resume copies)."""


def sweep_call(window: int, dtype: type) -> ConvCall:
    """The call of one (W, dtype) sweep test; see the module docstring for the coverage."""
    bit = int(dtype == np.float16)
    channels_last = (window + bit) % 2 == 1
    axes = ((3,), (2, 3), (5,), (4,), (1,), (2, 2), (7,), (3, 1), (6,))[window]
    return ConvCall(
        batch=1 + (window + bit) % 3,
        channel_axes=axes if channels_last else (int(np.prod(axes)),),
        kernel_size=(4, 1, 2, 3, 4, 5, 4, 2, 3)[window],
        dilation=(1, 1, 2, 1, 3, 1, 2, 1, 1)[(window + bit) % 9],
        state_window=window,
        channels_last=channels_last,
        activation=("none", "silu", "swish")[(window + bit) % 3],
        bias=(window // 2 + bit) % 2 == 0,
        past=window % 3 != 2,
        dtype=dtype,
    )


@pytest.mark.parametrize("window", range(9))
@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp16"])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_every_window_and_length_agrees_with_the_reference(implementation: str, dtype: type, window: int) -> None:
    """T = 1 .. W+1 (1 .. 2 at W = 0): every output within the tolerance model, every slot (the leading zero
    slots too) with the reference's bits, on separate and on aliased state buffers in turn."""
    kernel = conv_kernel_or_skip(implementation, dtype)
    rng = np.random.default_rng(100 * window + 10 * int(dtype == np.float16))
    base = sweep_call(window, dtype)
    for seq_len in range(1, max(window, 1) + 2):
        call = replace(base, seq_len=seq_len)
        inputs = call.inputs(rng)
        aliased = call.past and seq_len % 2 == 0
        output, state = causal_conv(**inputs, **call.attrs, aliased=aliased, options=ConvKernelOptions(implementation))
        reference(**inputs, **call.attrs).assert_matches(output, state, f"{call} aliased={aliased}")
    assert kernel.compilations <= len(DTYPES) or kernel.specialise


@pytest.mark.parametrize("aligned", [True, False], ids=["slot-bound", "slot-offset"])
@pytest.mark.parametrize("aliased", [False, True], ids=["separate", "aliased"])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_only_slot_w_minus_1_of_the_past_state_is_read(implementation: str, aliased: bool, aligned: bool) -> None:
    """NaN, +Inf and -Inf in every slot but W-1 change no bit of the results, whether the seed slot is bound on
    its own or read at its offset in the whole past state."""
    conv_kernel_or_skip(implementation)
    call = ALIGNED if aligned else replace(ALIGNED, channel_axes=(5,))
    for seq_len in (1, 2, 5):  # fewer tokens than the state holds, and more
        case = replace(call, seq_len=seq_len)
        inputs = case.inputs(np.random.default_rng(seq_len))
        clean = causal_conv(**inputs, **case.attrs, aliased=aliased, options=ConvKernelOptions(implementation))
        dirty = causal_conv(**{**inputs, "past_state": poisoned(inputs["past_state"])}, **case.attrs,
                            aliased=aliased, options=ConvKernelOptions(implementation))
        reference(**inputs, **case.attrs).assert_matches(*clean, f"{case}")
        for name, got, expected in zip(("output", "present_state"), dirty, clean, strict=True):
            assert_bitwise(got, expected, f"{name} of {case} with poisoned slots, aliased={aliased}")


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_leading_slots_are_exact_zeros_whatever_the_buffer_held(implementation: str) -> None:
    """A call of T < W on a present state full of NaN leaves +0.0 in its leading W - T slots; a dispatch that
    knows they are there skips storing them and leaves them; after an upload it stores them again."""
    kernel = conv_kernel_or_skip(implementation)
    device = kernel.device
    call = replace(ALIGNED, seq_len=1, channel_axes=(5,))
    inputs = call.inputs(np.random.default_rng(7))
    expected = reference(**inputs, **call.attrs)
    tensors: dict[str, Any] = {name: device.upload(x, name) for name, x in inputs.items()}
    garbage: np.ndarray = np.full(call.state_shape, np.nan, dtype=call.dtype)
    present = device.upload(garbage, "present_state")
    bound = kernel.prepare(**tensors, **call.attrs, present_state=present)
    try:
        leading = call.state_window - call.seq_len
        for step, skips in (("first dispatch", 0), ("dispatch on known zeros", 1)):
            bound.dispatch()
            output, state = device.download_all([bound.output, present])
            expected.assert_matches(output, state, step)
            assert not np.signbit(state[:leading]).any(), f"{step}: a leading slot holds -0.0"
            assert bound.zero_skips == skips, f"{step}: {bound.zero_skips} dispatches skipped the zeros"
        device.upload(garbage, "present_state", into=present)
        bound.dispatch()
        output, state = device.download_all([bound.output, present])
        expected.assert_matches(output, state, "dispatch after an upload")
        assert bound.zero_skips == 1, "an upload leaves no zeros known"
    finally:
        bound.release()
        for tensor in [*tensors.values(), present, bound.output]:
            tensor.release()


@pytest.mark.parametrize("dtype", DTYPES, ids=["fp32", "fp16"])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_aliased_binding_gives_the_bits_of_separate_buffers(implementation: str, dtype: type) -> None:
    """One read-write state buffer gives the bits of separate past and present buffers: with fewer tokens than
    the state holds (the state shifts within itself) and more, W = 0 and W > 0, both layouts."""
    conv_kernel_or_skip(implementation, dtype)
    for window, seq_len, channels_last in ((0, 1, False), (0, 7, True), (1, 2, False), (3, 1, True), (3, 2, False),
                                          (5, 8, True)):
        call = ConvCall(batch=2, channel_axes=(2, 3) if channels_last else (6,), kernel_size=4, dilation=2,
                        seq_len=seq_len, state_window=window, channels_last=channels_last, activation="silu",
                        dtype=dtype)
        inputs = call.inputs(np.random.default_rng(window * 10 + seq_len))
        separate = causal_conv(**inputs, **call.attrs, options=ConvKernelOptions(implementation))
        aliased = causal_conv(**inputs, **call.attrs, aliased=True, options=ConvKernelOptions(implementation))
        for name, got, expected in zip(("output", "present_state"), aliased, separate, strict=True):
            assert_bitwise(got, expected, f"{name} of {call}, aliased against separate")


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_results_are_reproducible_bit_for_bit(implementation: str) -> None:
    """The same call gives the same bits on fresh buffers, on reused ones and on buffers full of garbage."""
    kernel = conv_kernel_or_skip(implementation)
    device = kernel.device
    call = ConvCall(batch=2, channel_axes=(9,), kernel_size=3, seq_len=2, state_window=5, activation="silu")
    inputs = call.inputs(np.random.default_rng(3))
    first = causal_conv(**inputs, **call.attrs, options=ConvKernelOptions(implementation))
    runs: list[tuple[np.ndarray, ...]] = [causal_conv(**inputs, **call.attrs, options=ConvKernelOptions(implementation))
                                          for _ in range(2)]
    tensors: dict[str, Any] = {name: device.upload(x, name) for name, x in inputs.items()}
    present = device.upload(np.full(call.state_shape, np.inf, dtype=call.dtype), "present_state")
    output = device.upload(np.full(inputs["input"].shape, np.nan, dtype=call.dtype), "output")
    bound = kernel.prepare(**tensors, **call.attrs, output=output, present_state=present)
    try:
        for _ in range(3):
            bound.dispatch()
            runs.append(tuple(device.download_all([output, present])))
    finally:
        bound.release()
        for tensor in [*tensors.values(), present, output]:
            tensor.release()
    for index, run in enumerate(runs):
        for name, got, expected in zip(("output", "present_state"), run, first, strict=True):
            assert_bitwise(got, expected, f"{name} of run {index + 1}")


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_fp16_outputs_are_rounded_once(implementation: str) -> None:
    """Where float32 arithmetic cannot move the exact answer across an fp16 rounding boundary, the fp16 output is
    the exact answer rounded once to fp16 (an intermediate rounded to fp16 would move it)."""
    conv_kernel_or_skip(implementation, np.float16)
    call = ConvCall(batch=2, channel_axes=(32,), kernel_size=5, seq_len=8, state_window=2, activation="silu",
                    dtype=np.float16)
    inputs = call.inputs(np.random.default_rng(16))
    output, _ = causal_conv(**inputs, **call.attrs, options=ConvKernelOptions(implementation))
    exact = reference(**inputs, **call.attrs)
    reach = Budget((np.dtype(np.float32),), exact.depth).tolerance(exact.output, exact.block)
    decided = (exact.output - reach).astype(np.float16) == (exact.output + reach).astype(np.float16)
    assert decided.mean() > 0.75, "too few outputs are clear of an fp16 rounding boundary to test anything"
    rounded = exact.output.astype(np.float16)
    wrong = decided & (output.view(np.uint16) != rounded.view(np.uint16))
    assert not wrong.any(), f"{int(wrong.sum())} fp16 outputs are not the exact answer rounded once"


def chain_reference(call: ConvCall, inputs: dict[str, np.ndarray], seed: np.ndarray, tokens: np.ndarray
                    ) -> ConvReference:
    """The reference of a call of ``tokens`` resuming from ``seed`` (slot W-1 of its past state)."""
    past: np.ndarray = np.zeros(call.state_shape, dtype=call.dtype)
    past[-1] = seed
    return reference(tokens, inputs["weight"], inputs.get("bias"), past, **call.attrs)


CHAIN = (3, 0, 4, 1, 2, 0)
"""Tokens accepted after each call of the select-and-resume chain (of T = 4)."""


@pytest.mark.parametrize("aligned", [True, False], ids=["slot-bound", "slot-offset"])
@pytest.mark.parametrize("aliased", [False, True], ids=["separate", "aliased"])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_select_and_resume_equals_running_the_accepted_prefix(implementation: str, aliased: bool,
                                                              aligned: bool) -> None:
    """A chain of verify calls (T = 4, W = 4) on the GPU, each resuming after accepting a tokens (0 to 4) by the
    kernel's own select-and-resume: every call's results equal the reference's from the state after the
    accepted prefix. Rebinding where the slot is bound on its own and the buffers are separate, copying otherwise."""
    kernel = conv_kernel_or_skip(implementation)
    device = kernel.device
    call = ALIGNED if aligned else replace(ALIGNED, channel_axes=(5,))
    rng = np.random.default_rng(11)
    inputs = call.inputs(rng)
    tensors: dict[str, Any] = {name: device.upload(x, name) for name, x in inputs.items()}
    bound = kernel.prepare(**tensors, **call.attrs, present_state=tensors["past_state"] if aliased else None)
    seed = inputs["past_state"][-1]
    current, paths = bound, []
    try:
        for step, accepted in enumerate(CHAIN):
            tokens = call.tokens(rng)
            device.upload(tokens, "input", into=tensors["input"])
            assert current.seed is not None
            saved = kernel.save_seed(current.seed) if aliased and accepted == 0 else None
            current.dispatch()
            output, state = device.download_all([current.output, current.present_state])
            expected = chain_reference(call, inputs, seed, tokens)
            expected.assert_matches(output, state, f"call {step} of the chain")
            selection = kernel.accept(current, accepted, saved)
            if saved is not None:
                saved.release()
            if accepted:
                seed = expected.present_state[accepted - 1].astype(call.dtype)  # slot a - (T - W) - 1
            current = selection.call
            paths.append(selection.path)
    finally:
        bound.release()
        for tensor in {id(t): t for t in [*tensors.values(), bound.output, bound.present_state]}.values():
            tensor.release()
    rebinds = aligned and not aliased
    assert {p for p, a in zip(paths, CHAIN, strict=True) if a} == {"rebind" if rebinds else "copy"}
    assert {p for p, a in zip(paths, CHAIN, strict=True) if not a} == {"copy" if aliased else "keep"}


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_pipelines_specialised_on_the_shape_agree_with_the_generic_ones(implementation: str) -> None:
    """A pipeline per call shape (what GPUs compile) agrees with the reference and, on a software adapter, gives
    the generic pipeline's bits; shapes differing only in B, T and W share it."""
    generic = conv_kernel_or_skip(implementation)
    special = CausalConvKernel(ConvKernelOptions(implementation, specialise=True), generic.device)
    for seq_len, window, batch in ((3, 0, 1), (1, 4, 2), (6, 2, 1)):
        call = ConvCall(batch=batch, channel_axes=(3, 4), channels_last=True, kernel_size=3, dilation=2,
                        seq_len=seq_len, state_window=window, activation="silu")
        inputs = call.inputs(np.random.default_rng(seq_len))
        tensors: dict[str, Any] = {name: generic.device.upload(x, name) for name, x in inputs.items()}
        results = []
        for kernel in (generic, special):
            bound = kernel.prepare(**tensors, **call.attrs)
            bound.dispatch()
            results.append(generic.device.download_all([bound.output, bound.present_state]))
            bound.release()
            bound.output.release()
            bound.present_state.release()
        for tensor in tensors.values():
            tensor.release()
        reference(**inputs, **call.attrs).assert_matches(results[1][0], results[1][1], f"specialised {call}")
        if generic.device.software:
            for name, got, expected in zip(("output", "present_state"), *results, strict=True):
                assert_bitwise(got, expected, f"{name} of {call}, specialised against generic")
    assert special.compilations == 1, "batch, T and W are read from the uniform"


def test_invalid_calls_are_refused_with_one_clear_error() -> None:
    """Each broken rule names its input (the oracle's rules and messages); ndim 2 and 3 are valid but not run
    here (as in ORT's kernels)."""
    inputs = ConvCall(state_window=2).inputs(np.random.default_rng(0))
    attrs = ConvCall(state_window=2).attrs
    broken = [  # (the input or attribute named, the change that breaks its rule)
        ("weight", {"weight": inputs["weight"][:, :, :0]}),
        ("weight.shape[0]", {"weight": inputs["weight"][:2]}),
        ("bias", {"bias": inputs["bias"][:2]}),
        ("past_state", {"past_state": inputs["past_state"][0]}),
        ("past_state", {"past_state": inputs["past_state"].astype(np.float16)}),
        ("input", {"input": inputs["input"][:, :, :0]}),
        ("input", {"input": inputs["input"][0]}),
        ("state_window", {"state_window": 9}),
        ("dilation", {"dilation": 0}),
        ("activation", {"activation": "gelu"}),
        ("channels_last", {"channels_last": 2}),
        ("ndim", {"ndim": 4}),
    ]
    for name, change in broken:
        with pytest.raises(ValidationError) as err:
            causal_conv(**{**inputs, **attrs, **change})
        assert err.value.input == name, f"{change}: {err.value}"
    spatial = {"input": inputs["input"][:, :, None, :].repeat(2, axis=2),
               "weight": inputs["weight"][:, :, None, :].repeat(3, axis=2)}
    with pytest.raises(KernelUnsupported, match="ndim = 2"):
        causal_conv(**spatial, ndim=2)

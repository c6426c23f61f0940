"""The WGSL kernel's device side: memory accounting, caches, validation, features, backends."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_kernel_parity import IMPLEMENTATIONS, assert_bitwise, kernel_or_skip, make_inputs

import oracles
from fuzz.backends import Rejected, Unavailable, Unsupported, create
from fuzz.model.case import Case
from kernels.device import FeatureMissing, KernelUnsupported, get_device
from kernels.linear_attention import PARAMS_BYTES, LinearAttentionKernel, linear_attention, scratch_bytes, workspaces
from kernels.options import KernelOptions
from kernels.timing import DAWN_TIMESTAMP_QUANTUM_NS, kernel_times_ns

ATTRS = {"q_num_heads": 2, "kv_num_heads": 2, "update_rule": "gated_delta", "state_window": 3}
BACKEND_NAMES = {"wgpu": "wgpu", "dawn": "wgpu-dawn"}


def small_inputs(dtype: type = np.float32, seq_len: int = 4, window: int = 3) -> dict[str, np.ndarray]:
    return make_inputs(np.random.default_rng(seq_len), dtype=dtype, batch=1, seq_len=seq_len, heads=(2, 2, 2),
                       d_k=4, d_v=3, window=window, past=True, decay_per_row=False, beta_shared=False)


def padded(array: np.ndarray) -> int:
    return max(4, -(-array.nbytes // 4) * 4)


@pytest.mark.parametrize("seq_len", [5, 2], ids=["T>W", "T<W"])
@pytest.mark.parametrize("aliased", [False, True], ids=["separate", "aliased"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_live_bytes_are_inputs_outputs_window_and_uniform(implementation: str, dtype: type, aliased: bool,
                                                         seq_len: int) -> None:
    """A call holds exactly its inputs, output, declared window and the 64-byte uniform (two where ``T < W``:
    one skips storing the leading zero slots); reuse allocates nothing."""
    kernel = kernel_or_skip(implementation, dtype)
    memory = kernel.device.memory
    cache = workspaces(kernel)
    cache.clear()
    before_bytes, before_buffers = memory.live_bytes, memory.live_buffers
    inputs = small_inputs(dtype, seq_len=seq_len)  # odd fp16 sizes exercise the 4-byte padding
    output, _ = linear_attention(**inputs, **ATTRS, aliased=aliased, options=KernelOptions(implementation))
    # gated_delta with per-head decay and beta binds every input; the state is one buffer when aliased
    state = padded(inputs["past_state"])
    scratch = scratch_bytes(ATTRS["state_window"], seq_len)
    expected = sum(padded(x) for x in inputs.values()) + padded(output) + scratch
    expected += 0 if aliased else state
    assert memory.live_bytes - before_bytes == expected
    uniforms = scratch // PARAMS_BYTES
    assert memory.live_buffers - before_buffers == len(inputs) + 2 + uniforms - int(aliased)  # + output, present
    allocations = memory.allocations
    linear_attention(**inputs, **ATTRS, aliased=aliased, options=KernelOptions(implementation))
    assert memory.allocations == allocations, "a repeated call of the same shape must reuse its buffers"
    cache.clear()
    assert (memory.live_bytes, memory.live_buffers) == (before_bytes, before_buffers)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_device_resident_redispatch_allocates_nothing(implementation: str) -> None:
    """A bound call dispatched many times: no allocation, and the same result as one NumPy-API call."""
    kernel = kernel_or_skip(implementation)
    device = kernel.device
    inputs = small_inputs()
    inputs["past_state"] = np.zeros_like(inputs["past_state"])
    tensors = {name: device.upload(x, name) for name, x in inputs.items()}
    call = kernel.prepare(**tensors, **ATTRS, present_state=tensors["past_state"])
    allocations = device.memory.allocations
    call.dispatch(times=3)  # aliased: each dispatch resumes from the previous final state
    assert device.memory.allocations == allocations
    state = device.download(call.present_state)
    expected = inputs["past_state"]
    for _ in range(3):
        _, expected = linear_attention(**{**inputs, "past_state": expected}, **ATTRS,
                                       options=KernelOptions(implementation))
        expected = expected.copy()
        expected[:-1] = 0.0  # unread slots; only slot W-1 seeds the next call
    assert_bitwise(state[-1], expected[-1], "slot W-1 after three chained dispatches")
    call.release()
    for tensor in tensors.values():
        tensor.release()


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_rebind_chain_equals_copy_chain(implementation: str) -> None:
    """Select-and-resume five times over: rebinding (ping-pong, cached bind groups) = copying, bit for bit.

    The rebind chain allocates nothing and builds at most one bind group per (direction, slot).
    """
    kernel = kernel_or_skip(implementation)
    device = kernel.device
    inputs = make_inputs(np.random.default_rng(5), dtype=np.float32, batch=1, seq_len=4, heads=(2, 2, 2), d_k=8,
                         d_v=8, window=3, past=True, decay_per_row=True, beta_shared=False)
    chain = [3, 2, 4, 2, 3, 2]
    results = {}
    for mode in ("rebind", "copy"):
        tensors = {name: device.upload(x, name) for name, x in inputs.items()}
        call = kernel.prepare(**tensors, **ATTRS)
        current, states, paths = call, [], []
        allocations = device.memory.allocations
        for accepted in chain:
            current.dispatch()
            states.append((device.download(current.output), device.download(current.present_state)))
            selection = kernel.accept(current, accepted, mode=mode)
            current, _ = selection.call, paths.append(selection.path)
        assert device.memory.allocations == allocations, f"{mode}: select-and-resume allocated"
        assert set(paths) == {mode}
        results[mode] = states
        if mode == "rebind":
            # the two state buffers swap roles each time: one bind group per (direction, accepted) pair
            assert len(call.rebound) == len({(i % 2, a) for i, a in enumerate(chain)})
        call.release()
        for tensor in [*tensors.values(), call.output, call.present_state]:
            tensor.release()
    for step, (rebound, copied) in enumerate(zip(results["rebind"], results["copy"], strict=True)):
        assert_bitwise(rebound[0], copied[0], f"output after {step} selections")
        assert_bitwise(rebound[1], copied[1], f"present_state after {step} selections")


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_pipelines_are_compiled_once_per_geometry_and_cache_is_bounded(implementation: str) -> None:
    kernel = kernel_or_skip(implementation)
    small = LinearAttentionKernel(KernelOptions(implementation, specialise=False), kernel.device, max_pipelines=2)

    def upload(d_k: int) -> dict:
        inputs = make_inputs(np.random.default_rng(d_k), dtype=np.float32, batch=1, seq_len=4, heads=(2, 2, 2),
                             d_k=d_k, d_v=3, window=3, past=True, decay_per_row=False, beta_shared=False)
        return {name: kernel.device.upload(x, name) for name, x in inputs.items()}

    # d_k = 4 is one row group per column, d_k = 8 two, d_k = 20 eight: three geometry classes
    narrow, wide, wider = upload(4), upload(8), upload(20)
    calls = [small.prepare(**narrow, **{**ATTRS, "update_rule": rule}) for rule in ("delta", "delta", "linear")]
    calls.append(small.prepare(**wide, **{**ATTRS, "state_window": 3}))
    calls[1].dispatch()
    assert small.compilations == 2, "one compilation per geometry class (rule, layouts and W are uniforms)"
    small.prepare(**wider, **ATTRS)
    assert small.compilations == 3 and small.cached_pipelines == 2, "the pipeline cache must stay within its bound"
    calls[0].dispatch()  # its pipeline was evicted from the cache; the call keeps its own
    assert_bitwise(kernel.device.download(calls[0].present_state), kernel.device.download(calls[1].present_state),
                   "a call whose pipeline was evicted")
    for call in calls:
        call.release()
        call.output.release()
        call.present_state.release()
    for tensor in [*narrow.values(), *wide.values(), *wider.values()]:
        tensor.release()


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_specialised_pipelines_are_compiled_once_per_call_shape(implementation: str) -> None:
    """Specialised (a GPU's default): one pipeline per shape and layout, shared by calls that differ only in
    batch, length, window, binding or seed; and by default a software adapter keeps the generic pipelines."""
    device = kernel_or_skip(implementation).device
    assert LinearAttentionKernel(KernelOptions(implementation), device).specialise is not device.software
    kernel = LinearAttentionKernel(KernelOptions(implementation, specialise=True), device)

    def prepare(batch: int = 1, seq_len: int = 4, window: int = 3, d_k: int = 4, rule: str = "gated_delta",
                aliased: bool = False) -> object:
        inputs = make_inputs(np.random.default_rng(d_k), dtype=np.float32, batch=batch, seq_len=seq_len,
                             heads=(2, 2, 2), d_k=d_k, d_v=3, window=window, past=True, decay_per_row=False,
                             beta_shared=False)
        tensors = {name: device.upload(x, name) for name, x in inputs.items()}
        state = {"present_state": tensors["past_state"]} if aliased else {}
        return kernel.prepare(**tensors, **state, **{**ATTRS, "update_rule": rule, "state_window": window})

    calls = [prepare(), prepare(batch=3), prepare(seq_len=1), prepare(window=0), prepare(aliased=True)]
    assert kernel.compilations == 1, "batch, T, W and the binding are read from the uniform"
    calls += [prepare(d_k=3), prepare(rule="delta")]
    assert kernel.compilations == 3, "d_k and the rule's decay layout are compiled in"
    assert len({call.spec for call in calls}) == 3 and len({replace(c.spec, constants=()) for c in calls}) == 1
    for call in calls:
        call.dispatch()
        call.release()
        for tensor in {id(t): t for t in (*call.tensors.values(), call.output, call.present_state)}.values():
            tensor.release()


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_invalid_input_never_reaches_the_gpu(implementation: str) -> None:
    """Same message as the oracle, and not one buffer allocated."""
    kernel = kernel_or_skip(implementation)
    inputs = small_inputs()
    bad = [
        ({**inputs, "beta": inputs["beta"][:, :, :1].repeat(3, axis=2)}, ATTRS),
        ({**inputs, "past_state": inputs["past_state"][0]}, ATTRS),
        (inputs, {**ATTRS, "state_window": 9}),
        (inputs, {**ATTRS, "kv_num_heads": 3}),
        ({**inputs, "decay": None}, ATTRS),
    ]
    allocations = kernel.device.memory.allocations
    for arrays, attrs in bad:
        with pytest.raises(oracles.ValidationError) as expected:
            oracles.linear_attention(**arrays, **attrs)
        with pytest.raises(oracles.ValidationError) as got:
            linear_attention(**arrays, **attrs, options=KernelOptions(implementation))
        assert str(got.value) == str(expected.value)
    assert kernel.device.memory.allocations == allocations


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_missing_feature_and_dtype_are_clear_errors(implementation: str, monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = kernel_or_skip(implementation)
    with pytest.raises(KernelUnsupported, match="float64"):
        linear_attention(**small_inputs(np.float64), **ATTRS, options=KernelOptions(implementation))
    monkeypatch.setattr(kernel.device, "features", kernel.device.features - {"shader-f16"})
    with pytest.raises(FeatureMissing, match="lacks WebGPU feature 'shader-f16'"):
        linear_attention(**small_inputs(np.float16), **ATTRS, options=KernelOptions(implementation))


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_adapter_by_name(implementation: str) -> None:
    kernel = kernel_or_skip(implementation)
    name = kernel.device.adapter.info["device"].split(" ")[0]
    assert get_device(implementation, name).description == kernel.device.description
    with pytest.raises(Unavailable, match="no adapter matches"):
        create(BACKEND_NAMES[implementation], adapter="no-such-adapter-anywhere")


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_backend(implementation: str) -> None:
    """The suite's backend: capabilities, aliased runs equal separate ones, Rejected, Unsupported."""
    kernel_or_skip(implementation)
    backend = create(BACKEND_NAMES[implementation])
    caps = backend.capabilities()
    assert (caps.window, caps.aliasing) == ("native", True)
    assert "float32" in caps.dtypes and caps.device
    case = Case(inputs=small_inputs(), attrs=ATTRS)
    separate = backend.run(case)
    aliased = backend.run(case.with_(aliased=True))
    assert_bitwise(aliased[1], separate[1], "backend aliased present_state")
    with pytest.raises(Rejected, match="state_window"):
        backend.run(case.with_attrs(state_window=2))
    with pytest.raises(Unsupported, match="float64"):
        backend.run(Case(inputs=small_inputs(np.float64), attrs=ATTRS))
    backend.close()


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_kernel_times_from_timestamps(implementation: str) -> None:
    """Pass times are real: non-negative, and non-zero for a call long enough to outlast Dawn's quantum.

    Dawn reports multiples of ``DAWN_TIMESTAMP_QUANTUM_NS`` (a 70 us kernel read as 0 on an H200), so
    the call runs 2048 tokens: well over one quantum anywhere, and every time must be such a multiple.
    """
    kernel = kernel_or_skip(implementation)
    if "timestamp-query" not in kernel.device.features:
        pytest.skip(f"{implementation}: adapter {kernel.device.description} lacks timestamp-query")
    tensors = {name: kernel.device.upload(x, name) for name, x in small_inputs(seq_len=2048).items()}
    call = kernel.prepare(**tensors, **ATTRS)
    live = kernel.device.memory.live_bytes
    times = kernel_times_ns(call, 3)
    assert times.shape == (3,) and (times >= 0).all() and times.sum() > 0
    if implementation == "dawn":
        assert (times % DAWN_TIMESTAMP_QUANTUM_NS == 0).all(), f"Dawn times not quantized: {times}"
    assert kernel.device.memory.live_bytes == live, "timing scratch must be released"
    for tensor in [*tensors.values(), call.output, call.present_state]:
        tensor.release()
    call.release()

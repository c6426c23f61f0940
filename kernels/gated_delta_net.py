"""GatedDeltaNet on WebGPU: the token loop with capture, device-resident resume by replay, and the NumPy op.

``GatedDeltaNetKernel.prepare`` validates a call by the oracle's rules (``oracles.gated_delta_net.validate``: the
same messages) and binds device tensors to one pipeline per storage type and ``d_k`` class
(``kernels/gated_delta_net.wgsl``); the ``GdnCall`` it returns writes the output, the final state and the capsule
in one dispatch. ``accept`` is the select-and-resume of this design (docs/spec.md §10): after a verify call, each
request's state after its accepted tokens is rebuilt on the device by replaying that many capsule entries over the
call's initial state (``kernels.state_replay``), no byte through the host. ``gated_delta_net`` is the op with NumPy
in and out.

``cu_seqlens``, ``capture_count`` and ``state_update_active`` are small host arrays here: the host validates them
(as the oracle does) and the call uploads the first two into tensors of its own; the clamping of a capture count
is the kernel's. The kernel binds 13 storage buffers, more than WebGPU's default 8: it asks the adapter for its
maximum (``kernels.device.STORAGE_LIMITS``) and calls a device offering fewer ``KernelUnsupported``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import astuple, dataclass, field
from typing import Any, ClassVar

import numpy as np

from oracles.gated_delta_net import GdnDims, replay_descriptor, validate
from oracles.validation import DELTA_RULES, GATED_RULES

from .device import DeviceTensor, GpuDevice, KernelUnsupported, get_device
from .passes import bind_group, compile_pipeline, encode_pass, grid, uniform_buffer
from .resident import shape_only
from .shader import fill_template, kernel_file
from .state_replay import ReplayCall, get_replay_kernel

TEMPLATE = "gated_delta_net.wgsl"
WORKGROUP_SIZE = 64
MAX_D_K = 256
"""The largest ``d_k`` the kernel runs (each invocation keeps a state row of ``d_k`` floats), as ORT's WebGPU kernel."""

GDN_BINDINGS = ("query", "key", "value", "cu_seqlens", "decay", "beta", "initial_state", "a_log", "dt_bias",
                "capture_count", "output", "final_state", "state_update")
"""The storage buffers at bindings 1.. (binding 0 is the uniform), as the WGSL declares them."""

STAND_IN = "query"
"""The tensor bound in place of an input the call lacks (or does not read): read-only, always present."""

SEED_ZERO, SEED_INITIAL, SEED_FINAL = 0, 1, 2
"""``params.seed_mode``: no initial state, read ``initial_state``, read ``final_state`` (one buffer for both)."""


@dataclass(frozen=True)
class GdnParams:
    """The per-call uniform, field for field the WGSL ``Params`` struct (24 words)."""

    batch: int
    seq_len: int
    q_heads: int
    v_heads: int
    d_k: int
    d_v: int
    capacity: int
    ragged: int
    q_stride: int
    q_offset: int
    k_stride: int
    k_offset: int
    v_stride: int
    v_offset: int
    seed_mode: int
    gated: int
    delta_rule: int
    decay_per_key: int
    qwen: int
    sigmoid_beta: int
    l2_norm: int
    capture: int
    scale: float

    WORDS: ClassVar[int] = 24

    @classmethod
    def for_call(cls, dims: GdnDims, ragged: bool, aliased: bool) -> GdnParams:
        """The uniform of a validated call; packed QKV reads the three from one binding at three offsets."""
        qk, v = dims.q_heads * dims.d_k, dims.v_heads * dims.d_v
        strides = (2 * qk + v, 0, 2 * qk + v, qk, 2 * qk + v, 2 * qk) if dims.packed else (qk, 0, qk, 0, v, 0)
        seed = (SEED_FINAL if aliased else SEED_INITIAL) if dims.has_initial_state else SEED_ZERO
        return cls(dims.batch, dims.lengths[0], dims.q_heads, dims.v_heads, dims.d_k, dims.d_v, dims.capacity,
                   int(ragged), *strides, seed, int(dims.update_rule in GATED_RULES),
                   int(dims.update_rule in DELTA_RULES), int(bool(dims.decay_per_key)),
                   int(dims.gate_activation == "qwen"), int(dims.beta_activation == "sigmoid"), int(dims.qk_l2_norm),
                   int(dims.capture_active), dims.scale)

    def pack(self) -> np.ndarray:
        words = np.zeros(self.WORDS, dtype=np.uint32)
        values = astuple(self)
        words[: len(values) - 1] = values[:-1]
        words[len(values) - 1] = np.array(self.scale, dtype=np.float32).view(np.uint32)
        return words


@dataclass(frozen=True)
class GdnSpec:
    """What a pipeline is specialised on: the storage type of q/k/v/output and the row's private extent."""

    dtype: str
    dk_max: int

    @classmethod
    def for_dims(cls, dims: GdnDims) -> GdnSpec:
        return cls(str(dims.dtype), max(4, 1 << (dims.d_k - 1).bit_length()))

    def code(self) -> str:
        store = "f16" if self.dtype == "float16" else "f32"
        return fill_template(kernel_file(TEMPLATE), {"ENABLE": "enable f16;" if store == "f16" else "",
                                                    "STORE": store, "WG": str(WORKGROUP_SIZE),
                                                    "DK_MAX": str(self.dk_max)})


def check_supported(device: GpuDevice, dims: GdnDims) -> None:
    """Raise ``KernelUnsupported`` for a valid call this kernel cannot run on ``device``."""
    if dims.d_k > MAX_D_K:
        raise KernelUnsupported(f"d_k = {dims.d_k}: this kernel (as ORT's WebGPU kernel) runs d_k <= {MAX_D_K}")
    if dims.dtype == np.float16:
        device.require("shader-f16", "float16 GatedDeltaNet")
    limit = device.limits["max-storage-buffers-per-shader-stage"]
    if limit < len(GDN_BINDINGS):
        raise KernelUnsupported(f"the kernel binds {len(GDN_BINDINGS)} storage buffers; the device allows {limit}")


@dataclass
class GdnCall:
    """One GatedDeltaNet call bound to device tensors: ``dispatch`` (or ``encode``) it as often as needed."""

    kernel: GatedDeltaNetKernel
    dims: GdnDims
    params: DeviceTensor
    tensors: dict[str, DeviceTensor]
    """Every bound tensor by name (the call's own ``cu_seqlens`` and ``capture_count`` among them)."""
    group: Any
    owned: list[DeviceTensor] = field(default_factory=list)
    """Tensors the call made and frees (its uniform, the uploaded request tables)."""

    @property
    def output(self) -> DeviceTensor:
        return self.tensors["output"]

    @property
    def final_state(self) -> DeviceTensor:
        return self.tensors["final_state"]

    @property
    def state_update(self) -> DeviceTensor:
        return self.tensors["state_update"]

    @property
    def aliased(self) -> bool:
        """``initial_state`` and ``final_state`` are one buffer: the call overwrites its source state."""
        return "initial_state" in self.tensors and self.tensors["initial_state"] is self.final_state

    def encode(self, encoder: Any, timestamp_writes: Any = None) -> None:
        """Record the call's compute pass into a command encoder (with its timestamp writes where given)."""
        encode_pass(encoder, self.kernel.pipeline(GdnSpec.for_dims(self.dims)), self.group,
                    grid(self.dims.batch * self.dims.v_heads * self.dims.d_v, WORKGROUP_SIZE), timestamp_writes)

    def dispatch(self) -> None:
        """Submit the call (no host transfer, no wait)."""
        encoder = self.kernel.device.device.create_command_encoder()
        self.encode(encoder)
        self.kernel.device.queue.submit([encoder.finish()])

    def release(self) -> None:
        for tensor in self.owned:
            tensor.release()


class GatedDeltaNetKernel:
    """GatedDeltaNet's pipelines on one device, and the replay that resumes from its capsule."""

    def __init__(self, device: GpuDevice) -> None:
        self.device = device
        self._pipelines: dict[GdnSpec, Any] = {}
        self.compilations = 0
        """Pipelines compiled so far."""

    def pipeline(self, spec: GdnSpec) -> Any:
        """The pipeline of ``spec``, compiled once."""
        if spec not in self._pipelines:
            self._pipelines[spec] = compile_pipeline(self.device, f"gated_delta_net {spec}", spec.code())
            self.compilations += 1
        return self._pipelines[spec]

    def prepare(self, query: DeviceTensor, key: DeviceTensor | None = None, value: DeviceTensor | None = None,
                cu_seqlens: np.ndarray | None = None, decay: DeviceTensor | None = None,
                beta: DeviceTensor | None = None, initial_state: DeviceTensor | None = None,
                a_log: DeviceTensor | None = None, dt_bias: DeviceTensor | None = None,
                capture_count: np.ndarray | None = None, state_update_active: np.ndarray | None = None, *,
                output: DeviceTensor | None = None, final_state: DeviceTensor | None = None,
                state_update: DeviceTensor | None = None, **attributes: Any) -> GdnCall:
        """Validate a call on device tensors (the request tables on the host) and bind it; nothing runs until
        ``dispatch``. ``final_state=initial_state`` (the same tensor) binds the two as one buffer, as the schema
        allows. Results are allocated when not given. Raises ``ValidationError`` for invalid input and
        ``KernelUnsupported`` for a valid call this device cannot run."""
        device_inputs = {"query": query, "key": key, "value": value, "decay": decay, "beta": beta,
                         "initial_state": initial_state, "a_log": a_log, "dt_bias": dt_bias}
        shapes: dict[str, Any] = {n: shape_only(t) for n, t in device_inputs.items()}
        dims = validate(**shapes, cu_seqlens=cu_seqlens,
                        capture_count=capture_count, state_update_active=state_update_active, **attributes)
        check_supported(self.device, dims)
        aliased = initial_state is not None and final_state is initial_state
        results = {"output": (output, dims.output_shape, dims.dtype),
                   "final_state": (final_state, dims.state_shape, np.dtype(np.float32)),
                   "state_update": (state_update, dims.state_update_shape, np.dtype(np.float32))}
        tensors = {name: t for name, t in device_inputs.items() if t is not None}
        owned = []
        for name, (given, shape, dtype) in results.items():
            if given is not None and (given.shape, given.dtype) != (shape, dtype):
                raise ValueError(f"{name}: expected a {shape} {dtype} tensor, got {given.shape} {given.dtype}")
            tensors[name] = given if given is not None else self.device.tensor(shape, dtype, name)
        for name, table in (("cu_seqlens", cu_seqlens), ("capture_count", capture_count)):
            if table is not None:
                tensors[name] = self.device.upload(table, name)
                owned.append(tensors[name])
        uniform = GdnParams.for_call(dims, cu_seqlens is not None, aliased)
        params = uniform_buffer(self.device, uniform.pack(), "gdn-params")
        owned.append(params)
        if dims.packed:
            tensors["key"] = tensors["value"] = query
        read = {name for name in GDN_BINDINGS[:10] if name in tensors and not (aliased and name == "initial_state")}
        bound = [params] + [tensors[name if name in read or name in results else STAND_IN] for name in GDN_BINDINGS]
        group = bind_group(self.device, self.pipeline(GdnSpec.for_dims(dims)), bound)
        return GdnCall(self, dims, params, tensors, group, owned)

    def accept(self, call: GdnCall, accepted: Sequence[int], into: DeviceTensor) -> None:
        """After ``call`` ran, write into ``into`` (a ``(B, H_v, d_v, d_k)`` float32 tensor of its own) each request's
        state after its first ``accepted[b]`` tokens, on the device: ``accepted[b]`` capsule entries replayed over the
        call's initial state (zeros without one), or that state copied for 0. The next call takes ``into`` as its
        initial state.

        Raises ``ValueError`` for a count the capsule does not hold (more than the request captured: the prefix
        must run again instead), an aliased call (it overwrote the state to replay over), or a bad ``into``.
        """
        dims = call.dims
        if call.aliased:
            raise ValueError("accept: the call overwrote its initial_state (an aliased binding), nothing to replay")
        zeros = None if "initial_state" in call.tensors else self.device.upload(np.zeros(dims.state_shape, np.float32),
                                                                                 "zero-state")
        source = call.tensors["initial_state"] if zeros is None else zeros
        if into.shape != dims.state_shape or into.dtype != np.float32 or into.buffer in (source.buffer,
                                                                                          call.state_update.buffer):
            raise ValueError(f"accept: into must be a {dims.state_shape} float32 tensor of its own, got {into}")
        if len(accepted) != dims.batch or any(not 0 <= a <= n for a, n in zip(accepted, dims.captured, strict=True)):
            raise ValueError(f"accept: accepted {list(accepted)} must be in [0, captured] per request, captured "
                             f"{list(dims.captured)}")
        replay = get_replay_kernel(self.device)
        state_elements = int(np.prod(dims.state_shape[1:]))
        encoder = self.device.device.create_command_encoder()
        calls: list[ReplayCall] = []
        for b, kept in enumerate(accepted):
            offset = b * state_elements
            if kept == 0:
                encoder.copy_buffer_to_buffer(source.buffer, 4 * offset, into.buffer, 4 * offset, 4 * state_elements)
                continue
            metadata = replay_descriptor(dims, b, kept, source_offset=offset, destination_offset=offset)
            calls.append(replay.prepare(source, call.state_update, into, metadata))
            calls[-1].encode(encoder)
        self.device.queue.submit([encoder.finish()])
        for replay_call in calls:
            replay_call.release()
        if zeros is not None:
            zeros.release()


_KERNELS: dict[int, GatedDeltaNetKernel] = {}


def get_gdn_kernel(device: GpuDevice) -> GatedDeltaNetKernel:
    """The process-wide GatedDeltaNet kernel of a device, made on first use."""
    if id(device) not in _KERNELS:
        _KERNELS[id(device)] = GatedDeltaNetKernel(device)
    return _KERNELS[id(device)]


def upload_inputs(device: GpuDevice, arrays: dict[str, np.ndarray | None]) -> dict[str, Any]:
    """A call's inputs as ``prepare`` takes them: the request tables as given, the rest uploaded."""
    host = ("cu_seqlens", "capture_count", "state_update_active")
    return {name: x if name in host or x is None else device.upload(x, name) for name, x in arrays.items()}


def gated_delta_net(query: np.ndarray, key: np.ndarray | None = None, value: np.ndarray | None = None,
                    cu_seqlens: np.ndarray | None = None, decay: np.ndarray | None = None,
                    beta: np.ndarray | None = None, initial_state: np.ndarray | None = None,
                    a_log: np.ndarray | None = None, dt_bias: np.ndarray | None = None,
                    capture_count: np.ndarray | None = None, state_update_active: np.ndarray | None = None, *,
                    aliased: bool = False, implementation: str = "wgpu", adapter: str | int | None = None,
                    **attributes: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ONNX ``com.microsoft::GatedDeltaNet`` operator on WebGPU, NumPy in and out.

    Returns ``(output, final_state, state_update)``. The capsule's buffer is filled with NaN first, as memory an
    allocator hands over after an earlier call (ORT's arena) would be filled with something: the entries past a
    request's captured prefix come back NaN, and a kernel that leaves any entry it must write (all of them zero when
    capture is off) to a fresh buffer's zeros is caught. ``aliased`` binds ``initial_state`` and ``final_state`` as
    one buffer.
    Raises ``ValidationError`` for invalid input and ``KernelUnsupported`` for a valid call the device cannot run.
    """
    device = get_device(implementation, adapter)
    inputs = upload_inputs(device, {"query": query, "key": key, "value": value, "cu_seqlens": cu_seqlens,
                                    "decay": decay, "beta": beta, "initial_state": initial_state, "a_log": a_log,
                                    "dt_bias": dt_bias, "capture_count": capture_count,
                                    "state_update_active": state_update_active})
    state = inputs["initial_state"] if aliased else None
    call = get_gdn_kernel(device).prepare(**inputs, final_state=state, **attributes)
    try:
        if call.dims.state_update_shape and np.prod(call.dims.state_update_shape):
            device.upload(np.full(call.dims.state_update_shape, np.nan, np.float32), "state_update",
                          into=call.state_update)
        call.dispatch()
        output, final, capsule = device.download_all([call.output, call.final_state, call.state_update])
        return output, final, capsule
    finally:
        call.release()
        for name, tensor in call.tensors.items():
            if name not in ("cu_seqlens", "capture_count"):
                tensor.release()

"""WebGPU adapter and device selection for either implementation, and device-memory accounting.

Two implementations share one wgpu-py API: ``"wgpu"`` (wgpu-native, naga compiles WGSL) and
``"dawn"`` (the ``wgpudawn`` package, Dawn/Tint). A ``GpuDevice`` wraps one adapter's device
with the features this project needs, and counts every buffer it creates, so tests and the
benchmark can check that a call holds exactly the memory it declares.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

IMPLEMENTATIONS = {"wgpu": "wgpu", "dawn": "wgpudawn"}
"""Implementation name -> the Python package that provides the wgpu-py API on it."""

OPTIONAL_FEATURES = ("shader-f16", "timestamp-query", "subgroups", "subgroup")
"""Features requested whenever the adapter offers them (fp16 kernels, GPU timing, subgroup reductions:
``subgroups`` is the WebGPU name, which Dawn uses; wgpu-native calls its own ``subgroup``)."""

SUBGROUP_ENABLE = {"wgpu": "", "dawn": "enable subgroups;"}
"""The WGSL directive that turns subgroup built-ins on: Tint requires it, naga rejects it (not yet
implemented there) and offers the built-ins whenever the device has the feature."""

_SUBGROUP_PROBE = """
{enable}
@group(0) @binding(0) var<storage, read_write> sizes: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) i: u32, @builtin(subgroup_size) size: u32) {{ sizes[i] = size; }}
"""

STORAGE_LIMITS = ("max-storage-buffer-binding-size", "max-buffer-size", "max-compute-workgroup-storage-size",
                  "max-storage-buffers-per-shader-stage")
"""Limits raised to the adapter's maximum: the defaults (128 MiB / 256 MiB of buffer, 16 KiB of workgroup memory,
8 storage buffers) are arbitrary caps; the kernel's pipelines keep within the workgroup default unless a variant
asks for more, and only GatedDeltaNet's binds more than 8 buffers (``kernels.gated_delta_net``)."""


class DeviceUnavailable(RuntimeError):
    """The requested WebGPU implementation, or an adapter for it, is not available here."""


class KernelUnsupported(RuntimeError):
    """A valid call this kernel cannot run here (a dtype, a size or a feature it lacks)."""


class FeatureMissing(KernelUnsupported):
    """The adapter lacks a feature a kernel needs (e.g. ``shader-f16`` for float16)."""


_PROVIDED: dict[str, ModuleType] = {}


def provide_implementation(name: str, module: ModuleType, subgroup_enable: str) -> None:
    """Make ``name`` a WebGPU implementation served by ``module``, which offers the part of wgpu-py's API the
    kernels call: a WebGPU that no Python package wraps (a browser's, reached through a page), which the caller
    sets up. ``subgroup_enable`` is the WGSL directive its compiler needs for subgroup built-ins."""
    _PROVIDED[name] = module
    SUBGROUP_ENABLE[name] = subgroup_enable


def load_implementation(name: str) -> ModuleType:
    """Import the wgpu-py module of implementation ``name`` (``"wgpu"`` or ``"dawn"``), or the module provided for
    it (``provide_implementation``)."""
    if name in _PROVIDED:
        return _PROVIDED[name]
    try:
        module_name = IMPLEMENTATIONS[name]
    except KeyError:
        known = ", ".join(IMPLEMENTATIONS)
        raise DeviceUnavailable(f"unknown WebGPU implementation {name!r}; known: {known}") from None
    try:
        return importlib.import_module(module_name)
    except ImportError as err:
        raise DeviceUnavailable(f"{name}: cannot import {module_name}: {err}") from err


def _describe(adapter) -> str:
    info = adapter.info
    return f"{info['device']} ({info['adapter_type']}) via {info['backend_type']}"


def adapters(module: ModuleType) -> list:
    """The adapters a device number counts, in enumeration order: those of the default adapter's kind
    (its API and adapter type), so that no OpenGL twin of a Vulkan adapter and no software rasterizer
    beside a GPU is counted."""
    default = module.gpu.request_adapter_sync(power_preference="high-performance")
    if default is None:
        return []
    kind = (default.info["backend_type"], default.info["adapter_type"])
    return [a for a in module.gpu.enumerate_adapters_sync() if (a.info["backend_type"], a.info["adapter_type"]) == kind]


def describe_adapters(module: ModuleType) -> list[str]:
    """``adapters(module)`` in words, numbered by position."""
    return [_describe(a) for a in adapters(module)]


def select_adapter(module: ModuleType, choice: str | int | None = None):
    """The best adapter (high-performance preference); or, for a number, that one of ``adapters``;
    or, for a text, the first adapter whose description contains it."""
    if choice is None:
        adapter = module.gpu.request_adapter_sync(power_preference="high-performance")
        if adapter is None:
            raise DeviceUnavailable(f"{module.__name__}: no WebGPU adapter found")
        return adapter
    if isinstance(choice, int):
        found = adapters(module)
        if not 0 <= choice < len(found):
            raise DeviceUnavailable(f"{module.__name__}: no adapter number {choice}; there are {len(found)}")
        return found[choice]
    everything = module.gpu.enumerate_adapters_sync()
    for adapter in everything:
        if choice.lower() in _describe(adapter).lower():
            return adapter
    available = "; ".join(_describe(a) for a in everything) or "none"
    raise DeviceUnavailable(f"{module.__name__}: no adapter matches {choice!r}; available: {available}")


@dataclass
class MemoryCounter:
    """Live device bytes and buffers, and the number of buffers ever allocated."""

    live_bytes: int = 0
    live_buffers: int = 0
    allocations: int = 0


class DeviceTensor:
    """A device buffer holding one array: its shape, dtype and padded byte size.

    Storage sizes are rounded up to 4 bytes (WebGPU's copy and binding granularity), which
    matters only for odd-sized float16 arrays. ``release`` frees the buffer now; otherwise it is
    freed (and uncounted) when the tensor is garbage-collected.

    ``zero_slots`` is how many leading slots (of a 5-D state tensor) are known to hold exact zeros
    once the work recorded so far has run in queue order (0: unknown). The kernel's dispatches set it
    (``BoundCall.encode``: a call of ``T < W`` tokens leaves ``W - T``) and skip storing zeros it already
    holds; every other write must lower it: ``GpuDevice.upload`` into the tensor resets it, a slot copy
    into it (``LinearAttentionKernel.encode_slot_copy``) keeps only the slots before the one it writes.
    Code that writes a tensor's buffer any other way must reset it to 0.
    """

    def __init__(self, device: GpuDevice, shape: tuple[int, ...], dtype: npt.DTypeLike, label: str,
                 extra_usage: int = 0) -> None:
        self.device = device
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self.buffer = device.create_buffer(max(4, -(-self.nbytes // 4) * 4), label, extra_usage)
        self.zero_slots = 0
        self._finalizer = weakref.finalize(self, device.forget_buffer, self.buffer)

    @property
    def size(self) -> int:
        """Allocated bytes (``nbytes`` padded to a multiple of 4)."""
        return self.buffer.size

    def release(self) -> None:
        """Free the device buffer now (idempotent)."""
        self._finalizer()

    def __repr__(self) -> str:
        return f"<DeviceTensor {self.buffer.label} {self.shape} {self.dtype}>"


class GpuDevice:
    """One WebGPU device on a chosen adapter, with the features this project uses, and counters."""

    def __init__(self, implementation: str = "wgpu", adapter: str | int | None = None) -> None:
        self.implementation = implementation
        self.module = load_implementation(implementation)
        self.adapter = select_adapter(self.module, adapter)
        offered = set(self.adapter.features)
        self.features = frozenset(f for f in OPTIONAL_FEATURES if f in offered)
        limits = {name: self.adapter.limits[name] for name in STORAGE_LIMITS}
        self.device = self.adapter.request_device_sync(
            label=f"lafuzz-{implementation}", required_features=sorted(self.features), required_limits=limits,
        )
        self.queue = self.device.queue
        self.limits = dict(self.device.limits)
        self.memory = MemoryCounter()
        self._lock = threading.Lock()

    @property
    def description(self) -> str:
        """The adapter in words, e.g. ``llvmpipe (...) (CPU) via Vulkan``."""
        return _describe(self.adapter)

    @property
    def software(self) -> bool:
        """Whether the adapter is a CPU (a software rasteriser such as lavapipe), not a GPU."""
        return self.adapter.info["adapter_type"] == "CPU"

    @property
    def version(self) -> str:
        return str(getattr(self.module, "__version__", "unknown"))

    @functools.cached_property
    def subgroup_size(self) -> int | None:
        """The subgroup size compute pipelines get here, measured once by a probe (None without subgroups).

        WebGPU only bounds it (the adapter's min and max subgroup size; lavapipe says 4..128 and runs
        8); the adapters this suite runs on use one size for every pipeline, which the probe reads.
        """
        if not self.features & {"subgroups", "subgroup"}:
            return None
        code = _SUBGROUP_PROBE.format(enable=SUBGROUP_ENABLE[self.implementation])
        module = self.device.create_shader_module(label="subgroup-probe", code=code)
        pipeline = self.device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
        sizes = self.tensor((64,), np.uint32, "subgroup-probe")
        try:
            group = self.device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=[
                {"binding": 0, "resource": {"buffer": sizes.buffer, "offset": 0, "size": sizes.size}}])
            encoder = self.device.create_command_encoder()
            compute = encoder.begin_compute_pass()
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, group)
            compute.dispatch_workgroups(1)
            compute.end()
            self.queue.submit([encoder.finish()])
            return int(self.download(sizes).min())
        finally:
            sizes.release()

    @property
    def subgroup_enable(self) -> str:
        """The WGSL directive a shader using subgroup built-ins needs on this implementation."""
        return SUBGROUP_ENABLE[self.implementation]

    def require(self, feature: str, why: str) -> None:
        """Raise ``FeatureMissing`` unless the device has ``feature``."""
        if feature not in self.features:
            raise FeatureMissing(
                f"{self.implementation}: adapter {self.description} lacks WebGPU feature {feature!r}, "
                f"needed for {why}"
            )

    def require_binding(self, nbytes: int) -> None:
        """Raise ``KernelUnsupported`` unless one storage binding of ``nbytes`` fits the device's limit."""
        limit = self.limits["max-storage-buffer-binding-size"]
        if nbytes > limit:
            raise KernelUnsupported(f"a {nbytes}-byte tensor exceeds max-storage-buffer-binding-size {limit}")

    def create_buffer(self, size: int, label: str, extra_usage: int = 0):
        """A storage buffer usable as copy source and destination, counted in ``memory``."""
        usage = self.module.BufferUsage
        flags = usage.STORAGE | usage.COPY_SRC | usage.COPY_DST | extra_usage
        buffer = self.device.create_buffer(label=label, size=size, usage=flags)
        with self._lock:
            self.memory.live_bytes += size
            self.memory.live_buffers += 1
            self.memory.allocations += 1
        return buffer

    def forget_buffer(self, buffer) -> None:
        """Destroy a buffer made by ``create_buffer`` and uncount it."""
        buffer.destroy()
        with self._lock:
            self.memory.live_bytes -= buffer.size
            self.memory.live_buffers -= 1

    def tensor(self, shape: tuple[int, ...], dtype: npt.DTypeLike, label: str, extra_usage: int = 0) -> DeviceTensor:
        """An uninitialised device tensor."""
        return DeviceTensor(self, shape, dtype, label, extra_usage)

    def upload(self, array: np.ndarray, label: str, into: DeviceTensor | None = None) -> DeviceTensor:
        """Copy a host array to a new device tensor, or into ``into`` (same shape and dtype).

        The copy is a queue write: it runs before any command buffer submitted after this call, even
        one encoded before it, so work that reads ``zero_slots`` must be encoded after its uploads.
        """
        array = np.ascontiguousarray(array)
        tensor = into if into is not None else self.tensor(array.shape, array.dtype, label)
        if (tensor.shape, tensor.dtype) != (array.shape, array.dtype):
            raise ValueError(f"upload: {label} is {array.shape} {array.dtype}, tensor is {tensor.shape} {tensor.dtype}")
        data = array.tobytes()
        data += b"\0" * (tensor.size - len(data))
        self.queue.write_buffer(tensor.buffer, 0, data)
        tensor.zero_slots = 0
        return tensor

    def download(self, tensor: DeviceTensor) -> np.ndarray:
        """Copy a device tensor back to the host (waits for the queue)."""
        return self.download_all([tensor])[0]

    def download_all(self, tensors: Sequence[DeviceTensor]) -> list[np.ndarray]:
        """Copy device tensors back to the host through one staging buffer: one submit, one wait.

        The staging buffer lives only for this call (``Readback`` keeps one for calls that repeat).
        """
        readback = Readback(self, tensors)
        try:
            encoder = self.device.create_command_encoder()
            readback.encode(encoder)
            self.queue.submit([encoder.finish()])
            return readback.read()
        finally:
            readback.release()


class Readback:
    """A host-readable staging buffer for a fixed list of device tensors, reusable call after call.

    ``encode`` records the copies into it (after a dispatch in the same command buffer, so a call and
    its readback are one submit), ``read`` waits for the queue and returns the arrays. The staging
    buffer is not counted in ``GpuDevice.memory``: it is the host transfer, not the kernel's footprint.
    Tensor sizes are multiples of 4 bytes, so every copy lands at an aligned offset.
    """

    def __init__(self, device: GpuDevice, tensors: Sequence[DeviceTensor]) -> None:
        self.device = device
        self.tensors = tuple(tensors)
        self.offsets = list(itertools.accumulate((t.size for t in self.tensors), initial=0))
        usage = device.module.BufferUsage
        self.staging = device.device.create_buffer(label="download", size=self.offsets[-1],
                                                   usage=usage.COPY_DST | usage.MAP_READ)

    def encode(self, encoder: Any) -> None:
        """Record the copies of every tensor into the staging buffer."""
        for tensor, offset in zip(self.tensors, self.offsets, strict=False):
            encoder.copy_buffer_to_buffer(tensor.buffer, 0, self.staging, offset, tensor.size)

    def read(self) -> list[np.ndarray]:
        """Wait for the submitted copies and return one array per tensor."""
        self.staging.map_sync(self.device.module.MapMode.READ)
        try:
            raw = bytes(self.staging.read_mapped())
        finally:
            self.staging.unmap()
        return [np.frombuffer(raw[o: o + t.nbytes], dtype=t.dtype).reshape(t.shape).copy()
                for t, o in zip(self.tensors, self.offsets, strict=False)]

    def release(self) -> None:
        """Free the staging buffer now."""
        self.staging.destroy()


_DEVICES: dict[tuple[str, str | int | None], GpuDevice] = {}
_DEVICES_LOCK = threading.Lock()


def get_device(implementation: str = "wgpu", adapter: str | int | None = None) -> GpuDevice:
    """The process-wide device for an implementation and adapter choice (``select_adapter``), created on
    first use."""
    key = (implementation, adapter)
    with _DEVICES_LOCK:
        if key not in _DEVICES:
            _DEVICES[key] = GpuDevice(implementation, adapter)
        return _DEVICES[key]

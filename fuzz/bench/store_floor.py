"""The memory floor of the window's stores: a plain store kernel, timed on the kernel clock in the same rounds.

A call over ``T`` tokens with window ``W`` stores ``min(T, max(W, 1))`` slots of the state; ``W = 0`` stores
one. The window's *extra bytes* are the slots beyond that one (``extra_slots``). Their *floor* is the time the
device needs to store that many bytes when storing is all it does: a plain kernel (``STORE_SHADER``: every
invocation stores one 16-byte vector, consecutive invocations consecutive vectors) over a buffer of exactly
those bytes, minus the same dispatch storing nothing (``floor_ns``). So the floor is measured, not taken from
a spec sheet, at the window's own size (where the bytes fit a GPU's L2 cache, as the window's slots do when a
call repeats) and with the launch cost taken out; the write bandwidth it implies is ``bytes / floor``.
Both dispatches are timed like the kernel (GPU timestamps, or a fenced wall clock without them) and are
series of the same interleaved rounds, so the floor, the window's cost and their ratio share every round.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np

from kernels import GpuDevice
from kernels.timing import pass_times_ns

from .kernel_timing import MAX_TIMED
from .protocol import Sampler, chunked, fenced_wall_sampler

VECTOR_BYTES = 16
"""What one invocation of the store kernel stores: a ``vec4<u32>``."""

WORKGROUP = 256
MAX_GROUPS_X = 32768
"""Workgroups along x before the dispatch grows along y (WebGPU allows 65535 per dimension)."""

STORE_SHADER = f"""
struct Count {{ vectors: u32 }}
@group(0) @binding(0) var<uniform> count: Count;
@group(0) @binding(1) var<storage, read_write> stored: array<vec4<u32>>;

@compute @workgroup_size({WORKGROUP})
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {{
    let i = id.x + id.y * groups.x * {WORKGROUP}u;
    if (i < count.vectors) {{ stored[i] = vec4<u32>(i, i ^ 1u, i ^ 2u, i ^ 3u); }}
}}
"""

STORE, EMPTY = "store", "store-empty"
"""Series names: ``(STORE, nbytes)`` stores every vector of the buffer, ``(EMPTY, nbytes)`` none (same dispatch)."""


def extra_slots(seq_len: int, window: int) -> int:
    """Slots a call of ``T`` tokens at window ``W`` stores beyond the one a ``W = 0`` call stores."""
    return max(min(seq_len, max(window, 1)) - 1, 0)


def stored_bytes(nbytes: int) -> int:
    """``nbytes`` rounded up to whole vectors: what the store kernel writes for it."""
    return -(-nbytes // VECTOR_BYTES) * VECTOR_BYTES


def floor_ns(values: Mapping[Hashable, float], nbytes: int) -> float:
    """The floor of storing ``nbytes`` from one estimate per series: the store dispatch minus the empty one."""
    return values[STORE, nbytes] - values[EMPTY, nbytes]


class PlainStore:
    """The store kernel bound to a buffer of ``nbytes`` (rounded up to vectors), with two uniforms: every
    vector stored, or none. ``release`` frees its buffers."""

    def __init__(self, device: GpuDevice, nbytes: int) -> None:
        self.device, self.nbytes = device, nbytes
        vectors = stored_bytes(nbytes) // VECTOR_BYTES
        groups = -(-vectors // WORKGROUP)
        self.workgroups = (min(groups, MAX_GROUPS_X), -(-groups // MAX_GROUPS_X), 1)
        gpu = device.device
        module = gpu.create_shader_module(label="plain-store", code=STORE_SHADER)
        self.pipeline = gpu.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
        usage = device.module.BufferUsage.UNIFORM
        words = np.dtype(np.uint32)
        self.buffer = device.tensor((vectors * VECTOR_BYTES // 4,), words, "plain-store")
        self.counts = {name: device.upload(np.array([n, 0, 0, 0], dtype=np.uint32), f"plain-store-{name}",
                                           into=device.tensor((4,), words, "plain-store-count", usage))
                       for name, n in ((STORE, vectors), (EMPTY, 0))}
        self.groups = {name: gpu.create_bind_group(layout=self.pipeline.get_bind_group_layout(0), entries=[
            {"binding": 0, "resource": {"buffer": count.buffer, "offset": 0, "size": count.size}},
            {"binding": 1, "resource": {"buffer": self.buffer.buffer, "offset": 0, "size": self.buffer.size}}])
            for name, count in self.counts.items()}

    def encode(self, name: str, encoder: Any, timestamp_writes: Any = None) -> None:
        """Record one pass of the dispatch ``name`` (``STORE`` or ``EMPTY``)."""
        compute = encoder.begin_compute_pass(timestamp_writes=timestamp_writes)
        compute.set_pipeline(self.pipeline)
        compute.set_bind_group(0, self.groups[name])
        compute.dispatch_workgroups(*self.workgroups)
        compute.end()

    def sampler(self, name: str, timestamps: bool) -> Sampler:
        """Samples of the dispatch ``name`` on the kernel clock (GPU timestamps where ``timestamps``)."""
        if timestamps:
            def record(encoder: Any, query_set: Any, i: int) -> None:
                self.encode(name, encoder, {"query_set": query_set, "beginning_of_pass_write_index": 2 * i,
                                            "end_of_pass_write_index": 2 * i + 1})

            return chunked(lambda n: pass_times_ns(self.device, n, record), MAX_TIMED)

        def submit() -> None:
            encoder = self.device.device.create_command_encoder()
            self.encode(name, encoder)
            self.device.queue.submit([encoder.finish()])

        def fence() -> None:
            self.device.download(self.counts[EMPTY])

        return fenced_wall_sampler(submit, fence)

    def series(self, timestamps: bool) -> dict[Hashable, Sampler]:
        """Both dispatches as named series: ``(STORE, nbytes)`` and ``(EMPTY, nbytes)``."""
        return {(name, self.nbytes): self.sampler(name, timestamps) for name in (STORE, EMPTY)}

    def release(self) -> None:
        for tensor in (self.buffer, *self.counts.values()):
            tensor.release()

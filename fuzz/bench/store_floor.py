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

The *serial floor* is the same bytes stored the way a kernel that stores each checkpoint when its token is done
must store them: by the kernel's own workgroups (``SlotLayout``), one slot after another, each workgroup its tile
of each row, with nothing else to do (``SerialStore``). It is ``1 + extra`` slots minus one slot
(``serial_floor_ns``). The plain floor stores every byte at once from as many workgroups as it takes; the serial
floor is what is left of it for the kernel's geometry (docs/benchmark.md#window-store-cost).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernels import BoundCall, GpuDevice
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


class _StoreDispatch:
    """A store-only compute pipeline over one buffer, with one uniform and bind group per named dispatch; both
    store kernels below are this with their own shader and dispatches. ``release`` frees its buffers."""

    def __init__(self, device: GpuDevice, label: str, shader: str, vectors: int, workgroups: tuple[int, int, int],
                 counts: Mapping[str, int]) -> None:
        self.device, self.workgroups = device, workgroups
        gpu = device.device
        module = gpu.create_shader_module(label=label, code=shader)
        self.pipeline = gpu.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
        usage = device.module.BufferUsage.UNIFORM
        words = np.dtype(np.uint32)
        self.buffer = device.tensor((vectors * VECTOR_BYTES // 4,), words, label)
        self.counts = {name: device.upload(np.array([n, 0, 0, 0], dtype=np.uint32), f"{label}-{name}",
                                           into=device.tensor((4,), words, f"{label}-count", usage))
                       for name, n in counts.items()}
        self.groups = {name: gpu.create_bind_group(layout=self.pipeline.get_bind_group_layout(0), entries=[
            {"binding": 0, "resource": {"buffer": count.buffer, "offset": 0, "size": count.size}},
            {"binding": 1, "resource": {"buffer": self.buffer.buffer, "offset": 0, "size": self.buffer.size}}])
            for name, count in self.counts.items()}

    def encode(self, name: str, encoder: Any, timestamp_writes: Any = None) -> None:
        """Record one pass of the dispatch ``name``."""
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
            self.device.download(next(iter(self.counts.values())))

        return fenced_wall_sampler(submit, fence)

    def release(self) -> None:
        for tensor in (self.buffer, *self.counts.values()):
            tensor.release()


class PlainStore(_StoreDispatch):
    """The store kernel bound to a buffer of ``nbytes`` (rounded up to vectors), with two dispatches: every
    vector stored (``STORE``), or none (``EMPTY``)."""

    def __init__(self, device: GpuDevice, nbytes: int) -> None:
        self.nbytes = nbytes
        vectors = stored_bytes(nbytes) // VECTOR_BYTES
        groups = -(-vectors // WORKGROUP)
        super().__init__(device, "plain-store", STORE_SHADER, vectors,
                         (min(groups, MAX_GROUPS_X), -(-groups // MAX_GROUPS_X), 1), {STORE: vectors, EMPTY: 0})

    def series(self, timestamps: bool) -> dict[Hashable, Sampler]:
        """Both dispatches as named series: ``(STORE, nbytes)`` and ``(EMPTY, nbytes)``."""
        return {(name, self.nbytes): self.sampler(name, timestamps) for name in (STORE, EMPTY)}


SERIAL = "serial"
"""Series name: ``(SERIAL, layout, n)`` stores ``n`` slots one after another from the kernel's workgroups."""


@dataclass(frozen=True)
class SlotLayout:
    """How a call's workgroups split one slot of the state (``[B, H, d_k, d_v]``, rows of ``d_v``), in 16-byte
    vectors: the workgroup of tile ``x`` of head ``y`` of batch ``z`` owns ``tile_vectors`` of every row.

    ``of`` reads it off the kernel's dispatch, so the serial floor stores from the workgroups the kernel has."""

    workgroups: tuple[int, int, int]
    """The kernel's dispatch: (tiles of d_v, kv heads, batch)."""
    invocations: int
    """Invocations per workgroup."""
    rows: int
    """``d_k``: rows of a head's state."""
    tile_vectors: int
    """Vectors of a row each workgroup stores (its tile of ``d_v``)."""
    row_vectors: int
    """Vectors of a whole row (``d_v``)."""

    @classmethod
    def of(cls, call: BoundCall) -> SlotLayout | None:
        """The layout of a bound kernel call; None where a tile's row is not whole vectors (a small or odd
        ``d_v``), so that a vector store would straddle two workgroups' tiles."""
        spec, dims = call.spec, call.dims
        itemsize = np.dtype(spec.dtype).itemsize
        tile_bytes, row_bytes = spec.columns * itemsize, dims.d_v * itemsize
        if tile_bytes % VECTOR_BYTES or row_bytes % VECTOR_BYTES or dims.d_v % spec.columns:
            return None
        return cls(spec.workgroups(dims), spec.invocations, dims.d_k, tile_bytes // VECTOR_BYTES,
                   row_bytes // VECTOR_BYTES)

    @property
    def slot_vectors(self) -> int:
        _, heads, batch = self.workgroups
        return batch * heads * self.rows * self.row_vectors


def serial_shader(layout: SlotLayout) -> str:
    """WGSL storing ``count.slots`` slots one after another: each invocation stores its vectors of the workgroup's
    tile from registers (written out, as the kernel's copy-out is), then goes on to the next slot; no barrier, no
    other work."""
    tile = layout.rows * layout.tile_vectors
    stores = []
    for k in range(-(-tile // layout.invocations)):
        store = (f"let e = lane + {k * layout.invocations}u; stored[base + (e / {layout.tile_vectors}u) * "
                 f"{layout.row_vectors}u + e % {layout.tile_vectors}u] = v + vec4<u32>({k}u, 0u, 0u, 0u);")
        stores.append(f"        {{ {store} }}" if (k + 1) * layout.invocations <= tile
                      else f"        if (lane + {k * layout.invocations}u < {tile}u) {{ {store} }}")
    body = "\n".join(stores)
    return f"""
struct Count {{ slots: u32 }}
@group(0) @binding(0) var<uniform> count: Count;
@group(0) @binding(1) var<storage, read_write> stored: array<vec4<u32>>;

@compute @workgroup_size({layout.invocations})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lane: u32) {{
    let tile = ((wg.z * {layout.workgroups[1]}u + wg.y) * {layout.rows}u) * {layout.row_vectors}u
        + wg.x * {layout.tile_vectors}u;
    var v = vec4<u32>(lane + 1u, wg.x, wg.y, wg.z);
    for (var slot = 0u; slot < count.slots; slot++) {{
        let base = slot * {layout.slot_vectors}u + tile;
{body}
        v = v + vec4<u32>(1u, 0u, 0u, 0u);
    }}
}}
"""


def serial_floor_ns(values: Mapping[Hashable, float], layout: SlotLayout, extra: int) -> float:
    """The serial floor of ``extra`` slots: ``1 + extra`` slots stored one after another minus one (what a ``W = 0``
    call stores)."""
    return values[SERIAL, layout, 1 + extra] - values[SERIAL, layout, 1]


class SerialStore(_StoreDispatch):
    """The serial store kernel of one layout over ``max(slots)`` slots, with a dispatch for each count of slots."""

    def __init__(self, device: GpuDevice, layout: SlotLayout, slots: Iterable[int]) -> None:
        self.layout, wanted = layout, sorted(set(slots))
        super().__init__(device, "serial-store", serial_shader(layout), wanted[-1] * layout.slot_vectors,
                         layout.workgroups, {str(n): n for n in wanted})

    def series(self, timestamps: bool) -> dict[Hashable, Sampler]:
        """Each count of slots ``n`` as the series ``(SERIAL, layout, n)``."""
        return {(SERIAL, self.layout, int(name)): self.sampler(name, timestamps) for name in self.counts}

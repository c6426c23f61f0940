"""Device memory per configuration, from the kernel's own counters (``GpuDevice.memory``).

Expected bytes are computed here from the shapes alone - inputs, the past state (``W`` slots, or
one 4-D state at ``W = 0``), the output, the present state (the declared window) and the kernel's
only scratch, a 64-byte uniform (two where ``T < W``: ``kernels.linear_attention.scratch_bytes``) -
each padded to WebGPU's 4-byte granularity, and compared with the live bytes the counters saw appear
when the call was bound. Growth is the change in live bytes,
live buffers and allocations over many select-and-resume cycles (dispatch, slot copy) after
that: it must be zero for every counter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TypedDict

import numpy as np

from kernels.device import GpuDevice
from kernels.linear_attention import scratch_bytes
from oracles.rollback import represented_acceptances

from .workload import Shape, Workload


def _padded(elements: int, dtype: str) -> int:
    return max(4, -(-elements * np.dtype(dtype).itemsize // 4) * 4)


def expected_bytes(shape: Shape, seq_len: int, window: int, dtype: str) -> dict[str, int]:
    """Declared device bytes of one bound call, by part: inputs, past_state, output, window, scratch."""
    b, h, d_k, d_v = shape.slot_shape()
    slots = max(window, 1)
    state = _padded(slots * b * h * d_k * d_v, dtype)
    token_rows = b * seq_len * h
    inputs = sum(_padded(n, dtype) for n in (token_rows * d_k, token_rows * d_k, token_rows * d_v, token_rows,
                                             token_rows))
    return {
        "inputs": inputs,
        "past_state": state,
        "output": _padded(token_rows * d_v, dtype),
        "window": state,
        "scratch": scratch_bytes(window, seq_len),
    }


@dataclass
class Snapshot:
    """The three counters at one moment."""

    live_bytes: int
    live_buffers: int
    allocations: int

    @classmethod
    def of(cls, device: GpuDevice) -> Snapshot:
        m = device.memory
        return cls(m.live_bytes, m.live_buffers, m.allocations)

    def minus(self, other: Snapshot) -> Snapshot:
        return Snapshot(self.live_bytes - other.live_bytes, self.live_buffers - other.live_buffers,
                        self.allocations - other.allocations)


def bind_tracked(device: GpuDevice, make: Callable[[], Workload]) -> tuple[Workload, Snapshot]:
    """Create a workload and return it with the counters' change while it was created."""
    before = Snapshot.of(device)
    workload = make()
    return workload, Snapshot.of(device).minus(before)


def growth(workload: Workload, calls: int) -> Snapshot:
    """Counter change over ``calls`` steady-state cycles: dispatch, then (``W > 0``) accept a represented
    prefix (rebinding where it can, as a caller would) and resume from it."""
    device = workload.kernel.device
    accepted = list(represented_acceptances(workload.seq_len, workload.window)) if workload.window else []
    before = Snapshot.of(device)
    call = workload.call
    for i in range(calls):
        call.dispatch()
        if accepted:
            call = workload.kernel.accept(call, accepted[i % len(accepted)]).call
    workload.fence()
    return Snapshot.of(device).minus(before)


class MemoryRecord(TypedDict):
    """What ``memory_record`` reports of one configuration (bytes and counts)."""

    expected: dict[str, int]
    expected_total: int
    bound: dict[str, int]
    growth_calls: int
    growth: dict[str, int]


def memory_record(workload: Workload, bound: Snapshot, calls: int) -> MemoryRecord:
    """JSON-ready: expected parts and total, measured live bytes/buffers/allocations, growth over ``calls``."""
    parts = expected_bytes(workload.shape, workload.seq_len, workload.window, workload.dtype)
    return {
        "expected": parts,
        "expected_total": sum(parts.values()),
        "bound": asdict(bound),
        "growth_calls": calls,
        "growth": asdict(growth(workload, calls)),
    }

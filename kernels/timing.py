"""Kernel time on the GPU through timestamp queries: what the host-side wall clock cannot see.

Each measured iteration is recorded into one command buffer with a beginning and an end
timestamp, so the measured times exclude submission and readback. ``kernel_times_ns`` times one
``BoundCall`` pass by pass; ``span_times_ns`` times a sequence (a call, optional commands such as
a slot copy, another call) from the first pass's beginning to the last pass's end, which is how a
copy - a command that cannot carry timestamps itself - gets a GPU time: as the difference between
spans with and without it. WebGPU timestamps are nanoseconds. Dawn quantizes them by default
(seen on lavapipe: multiples of 65536 ns), so short kernels need many iterations or wgpu-native
for a useful resolution.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .device import GpuDevice
from .resident import BoundCall

DAWN_TIMESTAMP_QUANTUM_NS = 65536
"""Dawn's default timestamp quantization: every time it reports is a multiple of this (lavapipe, H200)."""


def pass_times_ns(device: GpuDevice, iterations: int, record: Callable[[Any, Any, int], None]) -> np.ndarray:
    """Record ``iterations`` timed sequences into one command buffer; return each one's end - beginning (ns).

    ``record(encoder, query_set, i)`` writes iteration ``i``'s beginning timestamp at ``2*i`` and its end
    at ``2*i + 1``. The query set and its resolve buffer live only for this measurement. Any pass of the
    device can be timed so (the kernel's calls here, the benchmark's plain store kernel).
    """
    device.require("timestamp-query", "GPU kernel timing")
    if iterations < 1:
        raise ValueError(f"GPU timing: iterations must be >= 1, got {iterations}")
    count = 2 * iterations
    query_set = device.device.create_query_set(type="timestamp", count=count)
    resolved = device.tensor((count,), np.uint64, "timestamps", device.module.BufferUsage.QUERY_RESOLVE)
    try:
        encoder = device.device.create_command_encoder()
        for i in range(iterations):
            record(encoder, query_set, i)
        encoder.resolve_query_set(query_set, 0, count, resolved.buffer, 0)
        device.queue.submit([encoder.finish()])
        stamps = device.download(resolved).astype(np.int64)
    finally:
        resolved.release()
        query_set.destroy()
    return (stamps[1::2] - stamps[0::2]).astype(np.float64)


def kernel_times_ns(call: BoundCall, iterations: int) -> np.ndarray:
    """Run ``call`` ``iterations`` times back to back; return each pass's GPU time in nanoseconds.

    Needs the ``timestamp-query`` feature (``FeatureMissing`` otherwise).
    """
    def record(encoder: Any, query_set: Any, i: int) -> None:
        call.encode(encoder, timestamp_writes={
            "query_set": query_set, "beginning_of_pass_write_index": 2 * i, "end_of_pass_write_index": 2 * i + 1,
        })

    return pass_times_ns(call.kernel.device, iterations, record)


def span_times_ns(first: BoundCall, last: BoundCall, iterations: int,
                  between: Callable[[Any], None] | None = None) -> np.ndarray:
    """GPU time from the beginning of ``first``'s pass to the end of ``last``'s, ``iterations`` times.

    ``between(encoder)``, when given, records commands between the two passes (e.g.
    ``LinearAttentionKernel.encode_slot_copy``). Both calls must live on one device.
    """
    if first.kernel.device is not last.kernel.device:
        raise ValueError("span_times_ns: both calls must run on one device")

    def record(encoder: Any, query_set: Any, i: int) -> None:
        first.encode(encoder, timestamp_writes={"query_set": query_set, "beginning_of_pass_write_index": 2 * i})
        if between is not None:
            between(encoder)
        last.encode(encoder, timestamp_writes={"query_set": query_set, "end_of_pass_write_index": 2 * i + 1})

    return pass_times_ns(first.kernel.device, iterations, record)

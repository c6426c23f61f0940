"""Kernel time on the GPU through timestamp queries: what the host-side wall clock cannot see.

Each dispatch of a ``BoundCall`` is its own compute pass with a beginning and an end timestamp,
all recorded in one command buffer, so the measured times exclude submission and readback.
WebGPU timestamps are nanoseconds. Dawn quantizes them by default (seen on lavapipe: multiples of
65536 ns), so short kernels need many iterations or wgpu-native for a useful resolution.
"""

from __future__ import annotations

import numpy as np

from .linear_attention import BoundCall


def kernel_times_ns(call: BoundCall, iterations: int) -> np.ndarray:
    """Run ``call`` ``iterations`` times back to back; return each pass's GPU time in nanoseconds.

    Needs the ``timestamp-query`` feature (``FeatureMissing`` otherwise). The query set and its
    resolve buffer (16 bytes per iteration) live only for this measurement.
    """
    device = call.kernel.device
    device.require("timestamp-query", "GPU kernel timing")
    if iterations < 1:
        raise ValueError(f"kernel_times_ns: iterations must be >= 1, got {iterations}")
    count = 2 * iterations
    query_set = device.device.create_query_set(type="timestamp", count=count)
    resolved = device.tensor((count,), np.uint64, "timestamps", device.module.BufferUsage.QUERY_RESOLVE)
    try:
        encoder = device.device.create_command_encoder()
        for i in range(iterations):
            call.encode(encoder, timestamp_writes={
                "query_set": query_set, "beginning_of_pass_write_index": 2 * i, "end_of_pass_write_index": 2 * i + 1,
            })
        encoder.resolve_query_set(query_set, 0, count, resolved.buffer, 0)
        device.queue.submit([encoder.finish()])
        stamps = device.download(resolved).astype(np.int64)
    finally:
        resolved.release()
        query_set.destroy()
    return (stamps[1::2] - stamps[0::2]).astype(np.float64)

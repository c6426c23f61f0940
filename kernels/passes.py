"""One compute pass of a kernel that binds whole buffers: its pipeline, uniform, bind group, grid and recording.

What the kernels without a state window share (``kernels.gated_delta_net``, ``kernels.state_replay``); the windowed
ones have the richer machinery of ``kernels.resident``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .device import DeviceTensor, GpuDevice

MAX_WORKGROUPS_PER_DIMENSION = 65535
"""WebGPU's default ``maxComputeWorkgroupsPerDimension``: past it, workgroups continue along y."""


def grid(invocations: int, workgroup_size: int) -> tuple[int, int, int]:
    """Workgroups for ``invocations`` one-per-element invocations: along x, then y past the per-dimension limit."""
    groups = max(1, -(-invocations // workgroup_size))
    x = min(groups, MAX_WORKGROUPS_PER_DIMENSION)
    return x, -(-groups // x), 1


def compile_pipeline(device: GpuDevice, label: str, code: str) -> Any:
    """A compute pipeline of ``code`` (entry point ``main``, layout from the shader)."""
    module = device.device.create_shader_module(label=label, code=code)
    return device.device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})


def uniform_buffer(device: GpuDevice, words: np.ndarray, label: str) -> DeviceTensor:
    """A uniform buffer holding ``words``."""
    usage = device.module.BufferUsage.UNIFORM
    return device.upload(words, label, into=device.tensor(words.shape, words.dtype, label, usage))


def bind_group(device: GpuDevice, pipeline: Any, tensors: list[DeviceTensor]) -> Any:
    """The bind group of ``tensors`` at bindings 0.. in order, each bound whole."""
    entries = [{"binding": i, "resource": {"buffer": t.buffer, "offset": 0, "size": t.size}}
               for i, t in enumerate(tensors)]
    return device.device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=entries)


def encode_pass(encoder: Any, pipeline: Any, group: Any, workgroups: tuple[int, int, int],
                timestamp_writes: Any = None) -> None:
    """Record one compute pass of ``pipeline`` over ``group`` into a command encoder (with the pass's timestamp
    writes where given, so that a benchmark can time it on the GPU)."""
    compute = encoder.begin_compute_pass(timestamp_writes=timestamp_writes)
    compute.set_pipeline(pipeline)
    compute.set_bind_group(0, group)
    compute.dispatch_workgroups(*workgroups)
    compute.end()

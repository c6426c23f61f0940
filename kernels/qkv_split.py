"""The split between a gated DeltaNet layer's convolution and its linear attention, on the GPU.

``QkvSplit.bind`` binds a CausalConvWithState output tensor (either layout) and three LinearAttention input
tensors, query, key and value, each ``(B, T, width)``; the returned ``SplitCall`` copies the channels into them
(``oracles.block.split_qkv``, bits unchanged) when encoded, so that the conv call, the split and the
LinearAttention call run as one command buffer with nothing passing through the host. One pipeline per
storage type (``kernels/qkv_split.wgsl``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from oracles.block import QkvWidths

from .device import DeviceTensor, GpuDevice
from .shader import fill_template, kernel_file

TEMPLATE = "qkv_split.wgsl"
WORKGROUP_SIZE = 64
MAX_WORKGROUPS_PER_DIMENSION = 65535
PARAM_WORDS = 8


@dataclass
class SplitCall:
    """One split bound to its tensors: ``encode`` it after the conv call that writes ``source``."""

    split: QkvSplit
    params: DeviceTensor
    pipeline: Any
    bind_group: Any
    workgroups: tuple[int, int, int]

    def encode(self, encoder: Any) -> None:
        """Record the split's compute pass into a command encoder."""
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(self.pipeline)
        compute.set_bind_group(0, self.bind_group)
        compute.dispatch_workgroups(*self.workgroups)
        compute.end()

    def release(self) -> None:
        """Free the uniform (the bound tensors belong to the caller)."""
        self.params.release()


class QkvSplit:
    """The split's pipelines on one device."""

    def __init__(self, device: GpuDevice) -> None:
        self.device = device
        self._pipelines: dict[str, Any] = {}

    def pipeline(self, dtype: str) -> Any:
        """The split's pipeline for a storage type, compiled once."""
        if dtype not in self._pipelines:
            if dtype == "float16":
                self.device.require("shader-f16", "float16 q/k/v split")
            store = "f16" if dtype == "float16" else "f32"
            code = fill_template(kernel_file(TEMPLATE), {"ENABLE": "enable f16;" if store == "f16" else "",
                                                        "STORE": store, "WG": str(WORKGROUP_SIZE)})
            gpu = self.device.device
            module = gpu.create_shader_module(label=f"qkv_split {dtype}", code=code)
            self._pipelines[dtype] = gpu.create_compute_pipeline(
                layout="auto", compute={"module": module, "entry_point": "main"})
        return self._pipelines[dtype]

    def bind(self, source: DeviceTensor, query: DeviceTensor, key: DeviceTensor, value: DeviceTensor, *,
             channels_last: bool) -> SplitCall:
        """The split of ``source`` (``(B, T, C)`` channels last, ``(B, C, T)`` channels first) into the three
        ``(B, T, width)`` tensors; ``ValueError`` where their shapes or dtypes do not fit together."""
        widths = QkvWidths(query.shape[-1], key.shape[-1], value.shape[-1])
        batch, seq_len = query.shape[:2]
        expected = (batch, seq_len, widths.channels) if channels_last else (batch, widths.channels, seq_len)
        if source.shape != expected or any(t.shape[:2] != (batch, seq_len) for t in (key, value)):
            raise ValueError(f"qkv split: {source.shape} into {query.shape}, {key.shape}, {value.shape} "
                             f"({'channels last' if channels_last else 'channels first'})")
        if len({source.dtype, query.dtype, key.dtype, value.dtype}) != 1:
            raise ValueError("qkv split: the four tensors must share one dtype")
        words = np.zeros(PARAM_WORDS, dtype=np.uint32)
        words[:6] = (batch, seq_len, widths.channels, int(channels_last), widths.query, widths.key)
        usage = self.device.module.BufferUsage.UNIFORM
        params = self.device.upload(words, "split-params",
                                    into=self.device.tensor((PARAM_WORDS,), np.uint32, "split-params", usage))
        pipeline = self.pipeline(str(source.dtype))
        entries = [{"binding": i, "resource": {"buffer": t.buffer, "offset": 0, "size": t.size}}
                   for i, t in enumerate((params, source, query, key, value))]
        group = self.device.device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=entries)
        groups = max(1, -(-batch * seq_len * widths.channels // WORKGROUP_SIZE))
        x = min(groups, MAX_WORKGROUPS_PER_DIMENSION)
        return SplitCall(self, params, pipeline, group, (x, -(-groups // x), 1))


_SPLITS: dict[int, QkvSplit] = {}


def get_split(device: GpuDevice) -> QkvSplit:
    """The process-wide split of a device, made on first use."""
    if id(device) not in _SPLITS:
        _SPLITS[id(device)] = QkvSplit(device)
    return _SPLITS[id(device)]

"""GatedDeltaNetStateReplay on WebGPU: replay captured transitions over a source state on the device.

``StateReplayKernel.prepare`` validates a replay by the oracle's rules (``oracles.gated_delta_net.validate_replay``:
the same messages) on device backings and returns a ``ReplayCall`` to encode or dispatch; the descriptor is its
uniform, so no host round trip is needed between a GatedDeltaNet call and the replay that resumes from it
(``kernels.gated_delta_net.GatedDeltaNetKernel.accept``). ``state_replay`` is the op with NumPy in and out.
Float32 only, as the op is: one pipeline per device (``kernels/state_replay.wgsl``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from oracles.gated_delta_net import ReplayDims, validate_replay

from .device import DeviceTensor, GpuDevice, get_device
from .passes import bind_group, compile_pipeline, encode_pass, grid, uniform_buffer
from .shader import fill_template, kernel_file

TEMPLATE = "state_replay.wgsl"
WORKGROUP_SIZE = 64
PARAM_WORDS = 12
"""The uniform: the descriptor's 11 fields, padded to a multiple of 16 bytes."""


def flat(tensor: DeviceTensor) -> np.ndarray:
    """A zero-byte rank-1 array of a device tensor's elements and dtype: what the replay's validation reads."""
    return np.broadcast_to(np.zeros((), dtype=tensor.dtype), (int(np.prod(tensor.shape)),))


@dataclass
class ReplayCall:
    """One replay bound to its backings: ``encode`` it after the call that wrote the capsule."""

    dims: ReplayDims
    params: DeviceTensor
    pipeline: Any
    group: Any

    def encode(self, encoder: Any, timestamp_writes: Any = None) -> None:
        """Record the replay's compute pass into a command encoder (with its timestamp writes where given)."""
        encode_pass(encoder, self.pipeline, self.group, grid(self.dims.state_elements, WORKGROUP_SIZE),
                    timestamp_writes)

    def release(self) -> None:
        """Free the uniform (the backings belong to the caller)."""
        self.params.release()


class StateReplayKernel:
    """The replay's pipeline on one device."""

    def __init__(self, device: GpuDevice) -> None:
        self.device = device
        self.pipeline = compile_pipeline(device, "state_replay",
                                         fill_template(kernel_file(TEMPLATE), {"WG": str(WORKGROUP_SIZE)}))

    def prepare(self, source_backing: DeviceTensor, capsule_backing: DeviceTensor,
                destination_backing: DeviceTensor, metadata: np.ndarray) -> ReplayCall:
        """Validate a replay of device backings (``metadata`` on the host, as the op takes it) and bind it. A backing
        is any float32 tensor, read as its elements in order (a ``(B, H_v, d_v, d_k)`` state, a ``(B, R)`` capsule).

        Raises ``ValidationError`` for a replay the contract refuses, the destination bound to the source's or the
        capsule's buffer among them; nothing is written then.
        """
        same = tuple(name for name, t in (("source_backing", source_backing), ("capsule_backing", capsule_backing))
                     if t.buffer is destination_backing.buffer)
        dims = validate_replay(flat(source_backing), flat(capsule_backing), flat(destination_backing), metadata,
                               same_buffer=same)
        words = np.zeros(PARAM_WORDS, dtype=np.uint32)
        words[:11] = metadata
        params = uniform_buffer(self.device, words, "replay-params")
        group = bind_group(self.device, self.pipeline, [params, source_backing, capsule_backing, destination_backing])
        return ReplayCall(dims, params, self.pipeline, group)


_KERNELS: dict[int, StateReplayKernel] = {}


def get_replay_kernel(device: GpuDevice) -> StateReplayKernel:
    """The process-wide replay kernel of a device, made on first use."""
    if id(device) not in _KERNELS:
        _KERNELS[id(device)] = StateReplayKernel(device)
    return _KERNELS[id(device)]


def state_replay(source_backing: np.ndarray, capsule_backing: np.ndarray, destination_backing: np.ndarray,
                 metadata: np.ndarray, *, implementation: str = "wgpu", adapter: str | int | None = None,
                 shared: bool = False) -> np.ndarray:
    """The ONNX ``com.microsoft::GatedDeltaNetStateReplay`` operator on WebGPU, NumPy in and out.

    Returns ``destination_out`` (float32). ``shared`` binds the source and the capsule as one device buffer (they
    must then be equal arrays). Raises ``ValidationError`` for a replay the contract refuses.
    """
    device = get_device(implementation, adapter)
    validate_replay(source_backing, capsule_backing, destination_backing, metadata)
    source = device.upload(np.asarray(source_backing, np.float32), "source_backing")
    capsule = source if shared else device.upload(np.asarray(capsule_backing, np.float32), "capsule_backing")
    destination = device.upload(np.asarray(destination_backing, np.float32), "destination_backing")
    call = get_replay_kernel(device).prepare(source, capsule, destination, metadata)
    try:
        encoder = device.device.create_command_encoder()
        call.encode(encoder)
        device.queue.submit([encoder.finish()])
        return device.download(destination)
    finally:
        call.release()
        for tensor in {id(t): t for t in (source, capsule, destination)}.values():
            tensor.release()

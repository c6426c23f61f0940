"""The capsule design's calls bound on the device: GatedDeltaNet's verify call and the replays that restore from it.

``CapsuleWork`` binds one GatedDeltaNet call over ``T`` tokens at a benchmark shape (``H_q = H_k = H_v``, the gates
given, as ``fuzz.bench.workload``'s LinearAttention calls take them, so the two kernels do the same recurrence on
the same inputs), capturing its first ``min(C, T)`` transitions where ``C > 0`` and with no capsule at ``C = 0``
(no rollback support). Its initial and final states are separate buffers, so the replay of ``a`` entries over the
initial state (``replay(a)``) can follow the call. Samplers time both on the kernel clock, buffers reused.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernels import GpuDevice
from kernels.gated_delta_net import GatedDeltaNetKernel, GdnCall
from kernels.state_replay import ReplayCall, StateReplayKernel
from oracles.gated_delta_net import replay_descriptor

from .kernel_timing import recorded_sampler
from .protocol import Sampler
from .workload import UPDATE_RULE, Shape, host_inputs


def gdn_inputs(shape: Shape, seq_len: int, dtype: str) -> dict[str, np.ndarray]:
    """The LinearAttention bench's inputs at ``W = 0`` in GatedDeltaNet's layout: ``(B, T, H, d)`` tokens, float32
    gates, and the past state transposed to V-major float32."""
    given = host_inputs(shape, seq_len, 0, dtype)
    b, h, d_k, d_v = shape.slot_shape()
    return {"query": given["query"].reshape(b, seq_len, h, d_k), "key": given["key"].reshape(b, seq_len, h, d_k),
            "value": given["value"].reshape(b, seq_len, h, d_v), "decay": given["decay"].astype(np.float32),
            "beta": given["beta"].astype(np.float32),
            "initial_state": given["past_state"].astype(np.float32).transpose(0, 1, 3, 2).copy()}


class CapsuleWork:
    """One GatedDeltaNet call (capsule of capacity ``capacity``, none at 0) bound with its inputs; ``release``
    frees everything it made."""

    def __init__(self, kernel: GatedDeltaNetKernel, replay: StateReplayKernel, shape: Shape, seq_len: int,
                 capacity: int, dtype: str) -> None:
        self.kernel, self.replay, self.seq_len, self.capacity = kernel, replay, seq_len, capacity
        device = kernel.device
        self.inputs = {name: device.upload(x, name) for name, x in gdn_inputs(shape, seq_len, dtype).items()}
        given = self.inputs
        self.call: GdnCall = kernel.prepare(
            given["query"], given["key"], given["value"], decay=given["decay"], beta=given["beta"],
            initial_state=given["initial_state"],
            capture_count=np.full(shape.batch, capacity, np.int32) if capacity else None,
            update_rule=UPDATE_RULE, state_update_capacity=capacity)
        self.restored = device.tensor(self.call.dims.state_shape, np.float32, "restored-state")
        self.replays: dict[int, ReplayCall] = {}

    @property
    def device(self) -> GpuDevice:
        return self.kernel.device

    def replay_of(self, accepted: int) -> ReplayCall:
        """The replay of the first ``accepted`` entries of every request over the call's initial state, bound once."""
        if accepted not in self.replays:
            dims = self.call.dims
            if dims.batch > 1 or not 1 <= accepted <= dims.captured[0]:
                raise ValueError(f"replay: the bench replays one request (B = 1) of at most its captured "
                                 f"{list(dims.captured)} entries; asked {accepted} of B = {dims.batch}")
            metadata = replay_descriptor(dims, 0, accepted)
            self.replays[accepted] = self.replay.prepare(self.inputs["initial_state"], self.call.state_update,
                                                         self.restored, metadata)
        return self.replays[accepted]

    def fence(self) -> None:
        """Wait for the queue by reading the call's output back."""
        self.device.download(self.call.output)

    def sampler(self, clock: str, accepted: int = 0) -> Sampler:
        """Samples of the verify call, or (``accepted >= 1``) of the span [verify call, ``replay(accepted)``]."""
        then = self.replay_of(accepted) if accepted else None

        def record(encoder: Any, begin: dict[str, Any] | None, end: dict[str, Any] | None) -> None:
            if then is None:
                self.call.encode(encoder, None if begin is None or end is None else {**begin, **end})
                return
            self.call.encode(encoder, begin)
            then.encode(encoder, end)

        return recorded_sampler(self.device, clock, record, self.fence)

    def release(self) -> None:
        for replay in self.replays.values():
            replay.release()
        self.call.release()
        for tensor in (*self.inputs.values(), self.call.output, self.call.final_state, self.call.state_update,
                       self.restored):
            tensor.release()

"""Timing the suite's kernel: verification calls, checkpoint selection, and the wall clocks.

The kernel clock is ``gpu-timestamp`` where the adapter has the ``timestamp-query`` feature,
otherwise ``wall-fenced`` (a device-resident dispatch, then a readback that waits for the queue).

verify_W is the p50 of one call over ``T`` tokens at window ``W``. checkpoint_select(a) is what
selecting the slot that holds ``a`` tokens adds to a resumed sequence, on one of two paths:

- rebind (where the slot's offset is aligned): the next call reads its seed straight from the
  slot: the p50 span of [call, call seeded from the slot] minus the p50 span of [call, call]
  (about zero: no GPU work is added). The host creates one bind group per slot, once; its time
  is reported beside it, not added, since a resumed sequence reuses it.
- copy: the p50 span of [call, copy of the slot, call] minus the same baseline, so it includes the
  copy and the barrier it adds: the whole GPU-side cost of selecting that way.

Both are measured where both are possible; checkpoint_select(a) is the rebind where it exists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernels import BoundCall, kernel_times_ns
from kernels.timing import span_times_ns
from oracles.rollback import slot_for_accepted

from .protocol import (
    FENCED_CLOCK,
    GPU_CLOCK,
    HOST_CLOCK,
    Protocol,
    Sampler,
    Timing,
    chunked,
    fenced_wall_sampler,
    run_protocol,
    wall_timings,
)
from .workload import Workload

MAX_TIMED = 1024
"""Timed iterations per command buffer: two timestamps each, within WebGPU's 4096-query limit."""


def kernel_clock(workload: Workload) -> str:
    """The clock the kernel is timed with on this device."""
    return GPU_CLOCK if "timestamp-query" in workload.kernel.device.features else FENCED_CLOCK


def _sequence_sampler(workload: Workload, between: Callable[[Any], None] | None,
                      last: BoundCall | None = None) -> Sampler:
    """Samples of [call, ``between``, ``last`` (default: the call again)] on the kernel clock."""
    call: BoundCall = workload.call
    last = last or call
    if kernel_clock(workload) == GPU_CLOCK:
        return chunked(lambda n: span_times_ns(call, last, n, between), MAX_TIMED)
    device = workload.kernel.device

    def submit() -> None:
        encoder = device.device.create_command_encoder()
        call.encode(encoder)
        if between is not None:
            between(encoder)
        last.encode(encoder)
        device.queue.submit([encoder.finish()])

    return fenced_wall_sampler(submit, workload.fence)


def verify_timing(workload: Workload, protocol: Protocol) -> Timing:
    """One call over ``T`` tokens at window ``W``, under the protocol, on the kernel clock."""
    call = workload.call
    if kernel_clock(workload) == GPU_CLOCK:
        return run_protocol(protocol, GPU_CLOCK, chunked(lambda n: kernel_times_ns(call, n), MAX_TIMED))
    return run_protocol(protocol, FENCED_CLOCK, fenced_wall_sampler(call.dispatch, workload.fence))


def resume_baseline(workload: Workload, protocol: Protocol) -> Timing:
    """The span of two consecutive calls with nothing between them."""
    return run_protocol(protocol, kernel_clock(workload), _sequence_sampler(workload, None))


def _slot(workload: Workload, accepted: int) -> int:
    slot = slot_for_accepted(workload.seq_len, workload.window, accepted)
    if slot is None:
        raise ValueError("checkpoint selection: a zero-token acceptance selects no slot")
    return slot


def resume_with_copy(workload: Workload, accepted: int, protocol: Protocol) -> Timing:
    """The span of [call, copy of the slot holding ``accepted`` tokens into past_state[W-1], call]."""
    slot = _slot(workload, accepted)
    past = workload.inputs["past_state"]
    present = workload.call.present_state
    kernel = workload.kernel

    def copy(encoder: Any) -> None:
        kernel.encode_slot_copy(encoder, present, slot, past, workload.window - 1)

    return run_protocol(protocol, kernel_clock(workload), _sequence_sampler(workload, copy))


def resume_with_rebind(workload: Workload, accepted: int, protocol: Protocol) -> Timing:
    """The span of [call, call seeded from the slot holding ``accepted`` tokens] (writing the past state)."""
    call = workload.call
    rebound = call.with_seed(call.present_state, _slot(workload, accepted), workload.inputs["past_state"])
    return run_protocol(protocol, kernel_clock(workload), _sequence_sampler(workload, None, rebound))


def bind_group_time(workload: Workload, accepted: int, protocol: Protocol) -> Timing:
    """Host time to create the bind group that seeds the next call from the slot (uncached)."""
    call = workload.call
    bound = {**call.tensors, "past_state": call.present_state, "present_state": workload.inputs["past_state"]}
    slot = _slot(workload, accepted)

    def create() -> None:
        call.make_bind_group(bound, slot)

    return run_protocol(protocol, HOST_CLOCK, fenced_wall_sampler(create, lambda: None))


@dataclass(frozen=True)
class SelectCost:
    """checkpoint_select(a) in nanoseconds on each path measured, and the path a caller would take."""

    copy_ns: float
    rebind_ns: float | None
    """None where the slot cannot be rebound (``reason`` says why)."""
    bind_group_ns: float | None
    """Host time to create the rebind's bind group once (not part of ``selected_ns``)."""
    reason: str | None

    @property
    def path(self) -> str:
        return "copy" if self.rebind_ns is None else "rebind"

    @property
    def selected_ns(self) -> float:
        return self.copy_ns if self.rebind_ns is None else self.rebind_ns


def select_costs(workload: Workload, accepted: list[int], protocol: Protocol) -> dict[int, SelectCost]:
    """checkpoint_select(a) for each represented ``a``: each path's span minus the span of two plain calls."""
    baseline = resume_baseline(workload, protocol).p50
    costs = {}
    for a in accepted:
        reason = workload.kernel.rebind_blocker(workload.call, _slot(workload, a))
        rebind = bind_group = None
        if reason is None:
            rebind = resume_with_rebind(workload, a, protocol).p50 - baseline
            bind_group = bind_group_time(workload, a, protocol).p50
        costs[a] = SelectCost(resume_with_copy(workload, a, protocol).p50 - baseline, rebind, bind_group, reason)
    return costs


def wall_clock_timings(workload: Workload, protocol: Protocol) -> dict[str, Timing]:
    """The kernel timed like the ORT EP: per-call wall time with a fence, and pipelined."""
    return wall_timings(protocol, workload.call.dispatch, workload.fence)


"""Timing the suite's kernel: verification calls, checkpoint selection, and the wall clocks.

The kernel clock is ``gpu-timestamp`` where the adapter has the ``timestamp-query`` feature,
otherwise ``wall-fenced`` (a device-resident dispatch, then a readback that waits for the queue).

verify_W is the p50 of one call over ``T`` tokens at window ``W``. checkpoint_select(a) is what a
slot copy adds to a resumed sequence: the p50 span of [call, copy slot ``a``, call] minus the p50
span of [call, call], both from the first pass's beginning to the last pass's end. It therefore
includes the copy and the barrier it adds; that is the whole GPU-side cost of selecting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernels import BoundCall, kernel_times_ns
from kernels.timing import span_times_ns
from oracles.rollback import slot_for_accepted

from .protocol import (
    FENCED_CLOCK,
    GPU_CLOCK,
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


def _sequence_sampler(workload: Workload, between: Callable[[Any], None] | None) -> Sampler:
    """Samples of [call, ``between``, call] on the kernel clock."""
    call: BoundCall = workload.call
    if kernel_clock(workload) == GPU_CLOCK:
        return chunked(lambda n: span_times_ns(call, call, n, between), MAX_TIMED)
    device = workload.kernel.device

    def submit() -> None:
        encoder = device.device.create_command_encoder()
        call.encode(encoder)
        if between is not None:
            between(encoder)
        call.encode(encoder)
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


def resume_with_select(workload: Workload, accepted: int, protocol: Protocol) -> Timing:
    """The span of [call, copy of the slot holding ``accepted`` tokens into past_state[W-1], call]."""
    slot = slot_for_accepted(workload.seq_len, workload.window, accepted)
    if slot is None:
        raise ValueError("resume_with_select: a zero-token acceptance selects no slot")
    past = workload.inputs["past_state"]
    present = workload.call.present_state
    kernel = workload.kernel

    def copy(encoder: Any) -> None:
        kernel.encode_slot_copy(encoder, present, slot, past, workload.window - 1)

    return run_protocol(protocol, kernel_clock(workload), _sequence_sampler(workload, copy))


def select_costs_ns(workload: Workload, accepted: list[int], protocol: Protocol) -> dict[int, float]:
    """checkpoint_select(a) in nanoseconds for each represented ``a``: span with the copy - span without."""
    baseline = resume_baseline(workload, protocol).p50
    return {a: resume_with_select(workload, a, protocol).p50 - baseline for a in accepted}


def wall_clock_timings(workload: Workload, protocol: Protocol) -> dict[str, Timing]:
    """The kernel timed like the ORT EP: per-call wall time with a fence, and pipelined."""
    return wall_timings(protocol, workload.call.dispatch, workload.fence)


"""The series the benchmark times on the kernel clock, and the checkpoint-selection costs they give.

The kernel clock is ``gpu-timestamp`` where the adapter has the ``timestamp-query`` feature,
otherwise ``wall-fenced`` (a device-resident dispatch, then a readback that waits for the queue).
Each function here returns a *sampler* over one bound workload (its buffers reused for every
sample); ``fuzz.bench.rounds`` runs them interleaved.

verify_W is one call over ``T`` tokens at window ``W``. checkpoint_select(a) is what selecting the
slot that holds ``a`` tokens adds to a resumed sequence, on one of two paths:

- rebind (where the slot's offset is aligned): the next call reads its seed straight from the
  slot: span [call, call seeded from the slot] minus span [call, call] (about zero: no GPU work
  is added). The host creates the bind groups of each slot (two where ``T < W``: see
  ``BoundCall.skip_group``), once; their time is reported beside it, not added, since a resumed
  sequence reuses them.
- copy: span [call, copy of the slot, call] minus the same baseline, so it includes the copy and
  the barrier it adds: the whole GPU-side cost of selecting that way.

Both are measured where both are possible; checkpoint_select(a) is the rebind where it exists.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from kernels import BoundCall, GpuDevice, kernel_times_ns
from kernels.timing import pass_times_ns, span_times_ns
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
from .rollback import represented_rejections
from .workload import Workload

MAX_TIMED = 1024
"""Timed iterations per command buffer: two timestamps each, within WebGPU's 4096-query limit."""


Record = Callable[[Any, dict[str, Any] | None, dict[str, Any] | None], None]
"""Records passes into an encoder, with the timestamp writes of the first pass's beginning and the last's end
(None, None where nothing is timed on the GPU)."""


def recorded_sampler(device: GpuDevice, clock: str, record: Record, fence: Callable[[], None]) -> Sampler:
    """Samples of what ``record`` records on ``clock``: GPU timestamps from its first pass's beginning to its last
    pass's end, or one submission and ``fence`` on the host (``FENCED_CLOCK``)."""
    if clock == GPU_CLOCK:
        def timed(encoder: Any, query_set: Any, i: int) -> None:
            record(encoder, {"query_set": query_set, "beginning_of_pass_write_index": 2 * i},
                   {"query_set": query_set, "end_of_pass_write_index": 2 * i + 1})
        return chunked(lambda n: pass_times_ns(device, n, timed), MAX_TIMED)

    def submit() -> None:
        encoder = device.device.create_command_encoder()
        record(encoder, None, None)
        device.queue.submit([encoder.finish()])
    return fenced_wall_sampler(submit, fence)


def kernel_clock(workload: Workload) -> str:
    """The clock the kernel is timed with on this device."""
    return GPU_CLOCK if "timestamp-query" in workload.kernel.device.features else FENCED_CLOCK


def span_sampler(workload: Workload, between: Callable[[Any], None] | None = None,
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


def verify_sampler(workload: Workload) -> Sampler:
    """Samples of one call over ``T`` tokens at window ``W`` on the kernel clock."""
    call = workload.call
    if kernel_clock(workload) == GPU_CLOCK:
        return chunked(lambda n: kernel_times_ns(call, n), MAX_TIMED)
    return fenced_wall_sampler(call.dispatch, workload.fence)


def _slot(workload: Workload, accepted: int) -> int:
    slot = slot_for_accepted(workload.seq_len, workload.window, accepted)
    if slot is None:
        raise ValueError("checkpoint selection: a zero-token acceptance selects no slot")
    return slot


def _copy_sampler(workload: Workload, slot: int) -> Sampler:
    """Spans of [call, copy of slot ``slot`` into past_state[W-1], call]."""
    past = workload.inputs["past_state"]
    present = workload.call.present_state
    kernel = workload.kernel

    def copy(encoder: Any) -> None:
        kernel.encode_slot_copy(encoder, present, slot, past, workload.window - 1)

    return span_sampler(workload, copy)


def select_series(workload: Workload, key: tuple) -> tuple[dict[Hashable, Sampler], dict[int, SelectSeries]]:
    """The span series that price selecting each represented slot of ``workload``, named ``(kind, *key[, a])``:
    the baseline ``("span", *key)``, ``("copy", *key, a)``, and ``("rebind", *key, a)`` where it can be rebound."""
    call = workload.call
    baseline = ("span", *key)
    samplers: dict[Hashable, Sampler] = {baseline: span_sampler(workload)}
    selects = {}
    for a in represented_rejections(workload.seq_len, workload.window):
        slot = _slot(workload, a)
        copy, rebind = ("copy", *key, a), ("rebind", *key, a)
        samplers[copy] = _copy_sampler(workload, slot)
        reason = workload.kernel.rebind_blocker(call, slot)
        if reason is None:
            samplers[rebind] = span_sampler(workload, None,
                                            call.with_seed(call.present_state, slot, workload.inputs["past_state"]))
        selects[a] = SelectSeries(baseline, copy, rebind if reason is None else None, reason)
    return samplers, selects


def bind_group_time(workload: Workload, accepted: int, protocol: Protocol) -> Timing:
    """Host time to create the bind groups that seed the next call from the slot (uncached; two where
    ``T < W``: with and without storing the leading zero slots)."""
    call = workload.call
    bound = {**call.tensors, "past_state": call.present_state, "present_state": workload.inputs["past_state"]}
    slot = _slot(workload, accepted)

    def create() -> None:
        call.make_bind_groups(bound, slot)

    return run_protocol(protocol, HOST_CLOCK, fenced_wall_sampler(create, lambda: None))


@dataclass(frozen=True)
class SelectSeries:
    """The names of the span series that price checkpoint selection for one accepted length."""

    baseline: Hashable
    copy: Hashable
    rebind: Hashable | None
    reason: str | None
    """Why the slot cannot be rebound (None where it can)."""

    def cost(self, values: Mapping[Hashable, float]) -> float:
        """checkpoint_select(a) from one estimate per series: the rebind where it exists, else the copy."""
        return values[self.rebind if self.rebind is not None else self.copy] - values[self.baseline]


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


def wall_clock_timings(workload: Workload, protocol: Protocol) -> dict[str, Timing]:
    """The kernel timed like the ORT EP: per-call wall time with a fence, and pipelined."""
    return wall_timings(protocol, workload.call.dispatch, workload.fence)

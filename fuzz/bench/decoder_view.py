"""p* in a decoder's view: the pipelined wall clock, where a rerun is a whole extra dispatch and a select a rebind.

On GPU time a rerun of the accepted prefix costs its pass; a decoder pays more for it: another submission
of another call, host path included. Here every call is submitted as a decoder submits it (``BoundCall.dispatch``:
its own command buffer, no wait), ``batch`` steps back to back and then one fence, per step. Each series is a
difference of two such steps timed side by side in every sample (``fuzz.bench.protocol.paired_wall_sampler``), so
the fence, the host's fixed costs and its drift cancel. Per kernel path and ``T``:

- ``(WINDOW, path, T, W)``: the verify call at ``W`` minus the one at ``W = 0``;
- ``(RERUN, path, T, a)``: the ``W = 0`` verify call followed by the prefix rerun over ``a`` tokens (an extra
  dispatch), minus the verify call alone;
- ``(SELECT, path, T, W, a)``: the call followed by the next call seeded from the slot that holds ``a`` tokens (a
  rebind: another bind group, no GPU work; where that slot cannot be rebound, a slot copy and the call), minus
  the call followed by the call;
- ``(WALL, path, T, 0)``: the ``W = 0`` verify call alone, for the report (and the warm-up).

decoder p* = ``WINDOW / E[RERUN(a) - SELECT(a)]`` over the acceptance distribution, like the p* on GPU time
(``fuzz.bench.rollback``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

from kernels import BoundCall
from oracles.rollback import slot_for_accepted

from .protocol import Sampler, paired_wall_sampler, pipelined_wall_sampler
from .rollback import Acceptance, break_even, expected_saving, represented_rejections
from .rounds import Schedule
from .workload import Workload

WALL, WINDOW, RERUN, SELECT = "wall", "wall-window", "wall-rerun", "wall-select"

WALL_SCHEDULE = Schedule(rounds=10, per_round=16, round_warmups=1, settle_batch=3, settle_window=3,
                         settle_tolerance=0.05, settle_max_passes=10)
"""Rounds of the wall-clock series: a sample is two batches of ``batch`` steps (host-bound, so milliseconds where a
kernel-clock sample takes microseconds), so fewer samples per round than the kernel clock's. The warm-up settles
the ``WALL`` series (a difference near zero has no relative change to settle on)."""

QUICK_WALL_SCHEDULE = Schedule(rounds=4, per_round=3, round_warmups=1, settle_batch=2, settle_window=2,
                               settle_tolerance=0.1, settle_max_passes=4)

Config = tuple[str, int, int]
"""(kernel path, T, W)."""


@dataclass(frozen=True)
class DecoderSeries:
    """The names of the wall-clock series that decoder p* of one configuration depends on."""

    seq_len: int
    window: int
    verify_0: Hashable
    """The ``W = 0`` call alone (reported beside p*, not part of it)."""
    cost: Hashable
    """The window's cost: the call at ``W`` minus the call at ``W = 0``."""
    reruns: Mapping[int, Hashable]
    selects: Mapping[int, Hashable]

    @property
    def names(self) -> list[Hashable]:
        """The series p* depends on."""
        return sorted({self.cost, *self.reruns.values(), *self.selects.values()}, key=str)

    def saving(self, values: Mapping[Hashable, float], acceptance: Acceptance) -> float:
        """E[rerun(a) - select(a) | rejection] on the wall clock, from one estimate per series."""
        rerun = {a: values[name] for a, name in self.reruns.items()}
        select = {a: values[name] for a, name in self.selects.items()}
        return expected_saving(self.seq_len, self.window, rerun, select, acceptance)

    def statistic(self, acceptance: Acceptance) -> Callable[[Mapping[Hashable, float]], float | None]:
        """Decoder p* as a function of one estimate per series."""
        def p_star(values: Mapping[Hashable, float]) -> float | None:
            return break_even(values[self.cost], 0.0, self.saving(values, acceptance))

        return p_star


def _steps(*calls: Callable[[], None]) -> Callable[[], None]:
    def step() -> None:
        for call in calls:
            call()

    return step


def decoder_series(work: Mapping[Config, Workload], config: Config,
                   batch: int) -> tuple[dict[Hashable, Sampler], DecoderSeries]:
    """The pipelined wall-clock samplers decoder p* of ``config`` needs (``work`` holds the ``W = 0`` calls
    over ``T`` and over every represented prefix), named as in the module docstring, and their names."""
    path, seq_len, window = config
    workload = work[config]
    call: BoundCall = workload.call
    verify_0 = work[path, seq_len, 0].call
    fence = workload.fence

    def paired(first: Callable[[], None], second: Callable[[], None]) -> Sampler:
        return paired_wall_sampler(first, second, fence, batch)

    samplers: dict[Hashable, Sampler] = {
        (WALL, path, seq_len, 0): pipelined_wall_sampler(verify_0.dispatch, fence, batch),
        (WINDOW, *config): paired(call.dispatch, verify_0.dispatch),
    }
    reruns, selects = {}, {}
    for a in represented_rejections(seq_len, window):
        reruns[a] = (RERUN, path, seq_len, a)
        samplers[reruns[a]] = paired(_steps(verify_0.dispatch, work[path, a, 0].call.dispatch), verify_0.dispatch)
        selects[a] = (SELECT, *config, a)
        samplers[selects[a]] = paired(_select_step(workload, a), _steps(call.dispatch, call.dispatch))
    names = DecoderSeries(seq_len, window, (WALL, path, seq_len, 0), (WINDOW, *config), reruns, selects)
    return samplers, names


def _select_step(workload: Workload, accepted: int) -> Callable[[], None]:
    """The call, then the next call resumed from the slot holding ``accepted`` tokens, as a decoder resumes:
    a rebind where the slot can be bound as the seed, else a slot copy into the seed and the call again."""
    call, kernel = workload.call, workload.kernel
    slot = slot_for_accepted(workload.seq_len, workload.window, accepted)
    if slot is None:
        raise ValueError("decoder view: a zero-token acceptance selects no slot")
    past = workload.inputs["past_state"]
    if kernel.rebind_blocker(call, slot) is None:
        return _steps(call.dispatch, call.with_seed(call.present_state, slot, past).dispatch)
    return _steps(call.dispatch, lambda: kernel.copy_slot(call.present_state, slot, past, workload.window - 1),
                  call.dispatch)

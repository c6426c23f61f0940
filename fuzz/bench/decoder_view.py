"""p* in a decoder's view: the pipelined wall clock, where a rerun is a whole extra dispatch and a select a rebind.

On GPU time a rerun of the accepted prefix costs its pass; a decoder pays more for it: another submission
of another call, host path included. Here every call is submitted as a decoder submits it (``BoundCall.dispatch``:
its own command buffer, no wait), ``batch`` steps back to back and then one fence, per step
(``fuzz.bench.protocol.pipelined_wall_sampler``). The series, per kernel path and ``T``:

- ``(WALL, path, T, W)``: the verify call alone;
- ``(RERUN, path, T, a)``: the ``W = 0`` verify call, then the prefix rerun over ``a`` tokens (an extra dispatch);
- ``(PAIR, path, T, W)``: the call twice; ``(SELECT, path, T, W, a)``: the call, then the next call seeded from
  the slot that holds ``a`` tokens (a rebind: another bind group, no GPU work), or, where that slot cannot be
  rebound, the call, a slot copy and the call.

``rerun(a) = RERUN - WALL(W = 0)`` and ``select(a) = SELECT - PAIR`` are differences of steps measured alike,
so the fence and the host's fixed costs cancel; decoder p* = ``(WALL(W) - WALL(0)) / E[rerun(a) - select(a)]``
over the acceptance distribution, like the p* on GPU time (``fuzz.bench.rollback``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

from kernels import BoundCall
from oracles.rollback import slot_for_accepted

from .protocol import Sampler, pipelined_wall_sampler
from .rollback import Acceptance, break_even, expected_saving, represented_rejections
from .rounds import Schedule
from .workload import Workload

WALL, RERUN, PAIR, SELECT = "wall", "wall-rerun", "wall-pair", "wall-select"

WALL_SCHEDULE = Schedule(rounds=10, per_round=10, round_warmups=1, settle_batch=3, settle_window=3,
                         settle_tolerance=0.05, settle_max_passes=10)
"""Rounds of the wall-clock series: each sample is ``batch`` steps (a host-bound 1-2 ms on the H200), so fewer
samples per round than the kernel clock's; the host's jitter settles less tightly than the GPU's."""

QUICK_WALL_SCHEDULE = Schedule(rounds=4, per_round=3, round_warmups=1, settle_batch=2, settle_window=2,
                               settle_tolerance=0.1, settle_max_passes=4)

Config = tuple[str, int, int]
"""(kernel path, T, W)."""


@dataclass(frozen=True)
class DecoderSeries:
    """The names of the wall-clock series that decoder p* of one configuration depends on."""

    seq_len: int
    window: int
    verify: Hashable
    verify_0: Hashable
    reruns: Mapping[int, Hashable]
    pair: Hashable
    selects: Mapping[int, Hashable]

    @property
    def names(self) -> list[Hashable]:
        return sorted({self.verify, self.verify_0, self.pair, *self.reruns.values(), *self.selects.values()}, key=str)

    def saving(self, values: Mapping[Hashable, float], acceptance: Acceptance) -> float:
        """E[rerun(a) - select(a) | rejection] on the wall clock, from one estimate per series."""
        rerun = {a: values[name] - values[self.verify_0] for a, name in self.reruns.items()}
        select = {a: values[name] - values[self.pair] for a, name in self.selects.items()}
        return expected_saving(self.seq_len, self.window, rerun, select, acceptance)

    def statistic(self, acceptance: Acceptance) -> Callable[[Mapping[Hashable, float]], float | None]:
        """Decoder p* as a function of one estimate per series."""
        def p_star(values: Mapping[Hashable, float]) -> float | None:
            return break_even(values[self.verify], values[self.verify_0], self.saving(values, acceptance))

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
    verify_0 = work[path, seq_len, 0]
    fence = workload.fence

    def sampler(step: Callable[[], None]) -> Sampler:
        return pipelined_wall_sampler(step, fence, batch)

    samplers: dict[Hashable, Sampler] = {
        (WALL, *config): sampler(call.dispatch),
        (WALL, path, seq_len, 0): sampler(verify_0.call.dispatch),
        (PAIR, *config): sampler(_steps(call.dispatch, call.dispatch)),
    }
    reruns, selects = {}, {}
    for a in represented_rejections(seq_len, window):
        reruns[a] = (RERUN, path, seq_len, a)
        samplers[reruns[a]] = sampler(_steps(verify_0.call.dispatch, work[path, a, 0].call.dispatch))
        selects[a] = (SELECT, *config, a)
        samplers[selects[a]] = sampler(_select_step(workload, a))
    names = DecoderSeries(seq_len, window, (WALL, *config), (WALL, path, seq_len, 0), reruns, (PAIR, *config),
                          selects)
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

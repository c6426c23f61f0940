"""Three rollback designs on one GPU: LinearAttention's window, GatedDeltaNet's capsule and a rerun, side by side.

``python -m fuzz.bench.designs --out DIR`` measures, for every dtype and draft length ``T`` (default 1..8, ``B = 1``,
``H_q = H_k = H_v = 32``, ``d_k = d_v = 128``: docs/spec.md §5's reference size), each design of
``fuzz.bench.rollback_designs``:

- **verify overhead** against no rollback support: ``(verify - verify_0) / verify_0``, where ``verify_0`` is the same
  kernel with no window (LinearAttention ``W = 0``) or no capsule (GatedDeltaNet ``C = 0``);
- **rollback cost**: ``E[restore(a) | rejection]`` over the acceptance distribution, where ``restore(a)`` is a slot
  select (``fuzz.bench.kernel_timing``: a rebind where it can be one, else a copy), a replay of ``a`` entries (the
  span [verify, replay] less the verify call), or the rerun of ``a`` tokens at ``W = 0`` (``C = 0``) where the
  design does not hold ``a``;
- **p\\*** of ``fuzz.bench.rollback_designs`` against rerunning with the design's own kernel;
- **memory** per layer and per 30 layers: the window's ``W`` slots, the capsule's ``C`` entries;
- for the capsule, its **floor**: the bytes it captures stored by a plain store kernel (``fuzz.bench.store_floor``),
  as overhead and as p\\*: where that alone misses a goal, no capture kernel can meet it.

Every series of a dtype is bound once on a device of its own and measured in the same interleaved rounds after a
settling warm-up (``fuzz.bench.rounds``: 600 samples a series, the request's 3 x 200); values are means of round
medians with 95% bootstrap intervals over rounds (``fuzz.bench.confidence``). The goals are reported, not gated:
the exit status is 0 once the outputs are written (2 for a usage error or nothing measurable).
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from fuzz import backend_options, environment
from fuzz.output import prepare_output
from fuzz.usage import EXIT_USAGE, UsageError
from kernels import GpuDevice, LinearAttentionKernel
from kernels.device import KernelUnsupported
from kernels.gated_delta_net import GatedDeltaNetKernel
from kernels.options import KernelOptions
from kernels.state_replay import StateReplayKernel

from .arguments import dtypes, ints
from .capsule_work import CapsuleWork
from .confidence import (
    FAIL,
    LEVEL,
    PASS,
    RESAMPLES,
    Interval,
    Resampled,
    estimates,
    floor_verdict,
    interval,
    resample,
    verdict,
)
from .kernel_timing import SelectSeries, select_series, verify_sampler
from .protocol import FENCED_CLOCK, GPU_CLOCK, Sampler
from .rollback import Acceptance
from .rollback_designs import CAPSULE, LAYERS, RERUN, WINDOW, Design, expected_restore, p_star, saving
from .rounds import FULL_SCHEDULE, QUICK_SCHEDULE, Schedule, run_rounds, settle
from .store_floor import PlainStore, floor_ns
from .workload import QUICK_SHAPE, REFERENCE_SHAPE, Shape, Workload

LA, GDN = "LinearAttention", "GatedDeltaNet"

OVERHEAD_GOALS = {1: 0.05, 8: 0.15}
"""The capsule's verify overhead goal by ``T`` (the request's goal 7)."""
P_STAR_GOAL = (8, 0.10)
"""The capsule's p* goal: at most 10% at ``T = 8``."""
MEMORY_GOAL = (8, 8, 16)
"""Capacity 8 in at most 1/16 of the bytes of a ``W = 8`` window."""


@dataclass(frozen=True)
class DesignsOptions:
    shape: Shape = REFERENCE_SHAPE
    dtypes: tuple[str, ...] = ("float16", "float32")
    seq_lens: tuple[int, ...] = tuple(range(1, 9))
    windows: tuple[int, ...] = (4, 8)
    capacities: tuple[int, ...] = (4, 8)
    adapter: str | int | None = None
    acceptance: Acceptance = field(default_factory=Acceptance)
    schedule: Schedule = FULL_SCHEDULE

    def designs(self) -> list[Design]:
        return ([Design(WINDOW, w) for w in self.windows] + [Design(CAPSULE, c) for c in self.capacities]
                + [Design(RERUN)])


def kernel_of(design: Design) -> str:
    """The kernel a design runs on (a rerun is reported on both)."""
    return GDN if design.kind == CAPSULE else LA


def captured_bytes(shape: Shape, seq_len: int, capacity: int) -> int:
    """The bytes a verify call of ``T`` tokens captures: ``min(C, T)`` of the capsule's entries."""
    return Design(CAPSULE, min(capacity, seq_len)).bytes_per_layer(shape, "float32")


class _Group:
    """One dtype: every call of the three designs bound on a device of its own, and their series' names."""

    def __init__(self, options: DesignsOptions, dtype: str) -> None:
        self.options, self.dtype = options, dtype
        self.device = GpuDevice("wgpu", options.adapter)
        self.clock = GPU_CLOCK if "timestamp-query" in self.device.features else FENCED_CLOCK
        self.la = LinearAttentionKernel(KernelOptions("wgpu", options.adapter), self.device)
        self.gdn, self.replay = GatedDeltaNetKernel(self.device), StateReplayKernel(self.device)
        self.top = max(options.seq_lens)
        self.windows: dict[tuple[int, int], Workload] = {}
        self.capsules: dict[tuple[int, int], CapsuleWork] = {}
        self.selects: dict[tuple[int, int], dict[int, SelectSeries]] = {}
        self.stores: dict[int, PlainStore] = {}

    def bind(self) -> None:
        """Bind every verify call at each size and at 0, and the reruns of every accepted length."""
        lengths = sorted({*self.options.seq_lens, *range(1, self.top)})
        shape = self.options.shape
        for t in lengths:
            for w in (0, *self.options.windows) if t in self.options.seq_lens else (0,):
                self.windows[t, w] = Workload(self.la, shape, t, w, self.dtype)
            for c in (0, *self.options.capacities) if t in self.options.seq_lens else (0,):
                self.capsules[t, c] = CapsuleWork(self.gdn, self.replay, shape, t, c, self.dtype)

    def series(self) -> dict[Hashable, Sampler]:
        """``("la", T, W)``, the select spans of each window, ``("gdn", T, C)``, ``("replay", C, a)`` (the span
        [verify at the largest T, replay of a]) and the plain store kernel over each size the capsules capture."""
        found: dict[Hashable, Sampler] = {("la", *k): verify_sampler(w) for k, w in self.windows.items()}
        found |= {("gdn", *k): c.sampler(self.clock) for k, c in self.capsules.items()}
        for (t, w), work in self.windows.items():
            if w and Design(WINDOW, w).held(t):
                samplers, self.selects[t, w] = select_series(work, ("la", t, w))
                found |= samplers
        for c in self.options.capacities:
            for a in Design(CAPSULE, c).held(self.top):
                found["replay", c, a] = self.capsules[self.top, c].sampler(self.clock, a)
            for t in self.options.seq_lens:
                nbytes = captured_bytes(self.options.shape, t, c)
                if nbytes not in self.stores:
                    self.stores[nbytes] = PlainStore(self.device, nbytes)
                    found |= self.stores[nbytes].series(self.clock == GPU_CLOCK)
        return found

    def release(self) -> None:
        for work in self.windows.values():
            work.release()
        for capsule in self.capsules.values():
            capsule.release()
        for store in self.stores.values():
            store.release()


@dataclass(frozen=True)
class Terms:
    """How one design's values at one ``T`` come from the series estimates (ns)."""

    design: Design
    kernel: str
    seq_len: int
    top: int
    selects: Mapping[int, SelectSeries]

    @property
    def op(self) -> str:
        return "gdn" if self.kernel == GDN else "la"

    def verify(self, values: Mapping[Hashable, float]) -> float:
        return values[self.op, self.seq_len, self.design.size]

    def verify_0(self, values: Mapping[Hashable, float]) -> float:
        return values[self.op, self.seq_len, 0]

    def rerun(self, values: Mapping[Hashable, float]) -> dict[int, float]:
        return {a: values[self.op, a, 0] for a in range(1, self.seq_len)}

    def restore(self, values: Mapping[Hashable, float]) -> dict[int, float]:
        """restore(a) for every held ``a``."""
        design = self.design
        if design.kind == WINDOW:
            return {a: self.selects[a].cost(values) for a in design.held(self.seq_len)}
        return {a: values["replay", design.size, a] - values["gdn", self.top, design.size]
                for a in design.held(self.seq_len)}

    def overhead(self, values: Mapping[Hashable, float]) -> float | None:
        base = self.verify_0(values)
        return None if base <= 0 else (self.verify(values) - base) / base

    def expected_restore(self, values: Mapping[Hashable, float], acceptance: Acceptance) -> float:
        return expected_restore(self.design, self.seq_len, self.rerun(values), self.restore(values), acceptance)

    def p_star(self, values: Mapping[Hashable, float], acceptance: Acceptance) -> float | None:
        return p_star(self.design, self.seq_len, self.verify(values), self.verify_0(values), self.rerun(values),
                      self.restore(values), acceptance)

    def saving(self, values: Mapping[Hashable, float], acceptance: Acceptance) -> float:
        return saving(self.design, self.seq_len, self.rerun(values), self.restore(values), acceptance)


def _interval(draws: Resampled, statistic: Callable[[Any], float | None]) -> list[float]:
    found = interval(draws, statistic)
    return [found.low, found.high]


def _terms(group_top: int, selects: Mapping[tuple[int, int], Mapping[int, SelectSeries]], options: DesignsOptions
           ) -> Iterable[Terms]:
    for t in options.seq_lens:
        for design in options.designs():
            kernels = (LA, GDN) if design.kind == RERUN else (kernel_of(design),)
            for kernel in kernels:
                yield Terms(design, kernel, t, group_top, selects.get((t, design.size), {}))


def tables(medians: Mapping[Hashable, np.ndarray], selects: Mapping[tuple[int, int], Mapping[int, SelectSeries]],
           options: DesignsOptions, dtype: str) -> dict[str, Any]:
    """The design rows and the restore-by-``a`` rows of one dtype (times in us) from the round medians (ns)."""
    values, draws = estimates(medians), resample(medians)
    top, acceptance, shape = max(options.seq_lens), options.acceptance, options.shape
    rows, restores = [], []
    for terms in _terms(top, selects, options):
        design, t = terms.design, terms.seq_len
        row: dict[str, Any] = {
            "T": t, "design": design.label, "kind": design.kind, "size": design.size, "kernel": terms.kernel,
            "verify_us": terms.verify(values) / 1e3, "verify_0_us": terms.verify_0(values) / 1e3,
            "overhead": terms.overhead(values), "overhead_interval": _interval(draws, terms.overhead),
            "restore_us": terms.expected_restore(values, acceptance) / 1e3,
            "rerun_us": expected_restore(Design(RERUN), t, terms.rerun(values), {}, acceptance) / 1e3,
            "p_star": terms.p_star(values, acceptance),
            "p_star_interval": _interval(draws, functools.partial(terms.p_star, acceptance=acceptance)),
            "bytes_per_layer": design.bytes_per_layer(shape, dtype),
            "bytes_layers": LAYERS * design.bytes_per_layer(shape, dtype)}
        if design.kind == CAPSULE:
            row |= _floor(values, draws, terms, captured_bytes(shape, t, design.size), acceptance)
        rows.append(row)
        rerun, restore = terms.rerun(values), terms.restore(values)
        restores += [{"T": t, "design": design.label, "a": a, "restore_us": cost / 1e3, "rerun_us": rerun[a] / 1e3,
                      "path": _path(terms, a)}
                     for a, cost in restore.items()]
    return {"designs": rows, "restores": restores}


def _path(terms: Terms, accepted: int) -> str:
    """How the design restored ``accepted`` tokens."""
    if terms.design.kind == CAPSULE:
        return "replay"
    return "copy" if terms.selects[accepted].rebind is None else "rebind"


def _floor(values: Mapping[Hashable, float], draws: Resampled, terms: Terms, nbytes: int, acceptance: Acceptance
           ) -> dict[str, Any]:
    """The capsule's captured bytes at the plain store kernel's speed, as overhead and as p*."""
    def overhead(v: Any) -> float | None:
        base = terms.verify_0(v)
        return None if base <= 0 else floor_ns(v, nbytes) / base

    def star(v: Any) -> float | None:
        saved = terms.saving(v, acceptance)
        return None if saved <= 0 else floor_ns(v, nbytes) / saved

    return {"floor_bytes": nbytes, "floor_us": floor_ns(values, nbytes) / 1e3,
            "floor_overhead": overhead(values), "floor_overhead_interval": _interval(draws, overhead),
            "floor_p_star": star(values), "floor_p_star_interval": _interval(draws, star)}


def goals(dtype_tables: Mapping[str, Mapping[str, Any]], rounds: int) -> list[dict[str, Any]]:
    """The request's goals for the capsule, per dtype and capacity: verdicts from the intervals, FLOOR-BOUND where
    the floor's whole interval misses the goal; memory exact. Goals whose ``T``, ``C`` or ``W`` was not measured
    are left out. ``rounds``: how many rounds the intervals resampled."""
    found: list[dict[str, Any]] = []
    for dtype, table in dtype_tables.items():
        capsules = [r for r in table["designs"] if r["kind"] == CAPSULE]
        checks = [(f"verify overhead T={t}", "overhead", t, limit) for t, limit in OVERHEAD_GOALS.items()]
        checks.append((f"p* T={P_STAR_GOAL[0]}", "p_star", *P_STAR_GOAL))
        for name, key, t, limit in checks:
            for r in (r for r in capsules if r["T"] == t):
                measured = verdict(_as_interval(r[f"{key}_interval"], rounds), limit)
                # an undefined floor p* is a replay that costs what a rerun does, not a floor of the capture's stores
                floor = None if r[f"floor_{key}"] is None else _as_interval(r[f"floor_{key}_interval"], rounds)
                judged = floor_verdict(measured, floor, limit)
                found.append({"dtype": dtype, "goal": f"{r['design']} {name} <= {limit:.0%}", "value": r[key],
                              "interval": r[f"{key}_interval"], "floor": r[f"floor_{key}"],
                              "verdict": judged[0], "why": judged[1]})
        capacity, window, ratio = MEMORY_GOAL
        sizes = {(r["kind"], r["size"]): r["bytes_per_layer"] for r in table["designs"]}
        if (CAPSULE, capacity) in sizes and (WINDOW, window) in sizes:
            used, allowed = sizes[CAPSULE, capacity], sizes[WINDOW, window] / ratio
            found.append({"dtype": dtype, "goal": f"capsule C={capacity} bytes <= window W={window} / {ratio}",
                          "value": used / sizes[WINDOW, window], "interval": None, "floor": None,
                          "verdict": PASS if used <= allowed else FAIL, "why": ""})
    return found


def _as_interval(bounds: list[float], rounds: int) -> Interval:
    """A row's bounds as the bootstrap's interval, to judge."""
    return Interval(bounds[0], bounds[1], LEVEL, RESAMPLES, rounds)


def run_designs(options: DesignsOptions, log: Callable[[str], None]) -> dict[str, Any]:
    """Measure every dtype of ``options``; a dtype the device cannot run is recorded under ``skipped``."""
    results: dict[str, Any] = {"shape": options.shape.__dict__, "acceptance": options.acceptance.label,
                               "schedule": options.schedule.__dict__, "seq_lens": list(options.seq_lens),
                               "designs": [d.label for d in options.designs()], "dtypes": {}, "skipped": {}}
    for dtype in options.dtypes:
        group = _Group(options, dtype)
        results |= {"device": group.device.description, "clock": group.clock}
        try:
            group.bind()
            samplers = group.series()
            warm = settle(samplers, options.schedule)
            log(f"{dtype}: {len(samplers)} series, warm-up {warm.passes} passes "
                f"({'settled' if warm.settled else 'NOT settled'}); {options.schedule.rounds} rounds")
            medians = run_rounds(samplers, options.schedule, group.clock).round_medians()
        except KernelUnsupported as err:
            results["skipped"][dtype] = str(err)
            log(f"{dtype}: skipped: {err}")
            continue
        finally:
            group.release()
        results["dtypes"][dtype] = tables(medians, group.selects, options, dtype) | {"warm_up": warm.record()}
    results["goals"] = goals(results["dtypes"], options.schedule.rounds)
    return results


def main(argv: list[str] | None = None) -> int:
    from fuzz.backends.kernel_backend import chosen_adapter

    from .designs_report import write_outputs

    parser = argparse.ArgumentParser(prog="python -m fuzz.bench.designs", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="directory for results.json, report.md, the plot")
    parser.add_argument("--quick", action="store_true", help="a short schedule at a small shape")
    parser.add_argument("--dtypes", type=dtypes, default=("float16", "float32"), help="fp16, fp32 or both (default)")
    parser.add_argument("--seq-lens", type=ints, default=tuple(range(1, 9)), help="draft lengths T (default 1..8)")
    parser.add_argument("--windows", type=ints, default=(4, 8), help="state_window sizes W >= 1 (default 4,8)")
    parser.add_argument("--capacities", type=ints, default=(4, 8), help="capsule capacities C in 1..8 (default 4,8)")
    parser.add_argument("--acceptance", default="uniform", help="uniform (default) or geometric:R")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 10; 4 with --quick)")
    backend_options.add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        backend_options.apply(args)
        if min(args.windows + args.seq_lens) < 1 or not all(1 <= c <= 8 for c in args.capacities):
            raise UsageError("--windows and --seq-lens take values >= 1, --capacities values in 1..8")
        acceptance = Acceptance.parse(args.acceptance)
    except (ValueError, UsageError) as err:
        print(f"fuzz.bench.designs: {err}", file=sys.stderr)
        return EXIT_USAGE
    environment.prepare()
    schedule = QUICK_SCHEDULE if args.quick else FULL_SCHEDULE
    options = DesignsOptions(
        shape=QUICK_SHAPE if args.quick else REFERENCE_SHAPE, dtypes=args.dtypes, seq_lens=tuple(sorted(args.seq_lens)),
        windows=args.windows, capacities=args.capacities, adapter=chosen_adapter("wgpu", "wgpu")[1],
        acceptance=acceptance, schedule=replace(schedule, rounds=args.rounds) if args.rounds else schedule)
    prepare_output(args.out)
    results = run_designs(options, log=lambda line: print(line, file=sys.stderr, flush=True))
    for line in write_outputs(results, args.out):
        print(line, file=sys.stderr)
    if not results["dtypes"]:
        print(f"fuzz.bench.designs: nothing measured: {results['skipped']}", file=sys.stderr)
        return EXIT_USAGE
    return 0


if __name__ == "__main__":
    sys.exit(main())

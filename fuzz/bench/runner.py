"""One benchmark run: every configuration timed in interleaved rounds, rollback, memory, ORT, gates.

Per (dtype, shape), every configuration (kernel path, T, W) is bound once (tracking the memory
counters), together with the prefix reruns that p* needs (W = 0 calls over ``a`` tokens), and all
their timed series - each call, the spans that price checkpoint selection, and the plain store kernel
over each size of the window's extra bytes (``fuzz.bench.store_floor``) - are warmed up until
they settle and then measured in interleaved rounds (``fuzz.bench.rounds``). Gate values and their
bootstrap intervals come from the round medians (``fuzz.bench.confidence``). The decoder's view of
p* is measured next, in rounds of its own on the pipelined wall clock (``fuzz.bench.decoder_view``).
Then memory growth is checked over many select-and-resume cycles, and at W = 0 the ORT WebGPU EP and
the kernel are timed with the same wall clocks. The result is one JSON-ready dict.
"""

from __future__ import annotations

import functools
import platform
import sys
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from kernels import GpuDevice, KernelUnsupported
from kernels.linear_attention import LinearAttentionKernel, get_kernel
from kernels.options import KERNEL_PATHS, ROW_GROUP_CHOICES, KernelOptions
from kernels.timing import DAWN_TIMESTAMP_QUANTUM_NS

from . import gates
from .confidence import estimates
from .decoder_view import WALL, WALL_SCHEDULE, DecoderSeries, decoder_series
from .kernel_timing import (
    SelectCost,
    SelectSeries,
    bind_group_time,
    kernel_clock,
    select_series,
    verify_sampler,
    wall_clock_timings,
)
from .memory import Snapshot, bind_tracked, memory_record
from .ort_side import OrtSide, OrtUnavailable
from .protocol import FULL, PIPELINED_CLOCK, Protocol, Sampler, protocol_dict
from .rollback import Acceptance, break_even, expected_saving, represented_rejections
from .rounds import FULL_SCHEDULE, RoundTimings, Schedule, run_rounds, settle
from .store_floor import (
    EMPTY,
    SERIAL,
    STORE,
    PlainStore,
    SerialStore,
    SlotLayout,
    extra_slots,
    floor_ns,
    serial_floor_ns,
)
from .workload import REFERENCE_SHAPE, UPDATE_RULE, Shape, Workload

Log = Callable[[str], None]

DAWN_CLOCK_NOTE = (f"Dawn quantizes timestamps by default ({DAWN_TIMESTAMP_QUANTUM_NS:,} ns steps): "
                   "short kernels read as whole steps; use --implementation wgpu for resolution")


@dataclass(frozen=True)
class Options:
    """What to benchmark and how (the command line, parsed)."""

    shapes: tuple[Shape, ...] = (REFERENCE_SHAPE,)
    dtypes: tuple[str, ...] = ("float16", "float32")
    windows: tuple[int, ...] = (0, 1, 4, 8)
    seq_lens: tuple[int, ...] = (1, 4, 8)
    paths: tuple[str, ...] = ("auto",)
    """Kernel variants (``kernel_variant``: a path of ``KERNEL_PATHS``, optionally ``@`` a bound on the
    row groups, e.g. ``auto@8``, and ``:generic``), measured side by side in the same rounds."""
    templates: tuple[Path, ...] = ()
    """Other WGSL templates (e.g. the kernel before a change), measured beside the paths as path ``"template"``
    (one) or ``"template:STEM"`` (several, by file name), compiled as ``template_path``."""
    template_path: str = "auto"
    """The variant the templates are compiled as (``scalar`` for a kernel before vector columns)."""
    implementation: str = "wgpu"
    adapter: str | int | None = None
    acceptance: Acceptance = field(default_factory=Acceptance)
    protocol: Protocol = FULL
    """The wall-clock protocol (ORT comparison, bind-group host time)."""
    schedule: Schedule = FULL_SCHEDULE
    """Warm-up and rounds of the kernel clock."""
    wall_schedule: Schedule = WALL_SCHEDULE
    """Warm-up and rounds of the decoder view's pipelined wall clock."""
    decoder_view: bool = True
    growth_calls: int = 100
    ort: bool = True
    floor: str = gates.SERIAL
    """The floor the rollback gates judge the window's stores against (``gates.FLOORS``)."""

    def __post_init__(self) -> None:
        if 0 not in self.windows:
            raise ValueError("windows must include 0: every gate compares with W = 0")
        if not all(0 <= w <= 8 for w in self.windows) or min(self.seq_lens) < 1:
            raise ValueError("windows must be in 0..8 and sequence lengths >= 1")
        if not self.paths:
            raise ValueError("at least one kernel path is needed")
        if self.floor not in gates.FLOORS:
            raise ValueError(f"floor {self.floor!r}: expected one of {', '.join(gates.FLOORS)}")
        for label in (*self.paths, self.template_path):
            kernel_variant(label)
        template_names(self.templates)


def kernel_variant(label: str, base: KernelOptions | None = None) -> KernelOptions:
    """``PATH``, ``PATH@N``, either with ``:generic`` -> ``base`` (default: ``KernelOptions()``) with the kernel
    path, bound on row groups (None for the kernel's default), prefill and specialisation (None for the kernel's
    default, False for ``:generic``, the pipeline of the geometry class that reads the call's sizes from its
    uniform). ``PATH`` is one of ``KERNEL_PATHS`` (the token loop) or ``chunked`` (the ``auto`` path's chunked
    prefill); ``ValueError`` for anything else."""
    variant, colon, form = label.partition(":")
    path, at, groups = variant.partition("@")
    if (path not in (*KERNEL_PATHS, CHUNKED) or (at and groups not in map(str, ROW_GROUP_CHOICES))
            or (colon and form != GENERIC)):
        raise ValueError(f"kernel variant {label!r}: expected PATH or PATH@N, optionally followed by :{GENERIC}, "
                         f"with PATH one of {', '.join((*KERNEL_PATHS, CHUNKED))} and N one of "
                         f"{', '.join(map(str, ROW_GROUP_CHOICES))}")
    return replace(base or KernelOptions(), path="auto" if path == CHUNKED else path,
                   max_row_groups=int(groups) if groups else None, prefill=CHUNKED if path == CHUNKED else "token",
                   specialise=False if colon else None)


GENERIC = "generic"
"""The variant suffix of the generic pipeline (``:generic``), where the kernel would specialise on the call."""

CHUNKED = "chunked"
"""The variant name of the chunked prefill (``kernels.linear_attention.PREFILLS``)."""


TEMPLATE_PATH = "template"
"""The name under which ``Options.templates`` are measured (``template_names``)."""


def template_names(templates: tuple[Path, ...]) -> dict[str, Path]:
    """The path names of the templates: ``"template"`` for one, ``"template:STEM"`` for each of several."""
    if len(templates) == 1:
        return {TEMPLATE_PATH: templates[0]}
    names = {f"{TEMPLATE_PATH}:{t.stem}": t for t in templates}
    if len(names) != len(templates):
        raise ValueError("templates: several templates need different file names")
    return names

Config = tuple[str, int, int]
"""(kernel path, T, W)."""


def _label(dtype: str, shape: Shape, path: str, seq_len: int, window: int | None = None) -> str:
    text = f"{dtype} {shape.label} {path} T={seq_len}"
    return text if window is None else f"{text} W={window}"


class _Group:
    """One (dtype, shape): its workloads by (path, T, W), their series measured together, and what follows.

    Each group runs on a device of its own, created for it: on a shared device a group measured after
    another was slower for its whole block and needed twice the warm-up passes
    (docs/benchmark.md#device-per-group)."""

    def __init__(self, options: Options, dtype: str, shape: Shape, log: Log) -> None:
        self.options, self.dtype, self.shape, self.log = options, dtype, shape, log
        self.device = GpuDevice(options.implementation, options.adapter)
        self.kernels = {p: self._kernel(None, p) for p in options.paths}
        for name, template in template_names(options.templates).items():
            self.kernels[name] = self._kernel(template.read_text(), options.template_path)
        self.work: dict[Config, Workload] = {}
        self.bound: dict[Config, Snapshot] = {}
        self.select: dict[Config, dict[int, SelectSeries]] = {}
        self.stores: dict[int, PlainStore] = {}
        """The plain store kernel over each size of extra bytes (``fuzz.bench.store_floor``)."""
        self.serial: dict[SlotLayout, SerialStore] = {}
        """The serial store kernel of each layout of the kernels' workgroups (``fuzz.bench.store_floor``)."""

    def _kernel(self, template: str | None, label: str) -> LinearAttentionKernel:
        base = KernelOptions(self.options.implementation, self.options.adapter, template)
        return LinearAttentionKernel(kernel_variant(label, base), self.device)

    def bind(self) -> None:
        """Bind every configuration (memory-tracked) and the prefix reruns its p* needs."""
        for path in self.kernels:
            for seq_len in self.options.seq_lens:
                for window in sorted(self.options.windows):
                    work, bound = bind_tracked(self.kernels[path].device,
                                               functools.partial(self._workload, path, seq_len, window))
                    self.work[path, seq_len, window], self.bound[path, seq_len, window] = work, bound
            for seq_len in self.options.seq_lens:
                for window in self.options.windows:
                    for a in represented_rejections(seq_len, window):
                        if (path, a, 0) not in self.work:
                            self.work[path, a, 0] = self._workload(path, a, 0)

    def _workload(self, path: str, seq_len: int, window: int) -> Workload:
        return Workload(self.kernels[path], self.shape, seq_len, window, self.dtype)

    def series(self) -> dict[Hashable, Sampler]:
        """Every timed series: ``("verify", *config)`` for each call, the selection spans of windowed configs, and
        the plain store kernel over each size of the window's extra bytes, and the serial store kernel of each layout
        over the slots the windows store."""
        found: dict[Hashable, Sampler] = {("verify", *c): verify_sampler(w) for c, w in self.work.items()}
        timestamps = "timestamp-query" in self.device.features
        slots: dict[SlotLayout, set[int]] = {}
        for config in self.bound:
            if represented_rejections(*config[1:]):
                samplers, self.select[config] = select_series(self.work[config], config)
                found.update(samplers)
            extra = self.extra_bytes(config)
            if extra and extra not in self.stores:
                self.stores[extra] = PlainStore(self.device, extra)
                found.update(self.stores[extra].series(timestamps))
            layout = self.layout(config)
            if extra and layout is not None:
                slots.setdefault(layout, {1}).add(1 + extra_slots(*config[1:]))
        for layout, counts in slots.items():
            self.serial[layout] = SerialStore(self.device, layout, counts)
            found.update(self.serial[layout].series(timestamps))
        return found

    def layout(self, config: Config) -> SlotLayout | None:
        """How the kernel's workgroups split a slot of ``config`` (None where the serial floor does not apply)."""
        return SlotLayout.of(self.work[config].call)

    def extra_bytes(self, config: Config) -> int:
        """The bytes of the slots ``config`` stores beyond the one a ``W = 0`` call stores."""
        return extra_slots(*config[1:]) * int(np.prod(self.shape.slot_shape())) * np.dtype(self.dtype).itemsize

    def saving(self, config: Config, values: Mapping[Hashable, float]) -> float:
        """E[prefix_rerun - checkpoint_select | rejection] of a windowed configuration, from one estimate per series."""
        path, seq_len, window = config
        selects = self.select[config]
        rerun = {a: values["verify", path, a, 0] for a in selects}
        select = {a: s.cost(values) for a, s in selects.items()}
        return expected_saving(seq_len, window, rerun, select, self.options.acceptance)

    def p_star(self, config: Config) -> Callable[[Mapping[Hashable, float]], float | None]:
        """p* of a windowed configuration as a function of one estimate per series."""
        verify_0 = ("verify", config[0], config[1], 0)

        def statistic(values: Mapping[Hashable, float]) -> float | None:
            return break_even(values["verify", *config], values[verify_0], self.saving(config, values))

        return statistic

    def floor(self, config: Config, serial: bool = False) -> Callable[[Mapping[Hashable, float]], float]:
        """The floor of ``config``'s extra slots as a function of one estimate per series: the plain floor, or the
        ``serial`` one where its layout has one; 0 without extra slots."""
        extra, layout = extra_slots(*config[1:]), self.layout(config)
        nbytes = self.extra_bytes(config)

        def statistic(values: Mapping[Hashable, float]) -> float:
            if not extra:
                return 0.0
            if serial and layout is not None:
                return serial_floor_ns(values, layout, extra)
            return floor_ns(values, nbytes)

        return statistic

    def floor_p_star(self, config: Config, serial: bool = False) -> Callable[[Mapping[Hashable, float]], float | None]:
        """p* of a windowed configuration if its extra slots cost their floor (plain or ``serial``) and nothing
        more."""
        verify_0, floor = ("verify", config[0], config[1], 0), self.floor(config, serial)

        def statistic(values: Mapping[Hashable, float]) -> float | None:
            return break_even(values[verify_0] + floor(values), values[verify_0], self.saving(config, values))

        return statistic

    def store_ratio(self, config: Config, serial: bool = False) -> Callable[[Mapping[Hashable, float]], float | None]:
        """``(verify_W - verify_0) / floor`` of a configuration with extra bytes, against the plain floor or the
        ``serial`` one; None where the floor is not positive (a store kernel no slower than its empty dispatch, or
        the serial kernel no slower for more slots: nothing to compare with)."""
        verify_0, floor = ("verify", config[0], config[1], 0), self.floor(config, serial)

        def statistic(values: Mapping[Hashable, float]) -> float | None:
            stored = floor(values)
            return None if stored <= 0 else (values["verify", *config] - values[verify_0]) / stored

        return statistic

    def judged_by_serial_floor(self, config: Config) -> bool:
        """The rollback gates of ``config`` use the serial floor: asked for, and its layout has one."""
        return self.options.floor == gates.SERIAL and self.layout(config) is not None

    def measure(self, ort: OrtSide | None) -> dict[str, list]:
        """Warm up, run the rounds, then memory and ORT; return this group's rows and gates."""
        series = self.series()
        clock = kernel_clock(next(iter(self.work.values())))
        warm = settle(series, self.options.schedule)
        self.log(f"  {self.dtype} {self.shape.label}: {len(series)} series; warm-up {warm.passes} passes "
                 f"({'settled' if warm.settled else 'NOT settled'}); {self.options.schedule.rounds} rounds")
        timings = run_rounds(series, self.options.schedule, clock)
        rows, ort_rows, found, memory = [], [], [], []
        for config, bound in self.bound.items():
            path, seq_len, window = config
            work = self.work[config]
            timing = timings.timing(("verify", *config))
            record = memory_record(work, bound, self.options.growth_calls)
            memory += gates.memory_gates(_label(self.dtype, self.shape, path, seq_len, window),
                                         record["expected_total"], record["bound"]["live_bytes"], record["growth"])
            rows.append({"dtype": self.dtype, "shape": self.shape.label, "path": path,
                         "reduction": work.call.spec.reduction, "lanes": work.call.spec.lanes,
                         "specialised": bool(work.call.spec.constants), "T": seq_len,
                         "W": window, "timing": timing.summary(), "memory": record})
            self.log(f"  {_label(self.dtype, self.shape, path, seq_len, window)}: p50 {timing.p50 / 1e3:.1f} us, "
                     f"p95 {timing.p95 / 1e3:.1f} us ({timing.clock}; {work.call.spec.reduction} reduction, "
                     f"{work.call.spec.lanes} columns per invocation"
                     f"{', specialised on the shape' if work.call.spec.constants else ''})")
            if window == 0 and ort is not None:
                ort_rows.append(self._ort_row(work, path, seq_len, ort))
        for path in self.kernels:
            for seq_len in self.options.seq_lens:
                config_text = _label(self.dtype, self.shape, path, seq_len)
                verify = timings.round_medians([("verify", path, seq_len, w) for w in self.options.windows])
                found += gates.overhead_gates(config_text, {w: verify["verify", path, seq_len, w]
                                                            for w in self.options.windows})
                p_star = {w: self._p_star_inputs(timings, (path, seq_len, w)) for w in self.options.windows
                          if (path, seq_len, w) in self.select}
                found += gates.p_star_gates(config_text, seq_len, p_star, self.options.floor)
                ratios = {w: (timings.round_medians(self._ratio_names((path, seq_len, w))),
                              self.store_ratio((path, seq_len, w), self.judged_by_serial_floor((path, seq_len, w))))
                          for w in self.options.windows if self.extra_bytes((path, seq_len, w))
                          and w <= seq_len}
                found += gates.store_ratio_gates(config_text, seq_len, ratios, self.options.floor)
        rollback = [self._rollback_row(timings, config) for config in self.select]
        decoder_rows, decoder_gates, wall_warm = self._decoder_view() if self.options.decoder_view else ([], [], [])
        warm_up = [{"dtype": self.dtype, "shape": self.shape.label, "series": len(series), "clock": timings.clock,
                    **warm.record()}, *wall_warm]
        return {"rows": rows, "rollback": rollback, "decoder_view": decoder_rows, "ort": ort_rows,
                "gates": found + decoder_gates + memory, "warm_up": warm_up}

    def _decoder_configs(self) -> list[Config]:
        """The configurations with a p* gate: windows of ``gates.P_STAR_WINDOWS`` at ``T > 1``."""
        return [c for c in self.select if c[1] > 1 and c[2] in gates.P_STAR_WINDOWS]

    def _decoder_view(self) -> tuple[list[dict], list[gates.Gate], list[dict]]:
        """Decoder p* of every configuration with a p* gate, in rounds of the pipelined wall clock: its rows,
        gates and warm-up record."""
        configs = self._decoder_configs()
        if not configs:
            return [], [], []
        samplers: dict[Hashable, Sampler] = {}
        names: dict[Config, DecoderSeries] = {}
        for config in configs:
            found, names[config] = decoder_series(self.work, config, self.options.protocol.batch)
            samplers.update(found)
        schedule = self.options.wall_schedule
        walls: dict[Hashable, Sampler] = {name: s for name, s in samplers.items()
                                          if isinstance(name, tuple) and name[0] == WALL}
        warm = settle(walls, schedule)
        self.log(f"  {self.dtype} {self.shape.label}: decoder view, {len(samplers)} wall-clock series; warm-up "
                 f"{warm.passes} passes ({'settled' if warm.settled else 'NOT settled'}); {schedule.rounds} rounds")
        timings = run_rounds(samplers, schedule, PIPELINED_CLOCK)
        rows, found_gates = [], []
        acceptance = self.options.acceptance
        for path in self.kernels:
            for seq_len in self.options.seq_lens:
                by_window = {c[2]: (timings.round_medians(names[c].names), names[c].statistic(acceptance))
                             for c in configs if c[:2] == (path, seq_len)}
                found_gates += gates.decoder_p_star_gates(_label(self.dtype, self.shape, path, seq_len), seq_len,
                                                          by_window)
        for config in configs:
            values = estimates(timings.round_medians(names[config].names))
            series = names[config]
            wall_0 = float(np.mean(timings.round_medians([series.verify_0])[series.verify_0]))
            rows.append({"dtype": self.dtype, "shape": self.shape.label, "path": config[0], "T": config[1],
                         "W": config[2], "wall_0_us": wall_0 / 1e3, "window_us": values[series.cost] / 1e3,
                         "expected_saving_us": series.saving(values, acceptance) / 1e3,
                         "p_star": series.statistic(acceptance)(values)})
        warm_record = {"dtype": self.dtype, "shape": self.shape.label, "series": len(samplers),
                       "clock": PIPELINED_CLOCK, **warm.record()}
        return rows, found_gates, [warm_record]

    def _ratio_names(self, config: Config) -> list[Hashable]:
        """The series of the window's cost and the floor of its extra bytes."""
        extra, layout = self.extra_bytes(config), self.layout(config)
        serial = [] if layout is None else [(SERIAL, layout, 1), (SERIAL, layout, 1 + extra_slots(*config[1:]))]
        return [("verify", *config), ("verify", config[0], config[1], 0), (STORE, extra), (EMPTY, extra), *serial]

    def _p_star_inputs(self, timings: RoundTimings, config: Config) -> gates.PStarInputs:
        """The round medians p* of ``config`` depends on (with the floor of its extra bytes), p* and floor p*."""
        path, seq_len, _ = config
        names = set(self._ratio_names(config)) if self.extra_bytes(config) else set()
        names |= {("verify", *config), ("verify", path, seq_len, 0)}
        for a, select in self.select[config].items():
            names |= {("verify", path, a, 0), select.baseline, select.copy}
            if select.rebind is not None:
                names.add(select.rebind)
        return (timings.round_medians(sorted(names, key=str)), self.p_star(config),
                self.floor_p_star(config, self.judged_by_serial_floor(config)))

    def _rollback_row(self, timings: RoundTimings, config: Config) -> dict:
        path, seq_len, window = config
        medians, statistic, _ = self._p_star_inputs(timings, config)
        values = estimates(medians)
        work = self.work[config]
        probabilities = self.options.acceptance.probabilities(seq_len)
        per_accepted = []
        for a, select in self.select[config].items():
            rebind = None if select.rebind is None else values[select.rebind] - values[select.baseline]
            bind_group = (None if select.rebind is None
                          else bind_group_time(work, a, self.options.protocol).p50)
            cost = SelectCost(values[select.copy] - values[select.baseline], rebind, bind_group, select.reason)
            per_accepted.append({"a": a, "probability": float(probabilities[a]),
                                 "prefix_rerun_us": values["verify", path, a, 0] / 1e3,
                                 "checkpoint_select_us": cost.selected_ns / 1e3, **_select_record(cost)})
        rerun = {a: values["verify", path, a, 0] for a in self.select[config]}
        select_ns = {a: s.cost(values) for a, s in self.select[config].items()}
        return {"dtype": self.dtype, "shape": self.shape.label, "path": path, "T": seq_len, "W": window,
                "verify_W_us": values["verify", *config] / 1e3,
                "verify_0_us": values["verify", path, seq_len, 0] / 1e3,
                "per_accepted": per_accepted,
                "expected_saving_us": expected_saving(seq_len, window, rerun, select_ns,
                                                      self.options.acceptance) / 1e3,
                "p_star": statistic(values), **self._floor_record(config, values)}

    def _floor_record(self, config: Config, values: Mapping[Hashable, float]) -> dict[str, object]:
        """The window's extra bytes, their floor, the write bandwidth it implies, floor p* and the stores' ratio, and
        the same against the serial floor (None where it does not apply)."""
        extra, layout = self.extra_bytes(config), self.layout(config)
        if not extra:
            return {"extra_bytes": 0, "floor_us": 0.0, "write_bandwidth_gb_s": None, "floor_p_star": 0.0,
                    "store_ratio": None, "serial_floor_us": 0.0, "serial_floor_p_star": 0.0,
                    "serial_store_ratio": None}
        floor = floor_ns(values, extra)
        serial = None if layout is None else serial_floor_ns(values, layout, extra_slots(*config[1:]))
        return {"extra_bytes": extra, "floor_us": floor / 1e3,
                "write_bandwidth_gb_s": extra / floor if floor > 0 else None,
                "floor_p_star": self.floor_p_star(config)(values), "store_ratio": self.store_ratio(config)(values),
                "serial_floor_us": None if serial is None else serial / 1e3,
                "serial_floor_p_star": None if serial is None else self.floor_p_star(config, serial=True)(values),
                "serial_store_ratio": None if serial is None else self.store_ratio(config, serial=True)(values)}

    def _ort_row(self, work: Workload, path: str, seq_len: int, ort: OrtSide) -> dict:
        row: dict = {"dtype": self.dtype, "shape": self.shape.label, "path": path, "T": seq_len}
        try:
            ort_timings = ort.timings(self.shape, seq_len, self.dtype, self.options.protocol)
        except OrtUnavailable as err:
            return {**row, "error": str(err)}
        ours = wall_clock_timings(work, self.options.protocol)
        return {**row, "ort": {c: t.summary() for c, t in ort_timings.items()},
                "kernel": {c: t.summary() for c, t in ours.items()},
                "ratio_kernel_to_ort": {c: ours[c].p50 / ort_timings[c].p50 for c in ours}}

    def release(self) -> None:
        for work in self.work.values():
            work.release()
        for store in (*self.stores.values(), *self.serial.values()):
            store.release()


def _select_record(cost: SelectCost) -> dict[str, object]:
    """Both select paths of one accepted length, JSON-ready (None where a path does not exist)."""
    def us(ns: float | None) -> float | None:
        return None if ns is None else ns / 1e3

    return {"select_path": cost.path, "copy_us": us(cost.copy_ns), "rebind_us": us(cost.rebind_ns),
            "rebind_bind_group_host_us": us(cost.bind_group_ns), "rebind_unavailable": cost.reason}


def run_benchmark(options: Options, log: Log = print) -> dict:
    """Run every configuration of ``options``; return the results (configurations, rollback, ORT, gates)."""
    device = get_kernel(KernelOptions(options.implementation, options.adapter)).device
    ort, ort_note = None, "disabled (--no-ort)"
    if options.ort:
        try:
            ort = OrtSide()
            ort_note = f"{ort.device}; {ort.versions}"
        except OrtUnavailable as err:
            ort_note = f"unavailable: {err}"
    log(f"device: {device.description} ({options.implementation} {device.version}); "
        f"subgroup size {device.subgroup_size or 'n/a (no subgroups feature)'}")
    log(f"ORT WebGPU EP: {ort_note}")
    collected: dict[str, list] = {"rows": [], "rollback": [], "decoder_view": [], "ort": [], "gates": [],
                                  "warm_up": []}
    skipped = []
    started = time.perf_counter()
    for dtype in options.dtypes:
        for shape in options.shapes:
            group = _Group(options, dtype, shape, log)
            try:
                group.bind()
                measured = group.measure(ort)
            except KernelUnsupported as err:
                skipped.append({"dtype": dtype, "shape": shape.label, "reason": str(err)})
                log(f"  {dtype} {shape.label}: skipped: {err}")
                continue
            finally:
                group.release()
            for name, items in measured.items():
                collected[name] += items
    if ort is not None:
        ort.close()
    found = sorted(collected["gates"], key=lambda g: g.comparison == "==")  # timing gates first, then memory
    return {
        "meta": {
            "device": device.description,
            "implementation": options.implementation,
            "implementation_version": device.version,
            "subgroup_size": device.subgroup_size,
            "kernel_clock": "gpu-timestamp" if "timestamp-query" in device.features else "wall-fenced",
            "clock_note": DAWN_CLOCK_NOTE if options.implementation == "dawn" else "",
            "ort_webgpu": ort_note,
            "paths": [*options.paths, *(f"{name} ({t})" for name, t in template_names(options.templates).items())],
            "protocol": protocol_dict(options.protocol),
            "schedule": asdict(options.schedule),
            "wall_schedule": asdict(options.wall_schedule) if options.decoder_view else None,
            "warm_up": collected["warm_up"],
            "acceptance": options.acceptance.label,
            "floor": options.floor,
            "update_rule": UPDATE_RULE,
            "state_binding": "separate past_state and present_state buffers",
            "checkpoint_select": "rebind the slot as the next call's seed where its offset is aligned, else copy it",
            "growth_calls": options.growth_calls,
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "seconds": time.perf_counter() - started,
        },
        "configurations": collected["rows"],
        "rollback": collected["rollback"],
        "decoder_view": collected["decoder_view"],
        "ort_comparison": collected["ort"],
        "skipped": skipped,
        "gates": [g.record() for g in found],
        "all_passed": all(g.passed for g in found),
    }



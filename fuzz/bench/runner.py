"""One benchmark run: every configuration timed, the rollback value, memory, ORT side by side, gates.

For each dtype and shape, each T and W: bind a call (tracking the memory counters), time it on the
kernel clock, time checkpoint selection for every represented rejection, check memory growth over
many select-and-resume cycles, then free it. Prefix reruns are W = 0 calls over ``a`` tokens (the
verify_0 measurement of T = a when that T was benchmarked anyway). At W = 0, the ORT WebGPU EP and
the kernel are also timed with the same wall clocks. The result is one JSON-ready dict.
"""

from __future__ import annotations

import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kernels import KernelUnsupported, LinearAttentionKernel, get_kernel
from kernels.timing import DAWN_TIMESTAMP_QUANTUM_NS

from . import gates
from .kernel_timing import SelectCost, select_costs, verify_timing, wall_clock_timings
from .memory import bind_tracked, memory_record
from .ort_side import OrtSide, OrtUnavailable
from .protocol import FULL, Protocol, Timing, protocol_dict
from .rollback import Acceptance, break_even, expected_saving, represented_rejections
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
    implementation: str = "wgpu"
    adapter: str | int | None = None
    acceptance: Acceptance = field(default_factory=Acceptance)
    protocol: Protocol = FULL
    growth_calls: int = 100
    ort: bool = True

    def __post_init__(self) -> None:
        if 0 not in self.windows:
            raise ValueError("windows must include 0: every gate compares with W = 0")
        if not all(0 <= w <= 8 for w in self.windows) or min(self.seq_lens) < 1:
            raise ValueError("windows must be in 0..8 and sequence lengths >= 1")


def _label(dtype: str, shape: Shape, seq_len: int, window: int | None = None) -> str:
    text = f"{dtype} {shape.label} T={seq_len}"
    return text if window is None else f"{text} W={window}"


class _Group:
    """The measurements of one (dtype, shape): kernel verify timings by (T, W) and their records."""

    def __init__(self, kernel: LinearAttentionKernel, options: Options, dtype: str, shape: Shape, log: Log) -> None:
        self.kernel, self.options, self.dtype, self.shape, self.log = kernel, options, dtype, shape, log
        self.verify: dict[tuple[int, int], Timing] = {}
        self.select: dict[tuple[int, int], dict[int, SelectCost]] = {}
        self.rows: list[dict] = []
        self.ort_rows: list[dict] = []

    def workload(self, seq_len: int, window: int) -> Workload:
        return Workload(self.kernel, self.shape, seq_len, window, self.dtype)

    def measure(self, seq_len: int, window: int, ort: OrtSide | None) -> None:
        """Time, check memory of, and (at W = 0) compare with ORT one configuration."""
        label = _label(self.dtype, self.shape, seq_len, window)
        protocol = self.options.protocol
        work, bound = bind_tracked(self.kernel.device, lambda: self.workload(seq_len, window))
        try:
            timing = verify_timing(work, protocol)
            self.verify[seq_len, window] = timing
            accepted = represented_rejections(seq_len, window) if window else []
            if accepted:
                self.select[seq_len, window] = select_costs(work, accepted, protocol)
            memory = memory_record(work, bound, self.options.growth_calls)
            if window == 0 and ort is not None:
                self.ort_rows.append(self._ort_row(work, seq_len, ort))
        finally:
            work.release()
        self.log(f"  {label}: p50 {timing.p50 / 1e3:.1f} us, p95 {timing.p95 / 1e3:.1f} us ({timing.clock})")
        self.rows.append({"dtype": self.dtype, "shape": self.shape.label, "T": seq_len, "W": window,
                          "timing": timing.summary(), "memory": memory})

    def _ort_row(self, work: Workload, seq_len: int, ort: OrtSide) -> dict:
        row: dict = {"dtype": self.dtype, "shape": self.shape.label, "T": seq_len}
        try:
            ort_timings = ort.timings(self.shape, seq_len, self.dtype, self.options.protocol)
        except OrtUnavailable as err:
            return {**row, "error": str(err)}
        ours = wall_clock_timings(work, self.options.protocol)
        return {**row, "ort": {c: t.summary() for c, t in ort_timings.items()},
                "kernel": {c: t.summary() for c, t in ours.items()},
                "ratio_kernel_to_ort": {c: ours[c].p50 / ort_timings[c].p50 for c in ours}}

    def rerun_ns(self, accepted: int) -> float:
        """prefix_rerun(a): the W = 0 call over ``a`` tokens (measured here unless T = a was benchmarked)."""
        if (accepted, 0) not in self.verify:
            work = self.workload(accepted, 0)
            try:
                self.verify[accepted, 0] = verify_timing(work, self.options.protocol)
            finally:
                work.release()
        return self.verify[accepted, 0].p50

    def rollback_rows(self) -> list[dict]:
        rows = []
        acceptance = self.options.acceptance
        for (seq_len, window), costs in self.select.items():
            rerun = {a: self.rerun_ns(a) for a in costs}
            select = {a: cost.selected_ns for a, cost in costs.items()}
            verify_w, verify_0 = self.verify[seq_len, window].p50, self.verify[seq_len, 0].p50
            saving = expected_saving(seq_len, window, rerun, select, acceptance)
            probabilities = acceptance.probabilities(seq_len)
            rows.append({
                "dtype": self.dtype, "shape": self.shape.label, "T": seq_len, "W": window,
                "verify_W_us": verify_w / 1e3, "verify_0_us": verify_0 / 1e3,
                "per_accepted": [{"a": a, "probability": float(probabilities[a]), "prefix_rerun_us": rerun[a] / 1e3,
                                  "checkpoint_select_us": select[a] / 1e3, **_select_record(cost)}
                                 for a, cost in costs.items()],
                "expected_saving_us": saving / 1e3,
                "p_star": break_even(verify_w, verify_0, saving),
            })
        return rows


def _select_record(cost: SelectCost) -> dict[str, object]:
    """Both select paths of one accepted length, JSON-ready (None where a path does not exist)."""
    def us(ns: float | None) -> float | None:
        return None if ns is None else ns / 1e3

    return {"select_path": cost.path, "copy_us": us(cost.copy_ns), "rebind_us": us(cost.rebind_ns),
            "rebind_bind_group_host_us": us(cost.bind_group_ns), "rebind_unavailable": cost.reason}


def _gates(kernel_rows: list[dict], rollback_rows: list[dict]) -> list[gates.Gate]:
    """Timing gates per (dtype, shape, T) first, then the memory gates of every configuration."""
    found: list[gates.Gate] = []
    memory: list[gates.Gate] = []
    groups: dict[tuple[str, str, int], dict[int, float]] = {}
    for row in kernel_rows:
        groups.setdefault((row["dtype"], row["shape"], row["T"]), {})[row["W"]] = row["timing"]["p50_us"]
        m = row["memory"]
        memory += gates.memory_gates(f"{row['dtype']} {row['shape']} T={row['T']} W={row['W']}",
                                     m["expected_total"], m["bound"]["live_bytes"], m["growth"])
    p_stars: dict[tuple[str, str, int], dict[int, float | None]] = {}
    for row in rollback_rows:
        p_stars.setdefault((row["dtype"], row["shape"], row["T"]), {})[row["W"]] = row["p_star"]
    for (dtype, shape, seq_len), verify in groups.items():
        config = f"{dtype} {shape} T={seq_len}"
        found += gates.overhead_gates(config, verify)
        found += gates.p_star_gates(config, seq_len, p_stars.get((dtype, shape, seq_len), {}))
    return found + memory


def run_benchmark(options: Options, log: Log = print) -> dict:
    """Run every configuration of ``options``; return the results (configurations, rollback, ORT, gates)."""
    kernel = get_kernel(options.implementation, options.adapter)
    ort, ort_note = None, "disabled (--no-ort)"
    if options.ort:
        try:
            ort = OrtSide()
            ort_note = f"{ort.device}; {ort.versions}"
        except OrtUnavailable as err:
            ort_note = f"unavailable: {err}"
    log(f"device: {kernel.device.description} ({options.implementation} {kernel.device.version})")
    log(f"ORT WebGPU EP: {ort_note}")
    kernel_rows, rollback_rows, ort_rows, skipped = [], [], [], []
    started = time.perf_counter()
    clock = None
    for dtype in options.dtypes:
        for shape in options.shapes:
            group = _Group(kernel, options, dtype, shape, log)
            try:
                for seq_len in options.seq_lens:
                    for window in sorted(options.windows):
                        group.measure(seq_len, window, ort)
            except KernelUnsupported as err:
                skipped.append({"dtype": dtype, "shape": shape.label, "reason": str(err)})
                log(f"  {dtype} {shape.label}: skipped: {err}")
                continue
            kernel_rows += group.rows
            rollback_rows += group.rollback_rows()
            ort_rows += group.ort_rows
            clock = clock or next(iter(group.verify.values())).clock
    if ort is not None:
        ort.close()
    found = _gates(kernel_rows, rollback_rows)
    return {
        "meta": {
            "device": kernel.device.description,
            "implementation": options.implementation,
            "implementation_version": kernel.device.version,
            "kernel_clock": clock,
            "clock_note": DAWN_CLOCK_NOTE if options.implementation == "dawn" else "",
            "ort_webgpu": ort_note,
            "protocol": protocol_dict(options.protocol),
            "acceptance": options.acceptance.label,
            "update_rule": UPDATE_RULE,
            "state_binding": "separate past_state and present_state buffers",
            "checkpoint_select": "rebind the slot as the next call's seed where its offset is aligned, else copy it",
            "growth_calls": options.growth_calls,
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "seconds": time.perf_counter() - started,
        },
        "configurations": kernel_rows,
        "rollback": rollback_rows,
        "ort_comparison": ort_rows,
        "skipped": skipped,
        "gates": [g.record() for g in found],
        "all_passed": all(g.passed for g in found),
    }

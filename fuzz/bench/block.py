"""The hybrid block's bench: a gated DeltaNet layer's two windows on the GPU, at a real model's sizes.

``python -m fuzz.bench.block --out DIR`` answers two questions for Qwen3.5's layer (``REAL_LAYER``: 8192
channels through CausalConvWithState, kernel 4, then LinearAttention with 16 query and key heads and 32 value
heads of 128), device-resident as ``fuzz.backends.device_block`` runs it (conv, q/k/v split, LinearAttention in
one command buffer):

1. **What does the convolution's window cost beside LinearAttention's?** For each draft length ``T`` and window
   ``W``: ``conv_W - conv_0``, ``la_W - la_0`` and ``block_W - block_0``, each a verify call's kernel time.
2. **Does rolling the whole block back pay?** On a rejection with ``a`` tokens accepted (``T - W < a < T``), the
   block selects both slots: ``select(a)``, rebinding both (no GPU work: the span of the block and the block
   seeded from the slots, less the span of the block twice) or copying both on the GPU (the same span with the
   two copies between); without a window it reruns the accepted prefix through the block from the original
   states: ``rerun(a)``, the block over ``a`` tokens at ``W = 0``. The block's break-even rejection rate is
   ``p* = (block_W - block_0) / E[rerun(a) - select(a) | rejection]`` (docs/spec.md §5's p*, for the block).

Every series is bound once and measured in interleaved rounds after a settling warm-up (``fuzz.bench.rounds``);
values are means of round medians with 95% bootstrap intervals over the rounds (``fuzz.bench.confidence``). The
kernel clock is GPU timestamps where the adapter has ``timestamp-query``, else the host's wall time of a call
and a readback (``wall-fenced``). It prints a report; ``results.json`` and ``report.md`` are written to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from fuzz import backend_options, environment
from fuzz.backends.device_block import BoundBlock, bind_block
from fuzz.engine.hybrid_block import REAL_LAYER, LayerSizes
from fuzz.model.block import BlockCall, BlockRun
from fuzz.model.case import Case
from fuzz.model.ops import CAUSAL_CONV
from fuzz.output import prepare_output
from fuzz.usage import EXIT_USAGE, UsageError
from kernels.causal_conv import CausalConvKernel
from kernels.causal_conv import get_kernel as get_conv_kernel
from kernels.device import FeatureMissing, GpuDevice
from kernels.linear_attention import LinearAttentionKernel, get_kernel
from kernels.options import ConvKernelOptions, KernelOptions
from kernels.resident import BoundCall

from .arguments import ints
from .confidence import bootstrap, estimates
from .kernel_timing import Record, recorded_sampler
from .protocol import FENCED_CLOCK, GPU_CLOCK, Sampler
from .rollback import Acceptance, break_even, expected_saving, represented_rejections
from .rounds import FULL_SCHEDULE, QUICK_SCHEDULE, Schedule, run_rounds, settle

QUICK_LAYER = LayerSizes(q_heads=2, key_heads=2, kv_heads=4, d_k=16, d_v=16, kernel=4)
"""The small layer of ``--quick`` (128 channels): a software adapter runs it in well under a millisecond."""

@dataclass(frozen=True)
class BlockOptions:
    layer: LayerSizes = REAL_LAYER
    batch: int = 1
    dtypes: tuple[str, ...] = ("float16", "float32")
    seq_lens: tuple[int, ...] = (1, 4, 8)
    windows: tuple[int, ...] = (4, 8)
    channels_last: bool = True
    implementation: str = "wgpu"
    adapter: str | int | None = None
    acceptance: Acceptance = field(default_factory=Acceptance)
    schedule: Schedule = FULL_SCHEDULE


class BlockWork:
    """One configuration ``(T, W)`` of the block bound on the device, with deterministic inputs."""

    def __init__(self, conv: CausalConvKernel, la: LinearAttentionKernel, options: BlockOptions, dtype: str,
                 seq_len: int, window: int) -> None:
        self.conv, self.la, self.seq_len, self.window = conv, la, seq_len, window
        layer, b = options.layer, options.batch
        channels = layer.widths.channels
        rng = np.random.default_rng(1000 * seq_len + window)
        slots = (window,) if window else ()
        tokens = (b, seq_len, channels) if options.channels_last else (b, channels, seq_len)
        state = (b, layer.kernel - 1, channels) if options.channels_last else (b, channels, layer.kernel - 1)
        conv_inputs = {"input": 0.5 * rng.standard_normal(tokens),
                       "weight": rng.standard_normal((channels, 1, layer.kernel)) / np.sqrt(layer.kernel),
                       "bias": 0.1 * rng.standard_normal(channels),
                       "past_state": 0.5 * rng.standard_normal((*slots, *state))}
        attrs = {"activation": "silu", "channels_last": int(options.channels_last), "state_window": window}
        conv_case = Case({n: x.astype(dtype) for n, x in conv_inputs.items()}, attrs, op=CAUSAL_CONV)
        la_inputs = {"past_state": 0.1 * rng.standard_normal((*slots, b, layer.kv_heads, layer.d_k, layer.d_v)),
                     "decay": -0.5 * rng.random((b, seq_len, layer.kv_heads)),
                     "beta": rng.random((b, seq_len, layer.kv_heads))}
        la_attrs = {"q_num_heads": layer.q_heads, "kv_num_heads": layer.kv_heads, "update_rule": "gated_delta",
                    "state_window": window}
        call = BlockCall(conv_case, {n: x.astype(dtype) for n, x in la_inputs.items()}, la_attrs)
        run = BlockRun(call, call, 0, layer.widths, options.channels_last, aliased=False, mode="rebind")
        device = conv.device
        self.conv_past = device.upload(conv_case.inputs["past_state"], "conv-past")
        self.la_past = device.upload(call.la_inputs["past_state"], "la-past")
        self.conv_present = device.tensor(self.conv_past.shape, self.conv_past.dtype, "conv-present")
        self.la_present = device.tensor(self.la_past.shape, self.la_past.dtype, "la-present")
        self.block: BoundBlock = bind_block(conv, la, call, run,
                                            (self.conv_past, self.conv_present, self.la_past, self.la_present))

    @property
    def device(self) -> GpuDevice:
        return self.conv.device

    def fence(self) -> None:
        """Wait for the queue by reading the block's output back."""
        self.device.download(self.block.la.output)

    def copies(self, slot: int) -> Callable[[Any], None]:
        """Record the copies of slot ``slot`` of both present states into slot ``W-1`` of both past states."""
        def record(encoder: Any) -> None:
            self.conv.encode_slot_copy(encoder, self.conv_present, slot, self.conv_past, self.window - 1)
            self.la.encode_slot_copy(encoder, self.la_present, slot, self.la_past, self.window - 1)
        return record

    def rebind_blocker(self, slot: int) -> str | None:
        """Why the block cannot be seeded from slot ``slot`` of both present states by rebinding (None: it can)."""
        return self.conv.rebind_blocker(self.block.conv, slot) or self.la.rebind_blocker(self.block.la, slot)

    def rebound(self, slot: int) -> Record:
        """The block seeded from slot ``slot`` of both present states, writing into both past states."""
        conv = self.block.conv.with_seed(self.conv_present, slot, self.conv_past)
        la = self.block.la.with_seed(self.la_present, slot, self.la_past)
        return lambda encoder, begin, end: self.block.encode(encoder, conv, la, begin, end)

    def release(self) -> None:
        self.block.release()
        for tensor in (self.conv_past, self.conv_present, self.la_past, self.la_present):
            tensor.release()


def _both(begin: dict[str, Any] | None, end: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if begin is None or end is None else {**begin, **end}


def _sampler(work: BlockWork, clock: str, record: Record) -> Sampler:
    """Samples of what ``record`` records, on the kernel clock."""
    return recorded_sampler(work.device, clock, record, work.fence)


def _one(call: BoundCall) -> Record:
    """One call's pass, timed from its beginning to its end."""
    def record(encoder: Any, begin: dict[str, Any] | None, end: dict[str, Any] | None) -> None:
        call.encode(encoder, timestamp_writes=_both(begin, end))
    return record


def _whole(block: BoundBlock) -> Record:
    """The block's three passes, timed from the convolution's beginning to LinearAttention's end."""
    def record(encoder: Any, begin: dict[str, Any] | None, end: dict[str, Any] | None) -> None:
        block.encode(encoder, begin=begin, end=end)
    return record


def _span(block: BoundBlock, between: Callable[[Any], None] | None = None, last: Record | None = None) -> Record:
    """The block, then ``between`` (recorded commands), then ``last`` (default: the block again), timed from the
    first pass's beginning to the last one's end."""
    def record(encoder: Any, begin: dict[str, Any] | None, end: dict[str, Any] | None) -> None:
        block.encode(encoder, begin=begin)
        if between is not None:
            between(encoder)
        (last or _whole(block))(encoder, None, end)
    return record


def _series(works: dict[tuple[int, int], BlockWork], options: BlockOptions, clock: str
            ) -> tuple[dict[Hashable, Sampler], dict[tuple[int, int, int], tuple[str, str | None]]]:
    """Every timed series, and for each ``(T, W, a)`` the select path measured (rebind where both slots can be
    rebound, with the reason where not)."""
    samplers: dict[Hashable, Sampler] = {}
    paths: dict[tuple[int, int, int], tuple[str, str | None]] = {}
    for (t, w), work in works.items():
        block = work.block
        samplers[("conv", t, w)] = _sampler(work, clock, _one(block.conv))
        samplers[("la", t, w)] = _sampler(work, clock, _one(block.la))
        samplers[("block", t, w)] = _sampler(work, clock, _whole(block))
        if not w or t not in options.seq_lens:
            continue
        samplers[("span", t, w)] = _sampler(work, clock, _span(block))
        for a in represented_rejections(t, w):
            slot = a - (t - w) - 1
            samplers[("copy", t, w, a)] = _sampler(work, clock, _span(block, work.copies(slot)))
            reason = work.rebind_blocker(slot)
            if reason is None:
                samplers[("rebind", t, w, a)] = _sampler(work, clock, _span(block, last=work.rebound(slot)))
            paths[(t, w, a)] = ("copy", reason) if reason else ("rebind", None)
    return samplers, paths


def _configs(options: BlockOptions) -> list[tuple[int, int]]:
    """Every ``(T, W)`` bound: the verify calls at each window and at ``W = 0``, and the reruns' ``(a, 0)``."""
    found = {(t, w) for t in options.seq_lens for w in (0, *options.windows)}
    found |= {(a, 0) for t in options.seq_lens for w in options.windows for a in represented_rejections(t, w)}
    return sorted(found)


def block_clock(features: Iterable[str], implementation: str) -> str:
    """GPU timestamps where the adapter has them and they resolve a call; else the fenced wall clock. Dawn
    quantizes timestamps to steps longer than the block's calls (``kernels.timing.DAWN_TIMESTAMP_QUANTUM_NS``),
    so its calls would read as zero or a whole step."""
    return GPU_CLOCK if "timestamp-query" in features and implementation != "dawn" else FENCED_CLOCK


def run_block_bench(options: BlockOptions, log: Callable[[str], None]) -> dict[str, Any]:
    """Measure every dtype of ``options``; the results as JSON-ready tables. A dtype the device cannot run (float16
    without ``shader-f16``, as Dawn on an NVIDIA H200 via Vulkan) is logged and recorded under ``skipped`` with the
    reason, and the other dtypes are still measured."""
    conv = get_conv_kernel(ConvKernelOptions(options.implementation, options.adapter))
    la = get_kernel(KernelOptions(options.implementation, options.adapter))
    device = conv.device
    clock = block_clock(device.features, options.implementation)
    results: dict[str, Any] = {"device": device.description, "implementation": options.implementation,
                               "clock": clock, "layer": options.layer.__dict__, "batch": options.batch,
                               "channels_last": options.channels_last, "acceptance": options.acceptance.label,
                               "schedule": options.schedule.__dict__, "dtypes": {}}
    for dtype in options.dtypes:
        works: dict[tuple[int, int], BlockWork] = {}
        try:
            for config in _configs(options):
                works[config] = BlockWork(conv, la, options, dtype, *config)
        except FeatureMissing as err:
            for work in works.values():
                work.release()
            results.setdefault("skipped", {})[dtype] = str(err)
            log(f"{dtype}: skipped: {err}")
            continue
        try:
            samplers, paths = _series(works, options, clock)
            warm = settle(samplers, options.schedule)
            log(f"{dtype}: {len(samplers)} series, warm-up {warm.passes} passes "
                f"({'settled' if warm.settled else 'NOT settled'}); {options.schedule.rounds} rounds")
            medians = run_rounds(samplers, options.schedule, clock).round_medians()
        finally:
            for work in works.values():
                work.release()
        results["dtypes"][dtype] = _tables(medians, paths, options)
    return results


def _interval(medians: dict[Hashable, np.ndarray], statistic: Callable[[Any], float | None]) -> list[float]:
    found = bootstrap(medians, statistic)
    return [found.low / 1e3, found.high / 1e3] if np.isfinite(found.high) else [found.low / 1e3, float("inf")]


def _overhead(op: str, t: int, w: int) -> Callable[[Any], float | None]:
    """The window's cost of ``op``'s verify call of ``T = t`` at ``W = w``, from one estimate per series."""
    def statistic(values: Any) -> float | None:
        return float(values[(op, t, w)] - values[(op, t, 0)])
    return statistic


def _tables(medians: dict[Hashable, np.ndarray], paths: dict[tuple[int, int, int], tuple[str, str | None]],
            options: BlockOptions) -> dict[str, Any]:
    """The overhead rows, the rollback rows and p* (microseconds), from the round medians (nanoseconds)."""
    us = {name: value / 1e3 for name, value in estimates(medians).items()}
    overhead = []
    for t in options.seq_lens:
        for w in options.windows:
            row: dict[str, Any] = {"T": t, "W": w}
            for op in ("conv", "la", "block"):
                row[f"{op}_0"], row[f"{op}_W"] = us[(op, t, 0)], us[(op, t, w)]
                row[f"{op}_overhead"] = us[(op, t, w)] - us[(op, t, 0)]
                row[f"{op}_overhead_interval"] = _interval(medians, _overhead(op, t, w))
            overhead.append(row)
    rollback, break_evens = [], []
    for t in options.seq_lens:
        for w in options.windows:
            represented = represented_rejections(t, w)
            if not represented:
                continue

            def select(values: Any, a: int, t: int = t, w: int = w) -> float:
                path = paths[(t, w, a)][0]
                return float(values[(path, t, w, a)] - values[("span", t, w)])

            for a in represented:
                rollback.append({"T": t, "W": w, "a": a, "path": paths[(t, w, a)][0], "why": paths[(t, w, a)][1],
                                 "select": select(us, a), "copy": us[("copy", t, w, a)] - us[("span", t, w)],
                                 "rerun": us[("block", a, 0)]})

            def p_star(values: Any, t: int = t, w: int = w) -> float | None:
                saving = expected_saving(t, w, {a: values[("block", a, 0)] for a in represented_rejections(t, w)},
                                         {a: select(values, a) for a in represented_rejections(t, w)},
                                         options.acceptance)
                return break_even(values[("block", t, w)], values[("block", t, 0)], saving)

            interval = bootstrap(medians, p_star)
            break_evens.append({"T": t, "W": w, "p_star": p_star(estimates(medians)),
                                "interval": [interval.low, interval.high]})
    return {"overhead": overhead, "rollback": rollback, "p_star": break_evens}


def markdown(results: dict[str, Any]) -> str:
    """The report: the two tables and p* for each dtype."""
    layer = results["layer"]
    lines = [f"# The hybrid block on {results['device']} ({results['implementation']}, clock {results['clock']})", "",
             f"Layer: conv {layer['q_heads'] * layer['d_k'] * 2 + layer['kv_heads'] * layer['d_v']} channels, kernel "
             f"{layer['kernel']}; LinearAttention H_q={layer['q_heads']} n_k={layer['key_heads']} "
             f"H_kv={layer['kv_heads']} d_k={layer['d_k']} d_v={layer['d_v']}; B={results['batch']}; acceptance "
             f"{results['acceptance']}. Times in us (mean of round medians; [95% interval]).", ""]
    for dtype, tables in results["dtypes"].items():
        lines += [f"## {dtype}: the window's cost per op (verify call, W against W = 0)", "",
                  "| T | W | conv W=0 | conv W | conv overhead | LA W=0 | LA W | LA overhead | block overhead |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in tables["overhead"]:
            def cell(op: str, r: dict[str, Any] = r) -> str:
                low, high = r[f"{op}_overhead_interval"]
                return f"{r[f'{op}_overhead']:.2f} [{low:.2f}, {high:.2f}]"
            lines.append(f"| {r['T']} | {r['W']} | {r['conv_0']:.2f} | {r['conv_W']:.2f} | {cell('conv')} | "
                         f"{r['la_0']:.2f} | {r['la_W']:.2f} | {cell('la')} | {cell('block')} |")
        lines += ["", f"## {dtype}: the block's rollback against a rerun of the accepted prefix", "",
                  "| T | W | a | select (path) | both copies | rerun of a tokens | rerun - select |",
                  "|---|---|---|---|---|---|---|"]
        for r in tables["rollback"]:
            lines.append(f"| {r['T']} | {r['W']} | {r['a']} | {r['select']:.2f} ({r['path']}) | {r['copy']:.2f} | "
                         f"{r['rerun']:.2f} | {r['rerun'] - r['select']:.2f} |")
        lines += ["", "| T | W | block p* | 95% interval |", "|---|---|---|---|"]
        for r in tables["p_star"]:
            value = "undefined" if r["p_star"] is None else f"{r['p_star']:.3f}"
            lines.append(f"| {r['T']} | {r['W']} | {value} | [{r['interval'][0]:.3f}, {r['interval'][1]:.3f}] |")
        lines.append("")
    for dtype, reason in results.get("skipped", {}).items():
        lines += [f"## {dtype}: skipped", "", f"Not measured: {reason}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from fuzz.backends.kernel_backend import chosen_adapter

    parser = argparse.ArgumentParser(prog="python -m fuzz.bench.block", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="directory for results.json and report.md")
    parser.add_argument("--quick", action="store_true", help="a short schedule, and by default the small layer")
    parser.add_argument("--layer", choices=("real", "small"),
                        help="Qwen3.5's layer (8192 channels; the default) or a small one (128 channels; with --quick)")
    parser.add_argument("--dtypes", default="fp16,fp32", help="fp16, fp32 or both (default)")
    parser.add_argument("--seq-lens", type=ints, default=(1, 4, 8), help="draft lengths T (default 1,4,8)")
    parser.add_argument("--windows", type=ints, default=(4, 8), help="state_window values W >= 1 (default 4,8)")
    parser.add_argument("--channels-first", action="store_true", help="the convolution's channels first")
    parser.add_argument("--implementation", choices=("wgpu", "dawn"), default="wgpu")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 10; 4 with --quick)")
    backend_options.add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        backend_options.apply(args)
        dtypes = tuple({"fp16": "float16", "fp32": "float32"}[d.strip()] for d in args.dtypes.split(","))
        if min(args.windows) < 1 or min(args.seq_lens) < 1:
            raise UsageError("--windows and --seq-lens take values >= 1")
    except (KeyError, UsageError) as err:
        print(f"fuzz.bench.block: {err}", file=sys.stderr)
        return EXIT_USAGE
    environment.prepare()
    schedule = QUICK_SCHEDULE if args.quick else FULL_SCHEDULE
    small = (args.layer or ("small" if args.quick else "real")) == "small"
    options = BlockOptions(
        layer=QUICK_LAYER if small else REAL_LAYER, dtypes=dtypes, seq_lens=args.seq_lens, windows=args.windows,
        channels_last=not args.channels_first, implementation=args.implementation,
        adapter=chosen_adapter(args.implementation, args.implementation)[1],
        schedule=replace(schedule, rounds=args.rounds) if args.rounds else schedule)
    prepare_output(args.out)
    results = run_block_bench(options, log=lambda line: print(line, file=sys.stderr, flush=True))
    report = markdown(results)
    (args.out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    (args.out / "report.md").write_text(report)
    if not results["dtypes"]:
        for dtype, reason in results["skipped"].items():
            print(f"fuzz.bench.block: cannot measure {dtype}: {reason}", file=sys.stderr)
        return EXIT_USAGE
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

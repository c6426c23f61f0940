"""The benchmark (fuzz.bench): the p* math, the gate verdicts, the command line, and a tiny real run.

No timed assertions: speed targets are what the benchmark prints, never what a test checks.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from fuzz.bench import confidence, gates
from fuzz.bench.cli import add_subcommand, main, options_from_args
from fuzz.bench.memory import expected_bytes
from fuzz.bench.protocol import Protocol, chunked, run_protocol
from fuzz.bench.rollback import Acceptance, break_even, expected_saving, represented_rejections
from fuzz.bench.rounds import Schedule, run_rounds, settle
from fuzz.bench.runner import kernel_variant
from fuzz.bench.workload import QUICK_SHAPE, REFERENCE_SHAPE, Shape, attributes, host_inputs
from kernels.options import KernelOptions
from oracles import validate

RERUN = {1: 10.0, 2: 20.0, 3: 30.0}
SELECT = {1: 2.0, 2: 2.0, 3: 2.0}


def test_represented_rejections_are_the_window_slots_below_T() -> None:
    assert represented_rejections(8, 4) == [5, 6, 7]
    assert represented_rejections(4, 8) == [1, 2, 3]
    assert represented_rejections(4, 1) == []  # W = 1 only holds a = T: no rejection
    assert represented_rejections(1, 8) == []  # T = 1: the only rejection is a = 0


def test_expected_saving_uniform_counts_only_represented_lengths() -> None:
    # T = 4, W = 2: a in {0,1,2,3} each 1/4; only a = 3 is represented: (30 - 2) / 4
    assert expected_saving(4, 2, {3: 30.0}, {3: 2.0}, Acceptance()) == pytest.approx(7.0)
    # W = 4 represents a = 1, 2, 3: (8 + 18 + 28) / 4
    assert expected_saving(4, 4, RERUN, SELECT, Acceptance()) == pytest.approx(13.5)


def test_expected_saving_geometric() -> None:
    # r = 0.5, T = 3: P(a) ∝ 0.5^a * 0.5 -> 4/7, 2/7, 1/7; W = 3 represents a = 1, 2
    acceptance = Acceptance.parse("geometric:0.5")
    np.testing.assert_allclose(acceptance.probabilities(3), [4 / 7, 2 / 7, 1 / 7])
    assert expected_saving(3, 3, RERUN, SELECT, acceptance) == pytest.approx(8 * 2 / 7 + 18 / 7)


def test_break_even() -> None:
    assert break_even(11.4, 10.0, 7.0) == pytest.approx(0.2)
    assert break_even(9.0, 10.0, 5.0) == pytest.approx(-0.2)  # the window costs nothing
    assert break_even(11.0, 10.0, 0.0) is None
    assert break_even(11.0, 10.0, -1.0) is None


@pytest.mark.parametrize("text", ["geometric", "geometric:1.5", "poisson:0.5", "uniform:0.3", "geometric:x"])
def test_acceptance_rejects_bad_specs(text: str) -> None:
    with pytest.raises(ValueError):
        Acceptance.parse(text)


def _rounds(center: float, spread: float, rounds: int = 12, seed: int = 0) -> np.ndarray:
    """Synthetic round medians around ``center`` (ns), spread uniformly by ``spread`` of it."""
    return center * (1 + spread * np.random.default_rng(seed).uniform(-1, 1, rounds))


def test_overhead_gates_pass_fail_inconclusive_and_margin() -> None:
    """Tight rounds far from the threshold give PASS or FAIL; a noisy gate near it stays INCONCLUSIVE."""
    verify = {0: _rounds(100.0, 0.0), 1: _rounds(104.0, 0.001, seed=1), 4: _rounds(118.0, 0.0), 8: _rounds(300.0, 0.0)}
    found = {g.name: g for g in gates.overhead_gates("cfg", verify)}
    assert set(found) == {"W=1 overhead vs W=0", "W=4 overhead vs W=0"}  # W = 8 has no overhead gate
    w1, w4 = found["W=1 overhead vs W=0"], found["W=4 overhead vs W=0"]
    assert w1.verdict == "PASS" and w1.margin == "" and w1.interval.high < 0.05
    assert w4.verdict == "FAIL" and w4.interval.low > 0.15
    assert w4.margin == "by 3.00 pp"
    assert w4.record()["measured_text"] == "18.00%" and w4.record()["verdict"] == "FAIL"
    noisy = gates.overhead_gates("cfg", {0: _rounds(100.0, 0.2), 1: _rounds(104.0, 0.2, seed=3)})[0]
    assert noisy.verdict == "INCONCLUSIVE" and not noisy.passed and noisy.margin == ""
    assert noisy.interval.low < 0.05 < noisy.interval.high
    assert "straddles the threshold" in noisy.record()["reason"]


def test_a_single_round_gives_no_verdict() -> None:
    gate = gates.overhead_gates("cfg", {0: np.array([100.0]), 1: np.array([101.0])})[0]
    assert gate.interval is None and gate.verdict == "INCONCLUSIVE" and "fewer than two rounds" in gate.judgement[1]


def test_bootstrap_resamples_whole_rounds_together() -> None:
    """A drift that moves every series alike cancels in a ratio: the interval of the ratio stays tight."""
    drift = np.linspace(1.0, 1.6, 10)
    series = {"a": 100.0 * drift, "b": 102.0 * drift}
    interval = confidence.bootstrap(series, lambda v: v["b"] / v["a"] - 1)
    assert interval.low == pytest.approx(0.02) and interval.high == pytest.approx(0.02)
    assert confidence.bootstrap(series, lambda v: v["b"] / v["a"] - 1) == interval  # seeded: reproducible
    with pytest.raises(ValueError, match="same number"):
        confidence.bootstrap({"a": np.ones(3), "b": np.ones(4)}, lambda v: 0.0)


def test_p_star_gates() -> None:
    assert gates.p_star_gates("cfg", 1, {4: ({"x": np.ones(3)}, lambda v: 0.5, lambda v: 0.0)}) == []
    tight = {"x": _rounds(1.0, 0.0)}
    floor = lambda v: 0.05  # noqa: E731 - stores at the floor would leave the gate well within reach
    found = {g.name: g for g in gates.p_star_gates("cfg", 8, {4: (tight, lambda v: 0.19, floor),
                                                              8: (tight, lambda v: None, floor)})}
    assert set(found) == {"in-kernel p* W=4", "in-kernel p* W=8"}
    assert found["in-kernel p* W=4"].passed
    undefined = found["in-kernel p* W=8"]  # selecting saves nothing: p* is infinite in every resample
    assert undefined.verdict == "FAIL" and undefined.margin == "not measurable" and undefined.show(None) == "undefined"


def test_rounds_interleave_every_series_once_per_round_in_varying_order() -> None:
    calls: list[tuple[str, int]] = []

    def sampler(name: str):
        def sample(n: int) -> np.ndarray:
            calls.append((name, n))
            return np.full(n, float(len(calls)))
        return sample

    schedule = Schedule(rounds=3, per_round=5, round_warmups=1)
    timings = run_rounds({name: sampler(name) for name in "abcd"}, schedule, "test", seed=1)
    measured = [name for name, n in calls if n == 5]
    assert [name for name, n in calls if n == 1] == measured  # each measurement follows its own warm-up
    per_round = [measured[i:i + 4] for i in range(0, 12, 4)]
    assert all(sorted(r) == list("abcd") for r in per_round) and len({tuple(r) for r in per_round}) > 1
    assert timings.samples["a"].shape == (3, 5) and timings.timing("a").pooled.size == 15
    assert set(timings.round_medians(["a", "b"])) == {"a", "b"}


def test_settle_stops_when_the_medians_stop_moving_and_reports_a_cap() -> None:
    """A series that speeds up (a clock ramping) then holds steady settles; one that keeps drifting does not."""
    def ramp(n: int, state: list[int] = [0]) -> np.ndarray:  # noqa: B006 - the call counter
        state[0] += 1
        return np.full(n, 100.0 + 200.0 / state[0] ** 2)

    schedule = Schedule(settle_batch=4, settle_window=2, settle_tolerance=0.02, settle_max_passes=30)
    warm = settle({"ramp": ramp}, schedule)
    assert warm.settled and 4 <= warm.passes < 30 and warm.changes[-1] < 0.02 <= max(warm.changes)
    drifting = iter(range(1, 10**6))
    never = settle({"drift": lambda n: np.full(n, 1.5 ** next(drifting))}, schedule)
    assert not never.settled and never.passes == 30


def test_memory_gates() -> None:
    ok = gates.memory_gates("cfg", 1024, 1024, {"live_bytes": 0, "live_buffers": 0, "allocations": 0})
    assert all(g.passed for g in ok)
    bad = gates.memory_gates("cfg", 1024, 1040, {"live_bytes": 0, "live_buffers": 0, "allocations": 3})
    assert [g.passed for g in bad] == [False, False]
    assert bad[0].margin == "by +16 bytes" and bad[1].margin == "by +3"


def test_expected_bytes_reference_slot_is_one_mib_in_fp16() -> None:
    parts = expected_bytes(Shape(1, 32, 128, 128), 8, 4, "float16")
    assert parts["window"] == parts["past_state"] == 4 * 2**20
    assert parts["scratch"] == 64
    # T < W: the call's second uniform, whose dispatches skip storing the leading zero slots
    assert expected_bytes(Shape(1, 32, 128, 128), 1, 4, "float16")["scratch"] == 128


def test_shape_names_the_sizes_of_its_calls() -> None:
    """``"B,H,dk,dv"`` parses to the fields ``oracles.Dims`` names, and a benchmarked call has those sizes."""
    assert Shape.parse("1,32,128,128") == REFERENCE_SHAPE
    assert REFERENCE_SHAPE.label == "B=1 H=32 dk=128 dv=128"
    dims = validate(**host_inputs(QUICK_SHAPE, 3, 2, "float32"), **attributes(QUICK_SHAPE, 2))
    sizes = ("batch", "q_heads", "kv_heads", "d_k", "d_v")
    assert [getattr(dims, n) for n in sizes] == [getattr(QUICK_SHAPE, n) for n in sizes]
    assert dims.state_shape[1:] == QUICK_SHAPE.slot_shape()


def test_run_protocol_repeats_warmups_and_pools_samples() -> None:
    calls = []

    def sample(n: int) -> np.ndarray:
        calls.append(n)
        return np.arange(n, dtype=float)

    timing = run_protocol(Protocol(warmups=2, iterations=5, repetitions=3), "test", sample)
    assert calls == [2, 5, 2, 5, 2, 5]
    assert timing.pooled.size == 15 and timing.p50 == 2.0


def test_chunked_sampler_covers_every_iteration() -> None:
    sizes = []

    def sample(n: int) -> np.ndarray:
        sizes.append(n)
        return np.ones(n)

    assert chunked(sample, 4)(10).size == 10 and sizes == [4, 4, 2]


def test_subcommand_and_quick_defaults() -> None:
    parser = argparse.ArgumentParser()
    add_subcommand(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["bench", "--quick", "--out", "x", "--windows", "4", "--acceptance", "geometric:0.7",
                              "--paths", "auto,scalar,workgroup@32", "--template", "old.wgsl", "--template-path",
                              "scalar", "--rounds", "5"])
    options = options_from_args(args)
    assert args.func.__name__ == "run_from_args"
    assert options.windows == (0, 4) and options.shapes == (QUICK_SHAPE,)
    assert options.acceptance.label == "geometric:0.7" and options.protocol.iterations < 200
    assert options.paths == ("auto", "scalar", "workgroup@32") and options.templates == (Path("old.wgsl"),)
    assert options.template_path == "scalar"
    assert options.schedule.rounds == 5 and options.schedule.per_round < 60


def test_chunked_is_a_variant_of_the_kernel_beside_its_paths() -> None:
    """``--paths auto,chunked@16``: the token loop and the chunked prefill (the auto path), with a bound."""
    assert kernel_variant("auto") == KernelOptions()
    assert kernel_variant("chunked") == KernelOptions(prefill="chunked")
    assert kernel_variant("chunked@16") == KernelOptions(max_row_groups=16, prefill="chunked")
    assert kernel_variant("scalar@32") == KernelOptions(path="scalar", max_row_groups=32)
    assert kernel_variant("auto:generic") == KernelOptions(specialise=False)
    assert kernel_variant("chunked@16:generic") == KernelOptions(max_row_groups=16, prefill="chunked",
                                                                specialise=False)
    with pytest.raises(ValueError, match="kernel variant 'token'"):
        kernel_variant("token")


@pytest.mark.slow
def test_quick_run_on_the_real_kernel(tmp_path: Path) -> None:
    """A tiny run through the kernel and ORT: every configuration present, memory gates pass, outputs written."""
    status = main(["--quick", "--out", str(tmp_path), "--shapes", "1,2,8,8", "--seq-lens", "1,4", "--warmups", "1",
                   "--iterations", "4", "--repetitions", "1", "--growth-calls", "4", "--rounds", "2",
                   "--per-round", "3"])
    assert status in (0, 1)  # 1: a timing gate failed, which on a shared CPU is noise, not a bug
    results = json.loads((tmp_path / "results.json").read_text())
    measured = {(r["dtype"], r["T"], r["W"]) for r in results["configurations"]}
    skipped = {s["dtype"] for s in results["skipped"]}
    expected = {(d, t, w) for d in ("float16", "float32") if d not in skipped for t in (1, 4) for w in (0, 1, 4, 8)}
    assert measured == expected and ("float32", 4, 4) in measured
    memory = [g for g in results["gates"] if g["name"].startswith("memory")]
    assert len(memory) == 2 * len(measured) and all(g["passed"] for g in memory)
    assert {(r["T"], r["W"]) for r in results["rollback"] if r["dtype"] == "float32"} == {(4, 4), (4, 8)}
    # slots of 512 (fp32) or 256 (fp16) bytes are aligned: select rebinds, and the copy is measured beside it
    selects = [p for r in results["rollback"] for p in r["per_accepted"]]
    assert selects and all(p["select_path"] == "rebind" and p["copy_us"] is not None for p in selects)
    assert {(r["dtype"], r["T"]) for r in results["ort_comparison"]} == {(d, t) for d, t, w in measured if w == 0}
    assert {g["verdict"] for g in results["gates"]} <= {"PASS", "FLOOR-BOUND", "FAIL", "INCONCLUSIVE"}
    # the window's extra bytes (T = 4: 3 slots at W = 4 and W = 8) against the plain store kernel's floor
    floors = {(r["dtype"], r["W"]): r["extra_bytes"] for r in results["rollback"] if r["T"] == 4}
    assert {floors[d, w] for d, w in floors if d == "float32"} == {3 * 2 * 8 * 8 * 4}
    # and against the serial floor: the kernel's own workgroups storing those slots one after another
    assert all(isinstance(r["serial_floor_us"], float) and "serial_floor_p_star" in r
               for r in results["rollback"] if r["extra_bytes"])
    assert "stores / serial floor" in (tmp_path / "report.md").read_text()
    names = {g["name"] for g in results["gates"]}
    assert {"stores vs serial floor W=4", "p* W=4", "p* W=8", "in-kernel p* W=4"} <= names  # the serial floor: default
    assert "stores vs serial floor W=8" not in names  # T = 4 < W = 8
    assert {(r["T"], r["W"]) for r in results["decoder_view"] if r["dtype"] == "float32"} == {(4, 4), (4, 8)}
    timing = [g for g in results["gates"] if g["comparison"] == "<="]
    assert timing and all(g["interval"]["rounds"] == 2 for g in timing)
    assert all(w["passes"] >= 1 for w in results["meta"]["warm_up"]) and results["meta"]["schedule"]["rounds"] == 2
    assert (tmp_path / "report.md").read_text().count("PASS") >= len(memory)
    assert (tmp_path / "latency_vs_window.png").stat().st_size > 0


@pytest.mark.parametrize("label", ["auto@3", "fast", "auto@", "scalar@64", "auto:fast", "auto:"])
def test_kernel_variants_are_checked_at_the_boundary(tmp_path: Path, capsys, label: str) -> None:
    """A variant is PATH or PATH@N with N a row-group bound the kernel has, optionally :generic: anything else is
    a usage error naming it (argparse's exit 2), before any device is touched."""
    with pytest.raises(SystemExit) as exit_:
        main(["--paths", f"auto,{label}", "--quick", "--out", str(tmp_path)])
    assert exit_.value.code == 2 and f"kernel variant {label!r}: expected PATH or PATH@N" in capsys.readouterr().err


@pytest.mark.parametrize("prefix", [["bench"], []], ids=["lafuzz bench", "python -m fuzz.bench"])
def test_bad_options_are_one_line_and_exit_2(tmp_path: Path, capsys, prefix: list[str]) -> None:
    """``--windows 9`` is outside 0..8: both entry points print one line (no traceback) and exit 2."""
    from fuzz.cli import main as lafuzz_main

    entry = lafuzz_main if prefix else main
    assert entry([*prefix, "--windows", "9", "--quick", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.endswith("windows must be in 0..8 and sequence lengths >= 1\n") and err.count("\n") == 1

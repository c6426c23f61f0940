"""The rollback gates against the memory floor and in the decoder's view: verdict logic, floor math, and the
plain store kernel on this machine's adapter (a few KiB: it must store exactly what it says, and nothing when
empty). No timed assertions: the values are synthetic."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fuzz.bench import confidence, gates, protocol
from fuzz.bench.cli import main
from fuzz.bench.confidence import FAIL, FLOOR_BOUND, INCONCLUSIVE, PASS, Interval
from fuzz.bench.decoder_view import RERUN, SELECT, WALL, WINDOW, DecoderSeries
from fuzz.bench.report import verdict_counts
from fuzz.bench.rollback import Acceptance
from fuzz.bench.runner import TEMPLATE_PATH, Options, template_names
from fuzz.bench.store_floor import (
    EMPTY,
    SERIAL,
    STORE,
    PlainStore,
    SerialStore,
    SlotLayout,
    extra_slots,
    floor_ns,
    serial_floor_ns,
    stored_bytes,
)


def _interval(low: float, high: float) -> Interval:
    return Interval(low, high, 0.95, 2000, 10)


def _flat(value: float, rounds: int = 10) -> np.ndarray:
    return np.full(rounds, value)


@pytest.mark.parametrize(("measured", "floor", "expected"), [
    ((FAIL, ""), _interval(0.22, 0.25), FLOOR_BOUND),       # the floor alone fails the gate
    ((PASS, ""), _interval(0.21, 0.30), FLOOR_BOUND),       # FLOOR-BOUND whatever was measured
    ((FAIL, ""), _interval(0.10, 0.12), FAIL),              # the floor allows it: the measured verdict stands
    ((INCONCLUSIVE, "x"), _interval(0.10, 0.12), INCONCLUSIVE),
    ((PASS, ""), _interval(0.18, 0.23), PASS),              # met even though the floor may not allow it
    ((FAIL, ""), _interval(0.18, 0.23), INCONCLUSIVE),      # floor-bound or not: not known
    ((FAIL, ""), _interval(0.20, 0.20), FAIL),              # at the threshold the floor still allows the gate
])
def test_floor_verdict(measured: tuple[str, str], floor: Interval, expected: str) -> None:
    kind, reason = confidence.floor_verdict(measured, floor, 0.20)
    assert kind == expected
    assert ("floor's 95% interval" in reason) == (expected == INCONCLUSIVE and measured[0] != INCONCLUSIVE)


def test_a_floor_bound_p_star_gate_passes_and_prints_its_floor() -> None:
    """p* 27% measured, 24% at the floor: FLOOR-BOUND, accepted, the floor printed beside it; the same p* with a
    floor of 12% FAILs."""
    series = {"x": _flat(1.0)}
    bound, beatable = gates.p_star_gates("cfg", 8, {8: (series, lambda v: 0.27, lambda v: 0.24),
                                                    4: (series, lambda v: 0.27, lambda v: 0.12)})[::-1]
    assert (bound.name, beatable.name) == ("in-kernel p* W=8", "in-kernel p* W=4")
    assert bound.verdict == FLOOR_BOUND and bound.passed and bound.margin == ""
    assert bound.floor_text == "serial floor 24.00% [24.00%, 24.00%]"
    assert bound.record()["floor_text"] == bound.floor_text
    assert beatable.verdict == FAIL and not beatable.passed and beatable.margin == "by 7.00 pp"
    undefined = gates.p_star_gates("cfg", 8, {8: (series, lambda v: None, lambda v: None)})[0]
    assert undefined.verdict == FLOOR_BOUND  # selecting saves nothing: no store form can make the window pay
    single = gates.p_star_gates("cfg", 8, {8: ({"x": _flat(1.0, 1)}, lambda v: 0.27, lambda v: 0.24)})[0]
    assert single.verdict == INCONCLUSIVE  # one round: no interval, for the floor either


def test_store_ratio_gates_only_where_the_window_fits_the_call() -> None:
    series = {"x": _flat(1.0)}
    by_window = {1: (series, lambda v: 0.0), 4: (series, lambda v: 1.30), 8: (series, lambda v: 1.10)}
    assert [g.name for g in gates.store_ratio_gates("cfg", 4, by_window)] == ["stores vs serial floor W=4"]
    four, eight = gates.store_ratio_gates("cfg", 8, by_window)
    assert four.verdict == FAIL and four.margin == "by 0.05x" and four.show(four.measured) == "1.30x"
    assert eight.verdict == PASS and eight.threshold == gates.STORE_RATIO_LIMIT == 1.25 and eight.floor is None
    noisy = {"x": 1.0 + 0.2 * np.random.default_rng(0).uniform(-1, 1, 10)}
    straddling = gates.store_ratio_gates("cfg", 8, {8: (noisy, lambda v: 1.2 * v["x"])})[0]
    assert straddling.verdict == INCONCLUSIVE


def test_the_decoders_p_star_is_the_headline_gate_held_to_the_requests_twenty_percent() -> None:
    series = {"x": _flat(1.0)}
    assert gates.decoder_p_star_gates("cfg", 1, {8: (series, lambda v: 0.0)}) == []
    four, eight = gates.decoder_p_star_gates("cfg", 8, {8: (series, lambda v: 0.21), 4: (series, lambda v: 0.19)})
    assert (four.name, four.verdict, eight.name, eight.verdict) == ("p* W=4", PASS, "p* W=8", FAIL)
    assert eight.threshold == gates.P_STAR_LIMIT == 0.20


def test_extra_slots_and_floor() -> None:
    assert [extra_slots(8, w) for w in (0, 1, 4, 8)] == [0, 0, 3, 7]
    assert [extra_slots(4, w) for w in (4, 8)] == [3, 3]  # T < W: the call stores T slots (zeros known)
    assert extra_slots(1, 8) == 0
    assert floor_ns({(STORE, 64): 5.5, (EMPTY, 64): 4.0}, 64) == 1.5
    assert stored_bytes(17) == 32 and stored_bytes(32) == 32


def test_decoder_series_prices_a_rerun_as_an_extra_dispatch() -> None:
    """T = 4, W = 4: a = 1, 2, 3 represented, each 1/4. Each series is already a difference: the window's cost,
    a rerun ([verify_0, prefix] - [verify_0]), a select ([call, next] - [call, call]); p* = cost / E[rerun - select]."""
    names = DecoderSeries(4, 4, (WALL, "auto", 4, 0), (WINDOW, "auto", 4, 4),
                          {a: (RERUN, "auto", 4, a) for a in (1, 2, 3)},
                          {a: (SELECT, "auto", 4, 4, a) for a in (1, 2, 3)})
    values = {names.cost: 2.0, **{name: 40.0 + a for a, name in names.reruns.items()},
              **{name: 1.0 for name in names.selects.values()}}
    # rerun(a) = 40 + a, select = 1: E = (40 + 41 + 42) / 4
    assert names.saving(values, Acceptance()) == pytest.approx(123.0 / 4)
    assert names.statistic(Acceptance())(values) == pytest.approx(2.0 / (123.0 / 4))
    assert len(names.names) == 7 and names.verify_0 not in names.names
    assert names.statistic(Acceptance())({**values, **{n: 1.0 for n in names.reruns.values()}}) is None


def test_paired_wall_sampler_subtracts_side_by_side_batches_in_alternating_order(monkeypatch) -> None:
    """A clock that advances by what each step costs: 3 per ``first``, 1 per ``second``, 5 per fence; each sample
    is (first - second) per step, the fence cancelling; the order alternates so neither always runs first."""
    clock, order = [0], []

    def advance(by: int, name: str) -> None:
        clock[0] += by
        order.append(name)

    monkeypatch.setattr(protocol.time, "perf_counter_ns", lambda: clock[0])
    sample = protocol.paired_wall_sampler(lambda: advance(3, "a"), lambda: advance(1, "b"),
                                          lambda: advance(5, "fence"), batch=2)
    np.testing.assert_array_equal(sample(3), [2.0, 2.0, 2.0])
    batches = [name for name in order if name != "fence"][::2]
    assert batches == ["a", "b", "b", "a", "a", "b"]


def test_verdict_counts_and_template_names() -> None:
    counts = verdict_counts({"gates": [{"verdict": v} for v in (PASS, FLOOR_BOUND, FLOOR_BOUND, FAIL)]})
    assert counts == {"PASS": 1, "FLOOR-BOUND": 2, "FAIL": 1, "INCONCLUSIVE": 0}
    assert template_names((Path("a/old.wgsl"),)) == {TEMPLATE_PATH: Path("a/old.wgsl")}
    assert list(template_names((Path("old.wgsl"), Path("b/ring.wgsl")))) == ["template:old", "template:ring"]
    with pytest.raises(ValueError, match="different file names"):
        template_names((Path("a/k.wgsl"), Path("b/k.wgsl")))


def test_plain_store_kernel_stores_every_vector_and_the_empty_one_none(need) -> None:
    """The floor's instrument on this machine's adapter: the store dispatch writes its pattern over the whole
    buffer, the empty dispatch (the same workgroups) writes nothing."""
    from kernels.device import get_device

    need("wgpu")
    device = get_device("wgpu")
    store = PlainStore(device, 3 * 4096 + 16)
    try:
        device.upload(np.zeros(store.buffer.shape, np.uint32), "zeros", into=store.buffer)
        store.sampler(EMPTY, "timestamp-query" in device.features)(1)
        assert not device.download(store.buffer).any()
        times = store.sampler(STORE, "timestamp-query" in device.features)(2)
        assert times.shape == (2,) and (times > 0).all()
        words = device.download(store.buffer).reshape(-1, 4)
        index = np.arange(len(words), dtype=np.uint32)
        np.testing.assert_array_equal(words, np.stack([index, index ^ 1, index ^ 2, index ^ 3], axis=1))
    finally:
        store.release()


@pytest.mark.parametrize(("invocations", "tile_vectors"), [(8, 2), (5, 2), (64, 1)])
def test_serial_store_kernel_stores_each_workgroups_tile_of_each_slot(need, invocations: int,
                                                                        tile_vectors: int) -> None:
    """The serial floor's instrument: ``n`` slots of ``[B, H, d_k, d_v]`` stored, every vector of them by the
    workgroup whose tile of ``d_v`` it lies in, and nothing past them; also where the invocations do not divide
    the tile (5) or outnumber it (64)."""
    from kernels.device import get_device

    need("wgpu")
    device = get_device("wgpu")
    batch, heads, rows, row_vectors = 2, 3, 4, 3 * tile_vectors
    layout = SlotLayout((row_vectors // tile_vectors, heads, batch), invocations, rows, tile_vectors, row_vectors)
    store = SerialStore(device, layout, (1, 2, 3))
    try:
        device.upload(np.zeros(store.buffer.shape, np.uint32), "zeros", into=store.buffer)
        times = store.sampler("2", "timestamp-query" in device.features)(1)
        assert times.shape == (1,) and times[0] > 0
        words = device.download(store.buffer).reshape(3, batch, heads, rows, row_vectors, 4)
        assert not words[2].any() and (words[:2, ..., 0] > 0).all()
        stored = words[:2]
        index = np.indices(stored.shape[:-1])  # slot, batch, head, row, vector of the row
        np.testing.assert_array_equal(stored[..., 1], index[4] // tile_vectors)  # workgroup x: the tile
        np.testing.assert_array_equal(stored[..., 2], index[2])  # workgroup y: the head
        np.testing.assert_array_equal(stored[..., 3], index[1])  # workgroup z: the batch
        np.testing.assert_array_equal(words[1, ..., 0], words[0, ..., 0] + 1)  # the next slot, the same lanes
        assert set(store.series(False)) == {(SERIAL, layout, n) for n in (1, 2, 3)}
    finally:
        store.release()


def test_serial_floor_is_the_extra_slots_beyond_the_one_a_call_stores() -> None:
    layout = SlotLayout((8, 32, 1), 128, 128, 2, 16)
    assert layout.slot_vectors == 32 * 128 * 16
    values = {(SERIAL, layout, 1): 10.0, (SERIAL, layout, 8): 31.0}
    assert serial_floor_ns(values, layout, 7) == 21.0


def test_usage_errors_for_templates(tmp_path: Path, capsys) -> None:
    """Two templates of one file name cannot be told apart in the report: one line, exit 2."""
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "k.wgsl").write_text("")
    status = main(["--quick", "--out", str(tmp_path / "out"), "--template", str(tmp_path / "a" / "k.wgsl"),
                   "--template", str(tmp_path / "b" / "k.wgsl")])
    assert status == 2 and "different file names" in capsys.readouterr().err


def test_an_overhead_the_timer_cannot_resolve_is_undefined_not_a_crash() -> None:
    """Dawn's timestamps on an H200 came in steps of 65.5 us, so a short call without the window can read 0 ns in
    every round: its overhead gate is then undefined (shown so, and not passed), where the bench used to stop."""
    zero, some = np.zeros(3), np.full(3, 65_536.0)
    (gate, *_) = gates.overhead_gates("float16 T=8", {0: zero, 1: some, 4: some})
    assert gate.show(gate.measured) == "undefined" and gate.verdict == FAIL and gate.margin == "not measurable"
    assert gates.overhead(2.0, 1.0) == 1.0


def test_gates_judged_against_the_serial_floor_are_named_for_it() -> None:
    rounds = {"a": _flat(3.0), "b": _flat(1.0)}

    def ratio(values) -> float:
        return values["a"] / values["b"]

    def p_star(values) -> float:
        return 0.1 * values["a"]

    (stores,) = gates.store_ratio_gates("fp16 T=8", 8, {4: (rounds, ratio)}, gates.SERIAL)
    (plain,) = gates.store_ratio_gates("fp16 T=8", 8, {4: (rounds, ratio)}, gates.PLAIN)
    assert (stores.name, plain.name) == ("stores vs serial floor W=4", "stores vs floor W=4")
    (gate,) = gates.p_star_gates("fp16 T=8", 8, {4: (rounds, p_star, p_star)}, gates.SERIAL)
    assert gate.floor_text.startswith("serial floor 30.00%") and gate.verdict == FLOOR_BOUND
    with pytest.raises(ValueError, match="floor 'ideal'"):
        Options(floor="ideal")


def test_a_run_judged_against_the_serial_floor_by_default(tmp_path: Path) -> None:
    """By default the rollback gates take the serial floor's values, the ones the rollback rows report; the plain
    floor's ratio is printed as the distance to the memory limit."""
    status = main(["--quick", "--out", str(tmp_path), "--shapes", "1,2,8,8", "--dtypes", "fp32", "--seq-lens", "4",
                   "--windows", "4", "--no-ort", "--no-decoder-view", "--growth-calls", "2", "--rounds", "3",
                   "--per-round", "3"])
    assert status in (0, 1)  # 1: a timing gate failed, which on a shared CPU is noise, not a bug
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["meta"]["floor"] == "serial"
    (row,) = results["rollback"]
    by_name = {g["name"]: g for g in results["gates"]}
    assert by_name["stores vs serial floor W=4"]["measured"] == pytest.approx(row["serial_store_ratio"])
    window_us = row["verify_W_us"] - row["verify_0_us"]
    for ratio, floor in (("serial_store_ratio", "serial_floor_us"), ("store_ratio", "floor_us")):
        # each ratio against the floor the row reports; none where noise left the floor at or below zero
        assert row[ratio] == (None if row[floor] <= 0 else pytest.approx(window_us / row[floor]))
    serial_p_star = row["serial_floor_p_star"]  # None where noise left no saving: the gate's floor is then infinite
    in_kernel = by_name["in-kernel p* W=4"]
    assert in_kernel["floor"] == (float("inf") if serial_p_star is None else pytest.approx(serial_p_star))
    assert in_kernel["floor_text"].startswith("serial floor ")
    assert "stores vs floor W=4" not in by_name and "p* W=4" not in by_name  # --no-decoder-view: no headline p*
    report = (tmp_path / "report.md").read_text()
    assert "against the serial floor" in report and "distance to the memory limit" in report

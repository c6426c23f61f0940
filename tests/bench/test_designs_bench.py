"""The three-design bench (``fuzz.bench.designs``): its math on known inputs, its tables complete from given round
medians, and a short run on this machine's adapter writing its three files. The numbers of a software adapter mean
nothing; the GPU's are in docs/results."""

from __future__ import annotations

import json
from collections.abc import Hashable
from pathlib import Path

import numpy as np
import pytest

from fuzz.bench.confidence import FAIL, FLOOR_BOUND, PASS
from fuzz.bench.designs import DesignsOptions, captured_bytes, goals, main, run_designs, tables
from fuzz.bench.designs_report import PLOT, markdown, write_outputs
from fuzz.bench.kernel_timing import SelectSeries
from fuzz.bench.rollback import Acceptance, expected_saving
from fuzz.bench.rollback_designs import CAPSULE, RERUN, WINDOW, Design, expected_restore, p_star, saving
from fuzz.bench.rounds import Schedule
from fuzz.bench.store_floor import EMPTY, STORE
from fuzz.bench.workload import REFERENCE_SHAPE, Shape

TINY = Schedule(rounds=2, per_round=3, round_warmups=0, settle_batch=2, settle_window=1, settle_max_passes=2)


def test_each_design_holds_the_accepted_lengths_it_can_restore() -> None:
    assert Design(WINDOW, 4).held(8) == [5, 6, 7]  # T - W < a < T: the window's last W states
    assert Design(CAPSULE, 4).held(8) == [1, 2, 3, 4]  # the first C transitions
    assert Design(CAPSULE, 8).held(3) == [1, 2]  # a = T is no rejection
    assert Design(WINDOW, 8).held(1) == Design(CAPSULE, 8).held(1) == Design(RERUN).held(8) == []
    with pytest.raises(ValueError):
        Design(RERUN, 2)


def test_memory_per_layer_at_the_reference_size() -> None:
    slot = 32 * 128 * 128  # H * d_k * d_v values
    assert Design(WINDOW, 8).bytes_per_layer(REFERENCE_SHAPE, "float16") == 8 * slot * 2
    assert Design(WINDOW, 4).bytes_per_layer(REFERENCE_SHAPE, "float32") == 4 * slot * 4
    entry = 32 + 32 * 128 + 32 * 128  # decay H_v, key H_k d_k, delta H_v d_v: float32 whatever the call's dtype
    assert Design(CAPSULE, 8).bytes_per_layer(REFERENCE_SHAPE, "float16") == 8 * entry * 4
    assert Design(RERUN).bytes_per_layer(REFERENCE_SHAPE, "float16") == 0
    assert captured_bytes(REFERENCE_SHAPE, 3, 8) == 3 * entry * 4
    assert captured_bytes(Shape(2, 4, 8, 16), 9, 8) == 2 * 8 * (4 + 4 * 8 + 4 * 16) * 4


def test_break_even_on_known_costs() -> None:
    uniform = Acceptance()
    rerun = {1: 10.0, 2: 20.0, 3: 30.0}
    window, capsule = Design(WINDOW, 2), Design(CAPSULE, 2)
    # T = 4, a uniform on 0..3: the window holds a = 3 (restore 2), the capsule a = 1, 2 (restores 1 and 2)
    assert expected_restore(Design(RERUN), 4, rerun, {}, uniform) == pytest.approx((10 + 20 + 30) / 4)
    assert expected_restore(window, 4, rerun, {3: 2.0}, uniform) == pytest.approx((10 + 20 + 2) / 4)
    assert saving(window, 4, rerun, {3: 2.0}, uniform) == pytest.approx(28 / 4)
    assert saving(window, 4, rerun, {3: 2.0}, uniform) == pytest.approx(
        expected_saving(4, 2, rerun, {3: 2.0}, uniform))  # fuzz.bench's p* for the window
    assert p_star(window, 4, 8.4, 1.4, rerun, {3: 2.0}, uniform) == pytest.approx(7.0 / 7.0)
    assert p_star(capsule, 4, 2.0, 1.0, rerun, {1: 1.0, 2: 2.0}, uniform) == pytest.approx(1.0 / ((9 + 18) / 4))
    geometric = Acceptance("geometric", 0.5)  # P(a) = 0.5^(a+1) renormalised over a < 4: 8/15, 4/15, 2/15, 1/15
    assert saving(capsule, 4, rerun, {1: 1.0, 2: 2.0}, geometric) == pytest.approx((4 * 9 + 2 * 18) / 15)
    assert p_star(Design(RERUN), 4, 1.0, 1.0, rerun, {}, uniform) is None
    assert p_star(capsule, 4, 2.0, 1.0, rerun, {1: 11.0, 2: 20.0}, uniform) is None  # restoring saves nothing


def _medians(options: DesignsOptions, spread: float = 0.0, capture_ns: float = 10.0, bytes_per_ns: float = 1.0,
             replay_ns: float = 200.0) -> tuple[dict[Hashable, np.ndarray], dict]:
    """Round medians (ns, 4 rounds) for every series the bench measures with ``options``: LinearAttention and
    GatedDeltaNet calls of 1000 ns a token, the window's stores 50 ns a slot, the capsule's ``capture_ns`` an entry,
    a select of 100 ns, a replay of ``replay_ns`` + 10 a ns, plain stores at ``bytes_per_ns``; ``spread`` varies
    them round by round."""
    rounds = np.array([1.0 - spread, 1.0, 1.0 + spread, 1.0])
    top = max(options.seq_lens)
    values: dict[Hashable, float] = {}
    selects: dict = {}
    for t in range(1, top + 1):
        values["la", t, 0] = values["gdn", t, 0] = 1000.0 * t
        for w in options.windows:
            values["la", t, w] = 1000.0 * t + 50.0 * min(t, w)
            held = Design(WINDOW, w).held(t)
            if held:
                values["span", "la", t, w] = 2000.0 * t
                selects[t, w] = {}
                for a in held:
                    values["rebind", "la", t, w, a] = 2000.0 * t + 100.0
                    values["copy", "la", t, w, a] = 2000.0 * t + 300.0
                    selects[t, w][a] = SelectSeries(("span", "la", t, w), ("copy", "la", t, w, a),
                                                    ("rebind", "la", t, w, a), None)
        for c in options.capacities:
            values["gdn", t, c] = 1000.0 * t + capture_ns * min(t, c)
            nbytes = captured_bytes(options.shape, t, c)
            values[STORE, nbytes], values[EMPTY, nbytes] = 500.0 + nbytes / bytes_per_ns, 500.0
    for c in options.capacities:
        for a in Design(CAPSULE, c).held(top):
            values["replay", c, a] = values["gdn", top, c] + replay_ns + 10.0 * a
    return {name: value * rounds for name, value in values.items()}, selects


def test_the_tables_have_every_row_and_their_values_follow_from_the_series() -> None:
    options = DesignsOptions(shape=Shape(1, 2, 4, 4), seq_lens=(1, 2, 3, 4), windows=(2,), capacities=(2,))
    medians, selects = _medians(options)
    table = tables(medians, selects, options, "float32")
    keys = [(r["T"], r["design"], r["kernel"]) for r in table["designs"]]
    assert keys == [(t, d, k) for t in (1, 2, 3, 4) for d, k in (("window W=2", "LinearAttention"),
                                                                  ("capsule C=2", "GatedDeltaNet"),
                                                                  ("rerun", "LinearAttention"),
                                                                  ("rerun", "GatedDeltaNet"))]
    by = {(r["T"], r["design"], r["kernel"]): r for r in table["designs"]}
    window, capsule = by[4, "window W=2", "LinearAttention"], by[4, "capsule C=2", "GatedDeltaNet"]
    assert window["overhead"] == pytest.approx(100 / 4000)
    assert window["restore_us"] == pytest.approx((1 + 2 + 0.1) / 4)  # reruns of 1 and 2 us, the select of a = 3
    assert window["p_star"] == pytest.approx(0.1 / ((3 - 0.1) / 4))
    replay = {a: 0.2 + 0.01 * a for a in (1, 2)}
    assert capsule["restore_us"] == pytest.approx((replay[1] + replay[2] + 3) / 4)
    assert capsule["p_star"] == pytest.approx(0.02 / ((1 - replay[1] + 2 - replay[2]) / 4))
    nbytes = 2 * (2 + 2 * 4 + 2 * 4) * 4
    assert capsule["floor_bytes"] == nbytes and capsule["floor_us"] == pytest.approx(nbytes / 1e3)
    assert by[4, "rerun", "GatedDeltaNet"]["overhead"] == 0 and by[4, "rerun", "GatedDeltaNet"]["p_star"] is None
    assert by[1, "capsule C=2", "GatedDeltaNet"]["p_star"] is None  # T = 1 rejects with a = 0 only
    assert {(r["T"], r["design"], r["a"], r["path"]) for r in table["restores"]} == {
        (2, "window W=2", 1, "rebind"), (3, "window W=2", 2, "rebind"), (4, "window W=2", 3, "rebind"),
        (2, "capsule C=2", 1, "replay"), (3, "capsule C=2", 1, "replay"), (3, "capsule C=2", 2, "replay"),
        (4, "capsule C=2", 1, "replay"), (4, "capsule C=2", 2, "replay")}


def _goals(options: DesignsOptions, dtype: str, **costs: float) -> dict[str, str]:
    medians, selects = _medians(options, spread=0.001, **costs)
    return {g["goal"]: g["verdict"] for g in goals({dtype: tables(medians, selects, options, dtype)}, 4)}


def test_the_goals_judge_the_intervals_and_the_floor() -> None:
    options = DesignsOptions(shape=REFERENCE_SHAPE, seq_lens=tuple(range(1, 9)), windows=(8,), capacities=(8,))
    timing = ("capsule C=8 verify overhead T=1 <= 5%", "capsule C=8 verify overhead T=8 <= 15%",
              "capsule C=8 p* T=8 <= 10%")
    # an entry (32,896 bytes) at 1000 bytes a ns is 33 ns on a call of 1000 ns a token: the floor leaves room
    fast = _goals(options, "float16", bytes_per_ns=1000.0)
    assert [fast[g] for g in timing] == [PASS, PASS, PASS]  # 10 ns an entry: 1% overhead, p* 2.4%
    assert [_goals(options, "float16", capture_ns=300.0, bytes_per_ns=1000.0)[g] for g in timing] == [FAIL] * 3
    # at 1 byte a ns the floor alone is 33 us an entry: no capture kernel could meet a goal
    assert [_goals(options, "float16")[g] for g in timing] == [FLOOR_BOUND] * 3
    # a replay dearer than every rerun saves nothing: p* is undefined, a failure of the replay, not of the floor
    assert _goals(options, "float16", bytes_per_ns=1000.0, replay_ns=1e5)["capsule C=8 p* T=8 <= 10%"] == FAIL
    assert fast["capsule C=8 bytes <= window W=8 / 16"] == PASS  # 8 x 8,224 floats against 8 fp16 slots of 2^19
    small = DesignsOptions(shape=Shape(1, 4, 8, 8), seq_lens=(1,), windows=(8,), capacities=(8,))
    assert _goals(small, "float32")["capsule C=8 bytes <= window W=8 / 16"] == FAIL  # d = 8: an entry is 1/3 a slot


def test_a_short_run_writes_the_table_and_the_plot(need, tmp_path: Path) -> None:
    need("wgpu-gdn")
    options = DesignsOptions(shape=Shape(1, 2, 8, 8), dtypes=("float32",), seq_lens=(1, 3), windows=(2,),
                             capacities=(2,), schedule=TINY)
    results = run_designs(options, log=lambda line: None)
    rows = results["dtypes"]["float32"]["designs"]
    assert len(rows) == 2 * 4 and all(r["verify_us"] > 0 for r in rows)
    assert [r["a"] for r in results["dtypes"]["float32"]["restores"]] == [2, 1, 2]  # window a > 1; capsule a <= 2
    assert write_outputs(results, tmp_path) == [f"written: {tmp_path / n}" for n in ("results.json", "report.md", PLOT)]
    assert json.loads((tmp_path / "results.json").read_text())["designs"] == ["window W=2", "capsule C=2", "rerun"]
    assert (tmp_path / PLOT).read_bytes().startswith(b"\x89PNG")
    assert "| float32 | 3 | capsule C=2 | GatedDeltaNet |" in markdown(results)


def test_a_capacity_past_the_schema_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--out", str(tmp_path / "out"), "--capacities", "9"]) == 2
    assert "1..8" in capsys.readouterr().err

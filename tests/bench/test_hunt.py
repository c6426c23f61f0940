"""The time-to-bug benchmark (fuzz.bench.hunt): its catalogue, planting in a copy, the campaign's timing and
stop, the table and plot, and a sample of ``--check`` (each targeted case fails planted, passes unplanted).

No timed assertions: the benchmark prints its times, tests only check what it records.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import psutil
import pytest

from fuzz.backends import REGISTRY, Backend
from fuzz.bench.hunt import cli, hunting, results
from fuzz.bench.hunt.catalogue import PLATFORM_CATALOGUE, Bug, CatalogueError, Edit, load, select
from fuzz.bench.hunt.checking import check_bugs
from fuzz.bench.hunt.hunting import HuntResult, hunt
from fuzz.bench.hunt.targeted import FAILS, PASSES, build_case, parse_swap
from fuzz.bench.hunt.tree import copy_tree, environment, planted_copy, root_of_tree
from fuzz.engine.properties import PROPERTIES, resolve_property

ROOT = root_of_tree()
BUGS = load()
PLATFORM_BUGS = load(PLATFORM_CATALOGUE)

SPREAD = ("kernels/linear_attention.wgsl", "kernels/chunked.wgsl", "kernels/causal_conv.wgsl", "kernels/qkv_split.wgsl",
          "kernels/shader.py", "kernels/resident.py", "kernels/causal_conv.py", "fuzz/backends/device_chain.py",
          "oracles/recurrence.py", "oracles/prefix.py", "oracles/causal_conv/convolution.py", "oracles/rollback.py")
"""Files the catalogue must plant bugs in (docs/hunt.md, the catalogue's spread)."""


def test_the_catalogue_holds_at_least_40_bugs_with_unique_ids() -> None:
    assert len(BUGS) >= 40
    assert len({b.id for b in BUGS}) == len(BUGS)


@pytest.mark.parametrize("bug", BUGS + PLATFORM_BUGS, ids=lambda b: b.id)
def test_each_edit_applies_once_to_the_tree(bug: Bug) -> None:
    text = (ROOT / bug.edit.file).read_text()
    assert text.count(bug.edit.find) == 1, f"{bug.id}: the text to find is not in {bug.edit.file} exactly once"
    assert bug.edit.applied(text, bug.id) != text


@pytest.mark.parametrize("bug", BUGS + PLATFORM_BUGS, ids=lambda b: b.id)
def test_each_bug_has_a_targeted_case_that_builds(bug: Bug) -> None:
    assert bug.description and bug.component
    assert bug.target.property in PROPERTIES or resolve_property(bug.target.property).name  # or module:attribute
    assert bug.target.backends and set(bug.target.backends) <= set(REGISTRY)
    case = build_case(bug)
    assert case.op.name == bug.op
    assert build_case(bug).identical(case), "a targeted case must be deterministic in its seed"


def test_the_catalogue_spreads_over_kernels_host_code_and_oracles() -> None:
    planted = {b.edit.file for b in BUGS}
    assert not set(SPREAD) - planted, f"no bug planted in {sorted(set(SPREAD) - planted)}"
    backends = {name for b in BUGS for name in b.target.backends}
    assert {"wgpu-chunked", "wgpu-wide", "wgpu-specialised", "wgpu-dawn", "wgpu-conv"} <= backends
    assert any(b.target.fields.get("dtype") == "float16" for b in BUGS)
    assert any(b.target.fields.get("d_k", 0) > 128 for b in BUGS), "a bug of large head sizes"
    assert any(b.target.fields.get("seq_len", 0) > 32 and "wgpu-chunked" in b.target.backends for b in BUGS)
    assert any(b.op == "CausalConvWithState" and b.target.fields.get("seq_len", 0) >= 49 for b in BUGS)


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_bad_catalogue_is_refused(tmp_path: Path) -> None:
    row = ('[[bug]]\nid = "x"\nop = "LinearAttention"\ncomponent = "c"\ndescription = "d"\nfile = "f"\n'
           'find = "a"\nreplace = "b"\n[bug.case]\nproperty = "backends-agree"\nbackends = ["oracle"]\n')
    assert len(load(_write(tmp_path / "one.toml", row))) == 1
    with pytest.raises(CatalogueError, match="appears twice"):
        load(_write(tmp_path / "twice.toml", row + row))
    with pytest.raises(CatalogueError, match="GatedDeltaNetStateReplay"):  # a timed hunt draws every op named
        load(_write(tmp_path / "unregistered.toml", row.replace("LinearAttention", "Unregistered")))
    with pytest.raises(CatalogueError, match="missing field"):
        load(_write(tmp_path / "no-case.toml", row.split("[bug.case]")[0]))
    with pytest.raises(CatalogueError, match="unknown bug"):
        select(BUGS, "no-such-bug")
    with pytest.raises(CatalogueError, match="2 times"):
        Edit("f", "a", "b").applied("a a", "x")


@pytest.mark.slow
def test_a_bug_is_planted_and_unplanted_in_a_copy_only(tmp_path: Path) -> None:
    bug = select(BUGS, "conv-dilation-ignored")[0]
    original = (ROOT / bug.edit.file).read_text()
    copy = copy_tree(ROOT, tmp_path / "tree")
    assert {p.name for p in copy.iterdir()} >= {"oracles", "kernels", "fuzz", "corpus", "pyproject.toml"}
    if (ROOT / "ortjs" / "node_modules").exists():
        assert (copy / "ortjs" / "node_modules").is_symlink()
    bug.edit.plant(copy, bug.id)
    planted = (copy / bug.edit.file).read_text()
    assert bug.edit.replace in planted and bug.edit.find not in planted
    assert (ROOT / bug.edit.file).read_text() == original
    bug.edit.unplant(copy, bug.id)
    assert (copy / bug.edit.file).read_text() == original
    with planted_copy(bug, ROOT, tmp_path) as root:
        assert bug.edit.replace in (root / bug.edit.file).read_text()
    assert not root.exists()


def test_the_copy_comes_first_on_the_path_with_what_was_there_kept(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/opt/site")
    assert environment(tmp_path)["PYTHONPATH"].split(":") == [str(tmp_path), "/opt/site"]
    monkeypatch.delenv("PYTHONPATH")
    assert environment(tmp_path)["PYTHONPATH"] == str(tmp_path)


FAKE_CAMPAIGN = """
import json, signal, sys, time
from pathlib import Path
out = Path(sys.argv[1]); out.mkdir(parents=True)
summary = {"findings": [
    {"id": "k", "known_failure": {"backend": "ort-webgpu"}, "summary": "known", "property": "p", "backends": ["a"]},
    {"id": "n", "known_failure": None, "summary": "rule=linear B=3", "property": "backends-agree",
     "backends": ["oracle", "wgpu"]}], "first_seen": {"findings": {"k": 0.1, "n": 0.5}}}
def stop(signum, frame):
    (out / "summary.json").write_text(json.dumps(summary))
    sys.exit(1)
signal.signal(signal.SIGINT, stop)
print("[lafuzz] known finding: p a", flush=True)
print("[lafuzz] new finding: backends-agree oracle/wgpu mismatch", flush=True)
time.sleep(20)
"""


@pytest.fixture
def fake_campaign(monkeypatch: pytest.MonkeyPatch) -> None:
    """The campaign replaced by a script that reports a known and a new finding, then waits for SIGINT to write
    its summary (as the real one does)."""
    def command(budget_s: float, seed: int, out: Path, extra: Sequence[str]) -> list[str]:
        return [sys.executable, "-c", FAKE_CAMPAIGN, str(out)]
    monkeypatch.setattr(hunting, "campaign_command", command)


def test_a_hunt_times_the_first_new_finding_and_stops_the_campaign(fake_campaign: None, tmp_path: Path) -> None:
    bug = BUGS[0]
    result = hunt(bug, tmp_path, tmp_path / "out", budget_s=5.0, seed=1)
    assert result.found and result.seconds is not None and result.seconds < result.wall_s + 0.1
    assert result.wall_s < 5.0, "stopped at the first new finding, not at the budget"
    assert result.exit_status == 1 and result.seed == 1
    assert (result.minimal_case, result.backends, result.campaign_seconds) == ("rule=linear B=3", ["oracle", "wgpu"],
                                                                               0.5)
    assert "new finding" in (tmp_path / "out" / "campaign.log").read_text()


def test_a_run_cut_short_keeps_the_rows_of_the_bugs_already_hunted(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = BUGS[0], BUGS[1]

    def hunt_one(bug: Bug, *args: object) -> HuntResult:
        if bug.id == second.id:
            raise KeyboardInterrupt
        return HuntResult(bug.id, bug.op, bug.component, found=True, seconds=3.0)

    monkeypatch.setattr(cli, "_hunt_one", hunt_one)
    assert cli.main(["--bugs", f"{first.id},{second.id}", "--out", str(tmp_path)]) == cli.EXIT_INTERRUPTED
    kept = results.read_json(tmp_path / "hunt.json")
    assert [r.id for r in kept.results] == [first.id] and first.id in (tmp_path / "hunt.md").read_text()


SLEEPING_HUNT = """
import sys
from fuzz.bench.hunt import cli, hunting
marker, bug, out = sys.argv[1:]
hunting.campaign_command = lambda *_: [sys.executable, "-c", "import time; time.sleep(600)", marker]
sys.exit(cli.main(["--bugs", bug, "--time", "60", "--out", out]))
"""


def test_a_hunt_stopped_kills_the_campaign_it_runs(tmp_path: Path) -> None:
    """The campaign runs in a session of its own, which a signal to the hunt does not reach: SIGTERM (or Ctrl-C)
    kills it, and the hunt exits 130 with the rows so far."""
    marker = f"campaign-of-{tmp_path.name}"

    def campaigns() -> list[psutil.Process]:
        return [p for p in psutil.process_iter(["cmdline"])
                if (p.info["cmdline"] or [])[-1:] == [marker] and p.pid != hunt_process.pid]

    hunt_process = subprocess.Popen([sys.executable, "-c", SLEEPING_HUNT, marker, BUGS[0].id, str(tmp_path)],
                                    cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for _ in range(600):
        if campaigns() or hunt_process.poll() is not None:
            break
        time.sleep(0.05)
    assert campaigns(), "the hunt never launched its campaign"
    hunt_process.send_signal(signal.SIGTERM)
    try:
        output, _ = hunt_process.communicate(timeout=30)
        assert hunt_process.returncode == cli.EXIT_INTERRUPTED, output
        assert "interrupted: 1 running campaign(s) killed" in output
        assert not [p for p in campaigns() if p.status() != psutil.STATUS_ZOMBIE], "the campaign outlived its hunt"
    finally:
        for process in [*campaigns(), psutil.Process(hunt_process.pid)] if hunt_process.poll() is None else campaigns():
            process.kill()


def _run(found: Sequence[float | None]) -> results.HuntRun:
    run = results.HuntRun(budget_s=90.0, seed=1, cache="warm", campaign_args=["--jobs", "2"], commit="abc",
                          host="h", started="2026-12-06T00:00:00+00:00")
    run.results = [HuntResult(f"bug-{i}", "LinearAttention", "token loop | x", found=s is not None, seconds=s,
                              minimal_case="B=3" if s else "", backends=["wgpu"] if s else [])
                   for i, s in enumerate(found)]
    return run


@pytest.mark.slow
def test_the_table_json_and_plot_of_a_run(tmp_path: Path) -> None:
    run = _run([12.0, None, 30.0, 20.0])
    assert run.summary_line().startswith("found 3 of 4 bugs") and run.median_s == 20.0
    results.write_json(run, tmp_path / "hunt.json")
    again = results.read_json(tmp_path / "hunt.json")
    assert again.to_json() == run.to_json() and json.loads((tmp_path / "hunt.json").read_text())["cache"] == "warm"
    table = results.markdown(run)
    assert table.count("\n| bug-") == 4 and "token loop \\| x" in table and "| 12.0 |" in table
    results.plot(run, tmp_path / "hunt.png", _run([5.0, 6.0, None, None]))
    assert (tmp_path / "hunt.png").read_bytes()[:4] == b"\x89PNG"


def test_the_command_refuses_an_unknown_bug(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--bugs", "no-such-bug", "--check"])
    assert exit_.value.code == 2 and "unknown bug id" in capsys.readouterr().err


CHECKED_SAMPLE = ("la-batch-alias", "conv-dilation-ignored", "oracle-prefix-seed")


@pytest.mark.slow
def test_the_targeted_cases_of_a_sample_fail_planted_and_pass_unplanted(need: Callable[..., Backend]) -> None:
    need("wgpu")
    need("wgpu-conv")
    sample = select(BUGS, ",".join(CHECKED_SAMPLE))
    checks = check_bugs(sample, ROOT, print)
    assert [(c.planted.verdict, c.unplanted.verdict) for c in checks] == [(FAILS, PASSES)] * len(sample), \
        "\n".join(c.line() for c in checks)



def test_a_swap_names_the_backends_run_in_place_of_the_entries_own() -> None:
    assert parse_swap("wgpu=wgpu-swiftshader, wgpu-conv=wgpu-conv-swiftshader") == {
        "wgpu": "wgpu-swiftshader", "wgpu-conv": "wgpu-conv-swiftshader"}
    assert parse_swap(None) == {}
    with pytest.raises(ValueError, match="OLD=NEW"):
        parse_swap("wgpu-swiftshader")


@pytest.mark.slow
def test_a_catalogue_of_its_own_is_checked_with_the_backends_swapped(need: Callable[..., Backend]) -> None:
    """``--check --catalogue`` reads that catalogue in every checking process, and ``--swap`` runs the cases on the
    backends named: a host bug of the kernel shows on its backend, and not where the oracle stands in for it."""
    need("wgpu-dawn")
    bug = select(PLATFORM_BUGS, "subgroup-twice-held")
    on_kernel = check_bugs(bug, ROOT, print, PLATFORM_CATALOGUE)
    on_oracle = check_bugs(bug, ROOT, print, PLATFORM_CATALOGUE, swap="wgpu-dawn=oracle")
    assert on_kernel[0].planted.verdict == FAILS, on_kernel[0].line()
    assert on_oracle[0].planted.verdict == PASSES, on_oracle[0].line()

"""The campaign end to end: a planted bug becomes a corpus entry that replay reproduces and, once
the backend is repaired, reports as "now fixed"; the same seed finds the same things, and without
--seed each run draws its own; the command line's exit status is honest; one short run goes through
the real backends of this machine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from support.fakes import DIES_ONCE_ENV, REPAIRED_ENV, BrokenBackend

from fuzz.backends.oracle import OracleBackend
from fuzz.campaign.campaign import CampaignConfig, run_campaign
from fuzz.campaign.progress import Progress
from fuzz.campaign.summary import (
    EXIT_CLEAN,
    EXIT_INTERRUPTED,
    EXIT_NEW_FINDINGS,
    EXIT_NOTHING_CHECKED,
    EXIT_WORKER_DIED,
    Summary,
    exit_status,
)
from fuzz.campaign.worker import probe
from fuzz.cli import main
from fuzz.corpus import entry as corpus
from fuzz.corpus.replay import NOW_FIXED, REGRESSION, STILL_FAILING, replay

BROKEN = "support.fakes:BrokenBackend"
KNOWN = "support.fakes:SharedBetaBackend"


def _run(tmp_path, name: str, jobs: int = 1, seed: int = 11) -> Summary:
    config = CampaignConfig(properties=["backends-agree"], backends=["oracle", BROKEN], seed=seed, jobs=jobs,
                            time_budget=None, example_budget=40, examples_per_unit=20, limits="ci",
                            out=tmp_path / name, known_corpus=None)
    return run_campaign(config, Progress(interval=60))


@pytest.mark.slow
def test_planted_bug_is_found_saved_replayed_and_then_fixed(tmp_path, monkeypatch):
    summary = _run(tmp_path, "first")
    assert summary.exit_status == 1 and summary.findings, "the planted bug was not found"
    finding = summary.findings[0]
    assert finding["backends"] == ["oracle", "broken"] and finding["kind"] == "mismatch"
    assert Summary.read(tmp_path / "first" / "summary.json").to_json() == json.loads(json.dumps(summary.to_json()))
    assert "slot 0" in finding["mismatch"]["where"]
    entries = corpus.load(tmp_path / "first" / "corpus")
    assert [e.id for e in entries] == [f["id"] for f in summary.findings]
    assert entries[0].provenance["backends"]["broken"]["device"]
    assert entries[0].finding.known is None
    html = (tmp_path / "first" / "report.html").read_text()
    assert "lafuzz repro" in html and "data:image/png;base64," in html

    again = _run(tmp_path, "second")
    assert [f["id"] for f in again.findings] == [f["id"] for f in summary.findings]

    available = {"oracle": OracleBackend(), "broken": BrokenBackend()}
    assert [v.verdict for v in replay(entries, available)] == [REGRESSION] * len(entries)

    path = tmp_path / "first" / "corpus" / entries[0].finding.property / entries[0].id / "entry.json"
    document = json.loads(path.read_text())
    document["known_failure"] = {"backend": "broken", "implementation": "the test's BrokenBackend",
                                 "explanation": "slot 0 is doubled on purpose"}
    path.write_text(json.dumps(document))
    marked = corpus.read_entry(path.parent)
    assert replay([marked], available)[0].verdict == STILL_FAILING
    monkeypatch.setenv(REPAIRED_ENV, "1")
    fixed = replay([marked], available)[0]
    assert fixed.verdict == NOW_FIXED and "remove the mark" in fixed.detail


def _cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    return subprocess.run([sys.executable, "-m", "fuzz.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.mark.slow
def test_command_line_finds_with_workers_and_replays(tmp_path):
    out = tmp_path / "run"
    result = _cli("campaign", "--examples", "40", "--examples-per-unit", "20", "-j", "2", "--limits", "ci",
                  "--backends", f"oracle,{BROKEN}", "--properties", "backends-agree", "--out", str(out),
                  "--corpus", str(tmp_path / "none"))
    assert result.returncode == 1, result.stderr[-2000:]
    assert "[lafuzz]" in result.stderr and "cases" in result.stderr
    summary = Summary.read(out / "summary.json")
    assert summary.findings and summary.examples >= 40
    entry_dir = summary.findings[0]["corpus_path"]
    repro = _cli("repro", entry_dir, "--backends", f"oracle,{BROKEN}")
    assert repro.returncode == 1 and "regression" in repro.stdout, repro.stdout + repro.stderr


@pytest.mark.slow
def test_bad_input_is_a_usage_error(tmp_path):
    assert _cli("campaign", "--properties", "no-such-property", "--out", str(tmp_path)).returncode == 2
    assert _cli("campaign", "--database", "redis://nohost", "--examples", "1", "--backends", "oracle",
                "--out", str(tmp_path)).returncode == 2
    assert _cli("campaign", "--time", "soon").returncode == 2


@pytest.mark.slow
def test_without_seed_each_campaign_draws_a_fresh_one_prints_and_records_it(tmp_path, capsys):
    seeds = []
    for name in ("a", "b"):
        out = tmp_path / name
        assert main(["campaign", "--examples", "1", "--examples-per-unit", "1", "-j", "1", "--backends", "oracle",
                     "--properties", "backends-agree", "--limits", "ci", "--out", str(out),
                     "--corpus", str(tmp_path / "none")]) == 0
        seed = Summary.read(out / "summary.json").config["seed"]
        assert f"[lafuzz] seed {seed} (rerun with --seed {seed})" in capsys.readouterr().err
        seeds.append(seed)
    assert seeds[0] != seeds[1], "two runs without --seed repeated the same work"


@pytest.mark.slow
def test_real_backends_short_campaign(tmp_path):
    """The fast real backends of this machine, a few cases per property: the plumbing holds on the real thing
    (ort-webgpu's shader compiles and its known issues' shrinking are the campaign's job, not CI's)."""
    config = CampaignConfig(properties=["backends-agree", "leading-zeros"],
                            backends=["oracle", "ort-cpu", "wgpu"], seed=1, time_budget=None,
                            example_budget=20, examples_per_unit=10, out=tmp_path / "real")
    found = probe(config.backends)
    config.backends, config.unavailable = found.usable, found.missing
    summary = run_campaign(config, Progress(interval=60), backend_info=found.described)
    assert summary.checked_examples >= 2 and summary.units == 2
    assert summary.checked_cases > summary.checked_examples, "packed examples check several cases each"
    assert set(summary.backends) == set(config.backends)
    for name, calls in summary.backend_calls.items():
        assert 0 <= summary.window_calls[name] <= calls, (name, summary.window_calls)
    assert summary.window_calls["oracle"] > 0, "leading-zeros draws W > 0 only, yet no window call was counted"
    new = [f for f in summary.findings if not f["known_failure"]]
    assert summary.exit_status == (1 if new else 0), new


@pytest.mark.slow
def test_known_issue_is_saved_once_marked_and_does_not_fail_the_campaign(tmp_path):
    """A failure ``fuzz.corpus.known_issues`` documents is shrunk once, saved with its issue id, counted, exit 0."""
    config = CampaignConfig(properties=["backends-agree"], backends=["oracle", KNOWN], seed=2, time_budget=None,
                            example_budget=60, examples_per_unit=30, limits="ci", out=tmp_path / "known",
                            known_corpus=None)
    summary = run_campaign(config, Progress(interval=60))
    assert summary.exit_status == 0, summary.findings
    [finding] = summary.findings
    assert finding["id"] == "ort-webgpu-shared-beta" and finding["known_failure"]["issue"] == finding["id"]
    entry = corpus.read_entry(Path(finding["corpus_path"]))
    assert entry.finding.known.backend == "ort-webgpu"


def test_exit_status_is_honest():
    new = {"known_failure": None}
    known = {"known_failure": {"issue": "x"}}
    assert exit_status([new, known], 10, interrupted=False) == EXIT_NEW_FINDINGS
    assert exit_status([known], 10, interrupted=False) == EXIT_CLEAN
    assert exit_status([], 0, interrupted=False) == EXIT_NOTHING_CHECKED
    assert exit_status([known], 10, interrupted=True) == EXIT_INTERRUPTED
    assert exit_status([known], 10, interrupted=True, lost=2) == EXIT_WORKER_DIED
    assert exit_status([new], 10, interrupted=False, lost=2) == EXIT_NEW_FINDINGS


@pytest.mark.slow
def test_a_worker_that_dies_loses_its_units_not_the_campaign(tmp_path, monkeypatch):
    """A worker process killed mid-unit (SIGKILL, as the OOM killer sends) breaks the pool: the campaign
    counts the units it held as lost, goes on with fresh workers, writes its summary and exits 4."""
    flag = tmp_path / "died"
    monkeypatch.setenv(DIES_ONCE_ENV, str(flag))
    config = CampaignConfig(properties=["backends-agree"], backends=["oracle", "support.fakes:DiesOnceBackend"],
                            seed=5, jobs=2, time_budget=None, example_budget=60, examples_per_unit=10,
                            limits="ci", out=tmp_path / "dies", known_corpus=None)
    summary = run_campaign(config, Progress(interval=60))
    assert flag.exists(), "the backend never killed its worker"
    assert 1 <= summary.units_lost <= 2 * config.jobs, summary.units_lost
    assert summary.checked_examples > 0 and not summary.findings, summary.findings
    assert summary.exit_status == EXIT_WORKER_DIED
    assert Summary.read(config.out / "summary.json").units_lost == summary.units_lost


@pytest.mark.slow
@pytest.mark.parametrize("signum, to_group", [(signal.SIGINT, True), (signal.SIGTERM, True), (signal.SIGTERM, False)],
                         ids=["ctrl-c", "sigterm-to-group", "sigterm-to-campaign"])
def test_a_stop_signal_ends_running_units_and_keeps_their_results(tmp_path, signum, to_group):
    """A Ctrl-C at the terminal (SIGINT to the whole process group), or SIGTERM (from a batch system or CI
    to the group, or from ``kill``/``timeout`` to the campaign alone), ends the campaign with 130: the
    running units hand back what they checked (none abandoned), the summary is written, and no worker
    process outlives the campaign."""
    out = tmp_path / "interrupted"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    process = subprocess.Popen(
        [sys.executable, "-m", "fuzz.cli", "campaign", "--time", "5m", "-j", "2", "--backends", "oracle,ort-cpu",
         "--properties", "backends-agree,error-parity", "--limits", "ci", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True,
    )
    database = out / "hypothesis-db"
    for _ in range(600):  # units have started once the example database fills
        if database.is_dir() and len(list(database.iterdir())) >= 4:
            break
        process.poll() is None or pytest.fail("the campaign ended before it was interrupted")
        time.sleep(0.1)
    workers = psutil.Process(process.pid).children(recursive=True)
    if to_group:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    output = process.communicate(timeout=120)[0].decode(errors="replace")
    summary = Summary.read(out / "summary.json")
    assert process.returncode == EXIT_INTERRUPTED, output[-2000:]
    assert summary.units_abandoned == 0 and summary.examples > 0, output[-2000:]
    assert not [f for f in summary.findings if not f["known_failure"]], "an interrupted worker read as a finding"
    _, alive = psutil.wait_procs(workers, timeout=10)
    assert not alive, f"worker processes outlived the campaign: {alive}"


def test_a_corrupt_shared_finding_is_skipped(tmp_path):
    """A value in the shared database that is not a readable entry (another version's, a torn write)
    neither stops the worker nor reads as a finding."""
    from fuzz.campaign.database import shared_key
    from fuzz.campaign.worker import Worker

    config = CampaignConfig(properties=["backends-agree"], backends=["oracle"], out=tmp_path, known_corpus=None)
    worker = Worker(config)
    try:
        worker.database.save(shared_key("backends-agree", worker.names), b"not an entry")
        assert worker.shared_findings("backends-agree") == []
    finally:
        worker.close()


def test_a_known_issue_another_worker_published_is_not_shrunk_again(tmp_path):
    """Workers share the example database: a documented issue another worker published counts as shrunk
    here once re-checked (the worker does not shrink it again, and its backend sits out the cases)."""
    from support.fakes import SharedBetaBackend

    from fuzz.campaign.database import shared_key
    from fuzz.campaign.worker import Worker
    from fuzz.engine.properties import PROPERTIES
    from fuzz.model.findings import PropertyFailure
    from fuzz.ops.linear_attention.strategies import Layout, Numerics, Shape, build_case

    case = build_case(  # a delta rule with a shared beta over two kv heads: what the EP misreads
        Shape(batch=1, seq_len=3, q_heads=2, kv_heads=2, key_heads=2, d_k=2, d_v=2, state_window=0),
        Layout(update_rule="delta", dtype="float32", decay_per_row=None, beta_shared=True, has_past=False, scale=None),
        Numerics(magnitude="unit", keys="normalised", decay="moderate", beta="uniform", seed=0),
    )
    with pytest.raises(PropertyFailure) as failure:
        PROPERTIES["backends-agree"].check(case, [OracleBackend(), SharedBetaBackend()])
    config = CampaignConfig(properties=["backends-agree"], backends=["oracle", KNOWN], out=tmp_path, known_corpus=None)
    worker = Worker(config)
    try:
        published = corpus.to_bytes(corpus.Entry(failure.value.finding))
        worker.database.save(shared_key("backends-agree", worker.names), published)
        assert worker.shrunk_issues == set()
        [shared] = worker.shared_findings("backends-agree")
        assert shared.known and "published by another shard" in shared.report
        assert worker.shrunk_issues == {"ort-webgpu-shared-beta"}
    finally:
        worker.close()

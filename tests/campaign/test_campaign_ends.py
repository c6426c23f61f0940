"""A campaign always ends, and ends cleanly: an error a backend raises is a finding (or, with no case, a unit error),
never the end of the campaign; the process exits soon after its summary however many worker pools broke; the budget
holds while findings shrink; and units abandoned with a hung worker show in the exit status and the last line."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.fakes import HANGS_ONCE_ENV, STOPS_ONCE_ENV

from fuzz.campaign import campaign as campaign_module
from fuzz.campaign import worker as worker_module
from fuzz.campaign.campaign import Campaign, CampaignConfig, run_campaign
from fuzz.campaign.progress import Progress
from fuzz.campaign.report import render_html
from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.summary import EXIT_NEW_FINDINGS, EXIT_WORKER_DIED, Summary
from fuzz.campaign.worker import Worker
from fuzz.cli import EXIT_GRACE_S, main
from fuzz.corpus import entry as corpus

GRACE_S = 2.0
"""The hard stop's grace in the tests that reach it (the campaign's own is at least 30 s)."""


def _config(tmp_path: Path, backend: str, **options: object) -> CampaignConfig:
    settings: dict = {"properties": ["backends-agree"], "backends": ["oracle", backend], "seed": 3, "jobs": 2,
                      "time_budget": None, "example_budget": 40, "examples_per_unit": 10, "limits": "ci",
                      "out": tmp_path / "out", "known_corpus": None, **options}
    return CampaignConfig(**settings)  # type: ignore[arg-type]


@pytest.mark.slow
def test_an_error_raised_in_a_backends_resume_path_is_a_finding(tmp_path, capsys):
    """A ``ValueError`` from a select-and-resume, raised once and so not again when Hypothesis replays its case (a
    ``FlakyFailure`` with no property failure in it), is a harness-error finding with its case and traceback: summary,
    report, exit 1."""
    out = tmp_path / "run"
    status = main(["campaign", "--examples", "20", "--examples-per-unit", "10", "-j", "2", "--limits", "ci",
                   "--backends", "oracle,support.fakes:ResumeRaises", "--properties", "device-chain",
                   "--out", str(out), "--corpus", str(tmp_path / "none")])
    assert status == EXIT_NEW_FINDINGS, capsys.readouterr().err[-3000:]
    summary = Summary.read(out / "summary.json")
    [finding] = summary.findings
    assert finding["kind"] == "harness-error" and finding["backends"] == ["oracle", "resume-raises"], finding
    assert finding["signature"].startswith("ValueError: bind_group: slot 5"), finding["signature"]
    entry = corpus.read_entry(Path(finding["corpus_path"]))
    assert "raise ValueError" in entry.finding.report and entry.finding.case.state_window > 0
    assert (out / "report.html").is_file()


def test_a_published_case_whose_recheck_raises_is_a_finding(tmp_path):
    """Another shard's case that makes a backend raise when re-checked here is a harness error of these backends."""
    from fuzz.campaign.database import shared_key
    from fuzz.model.findings import Finding, Kind
    from fuzz.ops.linear_attention.strategies import Layout, Numerics, Shape, build_case

    case = build_case(Shape(batch=1, seq_len=2, q_heads=1, kv_heads=1, key_heads=1, d_k=1, d_v=1, state_window=1),
                      Layout(update_rule="linear", dtype="float32", decay_per_row=None, beta_shared=False,
                             has_past=True, scale=None),
                      Numerics(magnitude="unit", keys="normalised", decay="moderate", beta="uniform", seed=0))
    published = Finding(property="backends-agree", backends=("oracle", "run-raises"), kind=Kind.MISMATCH,
                        signature="elsewhere", report="", case=case)
    config = _config(tmp_path, "support.fakes:RunRaises")
    worker = Worker(config)
    try:
        worker.database.save(shared_key("backends-agree", worker.names), corpus.to_bytes(corpus.Entry(published)))
        [found] = worker.shared_findings("backends-agree")
    finally:
        worker.close()
    assert found.kind == "harness-error" and found.signature.startswith("RuntimeError: "), found.signature
    assert found.case.summary() == case.summary() and "raise RuntimeError" in found.report


def test_an_error_before_a_units_first_case_is_reported_and_the_campaign_goes_on(tmp_path, monkeypatch):
    """With no case to make a finding of, the unit's error is a line, an entry of ``unit_errors`` and exit 1."""

    def cannot_start(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the harness cannot start this unit")

    monkeypatch.setattr(worker_module, "run_unit", cannot_start)
    config = _config(tmp_path, "oracle", jobs=1)
    worker = Worker(config)
    campaign = Campaign(config, Progress(interval=60))
    try:
        for number in range(2):
            campaign.absorb(*worker.run(WorkUnit("backends-agree", number, 0)))
    finally:
        worker.close()
    assert [e["unit"] for e in campaign.unit_errors] == ["backends-agree#0", "backends-agree#1"]
    assert campaign.unit_errors[0]["error"] == "RuntimeError: the harness cannot start this unit"
    summary = campaign.summary()
    assert summary.exit_status == EXIT_NEW_FINDINGS and "cannot_start" in summary.unit_errors[0]["traceback"]
    assert "the harness cannot start this unit" in render_html(summary)


@pytest.mark.slow
def test_a_campaign_whose_worker_pools_break_again_and_again_exits_soon_after_its_summary(tmp_path):
    """Workers that keep dying (SIGKILL, in native code or by the OOM killer) break one pool after another; the
    campaign writes its summary and the process ends within seconds, not spinning in its broken pools' threads."""
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    process = subprocess.Popen(
        [sys.executable, "-m", "fuzz.cli", "campaign", "--time", "40s", "-j", "3", "--examples-per-unit", "3",
         "--backends", "oracle,support.fakes:DiesOften", "--properties", "backends-agree", "--limits", "ci",
         "--out", str(out), "--corpus", str(tmp_path / "none")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (out / "report.html").exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (out / "report.html").exists(), "the campaign wrote no report"
        try:
            process.wait(timeout=EXIT_GRACE_S + 15)
        except subprocess.TimeoutExpired:
            pytest.fail("the campaign's process did not end after its summary and report")
        output = process.communicate()[0].decode(errors="replace")
        summary = Summary.read(out / "summary.json")
        assert summary.units_lost >= 4, output[-2000:]
        assert process.returncode == summary.exit_status == EXIT_WORKER_DIED, output[-2000:]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 9)


@pytest.mark.slow
def test_the_budget_holds_while_a_finding_shrinks(tmp_path):
    """A bug whose failing cases are slow is still being shrunk when the budget ends: the campaign ends then, and
    keeps the smallest failing case reached, marked as not fully minimised."""
    config = _config(tmp_path, "support.fakes:SlowToShrink", time_budget=6.0, example_budget=None)
    started = time.monotonic()
    summary = run_campaign(config, Progress(interval=60))
    took = time.monotonic() - started
    [finding] = summary.findings
    assert "not fully minimised" in finding["report"], finding["report"][-500:]
    assert summary.exit_status == EXIT_NEW_FINDINGS and summary.units_abandoned == 0
    assert took < config.time_budget + campaign_module.STOP_GRACE_S, took


@pytest.mark.slow
def test_a_stopped_worker_is_abandoned_at_the_hard_stop_and_the_exit_says_so(tmp_path, monkeypatch, capsys):
    """A worker process that stops answering (SIGSTOP) holds its unit past the budget: at the hard stop the unit is
    abandoned, the worker killed, and the campaign exits 4, its last line saying why."""
    monkeypatch.setattr(campaign_module, "STOP_GRACE_S", GRACE_S)
    monkeypatch.setenv(STOPS_ONCE_ENV, str(tmp_path / "stopped"))
    out = tmp_path / "run"
    status = main(["campaign", "--time", "4s", "-j", "2", "--examples-per-unit", "10", "--limits", "ci",
                   "--backends", "oracle,support.fakes:StopsOnce", "--properties", "backends-agree",
                   "--out", str(out), "--corpus", str(tmp_path / "none")])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert (tmp_path / "stopped").exists(), "no worker was stopped"
    assert status == EXIT_WORKER_DIED, last
    assert "exit 4" in last and "1 unit(s) abandoned with a worker that hung past the budget" in last, last
    assert Summary.read(out / "summary.json").units_abandoned == 1


@pytest.mark.slow
def test_a_hung_call_in_the_campaigns_own_process_is_abandoned_at_the_hard_stop(tmp_path, monkeypatch):
    """With one worker (``-j 1``) the units run in the campaign's process: a call that hangs there (in Python) is
    abandoned at the hard stop all the same, and the summary is written (exit 4)."""
    monkeypatch.setattr(campaign_module, "STOP_GRACE_S", GRACE_S)
    monkeypatch.setenv(HANGS_ONCE_ENV, str(tmp_path / "hung"))
    config = _config(tmp_path, "support.fakes:HangsOnce", jobs=1, time_budget=3.0, example_budget=None)
    summary = run_campaign(config, Progress(interval=60))
    assert (tmp_path / "hung").exists(), "no call hung"
    assert summary.units_abandoned == 1 and summary.exit_status == EXIT_WORKER_DIED
    assert Summary.read(config.out / "summary.json").units_abandoned == 1


def test_a_finding_saved_after_the_stop_is_exported_only_while_the_grace_lasts(tmp_path, monkeypatch):
    """The upstream export (``on_saved``) of an entry written after the stop waits until the units are in, and is
    made only before the hard stop; one line names the entries left."""
    from fuzz.campaign.unit import UnitResult
    from fuzz.model.findings import Finding, Kind
    from fuzz.ops.linear_attention.strategies import Layout, Numerics, Shape, build_case

    case = build_case(Shape(batch=1, seq_len=1, q_heads=1, kv_heads=1, key_heads=1, d_k=1, d_v=1, state_window=0),
                      Layout(update_rule="linear", dtype="float32", decay_per_row=None, beta_shared=False,
                             has_past=False, scale=None),
                      Numerics(magnitude="unit", keys="normalised", decay="moderate", beta="uniform", seed=0))
    exported: list[Path] = []
    notes: list[str] = []
    progress = Progress(interval=60)
    monkeypatch.setattr(progress, "note", notes.append)
    campaign = Campaign(_config(tmp_path, "oracle", time_budget=60.0), progress,
                        on_saved=lambda entry, path, backends: exported.append(path))
    campaign.corpus_dir.mkdir(parents=True)

    def found(signature: str) -> None:
        finding = Finding(property="backends-agree", backends=("oracle",), kind=Kind.MISMATCH, signature=signature,
                          report="", case=case)
        campaign.absorb(UnitResult(WorkUnit("backends-agree", 0, 0), finding=finding), [])

    found("before the stop")
    campaign.stop_time = time.time() - 1
    found("after the stop")
    assert len(exported) == 1 and len(campaign.late_exports) == 1
    campaign._late()
    assert len(exported) == 2 and not [n for n in notes if "not exported" in n]
    campaign.stop_time = time.time() - campaign_module.STOP_GRACE_S - 1
    found("after the grace")
    found("after the grace too")
    campaign._late()
    assert len(exported) == 2 and [n for n in notes if "2 finding(s) not exported upstream" in n], notes


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2], ids=["in-process", "workers"])
def test_a_unit_that_hangs_while_shrinking_keeps_its_smallest_failure(tmp_path, monkeypatch, jobs):
    """A unit that hangs while it shrinks a failure is ended at the hard stop (its worker killed, or, in the campaign's
    own process, interrupted); the smallest failure it had met is a finding all the same, marked as not fully
    minimised, and the unit counts as abandoned."""
    monkeypatch.setattr(campaign_module, "STOP_GRACE_S", GRACE_S)
    config = _config(tmp_path, "support.fakes:HangsWhileShrinking", jobs=jobs, time_budget=4.0, example_budget=None)
    summary = run_campaign(config, Progress(interval=60))
    assert summary.units_abandoned >= 1 and summary.exit_status == EXIT_NEW_FINDINGS
    assert summary.findings and all("not fully minimised" in f["report"] for f in summary.findings), \
        [f["report"] for f in summary.findings]
    assert not (config.out / worker_module.UNFINISHED).exists()

"""The report people look at: every plotted point names its case, discoveries over time, the near misses
saved as corpus candidates (re-checked, promoted), plots as PNG files; older summaries still read."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from fuzz.campaign.campaign import CampaignConfig, run_campaign
from fuzz.campaign.coverage import reached
from fuzz.campaign.progress import Progress
from fuzz.campaign.report import render_html, write_pngs
from fuzz.campaign.summary import Summary
from fuzz.cli import main
from fuzz.corpus import entry as corpus
from fuzz.model.findings import Kind

SLIGHTLY_OFF = "support.fakes:SlightlyOffBackend"
NEW_FIELDS = ("error_cases", "first_seen", "near_misses")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, Summary]:
    """A short campaign whose second backend passes every case one ulp off (so every unit has a near miss)."""
    out = tmp_path_factory.mktemp("report") / "run"
    config = CampaignConfig(properties=["backends-agree"], backends=["oracle", SLIGHTLY_OFF], seed=3,
                            time_budget=None, example_budget=40, examples_per_unit=20, limits="ci", out=out,
                            known_corpus=None)
    return out, run_campaign(config, Progress(interval=60))


@pytest.mark.slow
def test_near_misses_are_candidates_that_replay_and_promote(run, tmp_path: Path, capsys) -> None:
    out, summary = run
    ratios = [m["ratio"] for m in summary.near_misses]
    assert len(ratios) == summary.units == 2 and ratios == sorted(ratios, reverse=True) and 0 < ratios[-1] < 1
    top = summary.near_misses[0]
    entry = corpus.read_entry(Path(top["path"]))
    assert Path(top["path"]).parent.parent == out / "near-misses"
    assert entry.finding.kind == Kind.NEAR_MISS and entry.finding.backends == ("oracle", "slightly-off")
    assert main(["repro", top["path"], "--backends", f"oracle,{SLIGHTLY_OFF}"]) == 0
    assert top["promote"] == f"lafuzz promote {top['path']}"
    assert main(["promote", top["path"], "--corpus", str(tmp_path / "corpus")]) == 0
    promoted = tmp_path / "corpus" / "backends-agree" / entry.id
    assert corpus.read_entry(promoted).provenance["promoted_from"] == top["path"]
    assert main(["replay", str(tmp_path / "corpus"), "--backends", f"oracle,{SLIGHTLY_OFF}"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "replayed 1 entries (0 unreadable), 1 checks: 1 pass"
    assert main(["promote", top["path"], "--corpus", str(tmp_path / "corpus")]) == 2
    assert capsys.readouterr().err == f"lafuzz promote: {promoted} already exists in the corpus\n"


@pytest.mark.slow
def test_every_plotted_point_names_its_unit_and_case(run) -> None:
    _, summary = run
    html = render_html(summary)
    points = sum(len(ratios) for ratios in summary.error_ratios.values())
    titles = re.findall(r"<title>([^<]*)</title>", html)[1:]  # the first is the page's
    assert len(titles) == 2 * points > 0, "each point appears once per backend pair and once per slot"
    assert all(re.fullmatch(r"(exact|[0-9.e-]+): unit backends-agree#\d+: rule=\S+ W=\d .*", t) for t in titles)
    assert "<h2>Discoveries over time</h2>" in html and f"<code>{summary.near_misses[0]['promote']}</code>" in html


@pytest.mark.slow
def test_first_seen_records_every_bucket_reached_and_every_finding(run) -> None:
    _, summary = run
    buckets = summary.first_seen["buckets"]
    counts = {f"{axis}: {b}": n for axis, row in summary.coverage.items() for b, n in row.items()}
    assert len(buckets) == reached(counts)[0] > 0
    assert all(0 <= t <= summary.elapsed_s for t in buckets.values())
    assert summary.first_seen["findings"] == {}


@pytest.mark.slow
def test_an_older_summary_still_reads_merges_and_renders(run) -> None:
    _, summary = run
    document = json.loads(json.dumps(summary.to_json()))
    for name in NEW_FIELDS:
        del document[name]
    older = Summary.from_json(document)
    assert older.first_seen == {} and older.near_misses == [] and older.error_cases == {}
    html = render_html(older)
    assert "(case not recorded)" in html and "Discoveries over time" not in html
    merged = Summary.merge([older, summary])
    assert merged.near_misses == summary.near_misses
    assert all(len(merged.error_cases[p]) == len(merged.error_ratios[p]) for p in merged.error_ratios)


@pytest.mark.slow
def test_merge_keeps_the_earliest_time_of_each_discovery(run) -> None:
    _, summary = run
    later = copy.deepcopy(summary)
    label = next(iter(summary.first_seen["buckets"]))
    later.first_seen["buckets"] = {label: summary.first_seen["buckets"][label] + 100.0, "new: bucket": 7.0}
    merged = Summary.merge([later, summary])
    assert merged.first_seen["buckets"][label] == summary.first_seen["buckets"][label]
    assert merged.first_seen["buckets"]["new: bucket"] == 7.0


@pytest.mark.slow
def test_each_plot_is_written_as_a_png(run, tmp_path: Path) -> None:
    _, summary = run
    written = write_pngs(summary, tmp_path / "png")
    assert {p.name for p in written} >= {"report-error-per-pair.png", "report-discoveries.png", "report-coverage.png",
                                         "report-ratios.png"}
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in written)


def test_a_strip_keeps_its_worst_dots_and_a_sample_of_the_rest() -> None:
    """The page stays small however many units ran: at most ``MAX_POINTS`` dots a strip, the worst half kept."""
    from fuzz.campaign.report import MAX_POINTS, _thinned

    points = [(i / 1000, f"unit {i}") for i in range(1000)]
    shown = _thinned(points)
    assert len(shown) <= MAX_POINTS
    assert sorted(shown, reverse=True)[: MAX_POINTS // 2] == sorted(points, reverse=True)[: MAX_POINTS // 2]
    assert min(shown)[0] < 0.1, "the rest of the range is sampled, not dropped"
    assert _thinned(points[:MAX_POINTS]) == points[:MAX_POINTS]


OLDEST = Path(__file__).parent / "data" / "summary-2026-11-30.json"
"""A summary written on 2026-11-30, before ``per_tier`` existed (docs/results/2026-11-30-lavapipe-fixed-slice-3m,
its database keys, ratio lists and findings cut short to keep the file small)."""


@pytest.mark.slow
@pytest.mark.parametrize("kept", ["whole", "trimmed"])
def test_lafuzz_report_rebuilds_a_summary_written_before_the_newer_fields(kept: str, tmp_path: Path) -> None:
    """``trimmed``: as kept in docs/results, without the memory samples, ratio lists and database keys."""
    document = json.loads(OLDEST.read_text())
    assert "per_tier" not in document
    if kept == "trimmed":
        for name in ("rss_samples", "error_ratios", "database_keys"):
            del document[name]
    (tmp_path / "summary.json").write_text(json.dumps(document))
    assert main(["report", str(tmp_path)]) == 0
    html = (tmp_path / "report.html").read_text()
    older = Summary.read(tmp_path / "summary.json")
    assert older.per_tier == {} and older.checked_examples == document["checked_examples"] > 0
    assert older.exit_status == document["exit_status"]
    assert f"{older.checked_examples}" in html


def test_the_report_fits_a_1280_pixel_window_in_the_browser(run, need, tmp_path: Path) -> None:
    """The report opened in the ort-web backend's Chromium at 1280 px: no table wider than the page (a plugin's
    path among a backend's versions once pushed the backends table off the right edge), with a findings matrix."""
    browser = need("ort-web")
    summary = copy.deepcopy(run[1])
    summary.backends["ort-webgpu"] = {
        "device": "WebGPU on a CPU device, vendor AMD [0x1022:0x0000] - a software adapter (no GPU here)",
        "versions": {"onnxruntime": "1.31.1", "webgpu-ep": "plugin 0.4.0 from /work/a-long-checkout-name/.venv/lib/"
                     "python3.11/site-packages/onnxruntime_ep_webgpu/libonnxruntime_providers_webgpu.so"},
        "window": "prefix", "dtypes": ["float32", "float16"]}
    builds = ["ort-webgpu", "ort-webgpu-builtin", "ort-node", "ort-web", "wgpu"]
    summary.matrix = {"findings": ["ort-webgpu-unvalidated-shapes"], "builds": builds, "seconds": 1.0,
                      "implementations": dict.fromkeys(builds, "onnxruntime-something 1.30.0"),
                      "cells": {f"ort-webgpu-unvalidated-shapes|{b}": {
                          "verdict": "refused", "status": 0, "detail": "[ONNXRuntimeError] : 1 : FAIL : WebGPU "
                          "validation failed. In entries[3], binding index 3 not present in the bind group..."}
                          for b in builds}}
    page = tmp_path / "report.html"
    page.write_text(render_html(summary))
    header, (png,) = browser.link.request({"op": "inspect", "path": str(page), "width": 1280})
    (tmp_path / "report-1280.png").write_bytes(png)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == 1280
    assert header["overflowing"] == [], f"tables wider than the page (screenshot: {tmp_path / 'report-1280.png'})"
    assert header["pageWidth"] == 1280

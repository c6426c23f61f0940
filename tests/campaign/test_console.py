"""The lines ``lafuzz campaign`` ends with (``Summary.console_lines``): what each says comes from the summary."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from fuzz.campaign.summary import NATIVE_LOG, REPORT, SUMMARY, Summary

DATA = Path(__file__).parent / "data" / "summary-2026-11-30.json"
OUT = Path("out")


def test_the_last_line_counts_the_findings_and_says_where_the_outputs_are() -> None:
    summary = Summary.read(DATA)
    *_, last = summary.console_lines(["LinearAttention"], OUT, [])
    new = len(summary.new_findings)
    assert f"{new} new and {len(summary.findings) - new} known finding(s)" in last
    assert f"exit {summary.exit_status}" in last and f"report: {OUT / REPORT}" in last
    assert f"summary: {OUT / SUMMARY}" in last


def test_what_went_wrong_is_said_only_where_it_did() -> None:
    summary = Summary.read(DATA)
    quiet = summary.console_lines(["LinearAttention"], OUT, [])
    assert len(quiet) == 3 and "disk" not in quiet[-1]
    troubled = replace(summary, units_lost=2, database_outages=[[1.0, 2.5]], database_unreachable_s=1.5)
    lines = troubled.console_lines(["LinearAttention"], OUT, [OUT / REPORT])
    assert len(lines) == 5 and str(OUT / NATIVE_LOG) in lines[2] and "1-2.5 s" in lines[3]
    assert "report: NOT written (disk full)" in lines[-1] and "1 thing(s) not saved" in lines[-1]
    assert "2 unit(s) lost" in lines[-1]


def test_coverage_is_listed_for_the_campaigns_ops_only() -> None:
    summary = Summary.read(DATA)
    coverage = summary.console_lines(["LinearAttention"], OUT, [])[1]
    assert coverage.startswith("coverage by op: LinearAttention ") and "CausalConvWithState" not in coverage

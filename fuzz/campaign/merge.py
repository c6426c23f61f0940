"""Merging the outputs of several campaign shards into one corpus, one example database, one report.

Each input is a campaign output directory (``summary.json``, ``corpus/``, usually ``hypothesis-db/``).
Findings are unioned by id (the same finding from two shards counts once, with both counts
added), totals are summed, and every database key a shard used is copied into the merged
database through Hypothesis's public database API.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from fuzz.campaign.campaign import exit_status
from fuzz.campaign.database import copy_keys, open_database
from fuzz.campaign.report import write_report
from fuzz.corpus import entry as corpus


def _sum_nested(target: dict[str, Any], source: dict[str, Any]) -> None:
    for key, value in source.items():
        if isinstance(value, dict):
            _sum_nested(target.setdefault(key, {}), value)
        else:
            target[key] = target.get(key, 0) + value


def merge_summaries(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """One summary for all shards: sums, unions, and the slowest shard's elapsed time."""
    if not summaries:
        raise ValueError("nothing to merge")
    merged = json.loads(json.dumps(summaries[0]))
    merged["config"]["shard"] = ", ".join(s["config"]["shard"] for s in summaries)
    merged["elapsed_s"] = max(s["elapsed_s"] for s in summaries)
    merged["interrupted"] = any(s["interrupted"] for s in summaries)
    merged["started"] = min(s["started"] for s in summaries)
    merged["finished"] = max(s["finished"] for s in summaries)
    merged["peak_rss_mib"] = max(s["peak_rss_mib"] for s in summaries)
    merged["rss_samples"] = max((s["rss_samples"] for s in summaries), key=len)
    merged["cases_per_second"] = round(sum(s["cases_per_second"] for s in summaries), 1)
    for key in ("units", "examples", "units_stopped_early", "units_abandoned"):
        merged[key] = sum(s[key] for s in summaries)
    merged["error_ratios"] = {}
    for s in summaries:
        for part, ratios in s["error_ratios"].items():
            merged["error_ratios"].setdefault(part, []).extend(ratios)
    for key in ("backend_calls", "coverage", "per_property", "ratio_histogram", "known_cases"):
        merged[key] = {}
        for s in summaries:
            _sum_nested(merged[key], s[key])
    for s in summaries[1:]:
        merged["backends"].update(s["backends"])
    findings: dict[str, dict[str, Any]] = {}
    for s in summaries:
        for f in s["findings"]:
            if f["id"] in findings:
                findings[f["id"]]["count"] += f["count"]
            else:
                findings[f["id"]] = dict(f)
    merged["findings"] = list(findings.values())
    merged["database_keys"] = sorted({k for s in summaries for k in s["database_keys"]})
    merged["checked_examples"] = sum(s.get("checked_examples", s["examples"]) for s in summaries)
    merged["exit_status"] = exit_status(merged["findings"], merged["checked_examples"], merged["interrupted"])
    merged["merged_from"] = len(summaries)
    return merged


def merge_runs(sources: list[Path], out: Path) -> dict[str, Any]:
    """Merge campaign output directories into ``out``; returns the merged summary."""
    summaries = []
    for source in sources:
        path = Path(source) / "summary.json"
        if not path.is_file():
            raise FileNotFoundError(f"{source}: no summary.json (is it a campaign output directory?)")
        summaries.append(json.loads(path.read_text()))
    out = Path(out)
    corpus.merge([Path(s) / "corpus" for s in sources], out / "corpus")
    destination = open_database(str(out / "hypothesis-db"))
    copied: Counter = Counter()
    for source, summary in zip(sources, summaries, strict=True):
        local = Path(source) / "hypothesis-db"
        spec = str(local) if local.is_dir() else summary["config"]["database"]
        keys = [bytes.fromhex(k) for k in summary["database_keys"]]
        copied[str(source)] = copy_keys(open_database(spec), destination, keys)
    merged = merge_summaries(summaries)
    out_corpus = out / "corpus"
    for f in merged["findings"]:
        f["corpus_path"] = str(out_corpus / f["property"] / f["id"])
        f["reproduce"] = f"lafuzz repro {f['corpus_path']}"
    merged["config"]["out"] = str(out)
    merged["config"]["database"] = str(out / "hypothesis-db")
    merged["database_values_copied"] = dict(copied)
    write_report(merged, out)
    return merged

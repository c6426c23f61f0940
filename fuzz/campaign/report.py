"""The campaign report: ``summary.json`` for machines and a self-contained ``report.html`` for people.

The HTML embeds its plots as base64 PNGs (no files beside it, no network): error against
tolerance per backend pair and per slot, coverage of each case axis, resident memory over time.
``lafuzz report`` regenerates the HTML from a ``summary.json`` alone.
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from fuzz.campaign.summary import Summary
from fuzz.engine.compare import RATIO_CAP

STYLE = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;
vertical-align:top}th{background:#f3f3f3}pre{background:#f7f7f7;padding:.6em;overflow-x:auto;font-size:85%}
.ok{color:#1a7f37}.bad{color:#b3261e}.known{color:#9a6700}code{background:#f3f3f3;padding:0 .2em}
.finding{border-left:4px solid #b3261e;padding-left:1em;margin:1.5em 0}.finding.known{border-color:#9a6700}
img{max-width:100%}
"""


def write_report(summary: Summary, out: Path) -> tuple[Path, Path]:
    """Write ``summary.json`` and ``report.html`` into ``out``; returns both paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    json_path, html_path = out / "summary.json", out / "report.html"
    summary.write(json_path)
    html_path.write_text(render_html(summary))
    return json_path, html_path


def regenerate(summary_path: Path) -> Path:
    """Rebuild ``report.html`` beside a ``summary.json``."""
    return write_report(Summary.read(summary_path), Path(summary_path).parent)[1]


# ---- plots -------------------------------------------------------------------------------------
def _png(draw: Callable[[plt.Axes], None], width: float = 7.0, height: float = 3.6) -> str:
    figure, axes = plt.subplots(figsize=(width, height))
    try:
        draw(axes)
        figure.tight_layout()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=90)
    finally:
        plt.close(figure)
    return f'<img alt="plot" src="data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}">'


def _error_points(summary: Summary) -> dict[str, list[float]]:
    """Worst error/tolerance ratio per unit for every ``"backends|part"`` (passing cases), plus every
    mismatch found at its worst element (ratio > 1)."""
    points = {part: list(ratios) for part, ratios in summary.error_ratios.items()}
    for f in summary.findings:
        m = f.get("mismatch") or {}
        ratio = m.get("ratio")
        if isinstance(ratio, float) and 0 < ratio < float("inf"):
            part = "output" if m["tensor"] == "output" else f"slot {m['slot']}"
            points.setdefault(f"{m['pair']}|{part}", []).append(ratio)
    return points


def _grouped(points: dict[str, list[float]], side: int) -> dict[str, list[float]]:
    """Ratios grouped by one side of ``"backends|part"`` (0: backend pair, 1: output or slot)."""
    groups: dict[str, list[float]] = {}
    for key, ratios in points.items():
        groups.setdefault(key.split("|")[side], []).extend(ratios)
    return dict(sorted(groups.items()))


def _strip(groups: dict[str, list[float]], what: str) -> Callable[[plt.Axes], None]:
    def draw(ax: plt.Axes) -> None:
        floor = 1e-6
        for i, ratios in enumerate(groups.values()):
            shown = [min(max(r, floor), RATIO_CAP) for r in ratios]
            jitter = [i + 0.3 * ((j * 0.618) % 1 - 0.5) for j in range(len(shown))]
            ax.scatter(jitter, shown, s=8, alpha=0.5, color=["#4a78b5" if r <= 1 else "#b3261e" for r in ratios])
        ax.axhline(1.0, color="k", linestyle="--", linewidth=1, label="error = tolerance")
        ax.set_xticks(range(len(groups)), list(groups), rotation=30, ha="right", fontsize=7)
        ax.set(yscale="log", ylabel="max error / tolerance", title=f"error against tolerance, per {what} "
               f"(one dot per work unit; above the line fails; exact = {floor:g}, shown at most {RATIO_CAP:g})")
        ax.legend(fontsize=7, loc="upper left")

    return draw


def _ratios(histogram: dict[str, dict[str, int]]) -> Callable[[plt.Axes], None]:
    def draw(ax: plt.Axes) -> None:
        buckets = sorted({b for counts in histogram.values() for b in counts},
                         key=lambda b: -999 if b == "0" else int(b[2:]))
        width = 0.8 / max(len(histogram), 1)
        for i, (prop, counts) in enumerate(sorted(histogram.items())):
            ax.bar([j + i * width for j in range(len(buckets))], [counts.get(b, 0) for b in buckets],
                   width=width, label=prop)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(buckets))],
                      ["exact" if b == "0" else f"≥{b}" for b in buckets])
        ax.set(yscale="log", xlabel="worst error / tolerance of the case (1 = at the tolerance)", ylabel="cases",
               title="how close passing cases came to their tolerance, per property")
        ax.legend(fontsize=7)

    return draw


def _memory(samples: list[list[float]]) -> Callable[[plt.Axes], None]:
    def draw(ax: plt.Axes) -> None:
        ax.plot([s[0] for s in samples], [s[1] for s in samples], marker=".")
        ax.set(xlabel="seconds", ylabel="MiB", title="resident memory (all campaign processes)")
        ax.set_ylim(bottom=0)

    return draw


# ---- HTML --------------------------------------------------------------------------------------
def _table(rows: list[list[Any]], header: list[str]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _finding(f: dict[str, Any]) -> str:
    known = f.get("known_failure")
    note = f": {html.escape(f['note'])}" if f.get("note") else ""
    status = (f'<span class="known">known failure of {html.escape(known.get("implementation", "?"))}</span>'
              if known else f'<span class="bad">new{note}</span>')
    mismatch = f.get("mismatch") or {}
    numbers = ", ".join(f"{k} {mismatch[k]:.3g}" for k in ("error", "tolerance", "ratio")
                        if isinstance(mismatch.get(k), float))
    if mismatch.get("where"):
        numbers += f" at {mismatch['tensor']} {mismatch['where']}"
    explanation = f"<p>{html.escape(known.get('explanation', ''))}</p>" if known else ""
    return (
        f'<div class="finding{" known" if known else ""}"><h3>{html.escape(f["property"])} · '
        f'{html.escape(" / ".join(f["backends"]))} · {html.escape(f["kind"])} ({status})</h3>'
        f"<p>signature: <code>{html.escape(f['signature'])}</code><br>minimal case: "
        f"<code>{html.escape(f['summary'])}</code><br>seen {f['count']} time(s), first in unit "
        f"<code>{html.escape(f['first_unit'])}</code>{'; ' + numbers if numbers else ''}</p>{explanation}"
        f"<p>reproduce: <code>{html.escape(f['reproduce'])}</code></p>"
        f"<pre>{html.escape(f['report'])}</pre></div>"
    )


def _heat(count: int, most: int) -> str:
    """A table cell whose shade grows with ``count`` (a log scale); red for a bucket never reached."""
    if not count:
        return '<td style="background:#f6c5c0">0</td>'
    share = math.log1p(count) / math.log1p(most)
    return f'<td style="background:rgba(74,120,181,{0.1 + 0.6 * share:.2f})">{count}</td>'


def _coverage_section(summary: Summary) -> str:
    """Every coverage bucket with its count, one row per axis; the buckets never reached, by name."""
    total = sum(len(row) for row in summary.coverage.values())
    missing = summary.never_reached
    rows = []
    for axis, row in summary.coverage.items():
        most = max(row.values(), default=0) or 1
        cells = "".join(f"<td>{html.escape(b)}</td>{_heat(n, most)}" for b, n in row.items())
        rows.append(f"<tr><th>{html.escape(axis)}</th>{cells}</tr>")
    tiers = _table([[t, r.get("units", 0), r.get("examples", 0), round(r.get("milliseconds", 0) / 1000, 1),
                     summary.tier_rates.get(t, 0.0)] for t, r in summary.per_tier.items()],
                   ["size tier", "units", "cases", "worker seconds", "cases per worker second"])
    never = ("<p>Never reached: " + ", ".join(f"<code>{html.escape(m)}</code>" for m in missing) + "</p>"
             if missing else "<p>Every bucket was reached.</p>")
    return (f"<h2>Coverage: {total - len(missing)} of {total} buckets reached</h2>"
            f"<p>Cases per bucket of every axis of the contract and of the interactions where bugs hide "
            f"(each pair of cells: bucket, cases).</p><table>{''.join(rows)}</table>{never}"
            f"<h3>Where the time went</h3>{tiers}")


def render_html(summary: Summary) -> str:
    """The whole report as one HTML document."""
    config, findings = summary.config, summary.findings
    status = summary.exit_status
    new = summary.new_findings
    verdict = (f'<span class="bad">{len(new)} new finding(s)</span>' if new
               else '<span class="ok">no new finding</span>')
    verdict += f", {len(findings) - len(new)} known"
    budget = (f"{config['example_budget']} examples" if config.get("example_budget")
              else f"{config.get('time_budget')} s")
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>lafuzz campaign</title>"
        f"<style>{STYLE}</style></head><body><h1>lafuzz campaign: {verdict}</h1>",
        _table([
            ["started / finished", f"{summary.started} / {summary.finished}"],
            ["elapsed", f"{summary.elapsed_s} s{' (interrupted)' if summary.interrupted else ''}"],
            ["seed, shard, jobs", f"{config['seed']}, {config['shard']}, {config['jobs']}"],
            ["budget", f"{budget}, {config['examples_per_unit']} examples per unit, limits {config['limits']}"],
            ["cases checked", f"{summary.checked_examples} in {summary.units} units "
             f"({summary.units_stopped_early} stopped at the budget, {summary.units_abandoned} abandoned)"],
            ["cases covered by known issues", ", ".join(f"{k}: {v}" for k, v in summary.known_cases.items())
             or "none"],
            ["throughput", f"{summary.cases_per_second} cases/s"],
            ["peak resident memory", f"{summary.peak_rss_mib} MiB"],
            ["properties", ", ".join(config["properties"])],
            ["example database", config["database"]],
            ["exit status", status],
            ["host", ", ".join(f"{k} {v}" for k, v in summary.host.items())],
        ], ["what", "value"]),
        "<h2>Backends</h2>",
        _table([[name, b["device"], ", ".join(f"{k} {v}" for k, v in b["versions"].items()), b["window"],
                 ",".join(b["dtypes"]), summary.backend_calls.get(name, 0)]
                for name, b in summary.backends.items()],
               ["backend", "adapter / device", "versions", "window", "dtypes", "calls"]),
    ]
    if summary.unavailable:
        parts.append(_table([[k, v] for k, v in summary.unavailable.items()], ["not available", "why"]))
    parts.append("<h2>Properties</h2>")
    parts.append(_table([[p, s.get("units", 0), s.get("examples", 0), s.get("findings", 0), s.get("known", 0)]
                         for p, s in summary.per_property.items()],
                        ["property", "units", "cases", "findings", "cases covered by known issues"]))
    parts.append(f"<h2>Findings ({len(findings)})</h2>")
    parts.extend(_finding(f) for f in findings)
    if not findings:
        parts.append("<p>None.</p>")
    parts.append("<h2>Error against tolerance</h2>")
    if summary.ratio_histogram:
        parts.append(_png(_ratios(summary.ratio_histogram)))
    points = _error_points(summary)
    if points:
        parts.append("<p>Every comparison of every case, passing or not, at its worst element:</p>")
        parts.append(_png(_strip(_grouped(points, 0), "backend pair"), 9.0, 4.2))
        parts.append(_png(_strip(_grouped(points, 1), "output / state slot"), 9.0, 4.2))
    parts.append(_coverage_section(summary))
    if len(summary.rss_samples) > 1:
        parts.append("<h2>Memory</h2>")
        parts.append(_png(_memory(summary.rss_samples)))
    parts.append("</body></html>\n")
    return "\n".join(parts)

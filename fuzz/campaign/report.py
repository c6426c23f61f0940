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
from xml.etree import ElementTree

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import Bbox

from fuzz import atomic
from fuzz.campaign.summary import REPORT, SUMMARY, Summary
from fuzz.engine.compare import RATIO_CAP

STYLE = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0;max-width:100%}td,th{border:1px solid #ccc;padding:.25em .6em;
text-align:left;vertical-align:top;overflow-wrap:break-word}th{background:#f3f3f3}pre{background:#f7f7f7;padding:.6em;overflow-x:auto;font-size:85%}
.ok{color:#1a7f37}.bad{color:#b3261e}.known{color:#9a6700}code{background:#f3f3f3;padding:0 .2em}
.finding{border-left:4px solid #b3261e;padding-left:1em;margin:1.5em 0}.finding.known{border-color:#9a6700}
img{max-width:100%}.bucket{display:inline-block;margin:.1em .3em .1em 0;padding:0 .3em;border:1px solid #ddd}
"""


"""What every campaign writes into its ``--out``."""


def write_report(summary: Summary, out: Path) -> tuple[Path, Path]:
    """Write ``summary.json`` and ``report.html`` into ``out``; returns both paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    json_path, html_path = out / SUMMARY, out / REPORT
    summary.write(json_path)
    write_html(summary, html_path)
    return json_path, html_path


def write_html(summary: Summary, path: Path) -> Path:
    """``report.html`` for ``summary``, written atomically (``fuzz.atomic``)."""
    return atomic.write_text(path, render_html(summary))


def regenerate(summary_path: Path) -> Path:
    """Rebuild ``report.html`` beside a ``summary.json``."""
    return write_report(Summary.read(summary_path), Path(summary_path).parent)[1]


# ---- plots -------------------------------------------------------------------------------------
Draw = Callable[[plt.Axes], None]
SVG = "http://www.w3.org/2000/svg"
FLOOR = 1e-6
"""Where an exact comparison (ratio 0) is drawn on the log axes."""


def _figure(draw: Draw, width: float, height: float) -> Figure:
    figure, axes = plt.subplots(figsize=(width, height))
    draw(axes)
    figure.tight_layout()
    return figure


def _png_bytes(draw: Draw, width: float, height: float, dpi: int) -> bytes:
    figure = _figure(draw, width, height)
    try:
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=dpi)
    finally:
        plt.close(figure)
    return buffer.getvalue()


def _png(draw: Draw, width: float = 7.0, height: float = 3.6) -> str:
    data = _png_bytes(draw, width, height, dpi=90)
    return f'<img alt="plot" src="data:image/png;base64,{base64.b64encode(data).decode()}">'


def _svg(draw: Draw, titles: dict[str, list[str]], width: float, height: float) -> str:
    """The plot as inline SVG in which each marker of the scatter whose ``gid`` is a key of ``titles`` carries
    its text as a ``<title>``: a browser shows it when the pointer rests on the point."""
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": "lafuzz"}):
        figure = _figure(draw, width, height)
        try:
            buffer = io.StringIO()
            figure.savefig(buffer, format="svg")
        finally:
            plt.close(figure)
    ElementTree.register_namespace("", SVG)
    ElementTree.register_namespace("xlink", "http://www.w3.org/1999/xlink")
    root = ElementTree.fromstring(buffer.getvalue())
    for group in root.iter(f"{{{SVG}}}g"):
        for marker, text in zip(group.iter(f"{{{SVG}}}use"), titles.get(group.get("id", ""), []), strict=False):
            ElementTree.SubElement(marker, f"{{{SVG}}}title").text = text
    return ElementTree.tostring(root, encoding="unicode")


Point = tuple[float, str]
"""A ratio and what it came from (the unit and the case, or the finding and its ``lafuzz repro``)."""


def _error_points(summary: Summary) -> dict[str, list[Point]]:
    """Worst error/tolerance ratio per unit for every ``"backends|part"`` (passing cases), plus every
    mismatch found at its worst element (ratio > 1), each with the case it came from."""
    points = {}
    for part, ratios in summary.error_ratios.items():
        cases = summary.error_cases.get(part) or ["(case not recorded)"] * len(ratios)
        points[part] = [(r, f"{r:.3g}: {case}" if r else f"exact: {case}")
                        for r, case in zip(ratios, cases, strict=False)]
    for f in summary.findings:
        m = f.get("mismatch") or {}
        ratio = m.get("ratio")
        if isinstance(ratio, float) and 0 < ratio < float("inf"):
            part = "output" if m["tensor"] == "output" else f"slot {m['slot']}"
            label = f"{ratio:.3g}: finding {f['id']}: {f['summary']}; {f['reproduce']}"
            points.setdefault(f"{m['pair']}|{part}", []).append((ratio, label))
    return points


def _grouped(points: dict[str, list[Point]], side: int) -> dict[str, list[Point]]:
    """Points grouped by one side of ``"backends|part"`` (0: backend pair, 1: output or slot)."""
    groups: dict[str, list[Point]] = {}
    for key, found in points.items():
        groups.setdefault(key.split("|")[side], []).extend(found)
    return dict(sorted(groups.items()))


def _strip(groups: dict[str, list[Point]], what: str) -> Draw:
    def draw(ax: plt.Axes) -> None:
        for i, found in enumerate(groups.values()):
            shown = [min(max(r, FLOOR), RATIO_CAP) for r, _ in found]
            jitter = [i + 0.3 * ((j * 0.618) % 1 - 0.5) for j in range(len(shown))]
            ax.scatter(jitter, shown, s=10, alpha=0.55, gid=f"points-{i}",
                       color=["#4a78b5" if r <= 1 else "#b3261e" for r, _ in found])
        ax.axhline(1.0, color="k", linestyle="--", linewidth=1, label="error = tolerance (above: fails)")
        ax.set_xticks(range(len(groups)), list(groups), rotation=30, ha="right", fontsize=8)
        ax.set(yscale="log", ylabel="max error / tolerance", title=f"error against tolerance, per {what}")
        ax.legend(fontsize=8, loc="lower right")

    return draw


MAX_POINTS = 150
"""Dots per strip at most (each carries its case as hover text, so the page grows with them): the worst
half of them and an even sample of the rest."""


def _thinned(found: list[Point]) -> list[Point]:
    if len(found) <= MAX_POINTS:
        return found
    ranked = sorted(found, key=lambda point: -point[0])
    worst, rest = ranked[:MAX_POINTS // 2], ranked[MAX_POINTS // 2:]
    return worst + rest[::-(-len(rest) // (MAX_POINTS - len(worst)))]


def _strip_svg(groups: dict[str, list[Point]], what: str) -> str:
    shown = {name if len(found) <= MAX_POINTS else f"{name} ({MAX_POINTS} of {len(found)})": _thinned(found)
             for name, found in groups.items()}
    titles = {f"points-{i}": [label for _, label in found] for i, found in enumerate(shown.values())}
    return _svg(_strip(shown, what), titles, 9.0, 4.2)


def _decade(bucket: str) -> str:
    return "exact" if bucket == "0" else f"$10^{{{bucket[2:]}}}$"


def _ratios(histogram: dict[str, dict[str, int]]) -> Draw:
    def draw(ax: plt.Axes) -> None:
        buckets = sorted({b for counts in histogram.values() for b in counts},
                         key=lambda b: -999 if b == "0" else int(b[2:]))
        width = 0.8 / max(len(histogram), 1)
        for i, (prop, counts) in enumerate(sorted(histogram.items())):
            ax.bar([j + i * width for j in range(len(buckets))], [counts.get(b, 0) for b in buckets],
                   width=width, label=prop)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(buckets))], [_decade(b) for b in buckets])
        ax.tick_params(axis="x", labelsize=9)
        ax.set(yscale="log", xlabel="worst error / tolerance of the case, by decade (1 = at the tolerance)",
               ylabel="cases", title="how close passing cases came to their tolerance")
        ax.legend(fontsize=7, title="property", title_fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))

    return draw


def _discoveries(first_seen: dict[str, dict[str, float]], elapsed: float) -> Draw:
    def draw(ax: plt.Axes) -> None:
        def cumulative(axes: plt.Axes, times: list[float], colour: str, label: str) -> None:
            times = sorted(times)
            axes.step([0.0, *times, elapsed], [0, *range(1, len(times) + 1), len(times)], where="post",
                      color=colour, label=label)
            axes.set_ylim(bottom=0)

        cumulative(ax, list(first_seen.get("buckets", {}).values()), "#4a78b5", "coverage buckets reached")
        other = ax.twinx()
        cumulative(other, list(first_seen.get("findings", {}).values()), "#b3261e", "findings (new and known)")
        other.yaxis.set_major_locator(MaxNLocator(nbins="auto", steps=[1, 2, 2.5, 5, 10], integer=True))
        ax.set(xlabel="seconds from the start", ylabel="buckets reached", title="discoveries over time")
        other.set_ylabel("findings")
        ax.legend(handles=[*ax.get_lines(), *other.get_lines()], fontsize=8, loc="lower right")

    return draw


def _memory(samples: list[list[float]]) -> Draw:
    def draw(ax: plt.Axes) -> None:
        ax.plot([s[0] for s in samples], [s[1] for s in samples], marker=".")
        ax.set(xlabel="seconds", ylabel="MiB", title="resident memory (all campaign processes)")
        ax.set_ylim(bottom=0)

    return draw


def _shade(count: int, most: int) -> tuple[float, float, float, float]:
    """The colour of a coverage cell: blue growing with ``count`` (a log scale); red for a bucket never reached."""
    if not count:
        return (0.965, 0.773, 0.753, 1.0)
    return (0.29, 0.47, 0.71, 0.1 + 0.6 * math.log1p(count) / math.log1p(most))


COVERAGE_COLUMNS = 4
"""Buckets per row of the coverage table drawn as a picture (an axis with more continues below)."""


def _coverage_picture(coverage: dict[str, dict[str, int]]) -> Draw:
    """The coverage table drawn by matplotlib (for ``--png``): the same cells and shades as the HTML."""
    def draw(ax: plt.Axes) -> None:
        text, colours = [], []
        for axis, row in coverage.items():
            most = max(row.values(), default=0) or 1
            cells = list(row.items())
            for start in range(0, len(cells), COVERAGE_COLUMNS):
                chunk = cells[start:start + COVERAGE_COLUMNS]
                blank = COVERAGE_COLUMNS - len(chunk)
                text.append([axis if start == 0 else ""] + [f"{b}: {n}" for b, n in chunk] + [""] * blank)
                colours.append([(0.95, 0.95, 0.95, 1.0)] + [_shade(n, most) for _, n in chunk]
                               + [(1, 1, 1, 1)] * blank)
        widths = [0.12] + [0.88 / COVERAGE_COLUMNS] * COVERAGE_COLUMNS
        table = ax.table(cellText=text, cellColours=colours, colWidths=widths, bbox=Bbox.from_bounds(0, 0, 1, 1),
                         cellLoc="left")
        table.auto_set_font_size(False)
        table.set_fontsize(6.5)
        ax.axis("off")
        ax.set_title("coverage: cases per bucket (red: never reached)")

    return draw


def figures(summary: Summary) -> dict[str, tuple[Draw, float, float]]:
    """Every plot of the report by file name, with its size in inches: what ``--png`` writes."""
    points = _error_points(summary)
    found = {
        "ratios": (_ratios(summary.ratio_histogram), 8.0, 3.6) if summary.ratio_histogram else None,
        "error-per-pair": (_strip(_grouped(points, 0), "backend pair"), 9.0, 4.2) if points else None,
        "error-per-slot": (_strip(_grouped(points, 1), "output / state slot"), 9.0, 4.2) if points else None,
        "discoveries": (_discoveries(summary.first_seen, summary.elapsed_s), 7.0, 3.2) if summary.first_seen else None,
        "coverage": (_coverage_picture(summary.coverage), 12.0, 0.19 * _coverage_lines(summary.coverage) + 0.5),
        "memory": (_memory(summary.rss_samples), 7.0, 3.2) if len(summary.rss_samples) > 1 else None,
    }
    return {name: figure for name, figure in found.items() if figure is not None}


def _coverage_lines(coverage: dict[str, dict[str, int]]) -> int:
    return sum(-(-max(len(row), 1) // COVERAGE_COLUMNS) for row in coverage.values())


def write_pngs(summary: Summary, directory: Path) -> list[Path]:
    """Each plot of the report as ``<directory>/report-<name>.png`` (to attach to a ticket, or for the docs)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (draw, width, height) in figures(summary).items():
        written.append(atomic.write_bytes(directory / f"report-{name}.png", _png_bytes(draw, width, height, dpi=80)))
    return written


# ---- HTML --------------------------------------------------------------------------------------
def _breakable(text: str) -> str:
    """``text`` escaped, with line-break opportunities after path separators: a library's path in a backend's
    versions must not widen the table past the page."""
    return html.escape(text).replace("/", "/<wbr>")


def _table(rows: list[list[Any]], header: list[str]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_breakable(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _finding(f: dict[str, Any]) -> str:
    known = f.get("known_failure")
    note = f": {html.escape(f['note'])}" if f.get("note") else ""
    status = (f'<span class="known">known failure of {html.escape(known.get("implementation", "?"))}{note}</span>'
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


def _heat(bucket: str, count: int, most: int) -> str:
    """A bucket and its count, shaded by ``_shade``; the buckets of an axis wrap at the page's width."""
    r, g, b, a = _shade(count, most)
    return (f'<span class="bucket" style="background:rgba({r * 255:.0f},{g * 255:.0f},{b * 255:.0f},{a:.2f})">'
            f"{html.escape(bucket)} <b>{count}</b></span>")


def _matrix(matrix: dict[str, Any]) -> str:
    """The documented findings judged on each build (``fuzz.export.matrix``), defects in red."""
    if not matrix:
        return ""
    names = matrix["builds"]
    head = "".join(f"<th>{html.escape(b)}<br><small>{html.escape(matrix['implementations'][b])}</small></th>"
                   for b in names)
    rows = []
    for finding in matrix["findings"]:
        cells = []
        for build in names:
            cell = matrix["cells"][f"{finding}|{build}"]
            style = {1: "bad", 0: "ok"}.get(cell["status"], "")
            detail = f"<br><small>{html.escape(cell['detail'])}</small>" if cell["detail"] else ""
            cells.append(f'<td><span class="{style}">{html.escape(cell["verdict"])}</span>{detail}</td>')
        rows.append(f"<tr><th>{html.escape(finding)}</th>{''.join(cells)}</tr>")
    return ("<h2>Documented findings on every build</h2><p>Each documented finding of the corpus run once on "
            f"each build after the campaign ({matrix.get('seconds', '?')} s): red where the defect is there, "
            "green where it is not, uncoloured where the build cannot load the model (<code>lafuzz matrix</code>)."
            f"</p><table><tr><th>finding</th>{head}</tr>{''.join(rows)}</table>")


def _near_misses(rows: list[dict[str, Any]]) -> str:
    """The passing cases closest to their tolerance, each saved as a corpus candidate, with its commands."""
    if not rows:
        return "<h3>Near misses</h3><p>No passing case came near its tolerance (every comparison was exact).</p>"
    body = "".join(
        f"<tr><td>{m['ratio']:.3g}</td><td>{html.escape(m['property'])}</td><td>{html.escape(m['part'])}</td>"
        f"<td><code>{html.escape(m['summary'])}</code></td><td><code>{html.escape(m['reproduce'])}</code><br>"
        f"<code>{html.escape(m['promote'])}</code></td></tr>" for m in rows)
    return (f"<h3>Near misses: the {len(rows)} passing cases closest to their tolerance</h3>"
            "<p>Each is saved as a corpus candidate; promote one to keep it as a regression entry.</p>"
            "<table><tr><th>error / tolerance</th><th>property</th><th>where</th><th>case</th>"
            f"<th>re-check, promote</th></tr>{body}</table>")


def _coverage_section(summary: Summary) -> str:
    """Every coverage bucket with its count, one row per axis; the buckets never reached, by name."""
    total = sum(len(row) for row in summary.coverage.values())
    missing = summary.never_reached
    rows = []
    for axis, row in summary.coverage.items():
        most = max(row.values(), default=0) or 1
        cells = "".join(_heat(b, n, most) for b, n in row.items())
        rows.append(f"<tr><th>{html.escape(axis)}</th><td>{cells}</td></tr>")
    tiers = _table([[t, r.get("units", 0), r.get("examples", 0), round(r.get("milliseconds", 0) / 1000, 1),
                     summary.tier_rates.get(t, 0.0), _case_costs(summary, t, r.get("examples", 0))]
                    for t, r in summary.per_tier.items()],
                   ["size tier", "units", "cases", "worker seconds", "cases per worker second",
                    "ms per case, costliest backends"])
    arms = _table([[arm, r.get("units", 0), r.get("focused", 0), r.get("examples", 0),
                    round(r.get("milliseconds", 0) / 1000, 1), r.get("buckets", 0), r.get("findings", 0),
                    r.get("yield", 0)] for arm, r in summary.per_arm.items()],
                  ["arm (op, tier, kernel form)", "units", "focused", "cases", "worker seconds", "buckets first",
                   "new findings", "yield"]) if summary.per_arm else ""
    never = ("<p>Never reached: " + ", ".join(f"<code>{html.escape(m)}</code>" for m in missing) + "</p>"
             if missing else "<p>Every bucket was reached.</p>")
    return (f"<h2>Coverage: {total - len(missing)} of {total} buckets reached</h2>"
            f"<p>Cases per bucket of every axis of the contract and of the interactions where bugs hide "
            f"(each bucket with its count of cases).</p><table>{''.join(rows)}</table>{never}"
            f"<h3>Where the time went</h3>{tiers}{arms}")


def _case_costs(summary: Summary, tier: str, cases: int) -> str:
    """The three backends whose calls cost most per case of ``tier``, in milliseconds (``tier_backend_ms``)."""
    costs = sorted(summary.tier_backend_ms.get(tier, {}).items(), key=lambda item: -item[1])[:3]
    return ", ".join(f"{name} {ms / cases:.1f}" for name, ms in costs) if cases else ""


def _database_outages(summary: Summary) -> str:
    if not summary.database_outages:
        return ""
    spans = ", ".join(f"{start:g}-{end:g} s" for start, end in summary.database_outages)
    return f" (unreachable for {summary.database_unreachable_s:g} s: {spans}; a local database stood in)"


def render_html(summary: Summary) -> str:
    """The whole report as one HTML document."""
    config, findings = summary.config, summary.findings
    status = summary.exit_status
    new = summary.new_findings
    verdict = (f'<span class="bad">{len(new)} new finding(s)</span>' if new
               else '<span class="ok">no new finding</span>')
    verdict += f", {len(findings) - len(new)} known"
    if summary.unit_errors:
        verdict += f', <span class="bad">{len(summary.unit_errors)} error(s) with no case</span>'
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
            ["cases checked", f"{summary.checked_cases} in {summary.checked_examples} examples, {summary.units} units "
             f"({summary.units_stopped_early} stopped at the budget, {summary.units_abandoned} abandoned, "
             f"{summary.units_lost} lost with a worker that died)"],
            ["cases covered by known issues", ", ".join(f"{k}: {v}" for k, v in summary.known_cases.items())
             or "none"],
            ["throughput", f"{summary.cases_per_second} cases/s"],
            ["peak resident memory", f"{summary.peak_rss_mib} MiB"],
            ["properties", ", ".join(config["properties"])],
            ["example database", config["database"] + _database_outages(summary)],
            ["exit status", status],
            ["host", ", ".join(f"{k} {v}" for k, v in summary.host.items())],
        ], ["what", "value"]),
        "<h2>Backends</h2>",
        _table([[name, b["device"], ", ".join(f"{k} {v}" for k, v in b["versions"].items()), b["window"],
                 ",".join(b["dtypes"]), summary.backend_calls.get(name, 0), summary.window_calls.get(name, 0),
                 summary.backend_seconds.get(name, "")]
                for name, b in summary.backends.items()],
               ["backend", "adapter / device", "versions", "window", "dtypes", "calls", "calls with W > 0",
                "seconds in calls"]),
    ]
    if summary.unavailable:
        parts.append(_table([[k, v] for k, v in summary.unavailable.items()], ["not available", "why"]))
    if summary.unit_errors:
        parts.append("<h2 class='bad'>Errors with no case to report them by</h2><p>Raised before a unit's first "
                     "case: a bug of a backend or of the suite (the tracebacks are in summary.json).</p>"
                     + _table([[e["unit"], e["error"]] for e in summary.unit_errors], ["unit", "error"]))
    if summary.out_of_space:
        parts.append("<h2 class='bad'>The disk filled up</h2><p>The campaign stopped there; what it had written "
                     "is kept. Not saved:</p>" + _table([[line] for line in summary.not_saved], ["what"]))
    parts.append("<h2>Properties</h2>")
    parts.append(_table([[p, s.get("units", 0), s.get("examples", 0), s.get("findings", 0), s.get("known", 0)]
                         for p, s in summary.per_property.items()],
                        ["property", "units", "cases", "findings", "cases covered by known issues"]))
    parts.append(f"<h2>Findings ({len(findings)})</h2>")
    parts.extend(_finding(f) for f in findings)
    if not findings:
        parts.append("<p>None.</p>")
    parts.append(_matrix(summary.matrix))
    if summary.first_seen:
        parts.append("<h2>Discoveries over time</h2>")
        parts.append(_png(_discoveries(summary.first_seen, summary.elapsed_s), 7.0, 3.2))
    parts.append("<h2>Error against tolerance</h2>")
    if summary.ratio_histogram:
        parts.append(_png(_ratios(summary.ratio_histogram), 8.0, 3.6))
    points = _error_points(summary)
    if points:
        parts.append("<p>Every comparison, passing or not, at its worst element: one dot per work unit and "
                     f"backend pair or slot, its worst case; a failure is a red dot above the line. Exact "
                     f"agreement is drawn at {FLOOR:g}, anything above {RATIO_CAP:g} at {RATIO_CAP:g}. Rest the "
                     "pointer on a dot to see its unit and case.</p>")
        parts.append(_strip_svg(_grouped(points, 0), "backend pair"))
        parts.append(_strip_svg(_grouped(points, 1), "output / state slot"))
    parts.append(_near_misses(summary.near_misses))
    parts.append(_coverage_section(summary))
    if len(summary.rss_samples) > 1:
        parts.append("<h2>Memory</h2>")
        parts.append(_png(_memory(summary.rss_samples)))
    parts.append("</body></html>\n")
    return "\n".join(parts)

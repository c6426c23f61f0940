"""The three-design bench's outputs: one markdown table with the goals, one plot, and results.json.

The table has a row per dtype, ``T`` and design (a rerun on each kernel); the plot has a row of panels per dtype:
verify overhead, rollback cost and p* against ``T``, and the memory of 30 layers per design.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

from fuzz import atomic

from .report import json_safe
from .rollback_designs import LAYERS, RERUN

PLOT = "designs.png"

DEFINITIONS = """verify: the verify call's kernel time over T tokens; overhead: against the same kernel without rollback
support (LinearAttention W = 0, GatedDeltaNet without a capsule). rollback: E[cost of restoring the state after
the accepted tokens | rejection], a uniform-by-default distribution of accepted tokens a in 0..T-1 (a = 0 costs
nothing): a slot select (window), a replay of a entries (capsule), else a rerun of the a tokens. p* = (verify -
verify_0) / E[rerun(a) - restore(a) | rejection], against a rerun on the design's own kernel. memory: what the
design keeps beyond the source state, per layer and per 30 layers. floor (capsule): the bytes it captures stored
by a plain store kernel, as overhead and as p*."""


def _percent(value: float | None) -> str:
    """A fraction as a percentage; undefined (None, or infinite: a p* with nothing saved) as such."""
    if value is None or not math.isfinite(value):
        return "undefined"
    return f"{100 * value:.1f}%"


def _range(bounds: list[float] | None) -> str:
    if bounds is None or bounds[0] is None or not math.isfinite(bounds[0]):
        return ""
    return f" [{_percent(bounds[0])}, {_percent(bounds[1])}]"


def _bytes(value: int) -> str:
    if not value:
        return "0"
    return f"{value / 2**20:.2f} MiB" if value >= 2**20 else f"{value / 2**10:.1f} KiB"


def design_table(results: dict[str, Any]) -> str:
    """The one table: a row per dtype, T and design."""
    lines = ["| dtype | T | design | kernel | verify us | overhead [95%] | rollback us | p* [95%] | memory / layer "
             "| memory / 30 layers | floor overhead | floor p* |", "|" + "---|" * 12]
    for dtype, table in results["dtypes"].items():
        for r in table["designs"]:
            floor = (_percent(r["floor_overhead"]), _percent(r["floor_p_star"])) if "floor_us" in r else ("", "")
            reference = r["kind"] == RERUN
            star = "-" if reference else _percent(r["p_star"]) + _range(r["p_star_interval"])
            overhead = "0 (reference)" if reference else _percent(r["overhead"]) + _range(r["overhead_interval"])
            lines.append(f"| {dtype} | {r['T']} | {r['design']} | {r['kernel']} | {r['verify_us']:.2f} | "
                         f"{overhead} | {r['restore_us']:.2f} | "
                         f"{star} | {_bytes(r['bytes_per_layer'])} | {_bytes(r['bytes_layers'])} | "
                         f"{floor[0]} | {floor[1]} |")
    return "\n".join(lines)


def goal_table(results: dict[str, Any]) -> str:
    lines = ["| dtype | goal | value [95%] | floor | verdict |", "|---|---|---|---|---|"]
    for g in results["goals"]:
        why = f" ({g['why']})" if g["why"] else ""
        floor = "-" if g["interval"] is None else _percent(g["floor"])
        lines.append(f"| {g['dtype']} | {g['goal']} | {_percent(g['value'])}{_range(g['interval'])} | {floor} | "
                     f"{g['verdict']}{why} |")
    return "\n".join(lines)


def markdown(results: dict[str, Any]) -> str:
    shape = results["shape"]
    schedule = results["schedule"]
    lines = [f"# Three rollback designs on {results.get('device', 'no device')} (clock {results.get('clock', '-')})",
             "", f"B={shape['batch']}, H_q=H_k=H_v={shape['kv_heads']}, d_k={shape['d_k']}, d_v={shape['d_v']}; "
             f"acceptance {results['acceptance']}; {schedule['rounds']} rounds x {schedule['per_round']} samples a "
             "series after a settling warm-up; means of round medians, 95% bootstrap intervals over rounds.", "",
             DEFINITIONS, "", design_table(results), "", "## Goals (reported, not gated)", "", goal_table(results),
             ""]
    for dtype, reason in results["skipped"].items():
        lines += [f"{dtype}: not measured: {reason}.", ""]
    return "\n".join(lines)


def plot(results: dict[str, Any], path: Path) -> None:
    """Overhead, rollback cost and p* against T, and the memory of 30 layers, a row of panels per dtype."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    dtypes = list(results["dtypes"]) or ["none"]
    figure, axes = pyplot.subplots(len(dtypes), 4, figsize=(20, 4.2 * len(dtypes)), squeeze=False)
    panels = (("overhead", "verify overhead (%)", 100), ("restore_us", "rollback cost (us)", 1),
              ("p_star", "p* (%)", 100))
    for row, dtype in zip(axes, dtypes, strict=True):
        rows = results["dtypes"].get(dtype, {}).get("designs", [])
        curves: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            curves.setdefault(f"{r['design']} ({r['kernel']})", []).append(r)
        colors = {label: f"C{i}" for i, label in enumerate(curves)}
        for axis, (key, title, scale) in zip(row, panels, strict=False):
            for label, points in curves.items():
                shown = [p for p in points if p[key] is not None and not (key == "p_star" and p["kind"] == RERUN)]
                if shown:
                    axis.plot([p["T"] for p in shown], [scale * p[key] for p in shown], marker="o", label=label,
                              color=colors[label])
            axis.set_title(f"{dtype}: {title}")
            axis.set_xlabel("draft tokens T")
            axis.grid(True, alpha=0.3)
        row[0].legend(fontsize=7)
        memory = {f"{r['design']} ({r['kernel']})": r["bytes_layers"] / 2**20 for r in rows if r["kind"] != RERUN}
        row[3].bar([label.split(" (")[0] for label in memory], list(memory.values()),
                   color=[colors[label] for label in memory])
        row[3].set_yscale("log")
        row[3].set_title(f"{dtype}: memory of {LAYERS} layers (MiB)")
        row[3].tick_params(axis="x", labelsize=7)
    figure.suptitle(f"{results.get('device', '')} ({results.get('clock', '')})", fontsize=9)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    pyplot.close(figure)
    atomic.write_bytes(path, buffer.getvalue())


def write_outputs(results: dict[str, Any], out: Path) -> list[str]:
    """Write ``results.json``, ``report.md`` and the plot into ``out``; a line per file written."""
    out.mkdir(parents=True, exist_ok=True)
    atomic.write_text(out / "results.json", json.dumps(json_safe(results), indent=1) + "\n")
    atomic.write_text(out / "report.md", markdown(results))
    plot(results, out / PLOT)
    return [f"written: {out / name}" for name in ("results.json", "report.md", PLOT)]

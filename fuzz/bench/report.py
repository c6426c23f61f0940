"""The benchmark's outputs: ``results.json``, ``report.md`` (also printed) and ``latency_vs_window.png``.

The Markdown report states the definitions it measures, then one table each for latency by
window, the rollback value, memory, the ORT comparison and the gate verdicts.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

from fuzz import atomic

DEFINITIONS = """\
- verify_W: p50 kernel time of the W-window call over T draft tokens; verify_0: the same at W = 0.
- Overhead: (verify_W - verify_0) / verify_0.
- On a rejection with a accepted tokens (0 <= a < T): without a window the caller reruns the
  accepted prefix (prefix_rerun(a): a W = 0 call over a tokens from the original past state; a = 0
  costs nothing extra); with a window it selects a slot (checkpoint_select(a); a = 0 costs nothing),
  by the cheaper path that exists: *rebind* (the slot is bound as the next call's seed; possible on
  separate bindings where the slot's offset meets the binding alignment), measured as
  span[call, call seeded from the slot] - span[call, call], or *copy*, measured as
  span[call, copy, call] - span[call, call]. Where both exist both are shown; the host time of
  creating the rebind's bind groups (once per slot, then cached) is shown beside it, not added.
  The rerun is timed as its own pass and the copy with the barrier it adds: the comparison leans
  against the window, never for it.
- p* = (verify_W - verify_0) / E[prefix_rerun - checkpoint_select | rejection], the expectation over
  the stated acceptance distribution restricted to a < T; accepted lengths the window does not
  represent (a <= T - W) need a rerun in both cases and contribute 0, as does a = 0.
  p* undefined: selecting saves nothing. p* <= 0: the window costs no verification time.
- Measurement: each (dtype, shape) runs on a device created for it. Every timed series of it -
  each call, each selection span, each prefix rerun, of every kernel path - is bound once, warmed
  up together until each one's recent median stops moving, then measured in interleaved rounds
  (every series once per round, in a seeded random order). p50/p95 are over all samples; gate
  values use each series' mean of round medians, and their 95% bootstrap interval resamples whole
  rounds (the same rounds for every series).
  PASS: the whole interval within the threshold; FAIL: the whole interval beyond it; otherwise
  INCONCLUSIVE.
- Memory: live device bytes of one bound call (kernel counters) vs inputs + past_state + output +
  window (present_state) + 64-byte uniform; growth over many select-and-resume cycles must be 0.
- Extra bytes: the slots a call stores beyond the one a W = 0 call stores ((min(T, W) - 1) slots). Their
  floor: a plain store kernel writing exactly those bytes (16 bytes per invocation, coalesced) minus the same
  dispatch storing nothing, on the kernel clock in the same rounds; write bandwidth = bytes / floor: the memory
  limit. Serial floor: the same slots stored one after another by the kernel's own workgroups, each its tile of
  each row, with nothing else to do (1 + extra slots minus 1 slot): the floor of a kernel that stores each
  checkpoint when its token is done, and the gates' floor unless --floor plain. Floor p*: p* with
  verify_W - verify_0 replaced by the gates' floor. An in-kernel p* gate whose floor p* interval lies wholly
  above its threshold is FLOOR-BOUND (no kernel of this geometry could meet it), printed with the floor p*;
  stores vs (serial) floor: (verify_W - verify_0) / floor at T >= W. Distance to the memory limit: the same
  ratio against the plain floor, reported beside the serial one, not a gate.
- p* (the headline gate): the request's p* in a decoder's view, on the pipelined wall clock (each call its own
  submission, back to back, one fence per batch), where a rerun is an extra dispatch of the accepted prefix
  (measured as [verify_0, rerun] minus [verify_0]) and a select is a rebind (measured as [call, call seeded
  from the slot] minus [call, call]); every difference, wall_W - wall_0 too, is of two batches timed side by
  side in each sample, in rounds of their own. In-kernel p*: the same formula on the kernel clock (GPU time)."""


def _us(value: float) -> str:
    return f"{value:,.1f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def latency_table(results: dict) -> str:
    """p50 / p95 (us) by window, one row per (dtype, shape, T), with the overhead against W = 0."""
    grouped: dict[tuple[str, str, str, int], dict[int, dict]] = {}
    for row in results["configurations"]:
        grouped.setdefault((row["dtype"], row["shape"], _path(row), row["T"]), {})[row["W"]] = row["timing"]
    windows = sorted({row["W"] for row in results["configurations"]})
    rows = []
    for (dtype, shape, path, seq_len), timing in grouped.items():
        base = timing[0]["p50_us"]
        cells = []
        for w in windows:
            t = timing[w]
            extra = "" if w == 0 else f" ({100 * (t['p50_us'] - base) / base:+.1f}%)"
            cells.append(f"{_us(t['p50_us'])} / {_us(t['p95_us'])}{extra}")
        rows.append([dtype, shape, path, str(seq_len), *cells])
    return _table(["dtype", "shape", "kernel path", "T", *(f"W={w} p50 / p95 us" for w in windows)], rows)


def _p_star(value: float | None) -> str:
    return "undefined" if value is None else f"{100 * value:.1f}%"


def _select_path(accepted: dict) -> str:
    """``(rebind; copy 12.3, bind group 4.5 host)`` or ``(copy)``: the path taken and the other measurements."""
    if accepted["select_path"] == "copy":
        return "(copy)"
    return (f"(rebind; copy {_us(accepted['copy_us'])}, "
            f"bind group {_us(accepted['rebind_bind_group_host_us'])} host)")


def rollback_table(results: dict) -> str:
    rows = []
    for r in results["rollback"]:
        detail = ", ".join(f"a={p['a']}: {_us(p['prefix_rerun_us'])}/{_us(p['checkpoint_select_us'])}"
                           f" {_select_path(p)}" for p in r["per_accepted"])
        rows.append([r["dtype"], r["shape"], r["path"], str(r["T"]), str(r["W"]),
                     _us(r["verify_W_us"] - r["verify_0_us"]),
                     _us(r["expected_saving_us"]), _p_star(r["p_star"]), _p_star(r.get("floor_p_star")), detail])
    return _table(["dtype", "shape", "kernel path", "T", "W", "verify_W - verify_0 us", "E[rerun - select] us",
                   "in-kernel p*", "memory floor p*", "rerun/select us per accepted a (select path)"], rows)


def store_floor_table(results: dict) -> str:
    """The window's extra bytes against the serial floor and the memory floor, per windowed configuration that stores
    extra slots: the plain ratio is the distance to the memory limit, a figure to watch, not a gate."""
    rows = []
    for r in results["rollback"]:
        if not r.get("extra_bytes"):
            continue
        bandwidth = r["write_bandwidth_gb_s"]
        serial = r.get("serial_floor_us")
        rows.append([r["dtype"], r["shape"], r["path"], str(r["T"]), str(r["W"]), f"{r['extra_bytes']:,}",
                     f"{r['floor_us']:.2f}", "n/a" if bandwidth is None else f"{bandwidth:,.0f}",
                     f"{r['verify_W_us'] - r['verify_0_us']:.2f}", _ratio(r["store_ratio"]),
                     _p_star(r["floor_p_star"]), "n/a" if serial is None else f"{serial:.2f}",
                     _ratio(r.get("serial_store_ratio")), _p_star(r.get("serial_floor_p_star")), _p_star(r["p_star"])])
    return _table(["dtype", "shape", "kernel path", "T", "W", "extra bytes", "memory floor us", "bytes / floor GB/s",
                   "verify_W - verify_0 us", "distance to the memory limit (stores / memory floor)",
                   "memory floor p*", "serial floor us", "stores / serial floor", "serial floor p*", "in-kernel p*"],
                  rows)


def _ratio(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.2f}x"


def decoder_view_table(results: dict) -> str:
    """p* on the pipelined wall clock, per configuration with a p* gate."""
    rows = [[r["dtype"], r["shape"], r["path"], str(r["T"]), str(r["W"]), _us(r["wall_0_us"]),
             f"{r['window_us']:+.2f}", _us(r["expected_saving_us"]), _p_star(r["p_star"])]
            for r in results.get("decoder_view", [])]
    return _table(["dtype", "shape", "kernel path", "T", "W", "wall_0 us", "wall_W - wall_0 us",
                   "E[rerun - select] us", "p* (decoder)"], rows)


def memory_table(results: dict) -> str:
    rows = []
    for row in results["configurations"]:
        m = row["memory"]
        growth = "/".join(str(m["growth"][k]) for k in ("live_bytes", "live_buffers", "allocations"))
        rows.append([row["dtype"], row["shape"], row["path"], str(row["T"]), str(row["W"]),
                     f"{m['expected_total']:,}",
                     f"{m['bound']['live_bytes']:,}", f"{m['expected']['window']:,}", str(m["bound"]["live_buffers"]),
                     f"{growth} over {m['growth_calls']} calls"])
    return _table(["dtype", "shape", "kernel path", "T", "W", "expected bytes", "live bytes",
                   "present state (window) bytes", "buffers", "growth bytes/buffers/allocs"], rows)


def ort_table(results: dict) -> str:
    rows = []
    for r in results["ort_comparison"]:
        if "error" in r:
            rows.append([r["dtype"], r["shape"], r["path"], str(r["T"]), r["error"], "", "", "", "", ""])
            continue
        cells = []
        for clock in ("wall-fenced", "wall-pipelined"):
            ratio = r["ratio_kernel_to_ort"][clock]
            cells += [_us(r["ort"][clock]["p50_us"]), _us(r["kernel"][clock]["p50_us"]),
                      f"{ratio:.2f}x ({'slower' if ratio > 1 else 'faster'})"]
        rows.append([r["dtype"], r["shape"], r["path"], str(r["T"]), *cells])
    return _table(["dtype", "shape", "kernel path", "T", "ORT fenced p50 us", "kernel fenced p50 us",
                   "kernel/ORT fenced", "ORT pipelined p50 us", "kernel pipelined p50 us", "kernel/ORT pipelined"],
                  rows)


def gates_table(results: dict) -> str:
    rows = [[g["name"], g["config"], g["measured_text"], g["interval_text"], f"{g['comparison']} {g['threshold_text']}",
             " ".join(part for part in (g["verdict"], g["margin"], g.get("floor_text", ""), g["reason"]) if part)]
            for g in results["gates"]]
    return _table(["gate", "configuration", "measured", "95% interval", "threshold", "verdict"], rows)


def _path(row: dict) -> str:
    """A configuration's kernel path as run: the path asked for, the reduction, columns per invocation and whether
    its pipeline was specialised on the call's shape (results from before that choice existed say nothing)."""
    return f"{row['path']} ({row['reduction']}, x{row['lanes']}{', specialised' if row.get('specialised') else ''})"


def verdict_counts(results: dict) -> dict[str, int]:
    """How many gates got each verdict."""
    counts = {"PASS": 0, "FLOOR-BOUND": 0, "FAIL": 0, "INCONCLUSIVE": 0}
    for g in results["gates"]:
        counts[g["verdict"]] += 1
    return counts


def markdown(results: dict) -> str:
    """The whole report as Markdown."""
    meta = results["meta"]
    counts = verdict_counts(results)
    protocol, schedule = meta["protocol"], meta["schedule"]
    warm = "; ".join(f"{w['dtype']} {w['shape']}{' ' + w['clock'] if 'clock' in w else ''}: {w['passes']} passes "
                     f"over {w['series']} series, "
                     + ("settled" if w["settled"] else "NOT settled (cap reached)") for w in meta["warm_up"])
    lines = [
        "# LinearAttention state_window benchmark",
        "",
        f"- device: {meta['device']} ({meta['implementation']} {meta['implementation_version']})",
        f"- kernel paths: {', '.join(meta['paths'])}; subgroup size {meta['subgroup_size'] or 'n/a'}",
        f"- kernel clock: {meta['kernel_clock']}; ORT comparison clocks: wall-fenced and wall-pipelined "
        "(ORT's EP runs on its own device, out of reach of our timestamp queries)"
        + (f". {meta['clock_note']}" if meta["clock_note"] else ""),
        f"- kernel clock schedule: warm-up in passes of {schedule['settle_batch']} calls per series until the "
        f"median of the last {schedule['settle_window']} batch medians moves < {100 * schedule['settle_tolerance']:g}%"
        f" (at most {schedule['settle_max_passes']} passes); then {schedule['rounds']} rounds of "
        f"{schedule['per_round']} samples per series (after {schedule['round_warmups']} discarded calls)",
        f"- warm-up: {warm}",
        f"- wall clocks (ORT comparison): {protocol['warmups']} warm-ups, {protocol['iterations']} measured "
        f"iterations, {protocol['repetitions']} repetitions (pipelined wall samples: {protocol['batch']} calls each)",
        f"- rule {meta['update_rule']}, {meta['state_binding']}; acceptance distribution: {meta['acceptance']}",
        f"- the rollback gates judge the window's stores against the {meta.get('floor', 'plain')} floor; the "
        "distance to the memory limit (the plain floor) is reported beside them, not gated",
        f"- checkpoint select: {meta['checkpoint_select']}",
        f"- ORT WebGPU EP: {meta['ort_webgpu']}",
        f"- run time {meta['seconds']:.0f} s",
        "",
        "## Definitions",
        "",
        DEFINITIONS,
        "",
        "## Latency by window (kernel clock)",
        "",
        latency_table(results),
        "",
        "## Rollback value",
        "",
        rollback_table(results),
        "",
        "## The window's extra bytes against the serial floor and the memory limit (kernel clock)",
        "",
        store_floor_table(results),
        "",
        "## Decoder view: the headline p* (pipelined wall clock)",
        "",
        decoder_view_table(results) if results.get("decoder_view") else "not run (--no-decoder-view)",
        "",
        "## Memory",
        "",
        memory_table(results),
        "",
        "## Kernel vs ORT WebGPU EP at W = 0 (same wall clocks, device-resident IOBinding)",
        "",
        ort_table(results) if results["ort_comparison"] else f"not run: {meta['ort_webgpu']}",
        "",
        "## Gates",
        "",
        gates_table(results),
        "",
        f"**{counts['PASS']} of {len(results['gates'])} gates PASS, {counts['FLOOR-BOUND']} FLOOR-BOUND, "
        f"{counts['FAIL']} FAIL, {counts['INCONCLUSIVE']} INCONCLUSIVE**",
    ]
    if results["skipped"]:
        lines += ["", "Skipped: " + "; ".join(f"{s['dtype']} {s['shape']}: {s['reason']}" for s in results["skipped"])]
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> str | None:
    """Latency (p50, with a bar up to p95) against W, one panel per dtype; returns why not, if matplotlib is missing."""
    try:
        import matplotlib
    except ImportError as err:
        return f"no plot: {err}"
    matplotlib.use("Agg")
    from matplotlib import pyplot

    dtypes = sorted({row["dtype"] for row in results["configurations"]})
    figure, axes = pyplot.subplots(1, max(1, len(dtypes)), figsize=(6 * max(1, len(dtypes)), 4.5), squeeze=False)
    for axis, dtype in zip(axes[0], dtypes, strict=False):
        series: dict[tuple[str, str, int], list[dict]] = {}
        for row in results["configurations"]:
            if row["dtype"] == dtype:
                series.setdefault((row["shape"], _path(row), row["T"]), []).append(row)
        for (shape, kernel_path, seq_len), rows in series.items():
            rows.sort(key=lambda r: r["W"])
            p50 = [r["timing"]["p50_us"] for r in rows]
            p95 = [r["timing"]["p95_us"] for r in rows]
            axis.errorbar([r["W"] for r in rows], p50, yerr=[[0] * len(p50), [b - a for a, b in zip(p50, p95,
                          strict=True)]], marker="o", capsize=3,
                          label=f"{shape} {kernel_path} T={seq_len}")
        axis.set_title(f"{dtype} ({results['meta']['kernel_clock']})")
        axis.set_xlabel("state_window W")
        axis.set_xticks(sorted({row["W"] for row in results["configurations"]}))
        axis.set_yscale("log")
        axis.set_ylabel("kernel time us (p50, bar to p95)")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=7)
    figure.suptitle(results["meta"]["device"], fontsize=9)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=120)
    pyplot.close(figure)
    atomic.write_bytes(path, buffer.getvalue())
    return None


def json_safe(value: object) -> object:
    """``value`` with every non-finite float as None (JSON has no infinity)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def write_outputs(results: dict, out: Path) -> list[str]:
    """Write ``results.json``, ``report.md`` and the plot into ``out``; return a line per output (or why not)."""
    out.mkdir(parents=True, exist_ok=True)
    atomic.write_text(out / "results.json", json.dumps(json_safe(results), indent=2) + "\n")
    atomic.write_text(out / "report.md", markdown(results))
    png = out / "latency_vs_window.png"
    lines = [f"written: {out / 'results.json'}", f"written: {out / 'report.md'}"]
    missing = plot(results, png)
    lines.append(missing if missing else f"written: {png}")
    return lines

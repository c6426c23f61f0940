"""What a campaign did, as one typed object: written as ``summary.json``, read back, merged across shards.

The report (``fuzz.campaign.report``) and ``lafuzz merge`` depend on ``Summary``, not on the
engine. Findings are listed as ``Finding.to_json()`` plus where the campaign wrote the entry
(``corpus_path``, ``reproduce``), the unit that first found it and how often it recurred.

Exit status (``exit_status``): 1 when a new finding was made, or a unit ended in an error before its first case
(``unit_errors``); 5 when the output disk filled up (the campaign stopped early and kept what it had written); 3
when no case was checked at all (nothing was tested, so nothing can be claimed); 4 when units went unchecked, lost
with a worker process that died or abandoned with one that hung past the budget; 130 after Ctrl-C or SIGTERM
otherwise; 0 when cases were checked and only known issues (or nothing) turned up.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from fuzz import atomic
from fuzz.campaign.coverage import op_axes
from fuzz.campaign.database import LOCAL

FORMAT = "lafuzz-campaign/2"
SUMMARY, REPORT = "summary.json", "report.html"
"""The summary's and the report's file names in a campaign's output directory."""
NATIVE_LOG = "native.log"
"""Under a campaign's ``--out``: what native libraries print in its processes (Dawn's limit warnings)."""
EXIT_CLEAN, EXIT_NEW_FINDINGS, EXIT_NOTHING_CHECKED, EXIT_WORKER_DIED, EXIT_INTERRUPTED = 0, 1, 3, 4, 130
EXIT_OUT_OF_SPACE = 5


def exit_status(findings: list[dict[str, Any]], checked: int, interrupted: bool, lost: int = 0,
                out_of_space: bool = False, errors: int = 0) -> int:
    """1 for any new (unmarked) finding or unit error; else 5 if the output disk filled up; else 3 if no case was
    checked; else 4 if units went unchecked (``lost``: with a worker process that died, or abandoned with one that
    hung); else 130 after Ctrl-C or SIGTERM; else 0."""
    if errors or any(not f.get("known_failure") for f in findings):
        return EXIT_NEW_FINDINGS
    if out_of_space:
        return EXIT_OUT_OF_SPACE
    if checked == 0:
        return EXIT_NOTHING_CHECKED
    if lost:
        return EXIT_WORKER_DIED
    return EXIT_INTERRUPTED if interrupted else EXIT_CLEAN


def _sum_nested(target: dict[str, Any], source: dict[str, Any]) -> None:
    for key, value in source.items():
        if isinstance(value, dict):
            _sum_nested(target.setdefault(key, {}), value)
        else:
            target[key] = target.get(key, 0) + value


@dataclass
class Summary:
    """One campaign (or the merge of several shards).

    A field added after the first summaries of this format has a default, so ``from_json`` reads those
    older summaries too (the field then holds its default: nothing recorded). So do the bulky per-unit
    records (memory samples, ratio lists, database keys), which a summary kept in ``docs/results`` may
    leave out to stay small.
    """

    started: str
    finished: str
    elapsed_s: float
    interrupted: bool
    config: dict[str, Any]
    host: dict[str, Any]
    backends: dict[str, Any]
    """Backend name -> ``Capabilities.to_json()``."""
    unavailable: dict[str, str]
    units: int
    units_stopped_early: int
    units_abandoned: int
    """Units still running when the budget's grace ran out (a call hung in native code, a stopped process): their
    workers were killed, their cases are unchecked (exit 4, as for ``units_lost``)."""
    examples: int
    """Examples started (the progress counter)."""
    checked_examples: int
    """Examples whose unit reported back."""
    cases_per_second: float
    backend_calls: dict[str, int]
    peak_rss_mib: float
    checked_cases: int = field(default=0, kw_only=True)
    """The cases those examples checked (a packed example checks several: ``fuzz.model.pack``); 0 in summaries
    written before packing."""
    rss_samples: list[list[float]] = field(default_factory=list, kw_only=True)
    """``[seconds, MiB]`` of the campaign's memory over time (empty where a kept summary left them out)."""
    coverage: dict[str, dict[str, int]]
    """Axis -> bucket -> cases, every bucket of ``fuzz.campaign.coverage.universe()`` (zeros included)."""
    ratio_histogram: dict[str, dict[str, int]]
    """Property -> decade of the worst error/tolerance ratio -> cases."""
    error_ratios: dict[str, list[float]] = field(default_factory=dict, kw_only=True)
    """``"backends|part"`` -> the worst passing ratio of each unit (empty where a kept summary left them out)."""
    known_cases: dict[str, int]
    per_property: dict[str, dict[str, int]]
    per_tier: dict[str, dict[str, int]] = field(default_factory=dict, kw_only=True)
    """Swarm size tier (or fixed ``--limits``) -> units, examples and worker milliseconds spent there (empty in
    summaries written before it existed)."""
    findings: list[dict[str, Any]]
    database_keys: list[str] = field(default_factory=list, kw_only=True)
    """The example database keys the campaign's units used, hex (``lafuzz merge`` copies their values; empty
    where a kept summary left them out)."""
    merged_from: int = 1
    window_calls: dict[str, int] = field(default_factory=dict)
    """Backend name -> its calls with ``W > 0`` (natively or in prefix mode: ``backends[name]["window"]``)."""
    backend_seconds: dict[str, float] = field(default_factory=dict)
    """Backend name -> worker seconds spent in its calls (where the time goes)."""
    backend_compiles: dict[str, int] = field(default_factory=dict)
    """Backend name -> shader pipelines its workers compiled (backends that compile their own and say so; a
    pipeline compiled again from the shader cache counts again, cheaply)."""
    compile_seconds: dict[str, float] = field(default_factory=dict)
    """Backend name -> worker seconds of the calls that compiled those pipelines (part of ``backend_seconds``)."""
    database_values_copied: dict[str, int] = field(default_factory=dict)
    error_cases: dict[str, list[str]] = field(default_factory=dict)
    """``"backends|part"`` -> the unit and one-line case of each ratio in ``error_ratios``, in the same order
    (empty in summaries written before it existed)."""
    first_seen: dict[str, dict[str, float]] = field(default_factory=dict)
    """``{"findings": {id: seconds}, "buckets": {"axis: bucket": seconds}}``: when each finding and each
    coverage bucket was first reached, in seconds from the start (for the discovery chart)."""
    near_misses: list[dict[str, Any]] = field(default_factory=list)
    """The passing cases closest to their tolerance, highest ratio first, with where their candidate entry
    was written and the commands that re-check and promote it (``fuzz.corpus.candidates``)."""
    units_lost: int = 0
    """Units lost with a worker process that died (killed, or crashed in native code it ran itself): their
    cases went unchecked (0 in summaries written before it existed)."""
    out_of_space: dict[str, str] | None = None
    """The first write a full disk refused (``path``, ``what``, ``reason``): the campaign stopped there."""
    not_saved: list[str] = field(default_factory=list)
    """What a full disk kept from being saved before this summary was written, one line each."""
    database_outages: list[list[float]] = field(default_factory=list)
    """``[lost, back]`` in seconds from the start: when the shared example database could not be reached
    (a local one stood in), from the first call that failed to the first retry that succeeded."""
    database_unreachable_s: float = 0.0
    """How long, in all, the shared example database was gone."""
    unit_errors: list[dict[str, str]] = field(default_factory=list)
    """Units that ended in an error before their first case, so with no case to make a finding of: ``unit``,
    ``error`` (its type and first line) and ``traceback``. Each counts as a new finding in the exit status."""
    tier_backend_ms: dict[str, dict[str, int]] = field(default_factory=dict)
    """Size tier -> backend -> worker milliseconds in its calls there (with ``per_tier``'s examples: the cost of a
    case by tier and backend; empty in summaries written before it existed)."""
    per_arm: dict[str, dict[str, float]] = field(default_factory=dict)
    """Arm (``fuzz.campaign.arms``; an unsteered unit's tier) -> units, focused units, examples, worker
    milliseconds, coverage buckets it reached first, new findings and its yield (``fuzz.campaign.schedule``)."""
    matrix: dict[str, Any] = field(default_factory=dict)
    """The documented findings of the corpus judged on each build of the campaign after it ended
    (``fuzz.export.matrix.Matrix.to_json``; empty when not made)."""

    @property
    def exit_status(self) -> int:
        return exit_status(self.findings, self.checked_examples, self.interrupted,
                           self.units_lost + self.units_abandoned, self.out_of_space is not None, len(self.unit_errors))

    @property
    def never_reached(self) -> list[str]:
        """The ``"axis: bucket"`` coverage buckets no case fell in."""
        return [f"{axis}: {bucket}" for axis, row in self.coverage.items() for bucket, n in row.items() if not n]

    @property
    def coverage_by_op(self) -> dict[str, list[int]]:
        """Op -> ``[buckets reached, buckets]`` of its own axes (``fuzz.campaign.coverage.op_axes``)."""
        return {op: [sum(1 for axis in axes for n in self.coverage.get(axis, {}).values() if n),
                     sum(len(self.coverage.get(axis, {})) for axis in axes)] for op, axes in op_axes().items()}

    @property
    def tier_rates(self) -> dict[str, float]:
        """Examples per second of worker time in each size tier (a worker runs one unit at a time)."""
        return {tier: round(row["examples"] * 1000 / row["milliseconds"], 1) if row.get("milliseconds") else 0.0
                for tier, row in self.per_tier.items()}

    @property
    def new_findings(self) -> list[dict[str, Any]]:
        return [f for f in self.findings if not f.get("known_failure")]

    def console_lines(self, ops: Collection[str], out: Path, not_saved: Collection[Path]) -> list[str]:
        """What ``lafuzz campaign`` prints at its end: the calls and time of each backend, the coverage of each op
        of ``ops``, units lost and database outages where there were any, and the last line (findings, examples,
        exit status, where the outputs are; ``not_saved``: the files a full disk refused)."""
        lines = [
            "calls per backend: " + ", ".join(
                f"{name} {calls} ({self.window_calls.get(name, 0)} with W > 0, "
                f"{self.backends.get(name, {}).get('window', '?')}; {self.backend_seconds.get(name, 0):g} s"
                + self._compiled(name) + ")" for name, calls in self.backend_calls.items()),
            "coverage by op: " + ", ".join(f"{op} {hit} of {total} buckets" for op, (hit, total)
                                           in self.coverage_by_op.items() if op in ops),
        ]
        if self.units_lost:
            lines.append(f"{self.units_lost} unit(s) lost with a worker process that died: their cases went "
                         f"unchecked (see {out / NATIVE_LOG} for what native code printed)")
        if self.database_outages:
            spans = ", ".join(f"{start:g}-{end:g} s" for start, end in self.database_outages)
            lines.append(f"the shared example database was unreachable for {self.database_unreachable_s:g} s "
                         f"({spans} from the start); {out / LOCAL} stood in")
        refused = set(not_saved)
        where = ", ".join(f"{name}: {'NOT written (disk full)' if path in refused else path}"
                          for name, path in (("report", out / REPORT), ("summary", out / SUMMARY)))
        disk = f"; the disk filled up: {len(not_saved)} thing(s) not saved" if not_saved else ""
        new = len(self.new_findings)
        lines.append(f"{new} new and {len(self.findings) - new} known finding(s) in {self.checked_examples} "
                     f"checked examples, {self.checked_cases} cases ({self.cases_per_second} examples/s, "
                     f"peak {self.peak_rss_mib} MiB, "
                     f"exit {self.exit_status}{disk}{self._unchecked()}); {where}, corpus: {out / 'corpus'}")
        return lines

    def _unchecked(self) -> str:
        """For the last line: the units whose cases went unchecked, and the errors no case could report."""
        said = [f"{count} {what}" for count, what in (
            (self.units_lost, "unit(s) lost with a worker process that died"),
            (self.units_abandoned, "unit(s) abandoned with a worker that hung past the budget"),
            (len(self.unit_errors), "error(s) with no case to report them by (summary.json: unit_errors)"),
        ) if count]
        return "".join(f"; {line}" for line in said)

    def _compiled(self, name: str) -> str:
        """``", N pipelines compiled in S s"`` for a backend that says what it compiled, else nothing."""
        if name not in self.backend_compiles:
            return ""
        return f", {self.backend_compiles[name]} pipelines compiled in {self.compile_seconds.get(name, 0):g} s"

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, **asdict(self), "exit_status": self.exit_status,
                "never_reached": self.never_reached, "tier_rates": self.tier_rates,
                "coverage_by_op": self.coverage_by_op}

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> Summary:
        """Read a ``summary.json`` document; ``ValueError`` for another format."""
        if document.get("format") != FORMAT:
            raise ValueError(f"summary format {document.get('format')!r}, expected {FORMAT!r}")
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in document.items() if k in names})

    @classmethod
    def read(cls, path: Path) -> Summary:
        """``path`` read back; ``ValueError`` naming it for anything that is not a summary (truncated, another
        format, missing fields)."""
        try:
            return cls.from_json(json.loads(Path(path).read_text()))
        except (OSError, ValueError, TypeError, AttributeError) as err:
            raise ValueError(f"{path}: not a readable campaign summary ({err})") from None

    def write(self, path: Path) -> None:
        """Write ``summary.json`` atomically (``fuzz.atomic``): the whole summary or, on a full disk, none."""
        atomic.write_text(path, json.dumps(self.to_json(), indent=2) + "\n")

    @classmethod
    def merge(cls, summaries: list[Summary]) -> Summary:
        """One summary for all shards: sums, unions, and the slowest shard's elapsed time."""
        if not summaries:
            raise ValueError("nothing to merge")
        first = summaries[0]
        merged = cls.from_json(json.loads(json.dumps(first.to_json())))
        merged.config["shard"] = ", ".join(s.config["shard"] for s in summaries)
        merged.elapsed_s = max(s.elapsed_s for s in summaries)
        merged.interrupted = any(s.interrupted for s in summaries)
        merged.started = min(s.started for s in summaries)
        merged.finished = max(s.finished for s in summaries)
        merged.peak_rss_mib = max(s.peak_rss_mib for s in summaries)
        merged.rss_samples = max((s.rss_samples for s in summaries), key=len)
        merged.cases_per_second = round(sum(s.cases_per_second for s in summaries), 1)
        for name in ("units", "examples", "units_stopped_early", "units_abandoned", "units_lost", "checked_examples",
                     "checked_cases"):
            setattr(merged, name, sum(getattr(s, name) for s in summaries))
        merged.error_ratios, merged.error_cases, merged.first_seen = {}, {}, {}
        for s in summaries:
            for part, ratios in s.error_ratios.items():
                merged.error_ratios.setdefault(part, []).extend(ratios)
                merged.error_cases.setdefault(part, []).extend(s.error_cases.get(part, ["?"] * len(ratios)))
            for kind, times in s.first_seen.items():
                earliest = merged.first_seen.setdefault(kind, {})
                for name, seconds in times.items():
                    earliest[name] = min(seconds, earliest.get(name, seconds))
        merged.out_of_space = next((s.out_of_space for s in summaries if s.out_of_space), None)
        merged.not_saved = [line for s in summaries for line in s.not_saved]
        merged.unit_errors = [error for s in summaries for error in s.unit_errors]
        # shards run side by side and share one database: its longest absence in any shard is the estimate
        longest = max(summaries, key=lambda s: s.database_unreachable_s)
        merged.database_outages = longest.database_outages
        merged.database_unreachable_s = longest.database_unreachable_s
        merged.near_misses = sorted((m for s in summaries for m in s.near_misses), key=lambda m: -m["ratio"])
        for name in ("backend_calls", "window_calls", "backend_seconds", "backend_compiles", "compile_seconds",
                     "coverage", "per_property", "per_tier", "tier_backend_ms", "per_arm",
                     "ratio_histogram", "known_cases"):
            total: dict[str, Any] = {}
            for s in summaries:
                _sum_nested(total, getattr(s, name))
            setattr(merged, name, total)
        for s in summaries[1:]:
            merged.backends.update(s.backends)
        findings: dict[str, dict[str, Any]] = {}
        for s in summaries:
            for f in s.findings:
                if f["id"] in findings:
                    findings[f["id"]]["count"] += f["count"]
                else:
                    findings[f["id"]] = dict(f)
        merged.findings = list(findings.values())
        merged.database_keys = sorted({k for s in summaries for k in s.database_keys})
        merged.merged_from = len(summaries)
        return merged

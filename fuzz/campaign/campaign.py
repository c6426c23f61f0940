"""The campaign: properties run for a time or example budget, sharded, in worker processes.

The main process hands this shard's work units (``fuzz.campaign.shard``) to ``jobs`` spawned workers
(``fuzz.campaign.worker``), each holding its own backends for the whole campaign; it writes every finding
to ``<out>/corpus`` the moment it arrives and draws the progress line. At the end of the time
budget, or on the first Ctrl-C, it sets the shared stop time: every running unit ends at its next
example and hands back what it checked and found (a second Ctrl-C aborts at once). Then it writes
``summary.json`` and ``report.html``. Findings are shared between shards through the example
database (``fuzz.database.shared_key``): each worker re-checks, before every unit, the cases other
shards published there.

A failure covered by ``fuzz.corpus.known_issues`` is a *known* finding: saved once per issue as a corpus
entry whose ``known_failure`` mark names the issue, listed in the report, counted, but not new.

Exit status (``exit_status``): 1 when a new finding was made; 3 when no case was checked at all
(nothing was tested, so nothing can be claimed); 130 after Ctrl-C otherwise; 0 when cases were
checked and only known issues (or nothing) turned up.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import platform
import re
import signal
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import hypothesis
import psutil

from fuzz.campaign.progress import Progress
from fuzz.campaign.shard import Shard, WorkUnit, work_units
from fuzz.campaign.unit import Finding, UnitResult
from fuzz.campaign.worker import Worker, init_worker, run_in_worker
from fuzz.corpus import entry as corpus
from fuzz.corpus.known_issues import KNOWN_ISSUES

SUMMARY_FORMAT = "lafuzz-campaign/2"
EXIT_CLEAN, EXIT_NEW_FINDINGS, EXIT_NOTHING_CHECKED, EXIT_INTERRUPTED = 0, 1, 3, 130


@dataclass
class CampaignConfig:
    """Everything that decides what a campaign runs; recorded in its summary."""

    properties: list[str]
    backends: list[str]
    seed: int = 0
    shard: Shard = field(default_factory=Shard)
    jobs: int = 1
    time_budget: float | None = 180.0
    example_budget: int | None = None
    examples_per_unit: int = 50
    limits: str = "campaign"
    out: Path = Path("lafuzz-out")
    database: str | None = None
    """Directory or ``redis://HOST:PORT``; default ``<out>/hypothesis-db``."""
    known_corpus: Path | None = Path("corpus")
    """Where findings already marked as known failures are looked up."""
    isolate: bool = True
    """Run the ORT backends in crash-isolated worker processes for invalid input
    (``fuzz.explore.ISOLATED_PROPERTIES``)."""
    unavailable: dict[str, str] = field(default_factory=dict)
    """Requested backends this machine lacks, with the reason (reported, not run)."""

    def database_spec(self) -> str:
        return self.database or str(self.out / "hypothesis-db")

    def planned_units(self) -> int | None:
        """With an example budget the unit list is fixed in advance (so reruns repeat it exactly)."""
        if self.example_budget is None:
            return None
        return -(-self.example_budget // self.examples_per_unit)


@dataclass
class FindingRecord:
    """A de-duplicated finding as the summary lists it."""

    id: str
    property: str
    backends: list[str]
    kind: str
    signature: str
    report: str
    summary: str
    mismatch: dict[str, Any] | None
    corpus_path: str
    reproduce: str
    first_unit: str
    known_failure: dict[str, str] | None
    count: int = 1


def known_mark(finding: Finding) -> dict[str, str] | None:
    """The ``known_failure`` mark of a finding covered by a documented known issue."""
    if finding.known_issue is None:
        return None
    issue = next(i for i in KNOWN_ISSUES if i.id == finding.known_issue)
    return {"backend": issue.backend, "issue": issue.id, "implementation": issue.versions,
            "explanation": issue.summary}


class Campaign:
    """One run of ``CampaignConfig``: collects results, writes findings and the summary."""

    def __init__(self, config: CampaignConfig, progress: Progress | None = None) -> None:
        self.config = config
        self.progress = progress or Progress()
        self.corpus_dir = config.out / "corpus"
        self.results_examples = 0
        self.units = 0
        self.stopped_units = 0
        self.abandoned_units = 0
        self.backend_calls: Counter = Counter()
        self.coverage: Counter = Counter()
        self.ratios: dict[str, Counter] = {}
        self.parts: dict[str, list[float]] = {}
        self.known_cases: Counter = Counter()
        self.per_property: dict[str, Counter] = {p: Counter() for p in config.properties}
        self.findings: dict[str, FindingRecord] = {}
        self.database_keys: set[bytes] = set()
        self.marked = {e.id: e.known_failure for e in corpus.load(config.known_corpus or Path("/nonexistent"))
                       if e.known_failure}
        self.interrupted = False
        self.started = datetime.now(UTC)
        self.backend_info: dict[str, Any] = {}
        self.stop_time = math.inf if config.time_budget is None else time.time() + config.time_budget

    # ---- results ------------------------------------------------------------------------------
    def _entry(self, unit: WorkUnit, finding: Finding) -> corpus.Entry:
        return corpus.Entry(
            property=finding.property,
            backends=finding.backends,
            kind=finding.kind,
            signature=finding.signature,
            case=finding.case,
            expected={"contract": f"property {finding.property!r} holds for these backends"},
            seen={"report": finding.report, "mismatch": finding.mismatch},
            provenance={
                "found": datetime.now(UTC).isoformat(timespec="seconds"),
                "campaign_seed": self.config.seed,
                "shard": str(self.config.shard),
                "unit": unit.key,
                "unit_seed": unit.seed,
                "hypothesis": hypothesis.__version__,
                "host": platform.node(),
                "backends": {n: self.backend_info.get(n, {}) for n in finding.backends},
            },
            id=finding.known_issue or "",
        )

    def _record(self, unit: WorkUnit, finding: Finding) -> None:
        entry = self._entry(unit, finding)
        if entry.id in self.findings:
            self.findings[entry.id].count += 1
            return
        entry.known_failure = known_mark(finding) or self.marked.get(entry.id)
        path = corpus.write_entry(self.corpus_dir, entry)
        self.findings[entry.id] = FindingRecord(
            id=entry.id,
            property=entry.property,
            backends=list(entry.backends),
            kind=entry.kind,
            signature=entry.signature,
            report=finding.report,
            summary=finding.case.summary(),
            mismatch=finding.mismatch,
            corpus_path=str(path),
            reproduce=f"lafuzz repro {path}",
            first_unit=unit.key,
            known_failure=entry.known_failure,
        )
        label = "known" if entry.known_failure else "new"
        self.progress.findings[f"{label} {entry.kind}"] += 1
        self.progress.note(f"[lafuzz] {label} finding: {entry.property} {'/'.join(entry.backends)} {entry.kind}: "
                           f"{entry.signature[:100]} -> {path}")

    def absorb(self, result: UnitResult, shared: list[Finding]) -> None:
        """Fold one unit's result into the totals and write its findings."""
        self.units += 1
        self.stopped_units += result.stopped
        self.results_examples += result.examples
        self.backend_calls.update(result.backend_calls)
        self.coverage.update(result.coverage)
        self.known_cases.update(result.known)
        self.ratios.setdefault(result.unit.property, Counter()).update(result.ratios)
        for part, ratio in result.parts.items():
            self.parts.setdefault(part, []).append(ratio)
        stats = self.per_property[result.unit.property]
        stats.update(units=1, examples=result.examples, known=sum(result.known.values()))
        self.database_keys |= result.database_keys
        for finding in [*shared, *([result.finding] if result.finding else [])]:
            stats.update(findings=1)
            self._record(result.unit, finding)
        self.progress.units = self.units

    # ---- the run loop -------------------------------------------------------------------------
    def _out_of_budget(self) -> bool:
        return time.time() >= self.stop_time

    def _units(self) -> Iterator[WorkUnit]:
        units = work_units(self.config.properties, self.config.seed, self.config.shard)
        planned = self.config.planned_units()
        for count, unit in enumerate(units):
            if (planned is not None and count >= planned) or self._out_of_budget():
                return
            yield unit

    def _on_interrupt(self, signum: int, frame: Any) -> None:
        """First Ctrl-C: stop at the next example of every unit; a second one aborts."""
        self.interrupted = True
        self.stop_time = min(self.stop_time, time.time())
        self.progress.note("[lafuzz] interrupted: finishing the running units (Ctrl-C again to abort)")
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def _count_inline(self) -> None:
        self.progress.examples += 1
        self.progress.tick()

    def _run_inline(self) -> None:
        worker = Worker(self.config, self._count_inline, lambda: self.stop_time)
        self.backend_info = worker.describe()
        try:
            for unit in self._units():
                self.absorb(*worker.run(unit))
        finally:
            worker.close()

    def _hard_stop(self) -> float:
        """When units still running are abandoned (a call hung in native code): the stop time plus a
        grace of a quarter of the budget, at least 60 s."""
        return self.stop_time + max(60.0, 0.25 * (self.config.time_budget or 0.0))

    @staticmethod
    def _end_workers(pool: ProcessPoolExecutor) -> None:
        """End this campaign's own worker processes (by pid), then the pool."""
        workers = psutil.Process().children()
        pool.shutdown(wait=False, cancel_futures=True)
        for process in workers:
            with contextlib.suppress(psutil.Error):
                process.terminate()
        psutil.wait_procs(workers, timeout=5)

    def _run_pool(self) -> None:
        context = multiprocessing.get_context("spawn")
        counter = context.Value("q", 0)
        stop = context.Value("d", self.stop_time)
        describer = Worker(self.config)
        self.backend_info = describer.describe()
        describer.close()
        pool = ProcessPoolExecutor(self.config.jobs, mp_context=context, initializer=init_worker,
                                   initargs=(self.config, counter, stop))
        pending: set[Future] = set()
        units = self._units()
        try:
            while True:
                while len(pending) < 2 * self.config.jobs and (unit := next(units, None)) is not None:
                    pending.add(pool.submit(run_in_worker, unit))
                if not pending:
                    break
                stop.value = self.stop_time
                if self._out_of_budget():  # stop handing out work: drop what has not started yet
                    pending = {f for f in pending if not f.cancel()}
                    if time.time() > self._hard_stop():
                        self.abandoned_units = len(pending)
                        self.progress.note(f"[lafuzz] abandoning {len(pending)} unit(s) hung past the budget")
                        self._end_workers(pool)
                        pending = set()
                        break
                done, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
                for future in done:
                    self.absorb(*future.result())
                self.progress.examples = counter.value
                self.progress.tick()
        finally:
            for future in pending:
                future.cancel()
            pool.shutdown(wait=False, cancel_futures=True)
            self.progress.examples = max(counter.value, self.results_examples)

    def run(self) -> dict[str, Any]:
        """Run to the budget or Ctrl-C; always writes ``summary.json`` and ``report.html``."""
        from fuzz.campaign.report import write_report

        self.corpus_dir.mkdir(parents=True, exist_ok=True)
        previous = signal.signal(signal.SIGINT, self._on_interrupt)
        try:
            if self.config.jobs == 1:
                self._run_inline()
            else:
                self._run_pool()
        except KeyboardInterrupt:
            self.interrupted = True
            self.progress.note("[lafuzz] aborted: writing what was found so far")
        finally:
            signal.signal(signal.SIGINT, previous)
        self.progress.finish()
        summary = self.summary()
        write_report(summary, self.config.out)
        return summary

    def summary(self) -> dict[str, Any]:
        elapsed = self.progress.elapsed
        config = asdict(self.config)
        config.update(shard=str(self.config.shard), out=str(self.config.out),
                      known_corpus=str(self.config.known_corpus), database=self.config.database_spec())
        findings = [asdict(f) for f in self.findings.values()]
        return {
            "format": SUMMARY_FORMAT,
            "started": self.started.isoformat(timespec="seconds"),
            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "elapsed_s": round(elapsed, 2),
            "interrupted": self.interrupted,
            "config": config,
            "host": {"node": platform.node(), "python": platform.python_version(),
                     "hypothesis": hypothesis.__version__, "cpus": psutil.cpu_count()},
            "backends": self.backend_info,
            "unavailable": self.config.unavailable,
            "units": self.units,
            "units_stopped_early": self.stopped_units,
            "units_abandoned": self.abandoned_units,
            "examples": self.progress.examples,
            "checked_examples": self.results_examples,
            "cases_per_second": round(self.results_examples / elapsed, 1) if elapsed else 0.0,
            "backend_calls": dict(self.backend_calls),
            "peak_rss_mib": round(self.progress.peak_rss_mib, 1),
            "rss_samples": self.progress.rss_samples,
            "coverage": _by_axis(self.coverage),
            "ratio_histogram": {p: dict(c) for p, c in self.ratios.items()},
            "error_ratios": {part: [round(r, 6) for r in ratios] for part, ratios in sorted(self.parts.items())},
            "known_cases": dict(self.known_cases),
            "per_property": {p: dict(c) for p, c in self.per_property.items()},
            "findings": findings,
            "database_keys": sorted(k.hex() for k in self.database_keys),
            "exit_status": exit_status(findings, self.results_examples, self.interrupted),
        }


AXIS = re.compile(r"^([A-Za-z_]+)(?=[=<> ])")


def _by_axis(coverage: Counter) -> dict[str, dict[str, int]]:
    """``{"rule=delta": 3, "T<W": 2, "past": 1}`` -> ``{"rule": {"rule=delta": 3}, "T": {"T<W": 2}, "other": ...}``."""
    axes: dict[str, dict[str, int]] = {}
    for label, count in sorted(coverage.items()):
        match = AXIS.match(label)
        axes.setdefault(match.group(1) if match else "other", {})[label] = count
    return axes


def exit_status(findings: list[dict[str, Any]], checked: int, interrupted: bool) -> int:
    """1 for any new (unmarked) finding; else 3 if no case was checked; else 130 after Ctrl-C; else 0."""
    if any(not f.get("known_failure") for f in findings):
        return EXIT_NEW_FINDINGS
    if checked == 0:
        return EXIT_NOTHING_CHECKED
    return EXIT_INTERRUPTED if interrupted else EXIT_CLEAN


def run_campaign(config: CampaignConfig, progress: Progress | None = None) -> dict[str, Any]:
    """Run a campaign and return its summary (also written to ``<out>/summary.json``)."""
    return Campaign(config, progress).run()

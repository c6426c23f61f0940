"""The campaign: properties run for a time or example budget, sharded, in worker processes.

The main process hands this shard's work units (``fuzz.shard``) to ``jobs`` spawned workers, each
holding its own backends; it writes every new finding to ``<out>/corpus`` the moment it arrives,
draws the progress line, and on its budget or Ctrl-C stops handing out work and writes
``summary.json`` and ``report.html`` with everything found so far. Findings are shared between
shards through the example database (``fuzz.database.shared_key``): each worker re-checks, before
every unit, the cases other shards published there.
"""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import platform
import re
import signal
from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import hypothesis
import psutil

from fuzz import corpus, profiles
from fuzz.backends import Unavailable
from fuzz.database import UnitDatabase, open_database, pack_case, shared_key, unpack_case
from fuzz.explore import CountingBackend, Finding, UnitResult, finding_from, resolve_backend, resolve_property, run_unit
from fuzz.progress import Progress
from fuzz.properties import PropertyFailure
from fuzz.shard import Shard, WorkUnit, work_units
from fuzz.strategies import Limits

SUMMARY_FORMAT = "lafuzz-campaign/1"
LIMITS = {"ci": Limits.ci, "default": Limits.default, "big": Limits.big}


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
    examples_per_unit: int = 25
    limits: str = "default"
    out: Path = Path("lafuzz-out")
    database: str | None = None
    """Directory or ``redis://HOST:PORT``; default ``<out>/hypothesis-db``."""
    known_corpus: Path | None = Path("corpus")
    """Where findings already marked as known failures are looked up."""
    isolate: bool = True
    """Run the ORT backends in crash-isolated worker processes (``fuzz.isolation``)."""
    unavailable: dict[str, str] = field(default_factory=dict)
    """Requested backends this machine lacks, with the reason (reported, not run)."""

    def database_spec(self) -> str:
        return self.database or str(self.out / "hypothesis-db")

    def planned_units(self) -> int | None:
        """With an example budget the unit list is fixed in advance (so reruns repeat it exactly)."""
        if self.example_budget is None:
            return None
        return -(-self.example_budget // self.examples_per_unit)


# ---- the worker side (one per process; in-process when jobs == 1) -------------------------------
class Worker:
    """A process's backends, settings and view of the shared findings."""

    def __init__(self, config: CampaignConfig, on_example: Callable[[], None] = lambda: None) -> None:
        self.config = config
        self.backends = [CountingBackend(resolve_backend(n, isolate=config.isolate)) for n in config.backends]
        self.names = tuple(b.name for b in self.backends)
        self.limits = LIMITS[config.limits]()
        self.base = profiles.get("campaign")
        self.database = open_database(config.database_spec())
        self.on_example = on_example
        self.seen_shared: set[bytes] = set()

    def shared_findings(self, property_name: str) -> list[Finding]:
        """Re-check the cases other shards published for this property; return those that fail here."""
        found = []
        prop = resolve_property(property_name)
        for value in list(self.database.fetch(shared_key(property_name, self.names))):
            digest = hashlib.sha256(value).digest()
            if digest in self.seen_shared:
                continue
            self.seen_shared.add(digest)
            case = unpack_case(value)
            try:
                prop.check(case, self.backends)
            except PropertyFailure as failure:
                finding = finding_from(failure, case)
                finding.report = "(published by another shard)\n" + finding.report
                found.append(finding)
        return found

    def run(self, unit: WorkUnit) -> tuple[UnitResult, list[Finding]]:
        shared = self.shared_findings(unit.property)
        database = UnitDatabase(self.database, f"lafuzz/unit/{unit.key}/{','.join(self.names)}")
        result = run_unit(
            unit,
            self.backends,
            limits=self.limits,
            base=self.base,
            max_examples=self.config.examples_per_unit,
            database=database,
            on_example=self.on_example,
        )
        if result.finding is not None:
            value = pack_case(result.finding.case)
            self.seen_shared.add(hashlib.sha256(value).digest())
            self.database.save(shared_key(unit.property, self.names), value)
        return result, shared

    def describe(self) -> dict[str, Any]:
        described = {}
        for b in self.backends:
            caps = b.capabilities()
            described[b.name] = {"device": caps.device, "versions": caps.versions, "window": caps.window,
                                 "dtypes": list(caps.dtypes), "notes": list(caps.notes)}
        return described

    def close(self) -> None:
        for b in self.backends:
            b.close()


_WORKER: Worker | None = None


def _init_worker(config: CampaignConfig, counter: Any) -> None:
    """Process-pool initializer: Ctrl-C is the parent's business; build this process's backends."""
    global _WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def count() -> None:
        with counter.get_lock():
            counter.value += 1

    _WORKER = Worker(config, count)


def _run_in_worker(unit: WorkUnit) -> tuple[UnitResult, list[Finding]]:
    assert _WORKER is not None, "worker used before its initializer ran"
    return _WORKER.run(unit)


# ---- the main side -----------------------------------------------------------------------------
def available_backends(names: list[str]) -> tuple[list[str], dict[str, str]]:
    """Split ``names`` into those this machine can create and those it cannot (with the reason)."""
    usable, missing = [], {}
    for name in names:
        try:
            resolve_backend(name).close()
        except Unavailable as err:
            missing[name] = str(err)
        else:
            usable.append(name)
    return usable, missing


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


class Campaign:
    """One run of ``CampaignConfig``: collects results, writes findings and the summary."""

    def __init__(self, config: CampaignConfig, progress: Progress | None = None) -> None:
        self.config = config
        self.progress = progress or Progress()
        self.corpus_dir = config.out / "corpus"
        self.results_examples = 0
        self.units = 0
        self.backend_calls: Counter = Counter()
        self.coverage: Counter = Counter()
        self.ratios: dict[str, Counter] = {}
        self.per_property: dict[str, Counter] = {p: Counter() for p in config.properties}
        self.findings: dict[str, FindingRecord] = {}
        self.database_keys: set[bytes] = set()
        self.known = {e.id: e.known_failure for e in corpus.load(config.known_corpus or Path("/nonexistent"))
                      if e.known_failure}
        self.interrupted = False
        self.started = datetime.now(UTC)
        self.backend_info: dict[str, Any] = {}

    # ---- results ------------------------------------------------------------------------------
    def _record(self, unit: WorkUnit, finding: Finding, versions: dict[str, Any]) -> None:
        entry = corpus.Entry(
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
                "backends": {n: versions.get(n, {}) for n in finding.backends},
            },
        )
        if entry.id in self.findings:
            self.findings[entry.id].count += 1
            return
        entry.known_failure = self.known.get(entry.id)
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
        self.progress.findings[entry.kind] += 1
        label = " (known failure)" if entry.known_failure else ""
        self.progress.note(f"[lafuzz] finding{label}: {entry.property} {'/'.join(entry.backends)} {entry.kind}: "
                           f"{entry.signature[:100]} -> {path}")

    def absorb(self, result: UnitResult, shared: list[Finding]) -> None:
        """Fold one unit's result into the totals and write its findings."""
        self.units += 1
        self.results_examples += result.examples
        self.backend_calls.update(result.backend_calls)
        self.coverage.update(result.coverage)
        self.ratios.setdefault(result.unit.property, Counter()).update(result.ratios)
        stats = self.per_property[result.unit.property]
        stats.update(units=1, examples=result.examples)
        self.database_keys |= result.database_keys
        for finding in [*shared, *([result.finding] if result.finding else [])]:
            stats.update(findings=1)
            self._record(result.unit, finding, self.backend_info)
        self.progress.units = self.units

    # ---- the run loop -------------------------------------------------------------------------
    def _out_of_budget(self) -> bool:
        budget = self.config.time_budget
        return budget is not None and self.progress.elapsed >= budget

    def _units(self):
        units = work_units(self.config.properties, self.config.seed, self.config.shard)
        planned = self.config.planned_units()
        for count, unit in enumerate(units):
            if (planned is not None and count >= planned) or self._out_of_budget():
                return
            yield unit

    def _count_inline(self) -> None:
        self.progress.examples += 1
        self.progress.tick()

    def _run_inline(self) -> None:
        worker = Worker(self.config, self._count_inline)
        self.backend_info = worker.describe()
        try:
            for unit in self._units():
                self.absorb(*worker.run(unit))
        finally:
            worker.close()

    def _hard_stop(self) -> float:
        """When running units are abandoned: the time budget plus a grace of 10% (at least 15 s)."""
        budget = self.config.time_budget or 0.0
        return budget + max(15.0, 0.1 * budget)

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
        describer = Worker(self.config)
        self.backend_info = describer.describe()
        describer.close()
        pool = ProcessPoolExecutor(self.config.jobs, mp_context=context, initializer=_init_worker,
                                   initargs=(self.config, counter))
        pending: set[Future] = set()
        units = self._units()
        try:
            while True:
                while len(pending) < 2 * self.config.jobs and (unit := next(units, None)) is not None:
                    pending.add(pool.submit(_run_in_worker, unit))
                if not pending:
                    break
                if self._out_of_budget():  # stop handing out work: drop what has not started yet
                    pending = {f for f in pending if not f.cancel()}
                    if self.progress.elapsed > self._hard_stop():
                        self.progress.note(f"[lafuzz] budget spent: abandoning {len(pending)} running unit(s)")
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
            pool.shutdown(wait=not self.interrupted, cancel_futures=True)
            self.progress.examples = max(counter.value, self.results_examples)

    def run(self) -> dict[str, Any]:
        """Run to the budget or Ctrl-C; always writes ``summary.json`` and ``report.html``."""
        from fuzz.report import write_report

        self.corpus_dir.mkdir(parents=True, exist_ok=True)
        try:
            if self.config.jobs == 1:
                self._run_inline()
            else:
                self._run_pool()
        except KeyboardInterrupt:
            self.interrupted = True
            self.progress.note("[lafuzz] interrupted: writing what was found so far")
        self.progress.finish()
        summary = self.summary()
        write_report(summary, self.config.out)
        return summary

    def summary(self) -> dict[str, Any]:
        elapsed = self.progress.elapsed
        config = asdict(self.config)
        config.update(shard=str(self.config.shard), out=str(self.config.out),
                      known_corpus=str(self.config.known_corpus), database=self.config.database_spec())
        return {
            "format": SUMMARY_FORMAT,
            "started": self.started.isoformat(timespec="seconds"),
            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "elapsed_s": round(elapsed, 2),
            "interrupted": self.interrupted,
            "config": config,
            "host": {"node": platform.node(), "python": platform.python_version(),
                     "hypothesis": hypothesis.__version__},
            "backends": self.backend_info,
            "unavailable": self.config.unavailable,
            "units": self.units,
            "examples": self.progress.examples,
            "cases_per_second": round(self.progress.examples / elapsed, 1) if elapsed else 0.0,
            "backend_calls": dict(self.backend_calls),
            "peak_rss_mib": round(self.progress.peak_rss_mib, 1),
            "rss_samples": self.progress.rss_samples,
            "coverage": _by_axis(self.coverage),
            "ratio_histogram": {p: dict(c) for p, c in self.ratios.items()},
            "per_property": {p: dict(c) for p, c in self.per_property.items()},
            "findings": [asdict(f) for f in self.findings.values()],
            "database_keys": sorted(k.hex() for k in self.database_keys),
            "exit_status": exit_status(bool(self.findings), self.interrupted),
        }


AXIS = re.compile(r"^([A-Za-z_]+)(?=[=<> ])")


def _by_axis(coverage: Counter) -> dict[str, dict[str, int]]:
    """``{"rule=delta": 3, "T<W": 2, "past": 1}`` -> ``{"rule": {"rule=delta": 3}, "T": {"T<W": 2}, "other": ...}``."""
    axes: dict[str, dict[str, int]] = {}
    for label, count in sorted(coverage.items()):
        match = AXIS.match(label)
        axes.setdefault(match.group(1) if match else "other", {})[label] = count
    return axes


def exit_status(found: bool, interrupted: bool) -> int:
    """1 when anything was found; else 130 after Ctrl-C; else 0."""
    if found:
        return 1
    return 130 if interrupted else 0


def run_campaign(config: CampaignConfig, progress: Progress | None = None) -> dict[str, Any]:
    """Run a campaign and return its summary (also written to ``<out>/summary.json``)."""
    return Campaign(config, progress).run()


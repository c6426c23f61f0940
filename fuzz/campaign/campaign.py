"""The campaign: properties run for a time or example budget, sharded, in worker processes.

The main process hands this shard's work units (``fuzz.campaign.shard``) to ``jobs`` spawned workers
(``fuzz.campaign.worker``), each holding its own backends for the whole campaign; it writes every finding
to ``<out>/corpus`` the moment it arrives and draws the progress line. At the end of the time
budget, or on the first Ctrl-C, it sets the shared stop time: every running unit ends at its next
example and hands back what it checked and found (a second Ctrl-C aborts at once); a unit still running a
grace later (``_hard_stop``) is abandoned and its worker killed, keeping the smallest failure it had met. Then it
writes ``summary.json`` and ``report.html``; an error that no case can report is listed there, never the end.
Findings are shared between shards through the example database (``fuzz.campaign.database.shared_key``): each
worker re-checks, before every unit, the cases other shards published there.

Two faults from outside are met on the way. A full disk (``fuzz.atomic.out_of_space``, in any write of
the campaign, its workers' example database included) stops it like the end of the budget: one line names
what could not be saved where, no new unit starts, what was written stays (every write is atomic), and the
room held back at the start (``fuzz.output.Reserve``) is given back for the summary and the report. A shared
example database that cannot be reached is replaced by a local one in each worker
(``fuzz.campaign.database.FallbackDatabase``); the campaign says so once and records how long it was gone.

A finding the workers classified as known (``fuzz.corpus.classifier.Classifier``: a documented
issue, or a corpus mark) is saved once per issue as a corpus entry whose ``known_failure`` mark
names it, listed in the report, counted, but not new. The result is a ``Summary``
(``fuzz.campaign.summary``), whose ``exit_status`` is the command's.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import platform
import shutil
import signal
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import hypothesis
import psutil

from fuzz import atomic, environment
from fuzz.atomic import OutOfSpace
from fuzz.campaign import coverage
from fuzz.campaign.database import LOCAL, DatabaseHealth
from fuzz.campaign.focus import Focus
from fuzz.campaign.progress import Progress
from fuzz.campaign.shard import Shard, WorkUnit, work_units
from fuzz.campaign.steering import Steering
from fuzz.campaign.summary import NATIVE_LOG, Summary
from fuzz.campaign.swarm import turns
from fuzz.campaign.unit import OnSaved, UnitResult, UnitStopped, error_line
from fuzz.campaign.worker import (
    STOP_SIGNALS,
    UNFINISHED,
    Worker,
    init_worker,
    probe,
    run_in_worker,
    unfinished_path,
)
from fuzz.corpus import candidates
from fuzz.corpus.candidates import NearMiss
from fuzz.corpus.entry import CorpusError, Entry, from_bytes, write_entry
from fuzz.model.findings import Finding
from fuzz.model.ops import LINEAR_ATTENTION
from fuzz.output import Reserve

T = TypeVar("T")


class HardStop(UnitStopped):
    """Raised by the hard stop's alarm in a unit run in the campaign's own process (``-j 1``): the unit stops there,
    keeping what it found (``UnitStopped``), and counts as abandoned."""


MAX_POOL_RESTARTS = 3
"""Fresh worker pools a campaign starts after a worker process died, before it stops (workers that keep
dying are not a budget to spend)."""

STOP_GRACE_S = 30.0
"""The least time past the stop that units still running are given to end (a call of the largest cases, or a first
compile on a software adapter, takes seconds to tens of seconds); then they are abandoned and their workers killed."""
STOP_GRACE_SHARE = 0.1
"""The grace grows with the budget, by this share of it: a long campaign's largest units cost more per example."""
END_WORKERS_S = 5.0
"""How long ending a pool waits for its killed workers and its manager thread (they end in milliseconds)."""


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
    limits: str = "swarm"
    """``swarm`` (each unit its own slice, ``fuzz.campaign.swarm``) or a fixed ``--limits`` name."""
    ops: list[str] = field(default_factory=lambda: [LINEAR_ATTENTION.name])
    """The ops the units test (``fuzz.model.ops``), each unit one of them (``fuzz.campaign.worker.plan_for``)."""
    out: Path = Path("lafuzz-out")
    database: str | None = None
    """Directory or ``redis://HOST:PORT``; default ``<out>/hypothesis-db``."""
    known_corpus: Path | None = Path("corpus")
    """Where findings already marked as known failures are looked up."""
    isolate: bool = True
    """Run the ``crash_prone`` backends (the ORT ones) in crash-isolated worker processes for the
    properties that feed invalid input (``Property.invalid_input``)."""
    strict: bool = False
    """Known issues count as new findings (exit 1) and no backend sits out the cases they affect."""
    unavailable: dict[str, str] = field(default_factory=dict)
    """Requested backends this machine lacks, with the reason (reported, not run)."""
    focus: Focus | None = None
    """What most units go to (``fuzz.campaign.steering``): ``--focus``, ``--since`` or the hash memory."""
    follow_yield: bool = True
    """Choose each unit's arm by yield per second (``fuzz.campaign.schedule``) where the unit list need not repeat."""

    def database_spec(self) -> str:
        return self.database or str(self.out / "hypothesis-db")

    def planned_units(self) -> int | None:
        """With an example budget the unit list is fixed in advance (so reruns repeat it exactly)."""
        if self.example_budget is None:
            return None
        return -(-self.example_budget // self.examples_per_unit)


class Campaign:
    """One run of ``CampaignConfig``: collects results, writes findings and the summary."""

    def __init__(self, config: CampaignConfig, progress: Progress | None = None,
                 backend_info: dict[str, Any] | None = None, on_saved: OnSaved | None = None) -> None:
        self.config = config
        self.on_saved = on_saved
        """What is done with each finding's corpus entry once written (``lafuzz campaign``: the upstream export)."""
        self.progress = progress or Progress()
        self.corpus_dir = config.out / "corpus"
        self.results_examples = 0
        self.results_cases = 0
        self.units = 0
        self.stopped_units = 0
        self.abandoned_units = 0
        self.lost_units = 0
        self.unit_errors: list[dict[str, str]] = []
        """Units that ended in an error before their first case (``Summary.unit_errors``)."""
        self.late_exports: list[tuple[Entry, Path]] = []
        """Corpus entries written after the stop, whose ``on_saved`` waits until the units are in (``_late``)."""
        self.backend_calls: Counter = Counter()
        self.window_calls: Counter = Counter()
        self.backend_seconds: Counter = Counter()
        self.backend_compiles: Counter = Counter()
        self.compile_seconds: Counter = Counter()
        self.lost: dict[str, str] = {}
        self.lost_backends: set[str] = set()
        """The names of the backends a worker lost (``lost`` says why)."""
        self.coverage: Counter = Counter()
        self.ratios: dict[str, Counter] = {}
        self.parts: dict[str, list[float]] = {}
        self.part_cases: dict[str, list[str]] = {}
        self.near_misses: list[NearMiss] = []
        self.first_seen: dict[str, dict[str, float]] = {"findings": {}, "buckets": {}}
        self.known_cases: Counter = Counter()
        self.per_property: dict[str, Counter] = {p: Counter() for p in config.properties}
        self.tiers: dict[str, Counter] = {}
        self.tier_backend_ms: dict[str, Counter] = {}
        self.steering = Steering(config)
        self.progress.coverage = coverage.reached(self.coverage, coverage.axes_of(self.config.ops))
        self.findings: dict[str, dict[str, Any]] = {}
        self.database_keys: set[bytes] = set()
        self.database_health: dict[int, DatabaseHealth] = {}
        """Worker process -> the latest state of its example database."""
        self.out_of_space: OutOfSpace | None = None
        """The first write a full disk refused."""
        self.not_saved: list[OutOfSpace] = []
        """Every write a full disk refused, in order (the summary and report among them, if it came to that)."""
        self.interrupted = False
        self.hard_stopped = False
        """Whether the hard stop's alarm went off (``_alarm_at_hard_stop``)."""
        self.alarmed = False
        """Whether a unit runs in this process under the hard stop's alarm (``_alarm_at_hard_stop``)."""
        self.started = datetime.now(UTC)
        self.backend_info: dict[str, Any] = dict(backend_info or {})
        self.stop_time = math.inf if config.time_budget is None else time.time() + config.time_budget

    # ---- results ------------------------------------------------------------------------------
    def _provenance(self, backends: tuple[str, ...]) -> dict[str, Any]:
        """Where an entry of this campaign comes from (the unit is added by the caller)."""
        return {
            "found": datetime.now(UTC).isoformat(timespec="seconds"),
            "campaign_seed": self.config.seed,
            "shard": str(self.config.shard),
            "hypothesis": hypothesis.__version__,
            "host": platform.node(),
            "backends": {n: self.backend_info.get(n, {}) for n in backends},
        }

    def _entry(self, unit: WorkUnit, finding: Finding) -> Entry:
        return Entry(
            finding=finding,
            expected={"contract": f"property {finding.property!r} holds for these backends"},
            provenance={**self._provenance(finding.backends), "unit": unit.key, "unit_seed": unit.seed},
        )

    # ---- a full disk -------------------------------------------------------------------------------
    def saving(self, what: str, path: Path, write: Callable[[], T]) -> T | None:
        """``write()``; None if a full disk refused it (``refused``). Any other error goes on."""
        try:
            return write()
        except OSError as err:
            if not atomic.out_of_space(err):
                raise
            self.refused(OutOfSpace.of(err, what, path))
            return None

    def refused(self, what: OutOfSpace) -> None:
        """A write a full disk refused: the first one is announced in one line and stops the campaign (no new
        unit; running ones end at their next example, as at the end of the budget)."""
        self.not_saved.append(what)
        if self.out_of_space is None:
            self.out_of_space = what
            self.stop_time = min(self.stop_time, time.time())
            self._arm()
            self.progress.note(f"[lafuzz] {what.line()}: stopping, no new unit; what was written is kept")

    # ---- results ------------------------------------------------------------------------------
    def _record(self, unit: WorkUnit, finding: Finding) -> None:
        if finding.id in self.findings:
            self.findings[finding.id]["count"] += 1
            return
        label = "known" if finding.known else "new"
        entry = self._entry(unit, finding)
        path = self.corpus_dir / entry.relative_dir()
        what = f"the corpus entry of a {label} finding ({finding.property}/{finding.id})"
        saved = self.saving(what, path, lambda: write_entry(self.corpus_dir, entry)) is not None
        if saved and self._out_of_budget():
            self.late_exports.append((entry, path))
        elif saved:
            self._export(entry, path)
        self.first_seen["findings"][finding.id] = round(self.progress.elapsed, 2)
        self.findings[finding.id] = {**finding.to_json(), "corpus_path": str(path) if saved else None,
                                     "reproduce": f"lafuzz repro {path}" if saved else "(not saved: the disk was full)",
                                     "first_unit": unit.key, "count": 1}
        self.progress.findings[f"{label} {finding.kind}"] += 1
        note = f" ({finding.note})" if finding.note else ""
        self.progress.note(f"[lafuzz] {label} finding: {finding.property} {'/'.join(finding.backends)} "
                           f"{finding.kind}: {finding.signature[:100]}{note} -> {path if saved else 'not saved'}")

    def _export(self, entry: Entry, path: Path) -> None:
        """``on_saved`` (the upstream export) of an entry written to ``path``; an error costs one line, not the
        campaign (the entry is written)."""
        on_saved, name = self.on_saved, f"{entry.finding.property}/{entry.id}"
        if on_saved is None:
            return
        try:
            self.saving(f"the upstream export of {name}", path / "upstream", lambda: on_saved(entry, path, None))
        except Exception as error:
            self.progress.note(f"[lafuzz] {path}: not exported upstream: {error_line(error)}")

    def _late(self) -> None:
        """The exports of entries written after the stop (``late_exports``), while the grace lasts (``_hard_stop``);
        one line names those left (``lafuzz export`` makes one later)."""
        waiting, self.late_exports = self.late_exports, []
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C again: the others are left
            while waiting and time.time() < self._hard_stop():
                self._export(*waiting.pop(0))
        if waiting:
            path = waiting[0][1]
            self.progress.note(f"[lafuzz] {len(waiting)} finding(s) not exported upstream, the budget having ended: "
                               f"`lafuzz export {path} --out {path / 'upstream'}` exports one")

    def failed(self, unit: str, trace: str) -> None:
        """An error with no case to make a finding of (one before a unit's first case; ``unit``: its key, or what
        else raised; ``trace``: its traceback): one line, and the summary lists it (exit 1); the campaign goes on."""
        error = next((line for line in reversed(trace.strip().splitlines()) if line and not line[0].isspace()), "?")
        self.unit_errors.append({"unit": unit, "error": error, "traceback": trace})
        self.progress.note(f"[lafuzz] error in {unit}, with no case to report it by: {error[:200]} (its traceback "
                           "is in summary.json, unit_errors)")

    def _watch_database(self, health: DatabaseHealth | None) -> None:
        """Fold in a worker's database state: a full disk stops the campaign; the shared database's loss and
        return are each said once for the whole campaign."""
        if health is None:
            return
        if health.out_of_space is not None and health.out_of_space not in self.not_saved:
            self.refused(health.out_of_space)
        if not health.outages and health.process not in self.database_health:
            return
        was_lost = self._database_lost()
        self.database_health[health.process] = health
        if self._database_lost() and not was_lost:
            self.progress.note(f"[lafuzz] the shared example database {self.config.database} cannot be reached "
                               f"({health.reason}): going on with {self.config.out / LOCAL}, retrying it with a "
                               "back-off; the findings are in the corpus")
        elif was_lost and not self._database_lost():
            self.progress.note(f"[lafuzz] the shared example database {self.config.database} is back; what was "
                               "saved locally meanwhile was copied to it")

    def _database_lost(self) -> bool:
        return any(h.lost for h in self.database_health.values())

    def _database_outages(self, now: float) -> list[list[float]]:
        """The union of every worker's outages, in seconds from the start (an open one ends ``now``)."""
        spans = sorted([start, min(end, now)] for h in self.database_health.values() for start, end in h.outages)
        union: list[list[float]] = []
        for start, end in spans:
            if union and start <= union[-1][1]:
                union[-1][1] = max(union[-1][1], end)
            else:
                union.append([start, end])
        began = self.started.timestamp()
        return [[round(start - began, 2), round(end - began, 2)] for start, end in union]

    def absorb(self, result: UnitResult, shared: list[Finding]) -> None:
        """Fold one unit's result into the totals and write its findings."""
        if result.error is not None:
            self.failed(result.unit.key, result.error)
        self.units += 1
        self.stopped_units += result.stopped
        self.results_examples += result.examples
        self.results_cases += result.cases
        self.tiers.setdefault(result.tier, Counter()).update(units=1, examples=result.examples,
                                                             milliseconds=round(result.seconds * 1000))
        self.tier_backend_ms.setdefault(result.tier, Counter()).update(
            {name: round(seconds * 1000) for name, seconds in result.backend_seconds.items()})
        self.backend_calls.update(result.backend_calls)
        self.window_calls.update(result.window_calls)
        self.backend_seconds.update(result.backend_seconds)
        self.backend_compiles.update(result.backend_compiles)
        self.compile_seconds.update(result.compile_seconds)
        self.coverage.update(result.coverage)
        reached = self.first_seen["buckets"]
        first = [label for label in result.coverage if coverage.counted(label) and label not in reached]
        for label in first:
            reached[label] = round(self.progress.elapsed, 2)
        self.known_cases.update(result.known)
        self.ratios.setdefault(result.unit.property, Counter()).update(result.ratios)
        for part, ratio in result.parts.items():
            self.parts.setdefault(part, []).append(ratio)
            self.part_cases.setdefault(part, []).append(f"unit {result.unit.key}: {result.part_cases.get(part, '?')}")
        if result.near_miss is not None:
            self.near_misses = candidates.highest([*self.near_misses, result.near_miss])
        stats = self.per_property[result.unit.property]
        stats.update(units=1, examples=result.examples, known=sum(result.known.values()))
        self.database_keys |= result.database_keys
        self._watch_database(result.database)
        found = [*shared, *result.replayed, *([result.finding] if result.finding else [])]
        fresh = {f.id for f in found if not f.known and f.id not in self.findings}
        for finding in found:
            stats.update(findings=1)
            self._record(result.unit, finding)
        self.steering.absorb(result, len(first), len(fresh))
        for name, why in result.lost.items():
            key = f"{name} (lost by a worker mid-campaign)"
            self.lost_backends.add(name)
            if key not in self.lost:
                self.lost[key] = why
                self.progress.note(f"[lafuzz] a worker lost backend {name}: {why}")
        self.progress.units = self.units
        self.progress.coverage = coverage.reached(self.coverage, coverage.axes_of(self.config.ops))

    # ---- the run loop -------------------------------------------------------------------------
    def _out_of_budget(self) -> bool:
        return time.time() >= self.stop_time

    def _units(self) -> Iterator[WorkUnit]:
        units = self.steering.units(work_units(self.config.properties, self.config.seed, self.config.shard,
                                                 turns(self.config.properties, self.config.ops)))
        planned = self.config.planned_units()
        for count, unit in enumerate(units):
            if (planned is not None and count >= planned) or self._out_of_budget():
                return
            yield unit

    def _on_interrupt(self, signum: int, frame: Any) -> None:
        """First Ctrl-C or SIGTERM (``STOP_SIGNALS``): stop at the next example of every unit and write what
        was found; a second one aborts (and still writes it)."""
        self.interrupted = True
        self.stop_time = min(self.stop_time, time.time())
        self._arm()
        how = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        self.progress.note(f"[lafuzz] interrupted ({how}): finishing the running units (Ctrl-C again to abort)")
        for stop_signal in STOP_SIGNALS:
            signal.signal(stop_signal, signal.default_int_handler)

    def _count_inline(self) -> None:
        self.progress.examples += 1
        self.progress.tick()

    def _run_inline(self) -> None:
        """The units in this process, one after another (``-j 1``). At the hard stop (``_hard_stop``) a unit still
        running is abandoned: an alarm raises ``HardStop`` in it, unless it is inside native code, which no signal
        handler interrupts."""
        with environment.native_output_to(self.config.out / NATIVE_LOG):
            worker = Worker(self.config, self._count_inline, lambda: self.stop_time)
        try:
            with self._alarm_at_hard_stop():
                for unit in self._units():
                    try:
                        self.absorb(*worker.run(unit))
                    except Exception:  # the worker's own plumbing: the unit is reported, the campaign goes on
                        self.failed(unit.key, traceback.format_exc())
        except HardStop:  # outside the unit's examples (those end the unit, which keeps what it found)
            pass
        finally:
            worker.close()
        if self.hard_stopped:
            self.abandoned_units += 1
            self.progress.note("[lafuzz] abandoned 1 unit still running past the budget's grace")

    @contextlib.contextmanager
    def _alarm_at_hard_stop(self) -> Iterator[None]:
        """While inside, ``HardStop`` is raised in this thread at the hard stop (one alarm, set anew when the stop
        time moves: ``_arm``)."""
        def alarm(signum: int, frame: Any) -> None:
            if time.time() >= self._hard_stop():
                self.hard_stopped = True
                raise HardStop
            self._arm()

        previous = signal.signal(signal.SIGALRM, alarm)
        self.alarmed = True
        try:
            self._arm()
            yield
        finally:
            self.alarmed = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    def _arm(self) -> None:
        """Inside ``_alarm_at_hard_stop``, set its alarm to the hard stop, wherever the stop time now is."""
        if self.alarmed and math.isfinite(hard_stop := self._hard_stop()):
            signal.setitimer(signal.ITIMER_REAL, max(hard_stop - time.time(), 0.01))

    def _hard_stop(self) -> float:
        """When units still running are abandoned (a call hung in native code, a stopped worker) and their workers
        killed: the stop time plus a grace of ``STOP_GRACE_SHARE`` of the budget, at least ``STOP_GRACE_S``."""
        return self.stop_time + max(STOP_GRACE_S, STOP_GRACE_SHARE * (self.config.time_budget or 0.0))

    @staticmethod
    def _end_workers(pool: ProcessPoolExecutor) -> None:
        """End the pool's worker processes (SIGKILL, as they ignore ``STOP_SIGNALS``), then the pool; waits at most
        ``END_WORKERS_S`` for the processes and the pool's manager thread.

        They are killed and reaped through the pool's own process objects, never behind its back: a process
        reaped by anyone else reads as alive to ``multiprocessing`` for ever (``Popen.poll`` takes ``ECHILD`` for
        "not yet started"), and a broken pool's manager thread then spins, sending sentinels to it, until the
        interpreter is killed: it joins that thread at exit."""
        processes = list((getattr(pool, "_processes", None) or {}).values())
        manager = getattr(pool, "_executor_manager_thread", None)
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.kill()
        deadline = time.monotonic() + END_WORKERS_S
        for process in processes:
            process.join(max(0.0, deadline - time.monotonic()))
        if manager is not None:
            manager.join(max(0.0, deadline - time.monotonic()))

    def _keep_unfinished(self, units: list[WorkUnit], why: str) -> None:
        """The smallest failures that units which never ended had met (``Worker.keep_unfinished``), as findings
        marked not fully minimised."""
        for unit in units:
            try:
                finding = from_bytes(unfinished_path(self.config.out, unit).read_bytes()).finding
            except (OSError, CorpusError):
                continue
            self._record(unit, finding.with_(report=f"{finding.report}\n({why} while it shrank this failure: not "
                                                    "fully minimised)"))

    def _run_pool(self) -> None:
        """Hand the units to ``jobs`` workers until the budget ends. A worker process that dies (killed by the
        OOM killer, a crash in native code the worker runs itself) breaks the pool: the units it held are
        counted as lost, and a fresh pool takes the next ones, up to ``MAX_POOL_RESTARTS`` times."""
        context = multiprocessing.get_context("spawn")
        # without locks: a worker killed or stopped while holding one would block every process that reads it next
        counter = context.Value("q", 0, lock=False)
        stop = context.Value("d", self.stop_time, lock=False)
        numbers = context.Value("i", 0)
        units = self._units()
        try:
            for restart in range(MAX_POOL_RESTARTS + 1):
                pool = ProcessPoolExecutor(self.config.jobs, mp_context=context, initializer=init_worker,
                                           initargs=(self.config, counter, stop, numbers))
                lost = self._feed_pool(pool, units, counter, stop)
                if not lost:
                    return
                self.lost_units += lost
                again = restart < MAX_POOL_RESTARTS and not self._out_of_budget()
                self.progress.note(f"[lafuzz] a worker process died (killed, or crashed in native code; see "
                                   f"{self.config.out / NATIVE_LOG}): {lost} unit(s) lost"
                                   + ("; starting fresh workers" if again else "; stopping"))
                if not again:
                    return
        finally:
            self.progress.examples = max(counter.value, self.results_examples)

    def _feed_pool(self, pool: ProcessPoolExecutor, units: Iterator[WorkUnit], counter: Any, stop: Any) -> int:
        """Run units on ``pool`` until they or the budget run out; the units lost if a worker died (else 0)."""
        pending: set[Future] = set()
        held: dict[Future, WorkUnit] = {}
        try:
            while True:
                while len(pending) < 2 * self.config.jobs and (unit := next(units, None)) is not None:
                    future = pool.submit(run_in_worker, unit)
                    pending.add(future)
                    held[future] = unit
                if not pending:
                    return 0
                stop.value = self.stop_time
                if self._out_of_budget():  # stop handing out work: drop what has not started yet
                    pending = {f for f in pending if not f.cancel()}
                    if time.time() > self._hard_stop():
                        self.abandoned_units += len(pending)
                        self.progress.note(f"[lafuzz] abandoning {len(pending)} unit(s) still running past the "
                                           "budget's grace: their workers are killed")
                        self._end_workers(pool)
                        self._keep_unfinished([held[f] for f in pending], "its worker was ended at the hard stop")
                        pending = set()
                        return 0
                done, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
                broken = {f for f in done if isinstance(f.exception(), BrokenProcessPool)}
                for future in done - broken:
                    if future.exception() is None:
                        self.absorb(*future.result())
                    else:  # raised in the worker outside its unit (the pool attaches the worker's traceback)
                        self.failed(held[future].key, "".join(traceback.format_exception(future.exception())))
                    del held[future]
                if broken:  # a broken pool fails every unit it still holds
                    held_units = [held[f] for f in broken | pending]
                    lost, pending = len(broken) + len(pending), set()
                    self._end_workers(pool)
                    self._keep_unfinished(held_units, "its worker process died")
                    return lost
                self.progress.examples = counter.value
                self.progress.tick()
        finally:
            for future in pending:
                future.cancel()
            pool.shutdown(wait=False, cancel_futures=True)

    def run(self) -> Summary:
        """Run to the budget, Ctrl-C or a full disk; writes ``summary.json`` and ``report.html`` (on a full disk,
        if they fit: ``not_saved`` then names them)."""
        self.corpus_dir.mkdir(parents=True, exist_ok=True)
        reserve = Reserve(self.config.out)
        try:
            if not self.backend_info:
                self.backend_info = probe(self.config.backends).described
            previous = {signum: signal.signal(signum, self._on_interrupt) for signum in STOP_SIGNALS}
            try:
                if self.config.jobs == 1:
                    self._run_inline()
                else:
                    self._run_pool()
            except KeyboardInterrupt:
                self.interrupted = True
                self.late_exports = []
                self.progress.note("[lafuzz] aborted: writing what was found so far")
            except Exception:  # a bug of the campaign's own: its traceback goes in the summary, which is written
                self.failed("the campaign itself", traceback.format_exc())
            finally:
                for signum, handler in previous.items():
                    signal.signal(signum, handler)
            shutil.rmtree(self.config.out / UNFINISHED, ignore_errors=True)
            self._late()
            self.progress.finish()
            if self.out_of_space is not None:
                reserve.release()
            return self._write_results()
        finally:
            reserve.release()

    def _write_results(self) -> Summary:
        """The near misses (not on a full disk: the summary comes first), ``summary.json`` and ``report.html``."""
        from fuzz.campaign.report import REPORT, SUMMARY, write_html

        out, provenance = self.config.out, self._provenance(())
        written: list[dict[str, Any]] = []
        for number, miss in enumerate(self.near_misses):
            if self.out_of_space is not None:  # the summary first: the near misses are not tried
                left = len(self.near_misses) - number
                self.not_saved.append(OutOfSpace(str(out / candidates.DIRECTORY), f"{left} near miss(es)",
                                                 "the disk was full"))
                break
            written += self.saving("a near miss", out / candidates.DIRECTORY / miss.property,
                                   partial(candidates.write_candidates, out, [miss], provenance)) or []
        summary = self.summary(written)
        self.saving("the summary", out / SUMMARY, lambda: summary.write(out / SUMMARY))
        self.saving("the report", out / REPORT, lambda: write_html(summary, out / REPORT))
        # what the disk refused from here on is in the final line, not in the summary already written
        summary.out_of_space = asdict(self.out_of_space) if self.out_of_space else None
        return summary

    def summary(self, near_misses: list[dict[str, Any]] | None = None) -> Summary:
        """The campaign so far; ``near_misses`` are the rows of the candidates written (``write_candidates``)."""
        elapsed = self.progress.elapsed
        config = asdict(self.config)
        config.update(shard=str(self.config.shard), out=str(self.config.out),
                      known_corpus=str(self.config.known_corpus), database=self.config.database_spec())
        return Summary(
            started=self.started.isoformat(timespec="seconds"),
            finished=datetime.now(UTC).isoformat(timespec="seconds"),
            elapsed_s=round(elapsed, 2),
            interrupted=self.interrupted,
            config=config,
            host={"node": platform.node(), "python": platform.python_version(),
                  "hypothesis": hypothesis.__version__, "cpus": psutil.cpu_count()},
            backends=self.backend_info,
            unavailable={**self.config.unavailable, **self.lost},
            units=self.units,
            units_stopped_early=self.stopped_units,
            units_abandoned=self.abandoned_units,
            units_lost=self.lost_units,
            examples=self.progress.examples,
            checked_examples=self.results_examples,
            checked_cases=self.results_cases,
            cases_per_second=round(self.results_examples / elapsed, 1) if elapsed else 0.0,
            backend_calls=dict(self.backend_calls),
            window_calls=dict(self.window_calls),
            backend_seconds={name: round(seconds, 1) for name, seconds in self.backend_seconds.items()},
            backend_compiles=dict(self.backend_compiles),
            compile_seconds={name: round(seconds, 1) for name, seconds in self.compile_seconds.items()},
            peak_rss_mib=round(self.progress.peak_rss_mib, 1),
            rss_samples=[list(sample) for sample in self.progress.rss_samples],
            coverage=coverage.table(self.coverage),
            ratio_histogram={p: dict(c) for p, c in self.ratios.items()},
            error_ratios={part: [round(r, 6) for r in ratios] for part, ratios in sorted(self.parts.items())},
            error_cases=dict(sorted(self.part_cases.items())),
            known_cases=dict(self.known_cases),
            per_property={p: dict(c) for p, c in self.per_property.items()},
            per_tier={t: dict(c) for t, c in sorted(self.tiers.items())},
            tier_backend_ms={t: dict(c) for t, c in sorted(self.tier_backend_ms.items())},
            per_arm=self.steering.per_arm(),
            findings=list(self.findings.values()),
            database_keys=sorted(k.hex() for k in self.database_keys),
            first_seen=self.first_seen,
            near_misses=near_misses or [],
            out_of_space=asdict(self.out_of_space) if self.out_of_space else None,
            not_saved=[refused.line() for refused in self.not_saved],
            database_outages=(outages := self._database_outages(time.time())),
            database_unreachable_s=round(sum(end - start for start, end in outages), 2),
            unit_errors=self.unit_errors,
        )


def run_campaign(config: CampaignConfig, progress: Progress | None = None,
                 backend_info: dict[str, Any] | None = None, on_saved: OnSaved | None = None) -> Summary:
    """Run a campaign and return its summary (also written to ``<out>/summary.json``).

    ``backend_info`` is what a probe (``fuzz.campaign.worker.probe``) said about the backends; without
    it the campaign probes them itself, once, before the workers start. ``on_saved`` is handed each
    finding's corpus entry once written (``lafuzz campaign`` passes the upstream export).
    """
    return Campaign(config, progress, backend_info, on_saved).run()

"""The one Hypothesis driver: a seeded run of one property over a set of backends (a work unit).

Tests, the mutation tests and campaigns all drive the properties through ``run_unit``. A unit
counts every example and every backend call, tallies the case axes it drew (``event()``), climbs
the error/tolerance ratio (``target()``), and turns the minimal failing example Hypothesis reports
into a ``Finding``, classified as known or new (``fuzz.corpus.classifier.Classifier``). With
``save_dir`` the finding is written there as a corpus entry and its report ends with the
``lafuzz repro`` command that re-checks it; ``on_saved`` is then handed the entry (the command line and
the pytest plugin pass ``fuzz.export.exporter.export_upstream``, which exports an ONNX Runtime finding
beside it as an upstream bug report: the campaign layer knows export only through that callback).

Two things keep a campaign honest and exploring:

- a failure a documented known issue covers is shrunk once per worker, or not at all where another
  worker published it first (so the corpus gets one minimal case per known issue); a crash or hang of a
  crash-isolated backend is not shrunk where the corpus documents it (``documented``): its documented case
  is replayed once instead (``fuzz.corpus.documented_case``), and shrunk only if that does not fail as the
  issue (the documentation may be stale). Afterwards the
  backend at fault sits out the cases the issue affects (counted as known) while the other backends
  still check them, so it does not end every unit, nor restart a crashed worker per case. Passing
  every documented issue as already shrunk makes a backend sit out every case its documented issues
  affect (what the tests do);
- a unit stops at the next example once ``stop_at`` (a wall-clock time) has passed: the campaign's
  budget or Ctrl-C. What it checked so far is kept, and a failure it was shrinking is kept as the
  smallest failing case reached (marked as not fully shrunk).
"""

from __future__ import annotations

import math
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import numpy as np
from hypothesis import event, given, seed, target
from hypothesis import settings as Settings
from hypothesis.errors import FlakyFailure

from fuzz.backends import Backend, Capabilities, ChainCall, IsolatedBackend, Lost
from fuzz.campaign.coverage import buckets
from fuzz.campaign.database import DatabaseHealth
from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.swarm import CHUNKED_RUNTIME
from fuzz.corpus import documented_case
from fuzz.corpus.candidates import NearMiss
from fuzz.corpus.classifier import Classifier
from fuzz.corpus.entry import Entry, write_entry
from fuzz.corpus.known_issue import KnownIssue
from fuzz.engine.compare import RATIO_CAP
from fuzz.engine.op_testing import OpLimits, for_limits
from fuzz.engine.properties import CheckResult, resolve_property
from fuzz.implementation import Implementation
from fuzz.model.case import Case
from fuzz.model.chain import Chain
from fuzz.model.findings import Finding, Kind, PropertyFailure
from fuzz.model.pack import slices
from kernels.resident import ResidentKernel

ENDS_THE_PROCESS = (Kind.CRASH, Kind.TIMEOUT)
"""Issue kinds whose cases a backend running in the worker's own process never runs (it would take the worker
down): a crash-isolated backend runs them, and its outcome is a finding."""


def isolated(backend: Backend) -> bool:
    """Whether ``backend`` (or the backend a ``CountingBackend`` counts) runs in a crash-isolated worker."""
    return isinstance(getattr(backend, "inner", backend), IsolatedBackend)

TakesPart = Callable[[str, Case], bool]
"""Whether the backend of that name checks that case (``UnitBody``)."""

OnSaved = Callable[[Entry, Path, Sequence[Backend] | None], object]
"""What is done with a corpus entry once written: called with the entry, its directory and the backends to
cross-check it on (None: none at hand); what it returns is ignored, and it must not raise for the entry's
sake (the entry is already written)."""


class CountingBackend(Backend):
    """Delegates to ``inner`` and counts its calls (what "cases run" means per backend; a chain counts
    each of its calls), among them the calls with ``W > 0``, and the seconds spent in them; and, where the
    backend says (``Backend.pipelines_compiled``), the pipelines it compiled and the seconds of the calls
    that compiled them (a first run's price: a warm shader cache makes them cheap)."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0
        self.window_calls = 0
        self.seconds = 0.0
        self.compiled = 0
        self.compile_seconds = 0.0

    def capabilities(self) -> Capabilities:
        return self.inner.capabilities()

    @property
    def implementation(self) -> Implementation | None:
        return self.inner.implementation

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        with self._counting(case, 1):
            return self.inner.run(case)

    def run_outputs(self, case: Case) -> tuple[np.ndarray, ...]:
        with self._counting(case, 1):
            return self.inner.run_outputs(case)

    def run_chain(self, case: Case, chain: Chain) -> list[ChainCall]:
        with self._counting(case, chain.calls):
            return self.inner.run_chain(case, chain)

    def resume(self, calls: Sequence[Case], accepted: Sequence[Sequence[int]]) -> list[np.ndarray]:
        with self._counting(calls[0], len(calls)):
            return self.inner.resume(calls, accepted)

    @property
    def pipelines_compiled(self) -> int | None:
        return self.inner.pipelines_compiled

    def resident_kernel(self) -> ResidentKernel | None:
        return self.inner.resident_kernel()

    @contextmanager
    def _counting(self, case: Case, calls: int) -> Iterator[None]:
        self.calls += calls
        self.window_calls += calls * (case.state_window > 0)
        compiled = self.inner.pipelines_compiled
        started = time.perf_counter()
        try:
            yield
        finally:
            spent = time.perf_counter() - started
            self.seconds += spent
            now = self.inner.pipelines_compiled
            if compiled is not None and now is not None and now > compiled:
                self.compiled += now - compiled
                self.compile_seconds += spent

    def close(self) -> None:
        self.inner.close()


def ratio_bucket(ratio: float) -> str:
    """A decade of error/tolerance, for the report's histogram (``"1e-3"`` = in [1e-3, 1e-2))."""
    if ratio <= 0:
        return "0"
    return f"1e{math.floor(math.log10(min(ratio, RATIO_CAP)))}"


@dataclass
class UnitResult:
    """What one unit did: counts, coverage, the finding (if any) and the database keys it used."""

    unit: WorkUnit
    examples: int = 0
    cases: int = 0
    """The cases those examples checked: a packed example checks each of its slices (``fuzz.model.pack``)."""
    checked: int = 0
    """Examples that compared something (0 means the unit was vacuous for these backends)."""
    backend_calls: dict[str, int] = field(default_factory=dict)
    window_calls: dict[str, int] = field(default_factory=dict)
    """Backend -> its calls with ``W > 0`` (served natively or in prefix mode, as its capabilities say)."""
    backend_seconds: dict[str, float] = field(default_factory=dict)
    """Backend -> seconds spent in its calls (where a unit's time goes)."""
    backend_compiles: dict[str, int] = field(default_factory=dict)
    """Backend -> pipelines it compiled in this unit (backends that say: ``Backend.pipelines_compiled``)."""
    compile_seconds: dict[str, float] = field(default_factory=dict)
    """Backend -> seconds of its calls that compiled a pipeline (part of ``backend_seconds``)."""
    coverage: Counter = field(default_factory=Counter)
    ratios: Counter = field(default_factory=Counter)
    """Examples per decade of their worst error/tolerance ratio (``ratio_bucket``)."""
    finding: Finding | None = None
    replayed: list[Finding] = field(default_factory=list)
    """What documented cases replayed in place of a shrink failed with (``UnitBody.check``): a known crash or hang
    confirmed, noted ``documented_case.REPLAYED``, or whatever else such a case failed with."""
    database_keys: set[bytes] = field(default_factory=set)
    parts: dict[str, float] = field(default_factory=dict)
    """Worst passing error/tolerance ratio per ``"backends|output"`` / ``"backends|slot j"``."""
    part_cases: dict[str, str] = field(default_factory=dict)
    """The one-line summary of the case behind each ratio of ``parts`` (so each plotted point names its case)."""
    near_miss: NearMiss | None = None
    """The passing case that came closest to its tolerance (a ratio above 0), kept whole."""
    known: Counter = field(default_factory=Counter)
    """Known-issue id -> examples it covered (counted, not shrunk again)."""
    skips: Counter = field(default_factory=Counter)
    lost: dict[str, str] = field(default_factory=dict)
    """Backend -> why the worker could not use it for this unit (``Worker.lost``)."""
    """``"backend: reason"`` -> examples a backend took no part in."""
    stopped: bool = False
    """The unit ended at ``stop_at`` before Hypothesis was done with it."""
    tier: str = ""
    """The size tier of its swarm plan (or the fixed ``--limits`` name)."""
    seconds: float = 0.0
    """Wall time of the unit in its worker."""
    database: DatabaseHealth | None = None
    """The state of the worker's example database after the unit (lost shared database, full disk)."""
    error: str | None = None
    """The traceback of an error raised before the unit's first example (``run_unit`` raises it: there is no case
    to make a finding of), where its worker caught it; the campaign reports it and goes on."""


class UnitStopped(BaseException):
    """Raised inside a unit's test body at ``stop_at``; a ``BaseException`` so Hypothesis does not
    mistake it for a failure to shrink."""


def error_line(error: BaseException) -> str:
    """``"Type: first line of its message"``; for a group (a ``FlakyFailure``), its first exception's."""
    if isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    first_line = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {first_line}"


def harness_error(property_name: str, backends: Sequence[Backend], error: BaseException, case: Case) -> Finding:
    """A check of ``case`` that raised outside the property's typed outcomes (a bug of a backend or of the suite)
    as a finding of those backends, its traceback the report: a campaign reports it and goes on."""
    return Finding(property=property_name, backends=tuple(b.name for b in backends), kind=Kind.HARNESS_ERROR,
                   signature=error_line(error), report="".join(traceback.format_exception(error)), case=case)


def _flaky(flaky: FlakyFailure) -> Finding | None:
    """The finding inside a failure that did not recur when Hypothesis replayed it (a racy backend); None where
    no property failed (an error that did not recur)."""
    failure = next((e for e in flaky.exceptions if isinstance(e, PropertyFailure)), None)
    if failure is None:
        return None
    finding = failure.finding
    return finding.with_(report=finding.report + "\nflaky: this case did not fail on every run")


def save(finding: Finding, root: Path, specs: Mapping[str, str] | None = None,
         backends: Sequence[Backend] | None = None, on_saved: OnSaved | None = None) -> Finding:
    """Write ``finding`` as a corpus entry under ``root``; its report gains the command that re-checks it
    (``specs``: backend name -> the spec it was created from, where that is not the name: ``module:Class``).
    Then ``on_saved`` (if any) gets the entry, its directory and ``backends``.
    """
    path = Path(root) / Entry(finding).relative_dir()
    command = f"lafuzz repro {path} --backends {','.join((specs or {}).get(b, b) for b in finding.backends)}"
    saved = finding.with_(report=f"{finding.report}\nminimal case: {finding.case.summary()}\nreproduce: {command}")
    written = write_entry(root, Entry(saved))
    if on_saved is not None:
        on_saved(Entry(saved), written, backends)
    return saved


def hypothesis_test(unit: WorkUnit, limits: OpLimits, settings: Settings, body: Callable[[Case], None],
                    selection: str) -> Callable[[], None]:
    """``body`` as an ordinary Hypothesis test of no arguments: ``@given`` the unit's property's cases
    under ``limits``, seeded from the unit unless ``settings`` is derandomized, with its own example
    database key per unit and ``selection`` (the backends it runs). Tools that drive Hypothesis tests
    (pytest, HypoFuzz) can run it as they find it."""

    def test_case(case: Case) -> None:
        body(case)

    test_case.__name__ = test_case.__qualname__ = f"test_{unit.property.replace('-', '_')}"
    # Hypothesis keys a test's example database by its digest; this hook of Hypothesis's gives each unit its own
    test_case.__dict__["_hypothesis_internal_add_digest"] = f"{unit.key}:{selection}".encode()
    test = given(resolve_property(unit.property).strategy(limits))(test_case)
    if not settings.derandomize:
        test = seed(unit.seed)(test)
    return Settings(settings, report_multiple_bugs=False)(test)


def failure_finding(error: BaseException) -> Finding | None:
    """The finding a failed unit test raised (a property failure, possibly one that did not recur:
    ``FlakyFailure``); None for any other error (a flaky one among them)."""
    if isinstance(error, PropertyFailure):
        return error.finding
    if isinstance(error, FlakyFailure):
        return _flaky(error)
    return None


class UnitBody:
    """What a unit does with each example: tally it, check the property on the backends, climb the
    error ratio; and what it does with the minimal failure Hypothesis hands back (``conclude``).

    ``stop_at()`` is the wall-clock time (``time.time()``) at which the unit ends early; at
    ``budget_at`` it stops drawing new examples unless it is shrinking a failure (its cost budget);
    ``takes_part(name, case)`` says whether a backend checks a case at all (a swarm unit keeps the ORT builds
    to the shapes whose shaders they share: ``fuzz.campaign.swarm.takes_part``; None: every backend does);
    ``shrunk_issues`` holds the documented issues already shrunk by this process (updated here);
    ``classifier`` decides what is known (default: the documented issues only); ``targeting``: steer
    Hypothesis towards the worst error/tolerance ratio (``target()``; its bookkeeping costs time on every
    example, so a swarm unit draws whether it climbs: docs/campaign.md#swarm-shares); ``on_saved``: what
    ``conclude`` does with an entry it wrote (``save``); ``documented``: the corpus whose documented cases
    confirm a crash or hang of a crash-isolated backend in place of a shrink (None: it is shrunk); ``on_smaller``:
    handed each failure as it is raised, the smallest so far (a campaign keeps it, should the unit never end).
    """

    def __init__(self, unit: WorkUnit, backends: Sequence[Backend], *,
                 on_example: Callable[[], None] = lambda: None, stop_at: Callable[[], float] = lambda: math.inf,
                 budget_at: float = math.inf, classifier: Classifier | None = None,
                 shrunk_issues: set[str] | None = None, targeting: bool = True,
                 on_saved: OnSaved | None = None, takes_part: TakesPart | None = None,
                 documented: Path | None = None, on_smaller: Callable[[Finding], None] | None = None) -> None:
        self.prop = resolve_property(unit.property)
        self.takes_part = takes_part
        self.counted = [b if isinstance(b, CountingBackend) else CountingBackend(b) for b in backends]
        self.chunked = any(b.name == CHUNKED_RUNTIME for b in self.counted)
        """A chunked prefill checks the unit's cases (coverage counts their chunks)."""
        self.result = UnitResult(unit)
        self.classifier = classifier or Classifier.for_backends(self.counted)
        self.shrunk = shrunk_issues if shrunk_issues is not None else set()
        self.on_example, self.stop_at, self.budget_at = on_example, stop_at, budget_at
        self.targeting = targeting
        self.on_saved = on_saved
        self.last: Case | None = None
        self.chasing: str | None = None
        """The documented issue this unit is shrinking (at most one)."""
        self.smallest: Finding | None = None
        """The latest failure raised: Hypothesis only re-runs smaller failing cases while shrinking."""
        self.documented = documented
        self.on_smaller = on_smaller
        self.replayed: list[Finding] = []
        self.unconfirmed: dict[str, str] = {}
        """Issue id -> why its documented case did not confirm it (it is shrunk instead)."""

    @property
    def selection(self) -> str:
        """The backends' names, comma-separated."""
        return ",".join(b.name for b in self.counted)

    def check(self, case: Case) -> CheckResult:
        """The property on ``case``; a backend sits out a case of a documented issue already shrunk, or of a
        documented crash or hang where it runs in this process (running it would end the process)."""
        declined = {}
        for b in self.counted:
            issue = next((i for i in self.classifier.every_affecting(b.name, case)
                          if i.id in self.shrunk or (i.kind in ENDS_THE_PROCESS and not isolated(b))), None)
            if issue is not None:
                declined[b.name] = issue.id
        self.result.known.update(declined.values())
        taking_part = [b for b in self.counted if b.name not in declined
                       and (self.takes_part is None or self.takes_part(b.name, case))]
        try:
            return self.prop.check(case, taking_part) or CheckResult()
        except PropertyFailure as failure:
            issue = self.classifier.documented(failure.finding)
            if issue is not None and issue.id != self.chasing and (
                    self.chasing or issue.id in self.shrunk or self.confirmed_by_replay(issue)):
                self.result.known[issue.id] += 1
                return CheckResult(comparisons=1)
            if issue is not None and not self.chasing:
                self.chasing = issue.id
            self.smallest = failure.finding
            if self.on_smaller is not None:
                self.on_smaller(failure.finding)
            raise
        except Lost as lost:
            self.lose(lost)

    def lose(self, lost: Lost) -> NoReturn:
        """Not a property of the case: the unit ends, the worker stops using the backend."""
        self.result.lost[lost.backend] = str(lost)
        raise UnitStopped from lost

    def confirmed_by_replay(self, issue: KnownIssue) -> bool:
        """Whether ``issue``, a crash or hang met for the first time, still reproduces on its documented case
        (``documented_case.replay``, once per issue): it then counts as shrunk, and what the replay found is
        reported. Only a crash or hang of a crash-isolated backend is replayed: shrinking one costs a process per
        example (and the replay must not end this one); and not once the unit's stop time has passed (a replay
        starts a process: the failure is then kept as met, not fully shrunk)."""
        if (self.documented is None or issue.kind not in ENDS_THE_PROCESS or issue.id in self.unconfirmed
                or not any(b.name == issue.backend and isolated(b) for b in self.counted)
                or time.time() >= self.stop_at()):  # past the stop: the failure is kept as met, not replayed
            return False
        try:
            replayed = documented_case.replay(issue, self.documented, self.counted, self.classifier)
        except Lost as lost:
            self.lose(lost)
        if replayed.finding is not None:
            self.replayed.append(replayed.finding)
        if not replayed.confirmed:
            self.unconfirmed[issue.id] = replayed.why
            return False
        self.shrunk.add(issue.id)
        return True

    def example(self, case: Case) -> None:
        """One example: the Hypothesis test's body."""
        now = time.time()
        if now >= self.stop_at() or (now >= self.budget_at and self.smallest is None):
            raise UnitStopped
        result = self.result
        self.last = case
        labels = buckets(case, chunked=self.chunked)
        for label in labels:
            event(label)
        result.examples += 1
        result.cases += slices(case)
        result.coverage.update(labels)
        self.on_example()
        checked = self.check(case)
        result.checked += checked.comparisons > 0
        result.ratios[ratio_bucket(checked.max_ratio)] += 1
        for who, why in checked.skipped.items():
            result.skips[f"{who}: {why}"] += 1
        for part, ratio in checked.parts.items():
            if part not in result.parts or ratio > result.parts[part]:
                result.parts[part], result.part_cases[part] = ratio, case.summary()
        if checked.parts and checked.max_ratio > (result.near_miss.ratio if result.near_miss else 0.0):
            worst = max(checked.parts, key=checked.parts.__getitem__)
            result.near_miss = NearMiss(checked.max_ratio, worst, result.unit.property, result.unit.key, case)
        if self.targeting:
            target(min(checked.max_ratio, RATIO_CAP), label=f"{result.unit.property} error/tolerance")

    def conclude(self, finding: Finding, save_dir: Path | None = None, specs: Mapping[str, str] | None = None
                 ) -> Finding:
        """The minimal failure classified (a documented issue counts as shrunk from now on) and, with
        ``save_dir``, saved there as a corpus entry whose report ends with its ``lafuzz repro`` command
        (``specs`` as in ``save``)."""
        finding = self.classifier.classify(finding)
        if (issue := self.classifier.documented(finding)) is not None:
            self.shrunk.add(issue.id)
            if issue.id in self.unconfirmed:
                finding = finding.with_(report=f"{finding.report}\nshrunk, as its documented case did not "
                                               f"confirm it: {self.unconfirmed[issue.id]}")
        return save(finding, save_dir, specs, self.counted, self.on_saved) if save_dir is not None else finding


def run_unit(
    unit: WorkUnit,
    backends: Sequence[Backend],
    *,
    limits: OpLimits,
    settings: Settings,
    on_example: Callable[[], None] = lambda: None,
    stop_at: Callable[[], float] = lambda: math.inf,
    budget_at: float = math.inf,
    classifier: Classifier | None = None,
    shrunk_issues: set[str] | None = None,
    save_dir: Path | None = None,
    targeting: bool = True,
    on_saved: OnSaved | None = None,
    takes_part: TakesPart | None = None,
    documented: Path | None = None,
    on_smaller: Callable[[Finding], None] | None = None,
) -> UnitResult:
    """Run ``unit`` with Hypothesis under ``settings``: the one driver of tests, mutation tests, campaigns
    and the pytest plugin, so each finds, shrinks and saves failures the same way.

    Args:
        unit: the property, its seed and (for campaigns) its swarm plan; unless ``settings`` is
            derandomized, Hypothesis explores from the unit's seed.
        backends: the implementations to check together.
        limits: an op's case sizes (``Limits``, ``ConvLimits``): the unit draws that op's cases, on the
            backends that run it.
        settings: Hypothesis's settings (the profile, with the example count and database).
        on_example, stop_at, budget_at, classifier, shrunk_issues, targeting, takes_part, documented, on_smaller:
            as for ``UnitBody``: a callback per example, when to stop, when to stop drawing, what counts as known,
            the known issues already shrunk in this process, whether to climb the error ratio, which
            backends check which cases, the corpus whose documented cases confirm a known crash, and a callback
            per failure met (the smallest so far).
        save_dir: where the finding is written as a corpus entry (None: not written).
        on_saved: what is done with that entry once written (``OnSaved``; e.g. the upstream export).

    Returns:
        A ``UnitResult``: counts, coverage, per-backend calls and seconds, the closest passing case, the
        shrunk finding, if any (classified as known or new), and what documented cases replayed found.

    Raises:
        Exception: only an error raised before the first example ran (a harness that cannot start); a
            property failure, or an error once examples ran (flaky or not), becomes the result's finding.
    """
    op = for_limits(limits).op.name
    prop = resolve_property(unit.property)
    backends = [b for b in backends if prop.takes_part(b, op)]
    body = UnitBody(unit, backends, on_example=on_example, stop_at=stop_at, budget_at=budget_at,
                    classifier=classifier, shrunk_issues=shrunk_issues, targeting=targeting, on_saved=on_saved,
                    takes_part=takes_part, documented=documented, on_smaller=on_smaller)
    result = body.result
    before = {b.name: (b.calls, b.window_calls, b.seconds, b.compiled, b.compile_seconds) for b in body.counted}
    test = hypothesis_test(unit, limits, settings, body.example, body.selection)
    try:
        test()
    except UnitStopped:
        result.stopped = time.time() >= stop_at()
        if body.smallest is not None:
            result.finding = body.smallest.with_(
                report=body.smallest.report + "\n(the campaign stopped while shrinking: not fully minimised)")
    except Exception as error:  # a harness or backend bug is a finding too, never a lost campaign
        result.finding = failure_finding(error)
        if result.finding is None:
            if body.last is None:
                raise
            result.finding = harness_error(unit.property, body.counted, error, body.last)
    finally:
        result.backend_calls = {b.name: b.calls - before[b.name][0] for b in body.counted}
        result.window_calls = {b.name: b.window_calls - before[b.name][1] for b in body.counted}
        result.backend_seconds = {b.name: b.seconds - before[b.name][2] for b in body.counted}
        result.backend_compiles = {b.name: b.compiled - before[b.name][3] for b in body.counted
                                   if b.pipelines_compiled is not None}
        result.compile_seconds = {b.name: b.compile_seconds - before[b.name][4] for b in body.counted
                                  if b.pipelines_compiled is not None}
        database = settings.database
        if database is not None and hasattr(database, "keys_used"):
            result.database_keys = set(database.keys_used)
    if result.finding is not None:
        result.finding = body.conclude(result.finding, save_dir)
    result.replayed = [body.conclude(finding, save_dir) for finding in body.replayed]
    return result

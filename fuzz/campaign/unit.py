"""The one Hypothesis driver: a seeded run of one property over a set of backends (a work unit).

Tests, the mutation tests and campaigns all drive the properties through ``run_unit``. A unit
counts every example and every backend call, tallies the case axes it drew (``event()``), climbs
the error/tolerance ratio (``target()``), and turns the minimal failing example Hypothesis reports
into a ``Finding``, classified as known or new (``fuzz.corpus.known_issues.Classifier``). With
``save_dir`` the finding is written there as a corpus entry and its report ends with the
``lafuzz repro`` command that re-checks it.

Two things keep a campaign honest and exploring:

- a failure a documented known issue covers is shrunk once per worker (so the corpus gets one
  minimal case per known issue); afterwards the backend at fault sits out the cases the issue
  affects (counted as known) while the other backends still check them, so it does not end every
  unit, nor restart a crashed worker per case. Passing every documented issue as already shrunk
  makes a backend sit out every case its documented issues affect (what the tests do);
- a unit stops at the next example once ``stop_at`` (a wall-clock time) has passed: the campaign's
  budget or Ctrl-C. What it checked so far is kept, and a failure it was shrinking is kept as the
  smallest failing case reached (marked as not fully shrunk).
"""

from __future__ import annotations

import math
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from hypothesis import event, given, seed, target
from hypothesis import settings as Settings
from hypothesis.errors import FlakyFailure

from fuzz.backends import Backend, Capabilities, ChainCall
from fuzz.campaign.coverage import buckets
from fuzz.campaign.shard import WorkUnit
from fuzz.corpus.entry import Entry, write_entry
from fuzz.corpus.known_issues import Classifier
from fuzz.engine.case import Case
from fuzz.engine.chains import Chain
from fuzz.engine.compare import RATIO_CAP
from fuzz.engine.properties import CheckResult, resolve_property
from fuzz.engine.strategies import Limits
from fuzz.findings import Finding, Kind, PropertyFailure


class CountingBackend(Backend):
    """Delegates to ``inner`` and counts its calls (what "cases run" means per backend; a chain counts
    each of its calls)."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0

    def capabilities(self) -> Capabilities:
        return self.inner.capabilities()

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        self.calls += 1
        return self.inner.run(case)

    def run_chain(self, case: Case, chain: Chain) -> list[ChainCall]:
        self.calls += chain.calls
        return self.inner.run_chain(case, chain)

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
    checked: int = 0
    """Examples that compared something (0 means the unit was vacuous for these backends)."""
    backend_calls: dict[str, int] = field(default_factory=dict)
    coverage: Counter = field(default_factory=Counter)
    ratios: Counter = field(default_factory=Counter)
    """Examples per decade of their worst error/tolerance ratio (``ratio_bucket``)."""
    finding: Finding | None = None
    database_keys: set[bytes] = field(default_factory=set)
    parts: dict[str, float] = field(default_factory=dict)
    """Worst passing error/tolerance ratio per ``"backends|output"`` / ``"backends|slot j"``."""
    known: Counter = field(default_factory=Counter)
    """Known-issue id -> examples it covered (counted, not shrunk again)."""
    skips: Counter = field(default_factory=Counter)
    """``"backend: reason"`` -> examples a backend took no part in."""
    stopped: bool = False
    """The unit ended at ``stop_at`` before Hypothesis was done with it."""
    tier: str = ""
    """The size tier of its swarm plan (or the fixed ``--limits`` name)."""
    seconds: float = 0.0
    """Wall time of the unit in its worker."""


class UnitStopped(BaseException):
    """Raised inside a unit's test body at ``stop_at``; a ``BaseException`` so Hypothesis does not
    mistake it for a failure to shrink."""


def _harness_error(unit: WorkUnit, backends: Sequence[Backend], error: Exception, case: Case) -> Finding:
    first_line = str(error).splitlines()[0] if str(error) else ""
    return Finding(property=unit.property, backends=tuple(b.name for b in backends), kind=Kind.HARNESS_ERROR,
                   signature=f"{type(error).__name__}: {first_line}",
                   report="".join(traceback.format_exception(error)), case=case)


def _flaky(flaky: FlakyFailure) -> Finding:
    """The finding inside a failure that did not recur when Hypothesis replayed it (a racy backend)."""
    failure = next((e for e in flaky.exceptions if isinstance(e, PropertyFailure)), None)
    if failure is None:
        raise flaky
    finding = failure.finding
    return finding.with_(report=finding.report + "\nflaky: this case did not fail on every run")


def save(finding: Finding, root: Path) -> Finding:
    """Write ``finding`` as a corpus entry under ``root``; its report gains the command that re-checks it."""
    path = Path(root) / Entry(finding).relative_dir()
    command = f"lafuzz repro {path} --backends {','.join(finding.backends)}"
    saved = finding.with_(report=f"{finding.report}\nminimal case: {finding.case.summary()}\nreproduce: {command}")
    write_entry(root, Entry(saved))
    return saved


def run_unit(
    unit: WorkUnit,
    backends: Sequence[Backend],
    *,
    limits: Limits,
    settings: Settings,
    on_example: Callable[[], None] = lambda: None,
    stop_at: Callable[[], float] = lambda: math.inf,
    budget_at: float = math.inf,
    classifier: Classifier | None = None,
    shrunk_issues: set[str] | None = None,
    save_dir: Path | None = None,
) -> UnitResult:
    """Run ``unit`` with Hypothesis under ``settings``; never raises a property failure.

    Unless ``settings`` is derandomized, Hypothesis explores from the unit's seed. ``stop_at()`` is
    the wall-clock time (``time.time()``) at which the unit ends early; at ``budget_at`` it stops
    drawing new examples unless it is shrinking a failure (its cost budget); ``shrunk_issues`` holds the
    documented issues already shrunk by this process (updated here); ``classifier`` decides what is
    known (default: the documented issues in play for these backends' implementations);
    ``save_dir`` receives the finding as a corpus entry.
    """
    prop = resolve_property(unit.property)
    counted = [b if isinstance(b, CountingBackend) else CountingBackend(b) for b in backends]
    classifier = classifier or Classifier.for_backends(counted)
    result = UnitResult(unit)
    shrunk = shrunk_issues if shrunk_issues is not None else set()
    before = {b.name: b.calls for b in counted}
    last: list[Case] = []
    chasing: list[str] = []
    """The documented issue this unit is shrinking (at most one)."""
    smallest: list[Finding] = []
    """The latest failure raised: Hypothesis only re-runs smaller failing cases while shrinking."""

    def check(case: Case) -> CheckResult:
        declined = {b.name: i.id for b in counted
                    if (i := classifier.affecting(b.name, case)) is not None and i.id in shrunk}
        result.known.update(declined.values())
        taking_part = [b for b in counted if b.name not in declined]
        try:
            return prop.check(case, taking_part) or CheckResult()
        except PropertyFailure as failure:
            issue = classifier.documented(failure.finding)
            if issue is not None and issue.id not in chasing and (chasing or issue.id in shrunk):
                result.known[issue.id] += 1
                return CheckResult(comparisons=1)
            if issue is not None and not chasing:
                chasing.append(issue.id)
            smallest[:] = [failure.finding]
            raise

    def body(case: Case) -> None:
        now = time.time()
        if now >= stop_at() or (now >= budget_at and not smallest):
            raise UnitStopped
        last[:] = [case]
        labels = buckets(case)
        for label in labels:
            event(label)
        result.examples += 1
        result.coverage.update(labels)
        on_example()
        checked = check(case)
        result.checked += checked.comparisons > 0
        result.ratios[ratio_bucket(checked.max_ratio)] += 1
        for who, why in checked.skipped.items():
            result.skips[f"{who}: {why}"] += 1
        for part, ratio in checked.parts.items():
            result.parts[part] = max(result.parts.get(part, 0.0), ratio)
        target(min(checked.max_ratio, RATIO_CAP), label=f"{unit.property} error/tolerance")

    # a distinct database key per unit and backend selection
    body._hypothesis_internal_add_digest = f"{unit.key}:{','.join(b.name for b in counted)}".encode()
    test = given(prop.strategy(limits))(body)
    if not settings.derandomize:
        test = seed(unit.seed)(test)
    test = Settings(settings, report_multiple_bugs=False)(test)
    try:
        test()
    except PropertyFailure as failure:
        result.finding = failure.finding
    except FlakyFailure as flaky:
        result.finding = _flaky(flaky)
    except UnitStopped:
        result.stopped = time.time() >= stop_at()
        if smallest:
            finding = smallest[0]
            result.finding = finding.with_(
                report=finding.report + "\n(the campaign stopped while shrinking: not fully minimised)")
    except Exception as error:  # a harness or backend bug is a finding too, never a lost campaign
        if not last:
            raise
        result.finding = _harness_error(unit, counted, error, last[0])
    finally:
        result.backend_calls = {b.name: b.calls - before[b.name] for b in counted}
        database = settings.database
        if database is not None and hasattr(database, "keys_used"):
            result.database_keys = set(database.keys_used)
    if result.finding is not None:
        result.finding = classifier.classify(result.finding)
        if (issue := classifier.documented(result.finding)) is not None:
            shrunk.add(issue.id)
        if save_dir is not None:
            result.finding = save(result.finding, save_dir)
    return result

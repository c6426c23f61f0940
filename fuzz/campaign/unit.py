"""One work unit of a campaign: a seeded Hypothesis run of one property over a set of backends.

The unit counts every example and every backend call, tallies the case axes it drew, and turns
the minimal failing example Hypothesis reports into a ``Finding`` (the shrunk case plus the
property's verdict). Properties and backends are found by name in the engine's registries, or as
``module:attribute`` so that test-only fakes reach spawned worker processes too.

Two things keep a campaign honest and exploring:

- a failure covered by ``fuzz.corpus.known_issues`` is shrunk once per worker (so the corpus gets one
  minimal case per known issue); afterwards the backend at fault sits out the cases the issue
  affects (counted as known) while the other backends still check them, so it does not end every
  unit, nor restart a crashed worker per case;
- a unit stops at the next example once ``stop_at`` (a wall-clock time) has passed: the campaign's
  budget or Ctrl-C. What it checked so far is kept, and a failure it was shrinking is kept as the
  smallest failing case reached (marked as not fully shrunk).
"""

from __future__ import annotations

import importlib
import math
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import event, given, seed, settings, target

from fuzz.backends import Backend, Capabilities, create
from fuzz.backends.isolation import isolated
from fuzz.campaign.database import UnitDatabase
from fuzz.campaign.shard import WorkUnit
from fuzz.corpus.known_issues import KnownIssue, known_issue
from fuzz.engine.case import Case
from fuzz.engine.compare import RATIO_CAP, Mismatch
from fuzz.engine.properties import PROPERTIES, CheckResult, Property, PropertyFailure
from fuzz.engine.strategies import Limits, case_axes
from oracles.validation import ValidationError


def _import(spec: str) -> Any:
    module_name, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def resolve_property(name: str) -> Property:
    """A property by registry name or ``module:attribute``; raises ``KeyError`` listing the known ones."""
    if ":" in name:
        return _import(name)
    try:
        return PROPERTIES[name]
    except KeyError:
        raise KeyError(f"unknown property {name!r}; known: {', '.join(PROPERTIES)}") from None


ISOLATED_PREFIXES = ("ort-",)
"""Backends run in a crash-isolated worker process for ``ISOLATED_PROPERTIES``: native code that
invalid input can kill (a segfault in ORT must become a ``crash`` finding, not the end of the
campaign)."""

ISOLATED_PROPERTIES = ("error-parity",)
"""Properties that feed invalid input, the input that crashes native code. Valid cases run in
process: isolation costs a pipe round trip per call and a second copy of every backend."""


def resolve_backend(name: str, *, isolate: bool = False) -> Backend:
    """A backend by factory name or ``module:Class`` (may raise ``Unavailable``).

    With ``isolate``, the ORT backends run in a worker process (``fuzz.backends.isolation``).
    """
    if ":" in name:
        return _import(name)()
    if isolate and name.startswith(ISOLATED_PREFIXES):
        return isolated(name)
    return create(name)


class CountingBackend(Backend):
    """Delegates to ``inner`` and counts its calls (what "cases run" means per backend)."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0

    def capabilities(self) -> Capabilities:
        return self.inner.capabilities()

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        self.calls += 1
        return self.inner.run(case)

    def close(self) -> None:
        self.inner.close()


def axes(case: Case) -> list[str]:
    """The coverage labels of a case (the engine's axes; an invalid case by the rule it breaks)."""
    try:
        return case_axes(case)
    except ValidationError:
        return [f"broken-rule={case.notes.get('broken_rule', 'unknown')}", f"dtype={case.dtype}"]


def ratio_bucket(ratio: float) -> str:
    """A decade of error/tolerance, for the report's histogram (``"1e-3"`` = in [1e-3, 1e-2))."""
    if ratio <= 0:
        return "0"
    return f"1e{math.floor(math.log10(min(ratio, RATIO_CAP)))}"


@dataclass
class Finding:
    """A minimal failing case and the property's verdict on it."""

    property: str
    backends: tuple[str, ...]
    kind: str
    signature: str
    report: str
    case: Case
    mismatch: dict[str, Any] | None = None
    known_issue: str | None = None
    """The id of the documented issue (``fuzz.corpus.known_issues``) this finding is an instance of, if any
    (an id: findings cross process boundaries, issues hold functions)."""


@dataclass
class UnitResult:
    """What one unit did: counts, coverage, the finding (if any) and the database keys it used."""

    unit: WorkUnit
    examples: int = 0
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
    stopped: bool = False
    """The unit ended at ``stop_at`` before Hypothesis was done with it."""


def mismatch_facts(mismatch: Mismatch | None) -> dict[str, Any] | None:
    """Where and by how much a comparison failed, as JSON-ready values (None without a mismatch)."""
    if mismatch is None:
        return None
    facts = {"pair": "/".join(mismatch.backends), "tensor": mismatch.tensor, "slot": mismatch.slot,
             "reason": mismatch.reason, "where": mismatch.where(), "ratio": float(mismatch.ratio)}
    for name in ("error", "tolerance", "actual", "expected"):
        value = getattr(mismatch, name)
        facts[name] = None if value is None else float(value)
    return facts


COVERS_MISMATCH = ("wrong-result", "mismatch")
"""A known wrong result covers a property's ``mismatch`` failures on the backend at fault."""


def covering_issue(failure: PropertyFailure, case: Case) -> KnownIssue | None:
    """The known issue of one of the failing backends that covers this failure, if any."""
    failing = failure.case if failure.case is not None else case
    for name in failure.backends:
        issue = known_issue(name, failing)
        covers = issue is not None and (issue.kind == failure.kind or (issue.kind, failure.kind) == COVERS_MISMATCH)
        if covers:
            return issue
    return None


def finding_from(failure: PropertyFailure, case: Case) -> Finding:
    """The finding of a property failure (its own case when it carries one, else ``case``)."""
    return Finding(
        property=failure.property,
        backends=tuple(failure.backends),
        kind=failure.kind,
        signature=failure.signature,
        report=failure.report,
        case=failure.case if failure.case is not None else case,
        mismatch=mismatch_facts(failure.mismatch),
        known_issue=issue.id if (issue := covering_issue(failure, case)) is not None else None,
    )


def declined_known(backends: Sequence[Backend], case: Case, shrunk: set[str]) -> dict[str, str]:
    """Backend name -> known issue id, for the backends a known issue already shrunk here affects.

    Such a backend sits the case out (the issue is counted instead): its answer is known to be
    wrong, and for a crash, running it would cost a worker restart. The others still check the case.
    """
    declined = {}
    for b in backends:
        issue = known_issue(b.name, case)
        if issue is not None and issue.id in shrunk:
            declined[b.name] = issue.id
    return declined


class UnitStopped(BaseException):
    """Raised inside a unit's test body at ``stop_at``; a ``BaseException`` so Hypothesis does not
    mistake it for a failure to shrink."""


def _harness_error(unit: WorkUnit, backends: Sequence[Backend], error: Exception, case: Case) -> Finding:
    return Finding(
        property=unit.property,
        backends=tuple(b.name for b in backends),
        kind="harness-error",
        signature=f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}",
        report="".join(traceback.format_exception(error)),
        case=case,
    )


def run_unit(
    unit: WorkUnit,
    backends: Sequence[CountingBackend],
    *,
    limits: Limits,
    base: settings,
    max_examples: int,
    database: UnitDatabase | None,
    on_example: Callable[[], None] = lambda: None,
    stop_at: Callable[[], float] = lambda: math.inf,
    shrunk_issues: set[str] | None = None,
) -> UnitResult:
    """Run ``unit`` with Hypothesis exploring from the unit's seed; never raises a property failure.

    ``stop_at()`` is the wall-clock time (``time.time()``) at which the unit ends early;
    ``shrunk_issues`` holds the known issues already shrunk by this worker (updated here).
    """
    prop = resolve_property(unit.property)
    result = UnitResult(unit)
    shrunk = shrunk_issues if shrunk_issues is not None else set()
    before = {b.name: b.calls for b in backends}
    last: list[Case] = []
    chasing: list[str] = []
    """The known issue this unit is shrinking (at most one)."""
    smallest: list[PropertyFailure] = []
    """The latest failure raised: Hypothesis only re-runs smaller failing cases while shrinking."""

    def check(case: Case) -> CheckResult:
        declined = declined_known(backends, case, shrunk)
        result.known.update(declined.values())
        taking_part = [b for b in backends if b.name not in declined]
        try:
            return prop.check(case, taking_part) or CheckResult()
        except PropertyFailure as failure:
            issue = covering_issue(failure, case)
            if issue is not None and issue.id not in chasing and (chasing or issue.id in shrunk):
                result.known[issue.id] += 1
                return CheckResult(comparisons=1)
            if issue is not None and not chasing:
                chasing.append(issue.id)
            smallest[:] = [failure]
            raise

    @settings(base, max_examples=max_examples, database=database, derandomize=False, report_multiple_bugs=False)
    @seed(unit.seed)
    @given(prop.strategy(limits))
    def body(case: Case) -> None:
        if time.time() >= stop_at():
            raise UnitStopped
        last[:] = [case]
        labels = axes(case)
        for label in labels:
            event(label)
        result.examples += 1
        result.coverage.update(labels)
        on_example()
        checked = check(case)
        result.ratios[ratio_bucket(checked.max_ratio)] += 1
        for part, ratio in checked.parts.items():
            result.parts[part] = max(result.parts.get(part, 0.0), ratio)
        target(min(checked.max_ratio, RATIO_CAP), label=f"{unit.property} error/tolerance")

    try:
        body()
    except PropertyFailure as failure:
        result.finding = finding_from(failure, last[-1])
    except UnitStopped:
        result.stopped = True
        if smallest:
            result.finding = finding_from(smallest[0], last[-1])
            result.finding.report += "\n(the campaign stopped while shrinking: not fully minimised)"
    except Exception as error:  # a harness or backend bug is a finding too, never a lost campaign
        if not last:
            raise
        result.finding = _harness_error(unit, backends, error, last[0])
    finally:
        result.backend_calls = {b.name: b.calls - before[b.name] for b in backends}
        if database is not None:
            result.database_keys = set(database.keys_used)
    if result.finding is not None and result.finding.known_issue is not None:
        shrunk.add(result.finding.known_issue)
    return result

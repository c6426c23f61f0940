"""The correctness plan as pytest items: one test per property, run on the selected backends together.

Each item's function is an ordinary Hypothesis test of no arguments, built by the same code as a
campaign's work units (``fuzz.campaign.unit.hypothesis_test`` around ``UnitBody.example``): no
fixtures, no parametrization, so HypoFuzz and other tools that drive ``@given`` tests can run it
as pytest collected it. Its backends come from the session's ``BackendPool`` at the first example
(the item's ``setup`` asks first, so a missing backend skips the test with the reason before
Hypothesis starts). Documented ORT defects (``fuzz.corpus.known_issues``) do not fail the plan: the
backend at fault sits out the cases they affect, as in this repository's own property tests.

When the property fails, Hypothesis hands back its minimal case; the item saves it as a corpus entry
(an ONNX Runtime finding is exported beside it as an upstream bug report) and fails with the property's
report (the mismatch report for a wrong result) ending in the ``lafuzz repro`` command that re-checks it.
A test whose every example was skipped by its backends (a dtype or feature they lack) is reported as
skipped with their reasons, never as passed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as Settings
from hypothesis.errors import FlakyFailure

from fuzz.campaign.shard import Shard, work_units
from fuzz.campaign.unit import UnitBody, failure_finding, hypothesis_test
from fuzz.campaign.worker import plan_for
from fuzz.corpus.known_issues import KNOWN_ISSUES
from fuzz.engine import properties
from fuzz.engine.properties import resolve_property
from fuzz.export.exporter import export_upstream
from fuzz.model.case import Case
from fuzz.model.findings import Finding, PropertyFailure
from fuzz.pytest_plugin.options import PlanOptions
from fuzz.pytest_plugin.pool import BackendPool

PLAN_NODE = "lafuzz"
"""The collector's node id: tests are ``lafuzz::<property>[<backends>]``."""

EVERY_DOCUMENTED_ISSUE = frozenset(issue.id for issue in KNOWN_ISSUES)
"""Passed as already shrunk: a backend sits out every case a documented issue of its own affects."""


class PropertyRun:
    """One property on one backend selection: the ``UnitBody`` behind its test, made with its backends."""

    def __init__(self, name: str, specs: tuple[str, ...], pool: BackendPool, corpus: Path) -> None:
        self.unit = next(work_units([name], 0, Shard()))
        """The unit a campaign with seed 0 runs first for this property (its seed picks a swarm slice)."""
        self.specs, self.pool, self.corpus = specs, pool, corpus
        self.isolate = resolve_property(name).invalid_input
        self.body: UnitBody | None = None

    def open(self) -> UnitBody:
        """The body over the selected backends, made once; skips the calling test if one is unavailable."""
        if self.body is None:
            backends = self.pool.need(self.specs, isolate=self.isolate)
            self.body = UnitBody(self.unit, backends, shrunk_issues=set(EVERY_DOCUMENTED_ISSUE),
                                 on_saved=export_upstream)
        return self.body

    def example(self, case: Case) -> None:
        """The Hypothesis test's body."""
        self.open().example(case)

    def test(self, limits: str, settings: Settings) -> Any:
        """This run as an ordinary Hypothesis test function of no arguments."""
        plan = plan_for(limits, self.unit, settings.max_examples)
        return hypothesis_test(self.unit, plan.limits, settings, self.example, ",".join(self.specs))

    def conclude(self, error: BaseException) -> Finding | None:
        """The failure ``error`` carries, classified and saved under the corpus directory (None: not a
        property failure)."""
        finding = failure_finding(error)
        if finding is None:
            return None
        body = self.open()
        return body.conclude(finding, self.corpus, {b.name: s for b, s in zip(body.counted, self.specs, strict=True)})


class PropertyTest(pytest.Function):
    """One property of the plan; ``self.obj`` is its Hypothesis test."""

    def __init__(self, *, run: PropertyRun, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.run = run

    def setup(self) -> None:
        self.run.open()
        super().setup()

    def runtest(self) -> None:
        try:
            super().runtest()
        except (PropertyFailure, FlakyFailure) as error:
            finding = self.run.conclude(error)
            if finding is None:
                raise
        else:
            finding = None
        if finding is not None:  # outside the handler: the report alone, not the exceptions behind it
            pytest.fail(finding.report, pytrace=False)
        result = self.run.open().result
        self.user_properties.extend(
            [
                ("examples", result.examples),
                ("checked", result.checked),
                ("known_issue_cases", sum(result.known.values())),
            ]
        )
        if result.checked == 0:
            pytest.skip(f"{self.run.unit.property} checked nothing on {','.join(self.run.specs)}: {dict(result.skips)}")

    def reportinfo(self) -> tuple[Path, None, str]:
        return Path(properties.__file__), None, f"lafuzz {self.name}"


class Plan(pytest.Collector):
    """The correctness plan: a ``PropertyTest`` for each selected property."""

    def __init__(self, *, options: PlanOptions, pool: BackendPool, settings: Settings, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.options, self.pool, self.settings = options, pool, settings

    def collect(self) -> list[PropertyTest]:
        tests = []
        for name in self.options.properties:
            run = PropertyRun(name, self.options.backends, self.pool, self.options.corpus)
            tests.append(
                PropertyTest.from_parent(
                    self,
                    name=f"{name}[{','.join(self.options.backends)}]",
                    run=run,
                    callobj=run.test(self.options.limits, self.settings),
                )
            )
        return tests

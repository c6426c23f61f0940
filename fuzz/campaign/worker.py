"""The worker side of a campaign: one process's backends, created once and reused by every unit.

A ``Worker`` holds two backend sets: the backends themselves for the properties that feed valid
cases, and crash-isolated copies (``fuzz.backends.isolation``) for ``ISOLATED_PROPERTIES``, created on the
first unit that needs them. It runs the units it is handed (``fuzz.explore.run_unit``) until the
shared stop time, and re-checks the findings other shards published in the example database.
"""

from __future__ import annotations

import hashlib
import signal
from collections.abc import Callable
from typing import Any

from fuzz.backends import Unavailable
from fuzz.campaign import profiles
from fuzz.campaign.database import UnitDatabase, open_database, pack_case, shared_key, unpack_case
from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.unit import (
    ISOLATED_PROPERTIES,
    CountingBackend,
    Finding,
    UnitResult,
    finding_from,
    resolve_backend,
    resolve_property,
    run_unit,
)
from fuzz.engine.properties import PropertyFailure
from fuzz.engine.strategies import Limits

LIMITS: dict[str, Callable[[], Limits]] = {
    "campaign": Limits.campaign, "ci": Limits.ci, "default": Limits.default, "big": Limits.big,
}
"""``--limits`` name -> case size caps."""


class Worker:
    """A process's backends, settings and view of the shared findings.

    ``config`` is a ``fuzz.campaign.CampaignConfig``; ``stop_at()`` the wall-clock time at which
    running units end; ``on_example`` is called once per example (the progress counter).
    """

    def __init__(self, config: Any, on_example: Callable[[], None] = lambda: None,
                 stop_at: Callable[[], float] = lambda: float("inf")) -> None:
        self.config = config
        self.backends = [CountingBackend(resolve_backend(n)) for n in config.backends]
        self._isolated: list[CountingBackend] | None = None
        self.names = tuple(b.name for b in self.backends)
        self.limits = LIMITS[config.limits]()
        self.base = profiles.get("campaign")
        self.database = open_database(config.database_spec())
        self.on_example = on_example
        self.stop_at = stop_at
        self.seen_shared: set[bytes] = set()
        self.shrunk_issues: set[str] = set()

    def backends_for(self, property_name: str) -> list[CountingBackend]:
        """The isolated set for properties that feed invalid input (when isolation is on), else the plain one."""
        if not self.config.isolate or property_name not in ISOLATED_PROPERTIES:
            return self.backends
        if self._isolated is None:
            self._isolated = [CountingBackend(resolve_backend(n, isolate=True)) for n in self.config.backends]
        return self._isolated

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
                prop.check(case, self.backends_for(property_name))
            except PropertyFailure as failure:
                finding = finding_from(failure, case)
                finding.report = "(published by another shard)\n" + finding.report
                found.append(finding)
        return found

    def run(self, unit: WorkUnit) -> tuple[UnitResult, list[Finding]]:
        """Run one unit; publish its finding for the other shards."""
        shared = self.shared_findings(unit.property)
        database = UnitDatabase(self.database, f"lafuzz/unit/{unit.key}/{','.join(self.names)}")
        result = run_unit(
            unit,
            self.backends_for(unit.property),
            limits=self.limits,
            base=self.base,
            max_examples=self.config.examples_per_unit,
            database=database,
            on_example=self.on_example,
            stop_at=self.stop_at,
            shrunk_issues=self.shrunk_issues,
        )
        if result.finding is not None:
            value = pack_case(result.finding.case)
            self.seen_shared.add(hashlib.sha256(value).digest())
            self.database.save(shared_key(unit.property, self.names), value)
        return result, shared

    def describe(self) -> dict[str, Any]:
        """Each backend's adapter, versions, window support, dtypes and notes (for the report)."""
        described = {}
        for b in self.backends:
            caps = b.capabilities()
            described[b.name] = {"device": caps.device, "versions": caps.versions, "window": caps.window,
                                 "dtypes": list(caps.dtypes), "notes": list(caps.notes)}
        return described

    def close(self) -> None:
        for b in [*self.backends, *(self._isolated or [])]:
            b.close()


_WORKER: Worker | None = None


def init_worker(config: Any, counter: Any, stop: Any) -> None:
    """Process-pool initializer: Ctrl-C is the parent's business; build this process's backends once."""
    global _WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def count() -> None:
        with counter.get_lock():
            counter.value += 1

    _WORKER = Worker(config, count, lambda: stop.value)


def run_in_worker(unit: WorkUnit) -> tuple[UnitResult, list[Finding]]:
    """Pool task: run ``unit`` on this process's worker."""
    assert _WORKER is not None, "worker used before its initializer ran"
    return _WORKER.run(unit)


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

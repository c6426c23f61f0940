"""The worker side of a campaign: one process's backends, created once and reused by every unit.

A ``Worker`` holds the backends themselves for the properties that feed valid cases, and, for a
property that feeds invalid input (``Property.invalid_input``), crash-isolated copies of the
backends that declare themselves ``crash_prone`` (created on the first unit that needs them). It
runs the units it is handed (``fuzz.campaign.unit.run_unit``) until the shared stop time, and
re-checks the findings other shards published in the example database.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import signal
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import settings as Settings

from fuzz import atomic, environment
from fuzz.backends import Backend, Capabilities, Lost, Unavailable, backend_class, create, create_side_by_side
from fuzz.backends.device_choice import assign_worker, worker_number
from fuzz.backends.remembered import Remembered
from fuzz.campaign import profiles, swarm
from fuzz.campaign.database import UnitDatabase, campaign_database, shared_key
from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.summary import NATIVE_LOG
from fuzz.campaign.swarm import UnitPlan
from fuzz.campaign.unit import CountingBackend, UnitResult, harness_error, run_unit
from fuzz.corpus.classifier import Classifier
from fuzz.corpus.entry import CorpusError, Entry, from_bytes, marks, to_bytes
from fuzz.corpus.shrunk import preshrunk, shrunk_by_the_first_worker
from fuzz.engine.op_testing import PRESETS, for_op
from fuzz.engine.properties import resolve_property
from fuzz.model.case import Case
from fuzz.model.findings import Finding, PropertyFailure
from fuzz.model.ops import LINEAR_ATTENTION
from fuzz.ops import registry

SWARM = "swarm"
"""``--limits swarm`` (the default): each unit draws its own slice of the contract (``fuzz.campaign.swarm``)."""

UNFINISHED = ".lafuzz-unfinished"
"""Under a campaign's ``--out``: each running unit's smallest failure so far (``Worker.keep_unfinished``), which the
campaign keeps should the unit never end (its worker hung, or died); removed at the campaign's end."""

LIMITS = PRESETS
"""``--limits`` names of the fixed size caps every unit uses (each op has them: ``OpTesting.preset``)."""


LIMIT_NAMES = (SWARM, *LIMITS)
"""Every ``--limits`` name (the campaign's and the pytest plugin's)."""


def plan_for(limits: str, unit: WorkUnit, examples: int, ops: Sequence[str] = (LINEAR_ATTENTION.name,)) -> UnitPlan:
    """What ``unit`` draws from under ``--limits limits``: the op it tests, among ``ops`` (those its property
    applies to, or the property's own where it applies to none of them; by the unit's seed in a swarm,
    ``swarm.unit_op``, else in turn by the unit's number), and its own swarm plan of that op or the op's
    fixed slice. A unit the campaign steered (``WorkUnit.arm``, ``WorkUnit.only``) takes the op, tier and kernel
    form of its arm, runs the backends it names and, if it says so, its tier's longest ``T`` range."""
    prop = resolve_property(unit.property)
    candidates = tuple(op for op in ops if prop.applies_to(op)) or prop.ops or registry.op_names()[:1]
    warming_up = unit.number < swarm.WARM_UP_ROUNDS
    arm, only = unit.arm, unit.only  # a unit the campaign steered: its op, tier and form are given
    if limits == SWARM:
        op = arm.op if arm else swarm.unit_op(unit.seed, candidates)
        return swarm.swarm_of(op).plan(unit.seed, examples, warming_up=warming_up, tier_name=arm.tier if arm else None,
                                       form=arm.form if arm else None, only=only, longest=unit.longest)
    op = arm.op if arm else candidates[unit.number % len(candidates)]
    return UnitPlan(tier=limits, limits=for_op(op).preset(limits), examples=examples, only=only)


def errors_kept(run: Callable[..., UnitResult]) -> Callable[..., UnitResult]:
    """``run`` (``run_unit``), except that an error it raises (one before the unit's first example: there is no case
    to make a finding of) comes back as a result holding its traceback (``UnitResult.error``)."""

    def running(unit: WorkUnit, *args: Any, **kwargs: Any) -> UnitResult:
        try:
            return run(unit, *args, **kwargs)
        except Exception:
            return UnitResult(unit, error=traceback.format_exc())

    return running


class _Gone(Backend):
    """In a worker, a backend the campaign found here (or remembered, ``fuzz.backends.remembered``) that could not be
    created: the worker lists it as lost and never runs it; any call raises ``Lost``."""

    def __init__(self, name: str, why: str) -> None:
        self.name, self.why = name, why

    @property
    def implementation(self) -> None:
        return None

    def capabilities(self) -> Capabilities:
        raise Lost(self.name, self.why)

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        raise Lost(self.name, self.why)


def unfinished_path(out: Path, unit: WorkUnit) -> Path:
    """Where ``unit``'s smallest failure so far is kept (``UNFINISHED``)."""
    return Path(out) / UNFINISHED / unit.key


def unit_plan(config: Any, unit: WorkUnit) -> UnitPlan:
    """What ``unit`` draws from and how many examples it runs, under the campaign's ``--limits`` and ``--ops``."""
    return plan_for(config.limits, unit, config.examples_per_unit, config.ops)


class Worker:
    """A process's backends, settings and view of the shared findings.

    ``config`` is a ``fuzz.campaign.campaign.CampaignConfig``; ``stop_at()`` the wall-clock time at
    which running units end; ``on_example`` is called once per example (the progress counter).
    """

    def __init__(self, config: Any, on_example: Callable[[], None] = lambda: None,
                 stop_at: Callable[[], float] = lambda: float("inf")) -> None:
        self.config = config
        self.lost: dict[str, str] = {}
        """Backend name -> why this worker could no longer use it (reported with every later unit)."""
        self.backends: list[CountingBackend] = []
        for spec, backend in zip(config.backends, create_side_by_side(config.backends, deferred=True), strict=True):
            if isinstance(backend, Unavailable):
                backend = _Gone(getattr(backend_class(spec), "name", spec), str(backend))
                self.lost[backend.name] = f"it could not be created in a campaign worker: {backend.why}"
            self.backends.append(CountingBackend(backend))
        self._isolated: list[CountingBackend] | None = None
        self.names = tuple(b.name for b in self.backends)
        self.base = profiles.get("campaign")
        self.database = campaign_database(config.database_spec(), config.out)
        self.classifier = Classifier.for_backends(
            self.backends, marks(config.known_corpus) if config.known_corpus else {}, strict=config.strict)
        self.on_example = on_example
        self.campaign_stop_at = stop_at
        self.seen_shared: set[bytes] = set()
        # the worker-process builds sit out their issues' cases; only the first worker shrinks a documented crash
        self.shrunk_issues: set[str] = preshrunk(self.names) | shrunk_by_the_first_worker(self.names, worker_number())

    def stop_at(self) -> float:
        """The campaign's stop time, or now once the example database met a full disk (nothing more can be
        saved: the campaign stops, ``fuzz.campaign.campaign``)."""
        return 0.0 if self.database.out_of_space is not None else self.campaign_stop_at()

    def backends_for(self, property_name: str) -> list[CountingBackend]:
        """For a property that feeds invalid input (isolation on), the crash-prone backends isolated."""
        if not self.config.isolate or not resolve_property(property_name).invalid_input:
            return self.backends
        if self._isolated is None:
            self._isolated = []
            for spec, plain in zip(self.config.backends, self.backends, strict=True):
                if not backend_class(spec).crash_prone:
                    self._isolated.append(plain)
                    continue
                try:
                    self._isolated.append(CountingBackend(create(spec, isolate=True)))
                except Unavailable as err:  # e.g. a lost GPU: the other backends still check invalid input
                    self.lost[plain.name] = f"its crash-isolated worker could not start: {err}"
        return self._isolated

    def usable(self, property_name: str) -> list[CountingBackend]:
        """``backends_for`` without the backends this worker has lost."""
        return [b for b in self.backends_for(property_name) if b.name not in self.lost]

    def shared_findings(self, property_name: str) -> list[Finding]:
        """Re-check the cases other shards published for this property; return those that fail here
        (a value that is not a readable entry, e.g. written by another version, is skipped; a re-check that raises
        is a harness error of those backends, on that case). A documented issue among them counts as shrunk here
        too: its backend sits out the cases it affects from now on."""
        found = []
        prop = resolve_property(property_name)
        for value in list(self.database.fetch(shared_key(property_name, self.names))):
            digest = hashlib.sha256(value).digest()
            if digest in self.seen_shared:
                continue
            self.seen_shared.add(digest)
            try:
                case = from_bytes(value).finding.case
            except CorpusError:
                continue
            try:
                prop.check(case, self.usable(property_name))
            except Lost as lost:
                self.lost[lost.backend] = str(lost)
            except PropertyFailure as failure:
                finding = self.classifier.classify(failure.finding)
                if (issue := self.classifier.documented(finding)) is not None:
                    self.shrunk_issues.add(issue.id)  # the publisher shrank it: this worker need not again
                found.append(finding.with_(report="(published by another shard)\n" + finding.report))
            except Exception as error:  # a backend's bug met on another shard's case: a finding, not the end
                found.append(harness_error(property_name, self.usable(property_name), error, case))
        return found

    def run(self, unit: WorkUnit) -> tuple[UnitResult, list[Finding]]:
        """Run one unit; publish its finding for the other shards (not a documented case it replayed: each shard
        replays that itself, and its property may be one whose backends run in this process). Past the stop time
        the published cases are not re-checked (the unit itself stops at once). An error before the unit's first
        example is handed back as the result's ``error``."""
        shared = self.shared_findings(unit.property) if time.time() < self.stop_at() else []
        database = UnitDatabase(self.database, f"lafuzz/unit/{unit.key}/{','.join(self.names)}")
        plan = unit_plan(self.config, unit)
        started = time.monotonic()
        # invalid input is refused before any work: every backend checks it, however slow on valid cases
        invalid = resolve_property(unit.property).invalid_input
        sit_out = frozenset() if invalid and plan.only is None else swarm.sitting_out(plan, self.names)
        result = errors_kept(run_unit)(
            unit,
            [b for b in self.usable(unit.property) if b.name not in sit_out],
            limits=plan.limits,
            settings=Settings(self.base, max_examples=plan.examples, database=database),
            on_example=self.on_example,
            stop_at=self.stop_at,
            budget_at=time.time() + plan.seconds,
            classifier=self.classifier,
            shrunk_issues=self.shrunk_issues,
            targeting=plan.targeting,
            takes_part=None if invalid or self.config.limits != SWARM else swarm.takes_part,
            documented=self.config.known_corpus,
            on_smaller=lambda finding: self.keep_unfinished(unit, finding),
        )
        with contextlib.suppress(OSError):
            unfinished_path(self.config.out, unit).unlink(missing_ok=True)
        result.tier, result.seconds = plan.tier, time.monotonic() - started
        result.database = self.database.health()
        self.lost.update(result.lost)
        result.lost = dict(self.lost)
        if result.finding is not None:
            value = to_bytes(Entry(result.finding))
            self.seen_shared.add(hashlib.sha256(value).digest())
            self.database.save(shared_key(unit.property, self.names), value)
        return result, shared

    def keep_unfinished(self, unit: WorkUnit, finding: Finding) -> None:
        """Keep ``finding``, the smallest failure ``unit`` has met so far, where the campaign finds it should the unit
        never end (``unfinished_path``). Best effort: a write that fails leaves the one before, and must not change
        what the unit finds (it runs inside the property's check)."""
        with contextlib.suppress(Exception):
            path = unfinished_path(self.config.out, unit)
            path.parent.mkdir(exist_ok=True)
            atomic.write_bytes(path, to_bytes(Entry(self.classifier.classify(finding))))

    def close(self) -> None:
        for b in {id(b): b for b in [*self.backends, *(self._isolated or [])]}.values():
            b.close()


def freeze_built_objects() -> None:
    """Exclude what a worker built before its first unit (modules, libraries, backends) from garbage
    collection: a full collection walks every tracked object, and those live as long as the worker, so
    this cuts the time a worker spends collecting to about a third (docs/campaign.md#history)."""
    gc.collect()
    gc.freeze()


_WORKER: Worker | None = None


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""Signals that stop a campaign gracefully: Ctrl-C at the terminal, and the SIGTERM of ``kill``, ``timeout``,
CI cancellations and batch systems (a Kubernetes pod's first notice)."""


def init_worker(config: Any, counter: Any, stop: Any, numbers: Any) -> None:
    """Process-pool initializer: stopping is the parent's business (``STOP_SIGNALS`` sent to the whole
    process group would otherwise kill a worker mid-unit); take the next worker number (which picks this
    worker's GPU, ``fuzz.backends.device_choice``); build this process's backends once."""
    global _WORKER
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    environment.send_native_output(Path(config.out) / NATIVE_LOG)
    with numbers.get_lock():
        assign_worker(numbers.value)
        numbers.value += 1

    def count() -> None:
        counter.value += 1  # unlocked (``Campaign._run_pool``): a progress count, where a rare lost step is no harm

    _WORKER = Worker(config, count, lambda: stop.value)
    freeze_built_objects()


def run_in_worker(unit: WorkUnit) -> tuple[UnitResult, list[Finding]]:
    """Pool task: run ``unit`` on this process's worker."""
    assert _WORKER is not None, "worker used before its initializer ran"
    return _WORKER.run(unit)


@dataclass
class Probe:
    """Which of the requested backends this machine has: what each can do, and why the others are missing."""

    usable: list[str]
    """The specs (names or ``module:Class``) that could be created, in the order requested."""
    described: dict[str, dict[str, Any]]
    """Backend name -> ``Capabilities.to_json()``."""
    missing: dict[str, str]
    """Spec -> why it cannot be created here."""
    recalled: dict[str, str] = field(default_factory=dict)
    """Spec -> backend name of the usable backends whose description was remembered (``fuzz.backends.remembered``),
    not probed now."""


def probe(specs: list[str], remembered: Remembered | None = None) -> Probe:
    """Create each backend once (in this process) to learn what it can do here; ``KeyError`` for an
    unknown name, ``NoSuchDevice`` for a device chosen on the command line that is not there. The backends whose
    implementation runs in a process of its own start side by side (``fuzz.backends.create_side_by_side``).
    With ``remembered``, a backend whose last probe is still current there is not created, and what the others
    were found to do is remembered."""
    recalled = {spec: known for spec in specs if remembered and (known := remembered.recall(spec)) is not None}
    fresh = [spec for spec in specs if spec not in recalled]
    probed: dict[str, tuple[str, dict[str, Any]] | str] = {}
    for spec, backend in zip(fresh, create_side_by_side(fresh), strict=True):
        if isinstance(backend, Unavailable):
            probed[spec] = str(backend)
            continue
        try:
            probed[spec] = (backend.name, backend.capabilities().to_json())
        finally:
            backend.close()
    if remembered is not None:
        remembered.remember({spec: found for spec, found in probed.items() if not isinstance(found, str)})
    found = Probe([], {}, {}, {spec: name for spec, (name, _) in recalled.items()})
    for spec in specs:
        result = recalled.get(spec) or probed[spec]
        if isinstance(result, str):
            found.missing[spec] = result
        else:
            found.described[result[0]] = result[1]
            found.usable.append(spec)
    return found

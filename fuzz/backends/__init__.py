"""The backend factory: every implementation under test, by name or ``module:Class``, created lazily.

``create(spec, isolate=...)`` is the one way to get a backend: a registry name (``REGISTRY``) or
``module:Class`` (a backend of a user's own, or a test's fake, which spawned workers can import
too). A backend whose package or device is missing raises ``Unavailable`` with the reason;
``probe_all`` lists every name with either its capabilities or that reason. With ``isolate``, a
backend that declares itself ``crash_prone`` runs in a worker process (``fuzz.backends.isolation``).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from fuzz.backends.base import (
    Backend,
    BackendError,
    Capabilities,
    ChainCall,
    Crashed,
    Lost,
    Outcome,
    Rejected,
    TimedOut,
    Unavailable,
    Unsupported,
)
from fuzz.backends.deferred import Deferred
from fuzz.backends.device_choice import NoSuchDevice
from fuzz.backends.isolation import IsolatedBackend, WorkerBackend
from fuzz.backends.registry import REGISTRY, backend_class


@dataclass(frozen=True)
class Availability:
    name: str
    capabilities: Capabilities | None
    reason: str | None


def create(spec: str, *, isolate: bool = False, deferred: bool = False, **options: Any) -> Backend:
    """Create the backend ``spec`` (a registry name or ``module:Class``).

    With ``isolate``, a ``crash_prone`` backend runs in a crash-isolated worker process (the others
    are created in this process either way). With ``deferred``, a backend whose implementation runs in a process of
    its own (``Backend.in_its_own_process``) starts it on first use, so that what it needs is checked then (a
    campaign's workers, once the campaign has found it available; ``fuzz.backends.deferred``). Raises
    ``Unavailable`` (with the reason) or ``KeyError``.
    """
    cls = backend_class(spec)
    if isolate and cls.crash_prone:
        return IsolatedBackend(spec, **options)
    if deferred and issubclass(cls, WorkerBackend):
        return cls(start=False, **options)
    if deferred and cls.in_its_own_process:
        return Deferred(cls, **options)
    return cls(**options)


def create_side_by_side(specs: Sequence[str], **options: Any) -> list[Backend | Unavailable]:
    """``create(spec, **options)`` of each spec, in order, each a backend or why it is unavailable. The backends whose
    implementation runs in a process of their own (``Backend.in_its_own_process``: Node, a browser, a worker) are
    created in threads side by side, since creating one is mostly waiting for its process; the others here, one after
    another. ``KeyError`` for an unknown spec, ``NoSuchDevice`` as ``create`` raises it."""

    def created(spec: str) -> Backend | Unavailable:
        try:
            return create(spec, **options)
        except NoSuchDevice:
            raise
        except Unavailable as err:
            return err

    classes = {spec: backend_class_or_none(spec) for spec in specs}
    elsewhere = [spec for spec, cls in classes.items() if cls is not None and cls.in_its_own_process]
    with ThreadPoolExecutor(max_workers=max(1, len(elsewhere))) as pool:
        started = {spec: pool.submit(created, spec) for spec in elsewhere}
        return [started[spec].result() if spec in started else created(spec) for spec in specs]


def backend_class_or_none(spec: str) -> type[Backend] | None:
    """The class of ``spec``, or None where it cannot be named or imported (``create`` then says why)."""
    try:
        return backend_class(spec)
    except (KeyError, Unavailable):
        return None


def probe_all(names: list[str] | None = None) -> list[Availability]:
    """Try to create each backend (all by default, those in a process of their own side by side,
    ``create_side_by_side``) and report what it can do, or why not; raises ``NoSuchDevice`` when the device chosen
    on the command line is not there."""
    specs = names or list(REGISTRY)
    found = []
    for name, backend in zip(specs, create_side_by_side(specs), strict=True):
        if isinstance(backend, Unavailable):
            found.append(Availability(name, None, str(backend)))
            continue
        try:
            found.append(Availability(name, backend.capabilities(), None))
        finally:
            backend.close()
    return found


__all__ = [
    "REGISTRY",
    "Availability",
    "Backend",
    "BackendError",
    "Capabilities",
    "ChainCall",
    "Crashed",
    "Lost",
    "NoSuchDevice",
    "Outcome",
    "Rejected",
    "TimedOut",
    "Unavailable",
    "Unsupported",
    "WorkerBackend",
    "backend_class",
    "create",
    "create_side_by_side",
    "probe_all",
]

"""The backend factory: every implementation under test, by name, created lazily.

A backend whose package or device is missing raises ``Unavailable`` with the reason at creation;
``probe_all`` lists every name with either its capabilities or that reason.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from fuzz.backends.base import (
    Backend,
    BackendError,
    Capabilities,
    Crashed,
    Outcome,
    Rejected,
    TimedOut,
    Unsupported,
)

REGISTRY: dict[str, str] = {
    "oracle": "fuzz.backends.oracle:OracleBackend",
    "ort-cpu": "fuzz.backends.ort_cpu:OrtCpuBackend",
    "ort-webgpu": "fuzz.backends.ort_webgpu:OrtWebGpuBackend",
    "ort-cuda": "fuzz.backends.ort_cuda:OrtCudaBackend",
    "wgpu": "fuzz.backends.wgpu_kernel:WgpuNativeBackend", "wgpu-dawn": "fuzz.backends.wgpu_kernel:WgpuDawnBackend",
}
"""Backend name -> ``module:class``. Modules are imported only when the backend is created."""


class Unavailable(RuntimeError):
    """A backend cannot be created on this machine; the message says why."""


@dataclass(frozen=True)
class Availability:
    name: str
    capabilities: Capabilities | None
    reason: str | None


def create(name: str, **options: object) -> Backend:
    """Create the backend called ``name``; raises ``Unavailable`` (with the reason) or ``KeyError``."""
    try:
        target = REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown backend {name!r}; known: {', '.join(REGISTRY)}") from None
    module_name, class_name = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise Unavailable(f"{name}: cannot import {module_name}: {err}") from err
    return getattr(module, class_name)(**options)


def probe_all(names: list[str] | None = None) -> list[Availability]:
    """Try to create each backend (all by default) and report what it can do, or why not."""
    found = []
    for name in names or list(REGISTRY):
        try:
            backend = create(name)
        except Unavailable as err:
            found.append(Availability(name, None, str(err)))
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
    "Crashed",
    "Outcome",
    "Rejected",
    "TimedOut",
    "Unavailable",
    "Unsupported",
    "create",
    "probe_all",
]

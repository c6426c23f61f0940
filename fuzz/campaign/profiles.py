"""Hypothesis settings profiles of the suite: ``ci``, ``dev`` and ``campaign``.

``ci`` is reproducible and small (derandomized, no example database; the tests' default); ``dev``
explores more with a local database; ``campaign`` is the long exploration, targeting the worst error ratios and
remembering failures across runs. Cases are built from seeds and checked on real backends, so
``too_slow`` and ``data_too_large`` are expected and suppressed, and no deadline applies (a WebGPU
session compile can take half a second). Only ``dev`` runs Hypothesis's explain phase: it re-runs a
shrunk failure many times to annotate it, which for a crashing case means as many process restarts.

``register()`` makes them Hypothesis profiles (the pytest plugin, ``fuzz.pytest_plugin``, calls it when it
loads), so ``pytest --hypothesis-profile=dev`` selects one the standard way; campaigns take ``get("campaign")``.
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, settings

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large]
_ALL_PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink, Phase.explain)

_BASE = settings.get_profile("default")
"""Hypothesis's own defaults: a profile built from whatever profile is loaded at import time would
inherit its settings (``derandomize`` from ``ci``, for one)."""

PROFILES: dict[str, settings] = {
    "ci": settings(
        _BASE, max_examples=25, derandomize=True, database=None, deadline=None, print_blob=False,
        suppress_health_check=_QUIET, phases=_ALL_PHASES[:-1],
    ),
    "dev": settings(_BASE, max_examples=100, deadline=None, suppress_health_check=_QUIET, print_blob=True),
    "campaign": settings(
        _BASE, max_examples=5000, deadline=None, suppress_health_check=_QUIET, print_blob=True, phases=_ALL_PHASES[:-1],
    ),
}
"""Profile name -> settings, registered with Hypothesis by ``register()``."""


def register() -> None:
    """Register every profile with Hypothesis (idempotent)."""
    for name, profile in PROFILES.items():
        settings.register_profile(name, profile)


def get(name: str) -> settings:
    """The settings of one profile; raises ``KeyError`` naming the known profiles."""
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown Hypothesis profile {name!r}; known: {', '.join(PROFILES)}") from None

"""Shared test set-up: the WebGPU environment (before any backend library loads), the suite's pytest
plugin (``fuzz.pytest_plugin``: it registers the Hypothesis profiles), the profile ``ci`` unless
``pytest --hypothesis-profile=NAME`` picks another, and the backends of this machine, each created once
per test process (the plugin's ``BackendPool``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

from fuzz import environment
from fuzz.backends import REGISTRY, Backend

if TYPE_CHECKING:  # imported by pytest_plugins below, so that pytest can rewrite its asserts
    from fuzz.pytest_plugin.pool import BackendPool

environment.prepare()
pytest_plugins = ["fuzz.pytest_plugin"]  # also its entry point, under this same name: never registered twice

BackendGetter = Callable[..., Backend | str]


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """``ci`` is the suite's default profile; Hypothesis's own plugin, configured after this, then loads
    ``--hypothesis-profile``."""
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def backend(lafuzz_backend_pool: BackendPool) -> BackendGetter:
    """``backend(spec, isolate=False)``: the backend, created once per test process, or (a ``str``)
    why this machine cannot create it, for the test to skip with."""
    return lafuzz_backend_pool.get


@pytest.fixture(scope="session")
def available(backend: BackendGetter) -> dict[str, Backend]:
    """Every registered backend this machine has, by name."""
    return {name: b for name in REGISTRY if isinstance(b := backend(name), Backend)}


@pytest.fixture(scope="session")
def need(backend: BackendGetter) -> Callable[..., Backend]:
    """``need(spec, isolate=False)``: the backend, or skip the test saying why this machine lacks it."""

    def get(spec: str, *, isolate: bool = False) -> Backend:
        found = backend(spec, isolate=isolate)
        if isinstance(found, str):
            pytest.skip(found)
        return found

    return get

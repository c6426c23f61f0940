"""Shared test set-up: the WebGPU environment (before any backend library loads), the Hypothesis
profiles (``ci`` unless ``pytest --hypothesis-profile=NAME`` picks another), and the backends of this
machine, each created once per test process."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from hypothesis import settings

from fuzz import environment
from fuzz.backends import REGISTRY, Backend, Unavailable, create
from fuzz.campaign import profiles

environment.prepare()
profiles.register()
settings.load_profile("ci")  # the default; Hypothesis's own plugin then loads --hypothesis-profile

BackendGetter = Callable[..., Backend | str]


@pytest.fixture(scope="session")
def backend() -> Iterator[BackendGetter]:
    """``backend(spec, isolate=False)``: the backend, created once per test process, or (a ``str``)
    why this machine cannot create it, for the test to skip with."""
    made: dict[tuple[str, bool], Backend | str] = {}

    def get(spec: str, *, isolate: bool = False) -> Backend | str:
        key = (spec, isolate)
        if key not in made:
            try:
                made[key] = create(spec, isolate=isolate)
            except Unavailable as err:
                made[key] = f"backend unavailable here: {err}"
        return made[key]

    yield get
    for found in made.values():
        if isinstance(found, Backend):
            found.close()


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

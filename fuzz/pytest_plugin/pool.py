"""The backends of one pytest session: each created once, on first use, and closed when the session ends.

Property tests, the plugin's ``lafuzz_backends`` fixture and a project's own fixtures share one pool,
so a WebGPU device or an ORT session cache is built once per test process. A backend this machine
cannot create is remembered with the reason, for the test that needs it to skip with.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from fuzz.backends import Backend, Unavailable, create


class BackendPool:
    """Backends by ``(spec, isolate)``: the backend, or (a ``str``) why it cannot be created here."""

    def __init__(self) -> None:
        self._made: dict[tuple[str, bool], Backend | str] = {}

    def get(self, spec: str, *, isolate: bool = False) -> Backend | str:
        """The backend ``spec`` (a registry name or ``module:Class``), created on first use, or why not.

        ``isolate`` as in ``fuzz.backends.create``; an unknown name raises ``KeyError``.
        """
        key = (spec, isolate)
        if key not in self._made:
            try:
                self._made[key] = create(spec, isolate=isolate)
            except Unavailable as err:
                self._made[key] = f"backend unavailable here: {err}"
        return self._made[key]

    def need(self, specs: Sequence[str], *, isolate: bool = False) -> list[Backend]:
        """Every backend of ``specs``, or skip the calling test with the reason the first missing one gives."""
        found: list[Backend] = []
        for spec in specs:
            backend = self.get(spec, isolate=isolate)
            if isinstance(backend, str):
                pytest.skip(backend)
            found.append(backend)
        return found

    def close(self) -> None:
        """Close every backend created."""
        for made in self._made.values():
            if isinstance(made, Backend):
                made.close()
        self._made.clear()

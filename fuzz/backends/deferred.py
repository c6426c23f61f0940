"""A backend created on first use: what a campaign worker holds for a build that runs in a process it starts.

A campaign worker creates every backend of the campaign, and a unit runs a few of them. Creating an ORT build that
runs in Node, in a browser or in another Python starts that process and runs its probe cases; in every worker, for
every campaign, that was most of a worker's start on a 2-core machine (`docs/campaign.md`, the backends
remembered). ``Deferred`` creates the backend when a unit first asks it something, so a unit that leaves it out
never pays for it. A creation that fails then raises ``Lost``, as a worker that cannot be restarted does, and every
later use raises it again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fuzz.backends.base import Backend, Capabilities, ChainCall, Lost, Unavailable
from fuzz.implementation import Implementation
from fuzz.model.case import Case
from fuzz.model.chain import Chain


class Deferred(Backend):
    """``cls(**options)``, created when first asked anything but its name."""

    def __init__(self, cls: type[Backend], **options: Any) -> None:
        self._cls, self._options = cls, options
        self.name = cls.name
        self.crash_prone = cls.crash_prone
        self.in_its_own_process = cls.in_its_own_process
        self._backend: Backend | None = None
        self._failed: Lost | None = None

    def _created(self) -> Backend:
        if self._failed is not None:
            raise self._failed
        if self._backend is None:
            try:
                self._backend = self._cls(**self._options)
            except Unavailable as err:
                self._failed = Lost(self.name, f"it could not be started in a campaign worker: {err}")
                raise self._failed from err
        return self._backend

    @property
    def started(self) -> bool:
        return self._backend is not None

    @property
    def implementation(self) -> Implementation | None:
        """None until created, so that asking starts nothing (a documented issue is then matched by the backend's
        name alone, ``fuzz.corpus.classifier``)."""
        return None if self._backend is None else self._backend.implementation

    def capabilities(self) -> Capabilities:
        return self._created().capabilities()

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        return self._created().run(case)

    def run_outputs(self, case: Case) -> tuple[np.ndarray, ...]:
        return self._created().run_outputs(case)

    def run_chain(self, case: Case, chain: Chain) -> list[ChainCall]:
        return self._created().run_chain(case, chain)

    def resume(self, calls: Sequence[Case], accepted: Sequence[Sequence[int]]) -> list[np.ndarray]:
        return self._created().resume(calls, accepted)

    @property
    def pipelines_compiled(self) -> int | None:
        return None if self._backend is None else self._backend.pipelines_compiled

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()

"""Test-only fakes for the campaign plumbing: deliberately broken backends (no tests here).

It lives in its own module so that spawned campaign workers can import it as
``support.fakes:BrokenBackend`` (pytest puts ``tests/`` on ``sys.path``, which spawn passes on).
"""

from __future__ import annotations

import os

import numpy as np

from fuzz.backends.oracle import OracleBackend
from fuzz.corpus.known_issues import KNOWN_ISSUES
from fuzz.engine.case import Case

REPAIRED_ENV = "LAFUZZ_TEST_BROKEN_REPAIRED"
"""Set to 1 to "repair" the broken backend (so replay can report a known failure as now fixed)."""


class BrokenBackend(OracleBackend):
    """The oracle with a planted bug: slot 0 of a window of 2 or more is doubled."""

    name = "broken"

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        output, state = super().run(case)
        if os.environ.get(REPAIRED_ENV) != "1" and case.state_window >= 2:
            state = state.copy()
            state[0] *= 2.0
            state[0] += 1.0
        return output, state


SHARED_BETA = next(issue for issue in KNOWN_ISSUES if issue.id == "ort-webgpu-shared-beta")


class SharedBetaBackend(OracleBackend):
    """The oracle computing what the ORT WebGPU EP computes: it misreads a shared beta (a known issue)."""

    name = "ort-webgpu"

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        return super().run(SHARED_BETA.misread(case) if SHARED_BETA.applies(case) else case)


class SlightlyOffBackend(OracleBackend):
    """The oracle with every output one step (ulp) higher: it passes every comparison, with a ratio above 0
    (near misses to keep)."""

    name = "slightly-off"

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        output, state = super().run(case)
        return np.nextafter(output, np.inf).astype(output.dtype), state

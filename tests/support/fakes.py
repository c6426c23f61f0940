"""Test-only fakes for the campaign plumbing: deliberately broken backends (no tests here).

It lives in its own module so that spawned campaign workers can import it as
``support.fakes:BrokenBackend`` (pytest puts ``tests/`` on ``sys.path``, which spawn passes on).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from fuzz.backends.base import Capabilities, ChainCall, Crashed, Unsupported
from fuzz.backends.device_choice import DeviceChoice
from fuzz.backends.isolation import IsolatedBackend
from fuzz.backends.oracle import OracleBackend
from fuzz.corpus.known_issues import KNOWN_ISSUES
from fuzz.implementation import Implementation
from fuzz.model.case import Case
from fuzz.model.chain import Chain
from fuzz.model.ops import LINEAR_ATTENTION
from fuzz.model.pack import PACK

REPAIRED_ENV = "LAFUZZ_TEST_BROKEN_REPAIRED"
"""Set to 1 to "repair" the broken backend (so replay can report a known failure as now fixed)."""


class LinearAttentionOracle(OracleBackend):
    """The oracle as a backend of LinearAttention alone: the fakes below plant LinearAttention's bugs, and the
    campaigns they run test that op only (a campaign tests an op two of its backends run)."""

    def capabilities(self) -> Capabilities:
        return replace(super().capabilities(), ops=(LINEAR_ATTENTION.name,))


class BrokenBackend(LinearAttentionOracle):
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


class SharedBetaBackend(LinearAttentionOracle):
    """The oracle computing what the ORT WebGPU EP computes: it misreads a shared beta (a known issue)."""

    name = "ort-webgpu"

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        misread = SHARED_BETA.misread
        assert misread is not None, "the shared-beta issue models what the EP computes"
        return super().run(misread(case) if SHARED_BETA.applies(case) else case)


class SlightlyOffBackend(LinearAttentionOracle):
    """The oracle with every output one step (ulp) higher: it passes every comparison, with a ratio above 0
    (near misses to keep)."""

    name = "slightly-off"

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        output, state = super().run(case)
        return np.nextafter(output, np.inf).astype(output.dtype), state


class _SharedBetaAt(SharedBetaBackend):
    """``SharedBetaBackend`` saying which WebGPU plugin version it is (``version``)."""

    version: str

    def capabilities(self) -> Capabilities:
        return replace(super().capabilities(), implementation=Implementation("onnxruntime-ep-webgpu", self.version))


class SharedBetaAt040(_SharedBetaAt):
    """The shared-beta defect in the version it is documented for."""

    version = "0.4.0"


class SharedBetaAt050(_SharedBetaAt):
    """The shared-beta defect in a build that says it is 0.5.0: the 0.4.0 issue must not cover it."""

    version = "0.5.0"


DEVICE_LOG_ENV = "LAFUZZ_TEST_DEVICE_LOG"
"""A file ``ThreeGpuBackend`` appends ``<pid> <device number>`` to, once per backend made."""
DEVICE_WAIT_ENV = "LAFUZZ_TEST_DEVICE_WAIT"
"""How many processes must have logged a backend before any ``ThreeGpuBackend`` runs a case (so a
fast worker cannot finish a small campaign before a slow one has even started)."""


class ThreeGpuBackend(LinearAttentionOracle):
    """The oracle on one of three pretend GPUs, chosen the way the real GPU backends choose theirs
    (``fuzz.backends.device_choice``): this machine has one adapter, so spreading is tested here."""

    name = "three-gpus"
    crash_prone = True
    """So that ``create(..., isolate=True)`` runs it in a worker process, as it does the ORT backends."""
    DEVICES = ("fake GPU alpha", "fake GPU beta", "fake GPU gamma")

    def __init__(self) -> None:
        self.device = DeviceChoice.from_environment().pick(self.DEVICES, "three-gpus devices") or 0
        self.log = os.environ.get(DEVICE_LOG_ENV)
        if self.log:
            with open(self.log, "a") as out:
                out.write(f"{os.getpid()} {self.device}\n")

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        waiting_for = int(os.environ.get(DEVICE_WAIT_ENV) or 0)
        deadline = time.monotonic() + 120
        while self.log and time.monotonic() < deadline and len(_logged_processes(self.log)) < waiting_for:
            time.sleep(0.05)
        return super().run(case)

    def capabilities(self) -> Capabilities:
        return replace(super().capabilities(), device=self.DEVICES[self.device], devices=self.DEVICES)


def _logged_processes(log: str) -> set[str]:
    with open(log) as lines:
        return {line.split()[0] for line in lines if line.strip()}


DIES_ONCE_ENV = "LAFUZZ_TEST_DIES_ONCE"
"""A path: the first ``DiesOnceBackend`` call of a campaign creates it and kills its own process."""


class DiesOnceBackend(LinearAttentionOracle):
    """The oracle, except that its first call in a campaign kills the worker process running it (SIGKILL,
    as the OOM killer would), once: the flag file named by ``DIES_ONCE_ENV`` records that it happened."""

    name = "dies-once"

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        flag = os.environ[DIES_ONCE_ENV]
        try:
            descriptor = os.open(flag, os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            return super().run(case)
        os.close(descriptor)
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable: the process was killed")


class CompilingBackend(OracleBackend):
    """The oracle as a LinearAttention backend that compiles a "pipeline" per new (dtype, d_k), as the WGSL
    kernel compiles one per geometry class, and says so (``Backend.pipelines_compiled``)."""

    name = "compiling"

    def __init__(self) -> None:
        self.built: set[tuple[str, int]] = set()

    def capabilities(self) -> Capabilities:
        return replace(super().capabilities(), ops=(LINEAR_ATTENTION.name,))

    @property
    def pipelines_compiled(self) -> int:
        return len(self.built)

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        self.built.add((str(case.dtype), case.dims().d_k))
        return super().run(case)


class IsolatedCrashes(IsolatedBackend):
    """Stands for the WebGPU EP crash-isolated (by name, and an ``IsolatedBackend`` so a unit lets it run the cases
    of its documented crashes), without a process: the oracle, except that a case ``crashes`` holds for "kills its
    process" (``Crashed``), and the next run counts a process started anew (``restarts``, as the real one does).
    ``runs`` keeps every case it was handed."""

    def __init__(self, crashes: Callable[[Case], bool]) -> None:
        self.name = "ort-webgpu"
        self.crashes = crashes
        self.restarts = 0
        self.runs: list[Case] = []
        self.inner = OracleBackend()
        self._capabilities = self.inner.capabilities()  # as a started worker holds them
        self.running = True

    def capabilities(self) -> Capabilities:
        return self.inner.capabilities()

    def run_outputs(self, case: Case) -> tuple[np.ndarray, ...]:
        if not self.running:
            self.restarts, self.running = self.restarts + 1, True
        self.runs.append(case)
        if self.crashes(case):
            self.running = False
            raise Crashed(self.name, "worker killed by SIGFPE (exit code -8)")
        return self.inner.run_outputs(case)

    def close(self) -> None:
        self.running = False


class ResumeRaises(LinearAttentionOracle):
    """The oracle with a device-resident chain (``run_chain``, its select-and-resume) that raises a ``ValueError`` on
    its first call in a process and refuses the others as unsupported: an error outside the typed outcomes that does
    not recur when Hypothesis replays its case (as a kernel backend's slot binding raised one)."""

    name = "resume-raises"

    def __init__(self) -> None:
        self.chains = 0

    def run_chain(self, case: Case, chain: Chain) -> list[ChainCall]:
        self.chains += 1
        if self.chains == 1:
            raise ValueError("bind_group: slot 5 of <DeviceTensor present_state> cannot be bound on its own")
        raise Unsupported(self.name, "only its first call raises; the others are refused")


class RunRaises(LinearAttentionOracle):
    """The oracle, except that every call raises a ``RuntimeError``: an error outside the typed outcomes."""

    name = "run-raises"

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        raise RuntimeError("a backend's own bug")


DIES_AT_CALL = 8
"""The call on which each ``DiesOften`` process kills itself."""


class DiesOften(LinearAttentionOracle):
    """The oracle, except that the ``DIES_AT_CALL``-th call in each process kills that process (SIGKILL): in the
    campaign's workers it breaks their pool again and again; crash-isolated (it is ``crash_prone``), it kills its
    worker every ``DIES_AT_CALL`` cases."""

    name = "dies-often"
    crash_prone = True

    def __init__(self) -> None:
        self.calls = 0

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        self.calls += 1
        if self.calls == DIES_AT_CALL:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().run(case)


STOPS_ONCE_ENV = "LAFUZZ_TEST_STOPS_ONCE"
"""A path: the first ``StopsOnce`` call of a campaign creates it and stops its own process (SIGSTOP)."""


class StopsOnce(LinearAttentionOracle):
    """The oracle, except that its first call in a campaign stops the process running it (SIGSTOP: a worker that
    hangs for good, never answering), once: the flag file named by ``STOPS_ONCE_ENV`` records that it happened."""

    name = "stops-once"

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        try:
            descriptor = os.open(os.environ[STOPS_ONCE_ENV], os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            return super().run(case)
        os.close(descriptor)
        os.kill(os.getpid(), signal.SIGSTOP)
        return super().run(case)


SLOW_FAILURE_S = 2.0
"""What each failing call of ``SlowToShrink`` costs."""


class SlowToShrink(BrokenBackend):
    """``BrokenBackend`` whose failing calls (a window of 2 or more) take ``SLOW_FAILURE_S`` each: shrinking its
    bug outlasts a short budget."""

    name = "slow-to-shrink"

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        if case.state_window >= 2:
            time.sleep(SLOW_FAILURE_S)
        return super().run(case)


HANGS_ONCE_ENV = "LAFUZZ_TEST_HANGS_ONCE"
"""A path: the ``HANG_AT_CALL``-th ``HangsOnce`` call of a campaign creates it and sleeps for an hour."""
HANG_AT_CALL = 15
"""Past the first unit of 10 examples, so that the campaign checked cases before it."""


class HangsOnce(LinearAttentionOracle):
    """The oracle, except that one call in a campaign (its ``HANG_AT_CALL``-th in a process) does not return for an
    hour (a call that hangs, as a driver's can), once: the flag file named by ``HANGS_ONCE_ENV`` records it."""

    name = "hangs-once"

    def __init__(self) -> None:
        self.calls = 0

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        self.calls += 1
        if self.calls != HANG_AT_CALL:
            return super().run(case)
        try:
            descriptor = os.open(os.environ[HANGS_ONCE_ENV], os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            return super().run(case)
        os.close(descriptor)
        time.sleep(3600)
        return super().run(case)


class HangsWhileShrinking(BrokenBackend):
    """``BrokenBackend`` whose second failing call of a single case in a process (a window of 2 or more) does not
    return for an hour: the unit shrinking its bug hangs after its first failure. A packed case is not counted: its
    failure is run again slice by slice before it is raised (``fuzz.engine.packing``), and that single slice is the
    first failing call."""

    name = "hangs-while-shrinking"

    def __init__(self) -> None:
        self.failing = 0

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        if case.state_window >= 2 and not case.notes.get(PACK):
            self.failing += 1
            if self.failing == 2:
                time.sleep(3600)
        return super().run(case)

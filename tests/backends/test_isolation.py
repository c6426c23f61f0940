"""Crash isolation: a worker that aborts, hangs or refuses is reported, replaced, and the caller goes on.

The misbehaving backends below are test-only: the worker imports them as ``test_isolation:...``.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from fuzz.backends import Crashed, Lost, Rejected, TimedOut, Unavailable, create
from fuzz.backends.base import Backend, Capabilities, ChainCall
from fuzz.backends.isolation import IsolatedBackend, WorkerBackend, WorkerError
from fuzz.model.case import Case
from fuzz.model.chain import Chain


class MisbehavingBackend(Backend):
    """Does what the case's ``notes["do"]`` says: abort, hang, reject, raise; else returns zeros."""

    name = "misbehaving"

    def capabilities(self) -> Capabilities:
        return Capabilities(dtypes=("float32",), window="none", aliasing=False, device="test")

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        action = case.notes.get("do")
        if action == "abort":
            os.abort()
        if action == "hang":
            time.sleep(3600)
        if action == "reject":
            raise Rejected(self.name, "query: expected rank 3, received rank 2")
        if action == "raise":
            raise ZeroDivisionError("harness bug")
        if action == "crash-inside":  # what a backend reports when a process of its own died (a browser tab)
            raise Crashed(self.name, f"the browser tab crashed (worker {os.getpid()})")
        return np.zeros(case.inputs["query"].shape), np.zeros(1)


class DeviceLosingBackend(MisbehavingBackend):
    """Aborts on ``"abort"`` after leaving a mark (``$LOST_MARK``); once marked it cannot be created (a lost GPU)."""

    name = "device-losing"

    def __init__(self) -> None:
        if os.path.exists(os.environ["LOST_MARK"]):
            raise Unavailable(f"{self.name}: a minimal run failed: [Device] is lost")

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        if case.notes.get("do") == "abort":
            open(os.environ["LOST_MARK"], "w").close()
        return super().run(case)


class ChainingBackend(MisbehavingBackend):
    """Compiles one pipeline per call, runs chains, and names its device after ``$ISOLATION_MARK``."""

    name = "chaining"

    def __init__(self) -> None:
        self.compiled = 0

    def capabilities(self) -> Capabilities:
        return Capabilities(dtypes=("float32",), window="none", aliasing=False, device=os.environ["ISOLATION_MARK"])

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        self.compiled += 1
        return super().run(case)

    def run_chain(self, case: Case, chain: Chain) -> list[ChainCall]:
        return [ChainCall(*self.run(case), seeded_by=f"call {i}") for i in range(chain.calls)]

    @property
    def pipelines_compiled(self) -> int:
        return self.compiled


def _case(action: str | None = None) -> Case:
    x = np.ones((1, 2, 4), np.float32)
    return Case(
        inputs={"query": x, "key": x, "value": x},
        attrs={"q_num_heads": 1, "kv_num_heads": 1, "update_rule": "linear"},
        notes={"do": action} if action else {},
    )


@pytest.fixture(scope="module")
def worker():
    backend = IsolatedBackend("test_isolation:MisbehavingBackend", timeout_s=3.0)
    yield backend
    backend.close()


def test_abort_is_reported_and_the_worker_replaced(worker):
    assert worker.run(_case())[0].shape == (1, 2, 4)
    with pytest.raises(Crashed) as caught:
        worker.run(_case("abort"))
    message = caught.value.message
    assert "SIGABRT" in message and "exit code -6" in message, message
    assert "rule=linear" in message and " s running" in message, message
    restarts = worker.restarts
    assert worker.run(_case())[0].shape == (1, 2, 4)  # the caller survives; a new worker serves
    assert worker.restarts == restarts + 1


@pytest.mark.slow
def test_hang_times_out_and_the_worker_is_killed(worker):
    started = time.monotonic()
    with pytest.raises(TimedOut) as caught:
        worker.run(_case("hang"))
    assert time.monotonic() - started < 10
    assert "no answer within 3 s" in caught.value.message and "SIGKILL" in caught.value.message
    assert worker.run(_case())[0].shape == (1, 2, 4)


def test_typed_errors_and_harness_errors_come_back(worker):
    with pytest.raises(Rejected, match="expected rank 3"):
        worker.run(_case("reject"))
    with pytest.raises(WorkerError, match="ZeroDivisionError: harness bug"):
        worker.run(_case("raise"))
    assert worker.capabilities().device == "test"


@pytest.mark.slow
def test_unavailable_backend_is_unavailable_when_isolated():
    try:
        create("ort-cuda")
    except Unavailable:
        pass
    else:
        pytest.skip("this machine has the CUDA EP: nothing unavailable to check with")
    with pytest.raises(Unavailable, match=r"ort-cuda: this onnxruntime has no CUDAExecutionProvider"):
        create("ort-cuda", isolate=True)


@pytest.mark.slow
def test_isolated_ort_cpu_equals_in_process():
    try:
        direct = create("ort-cpu")
    except Unavailable as err:
        pytest.skip(str(err))
    case = _case().with_inputs(query=np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 2, 4))
    backend = create("ort-cpu", isolate=True)
    try:
        assert backend.capabilities() == direct.capabilities()
        for got, want in zip(backend.run(case), direct.run(case), strict=True):
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    finally:
        backend.close()


@pytest.mark.slow
def test_isolation_is_chosen_by_the_backend():
    """``create(..., isolate=True)`` isolates the backends that declare themselves crash-prone, only those."""
    oracle = create("oracle", isolate=True)
    assert not isinstance(oracle, IsolatedBackend) and not oracle.crash_prone
    try:
        backend = create("ort-cpu", isolate=True)
    except Unavailable as err:
        pytest.skip(str(err))
    try:
        assert isinstance(backend, IsolatedBackend) and backend.name == "ort-cpu"
    finally:
        backend.close()


@pytest.mark.slow
def test_a_worker_that_cannot_start_again_is_lost(tmp_path, monkeypatch):
    """After a crash the backend is restarted; if it can no longer be created, ``Lost`` names it (the campaign
    then stops using it) instead of an ``Unavailable`` that reads as a harness error."""
    monkeypatch.setenv("LOST_MARK", str(tmp_path / "lost"))
    backend = IsolatedBackend("test_isolation:DeviceLosingBackend", timeout_s=3.0)
    try:
        with pytest.raises(Crashed):
            backend.run(_case("abort"))
        with pytest.raises(Lost) as caught:
            backend.run(_case())
        assert caught.value.backend == "device-losing" and "[Device] is lost" in str(caught.value)
    finally:
        backend.close()


def test_a_worker_runs_chains_counts_compilations_and_takes_its_own_environment(monkeypatch):
    """A device-resident chain and the compile count of the backend in the worker come back as in-process; the
    variables given for the worker are set there, not here."""
    monkeypatch.setenv("ISOLATION_MARK", "this process's")
    backend = IsolatedBackend("test_isolation:ChainingBackend", environment={"ISOLATION_MARK": "the worker's"})
    try:
        assert backend.capabilities().device == "the worker's" and os.environ["ISOLATION_MARK"] == "this process's"
        assert backend.pipelines_compiled == 0
        backend.run(_case())
        calls = backend.run_chain(_case(), Chain((1, 1, 1), (1, 1), "rebind"))
        assert [c.seeded_by for c in calls] == ["call 0", "call 1", "call 2"]
        assert calls[0].output.shape == (1, 2, 4) and backend.pipelines_compiled == 4
    finally:
        backend.close()


def test_a_crash_the_backend_reports_itself_ends_its_worker(worker):
    """A backend in the worker that reports a crash of its own (its browser, say) may hold objects that went with
    it: its worker is replaced before the next case."""
    worker.run(_case())
    with pytest.raises(Crashed, match="the browser tab crashed") as caught:
        worker.run(_case("crash-inside"))
    restarts = worker.restarts
    worker.run(_case())
    assert worker.restarts == restarts + 1, caught.value.message


class LazyWorker(WorkerBackend):
    """A backend that always runs in a worker, started on first use."""

    name = "lazy-misbehaving"
    target = "test_isolation:MisbehavingBackend"


def test_a_deferred_worker_backend_starts_its_worker_on_first_use_not_when_created():
    """A campaign worker creates every backend; one that a unit leaves out (a browser, a second Vulkan driver) must
    cost nothing until a unit asks it something."""
    backend = LazyWorker(start=False)
    try:
        assert backend._process is None and backend.restarts == 0
        assert backend.run(_case())[0].shape == (1, 2, 4)
        assert backend._process is not None and backend.restarts == 0  # a first start, not a restart
        assert backend.capabilities().dtypes
    finally:
        backend.close()

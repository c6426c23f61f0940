"""Crash isolation: any backend, run in a persistent worker process that may die without taking us along.

Fuzzing invalid input can kill a process inside a native library (an abort in ORT, a segfault in
a driver) or hang it. ``IsolatedBackend(spec)`` (what ``create(spec, isolate=True)`` returns for a
``crash_prone`` backend) behaves like ``create(spec)`` but runs every case in a worker process:
cases go over a pipe, results come back.
The parent enforces a deadline per case, sees the worker die (signal or exit code), reports it as
``Crashed`` or ``TimedOut`` with the signal, exit code, elapsed time and the case summary, starts a
fresh worker for the next case, and goes on. Device-resident chains (``run_chain``) go the same way, and the
worker's backend's compile count comes back with every answer. A worker may be given environment variables
of its own (a backend bound to a driver its loader must see alone: ``fuzz.backends.wgpu_swiftshader``).

Workers are fresh interpreters (``python -c`` running ``worker_main``), never forks: the parent may already
hold GPU devices and threads of native libraries, and, unlike ``multiprocessing``'s spawn, a fresh
interpreter does not re-import the caller's main script (which need not be import-safe). Messages
travel over the worker's stdin and a private duplicate of its stdout; the worker's fd 1 then points
at stderr, so whatever a native library prints cannot corrupt them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Mapping
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

import numpy as np

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
from fuzz.backends.registry import backend_class
from fuzz.implementation import Implementation
from fuzz.model.case import Case

if TYPE_CHECKING:
    from fuzz.model.chain import Chain

WORKER_COMMAND = "from fuzz.backends.isolation import worker_main; worker_main()"
"""What a worker interpreter runs (``python -c``)."""

DEFAULT_TIMEOUT_S = 60.0
"""Deadline of one case in the worker."""

START_TIMEOUT_S = 120.0
"""Deadline for a worker to import its libraries, create its backend and report ready."""

_ERRORS: dict[str, type[BackendError]] = {
    Outcome.REJECTED.value: Rejected,
    Outcome.UNSUPPORTED.value: Unsupported,
    Outcome.CRASHED.value: Crashed,
    Outcome.TIMEOUT.value: TimedOut,
}


class WorkerError(RuntimeError):
    """The backend in the worker raised something that is not an outcome (a harness error)."""


def _serve(conn: _Channel) -> None:
    """The worker's loop: create the backend named in the first message, then answer one message
    per case until told to stop or the parent goes away."""
    target, options = conn.recv()
    try:
        backend = backend_class(target)(**options)
        conn.send(("ready", (backend.name, backend.capabilities(), backend.pipelines_compiled)))
    except Unavailable as err:  # sent whole: its type (e.g. ``NoSuchDevice``, a usage error) matters
        conn.send(("unavailable", err))
        return
    while True:
        try:
            message = conn.recv()
        except EOFError:
            break
        if message[0] == "close":
            break
        try:
            if message[0] == "chain":
                conn.send(("ok", backend.run_chain(message[1], message[2]), backend.pipelines_compiled))
            else:
                outputs = tuple(np.asarray(x) for x in backend.run_outputs(message[1]))
                conn.send(("ok", outputs, backend.pipelines_compiled))
        except BackendError as err:
            conn.send(("error", err.outcome.value, err.message))
        except Exception as err:
            conn.send(("exception", f"{type(err).__name__}: {err}", traceback.format_exc()))
    backend.close()


class _Channel:
    """Pickled messages over two pipe ends (one to read, one to write), e.g. a child's stdout/stdin."""

    def __init__(self, reader: Any, writer: Any) -> None:
        self._reader = Connection(os.dup(reader.fileno()), writable=False)
        self._writer = Connection(os.dup(writer.fileno()), readable=False)
        reader.close()
        writer.close()

    def send(self, message: Any) -> None:
        self._writer.send(message)

    def recv(self) -> Any:
        return self._reader.recv()

    def poll(self, timeout: float) -> bool:
        return self._reader.poll(timeout)

    def close(self) -> None:
        self._reader.close()
        self._writer.close()


def how_it_ended(exitcode: int | None) -> str:
    """A process's end in words: the signal that killed it, or its exit code."""
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name} (exit code {exitcode})"
        except ValueError:
            return f"killed by signal {-exitcode} (exit code {exitcode})"
    return f"exited with code {exitcode}"


class IsolatedBackend(Backend):
    """A backend whose runs happen in a worker process; same name, capabilities and outcomes."""

    _compiled: int | None = None
    """The compile count the worker's backend gave with its last answer (``pipelines_compiled``)."""

    def __init__(self, target: str, *, timeout_s: float = DEFAULT_TIMEOUT_S,
                 start_timeout_s: float = START_TIMEOUT_S, environment: Mapping[str, str] | None = None,
                 start: bool = True, **options: Any) -> None:
        """``environment``: variables set in the worker's environment over this process's (e.g. which Vulkan
        drivers its loader sees); ``options`` go to the backend's constructor in the worker. ``start=False`` starts
        the worker when the backend is first asked something (its capabilities, a run) instead of now: a campaign
        worker creates every backend, and a unit that leaves this one out then never pays for its start (a browser,
        a second Vulkan driver); a start that fails then raises ``Lost``, as a worker that cannot restart does."""
        self.spec = target
        self.name = getattr(type(self), "name", target)  # a subclass's own name (``WorkerBackend``), else the spec
        self.timeout_s = timeout_s
        self.start_timeout_s = start_timeout_s
        self._environment = dict(environment or {})
        self._options = options
        self._process: Any = None
        self._conn: Any = None
        self.restarts = 0
        """How many times a worker was replaced after a crash or a hang."""
        self._capabilities: Capabilities | None = self._start() if start else None

    def _start(self) -> Capabilities:
        """Start a worker and wait for its backend; raises ``Unavailable`` as the backend would."""
        env = {**os.environ, **self._environment, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        # a session of its own: a Ctrl-C at the terminal reaches the campaign, which stops its
        # workers itself, and never kills this one mid-case (which would read as a crash)
        process = subprocess.Popen(
            [sys.executable, "-c", WORKER_COMMAND], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
            start_new_session=True,
        )
        self._process, self._conn = process, _Channel(process.stdout, process.stdin)
        started = time.monotonic()
        try:
            self._conn.send((self.spec, self._options))
            if not self._conn.poll(self.start_timeout_s):
                self._stop(kill=True)
                raise Unavailable(f"{self.name}: worker did not start within {self.start_timeout_s:g} s")
            kind, payload = self._conn.recv()
        except (EOFError, BrokenPipeError):
            how = self._stop(kill=False)
            raise Unavailable(
                f"{self.name}: worker {how} while starting ({time.monotonic() - started:.2f} s)"
            ) from None
        if kind == "unavailable":
            self._stop(kill=False)
            raise payload
        self.name, capabilities, self._compiled = payload
        return capabilities

    def _stop(self, *, kill: bool) -> str:
        """End the current worker (SIGKILL if ``kill``) and say how it ended."""
        process, self._process = self._process, None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if process is None:
            return "not running"
        if kill and process.poll() is None:
            process.kill()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return "did not end within 10 s"
        return how_it_ended(process.returncode)

    @property
    def implementation(self) -> Implementation | None:
        """What the worker's backend runs; None while a deferred worker has not started (a documented issue of this
        backend is then matched by its name alone, ``fuzz.corpus.classifier``), so that asking starts nothing."""
        return None if self._capabilities is None else self._capabilities.implementation

    def capabilities(self) -> Capabilities:
        if self._capabilities is None:
            try:
                self._capabilities = self._start()
            except Unavailable as err:
                raise Lost(self.name, str(err)) from err
        return self._capabilities

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        outputs = self.run_outputs(case)
        if len(outputs) != 2:
            raise Unsupported(self.name, f"{case.op.name}'s outputs are {', '.join(case.op.outputs)}: run_outputs")
        return outputs[0], outputs[1]

    def run_outputs(self, case: Case) -> tuple[np.ndarray, ...]:
        """Run ``case`` in the worker; ``Crashed``/``TimedOut`` if it dies or hangs (then restart)."""
        return tuple(self._ask(("run", case), case))

    def run_chain(self, case: Case, chain: Chain) -> list[ChainCall]:
        """The backend's device-resident chain, in the worker, with ``run``'s outcomes."""
        calls: list[ChainCall] = self._ask(("chain", case, chain), case)
        return calls

    @property
    def pipelines_compiled(self) -> int | None:
        """What the backend in the worker said after its last answer (a fresh worker counts from 0 again)."""
        return self._compiled

    def _ask(self, message: tuple[Any, ...], case: Case) -> Any:
        """Send one request about ``case`` and return the worker's answer, or raise its outcome."""
        if self._capabilities is None:
            self.capabilities()
        elif self._process is None:
            self.restarts += 1
            try:
                self._start()
            except Unavailable as err:
                raise Lost(self.name, str(err)) from err
        pid = self._process.pid
        started = time.monotonic()
        try:
            self._conn.send(message)
            answered = self._conn.poll(self.timeout_s)
            reply = self._conn.recv() if answered else None
        except (EOFError, BrokenPipeError, ConnectionResetError):
            how = self._stop(kill=False)
            raise Crashed(
                self.name, f"worker {pid} {how} after {time.monotonic() - started:.3f} s running: {case.summary()}"
            ) from None
        if reply is None:
            how = self._stop(kill=True)
            raise TimedOut(
                self.name,
                f"no answer within {self.timeout_s:g} s; worker {pid} {how} running: {case.summary()}",
            )
        kind = reply[0]
        if kind == "ok":
            self._compiled = reply[2]
            return reply[1]
        if kind == "error":
            if reply[1] in (Outcome.CRASHED.value, Outcome.TIMEOUT.value):  # of its own: a browser, say
                self._stop(kill=True)  # whatever the worker holds may be gone with it: the next case starts afresh
            raise _ERRORS[reply[1]](self.name, reply[2])
        raise WorkerError(f"{self.name} (in worker {pid}) raised {reply[1]}\n{reply[2]}")

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(BrokenPipeError, OSError):
                self._conn.send(("close",))
        if self._process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=10)
        self._stop(kill=True)


class WorkerBackend(IsolatedBackend):
    """A backend that always runs in a worker process (whatever ``create``'s ``isolate`` says): the class named by
    ``target`` runs there, with the variables ``environment`` gives (a driver its loader must see alone, a browser
    whose objects the worker's caches name: ``fuzz.backends.wgpu_swiftshader``, ``fuzz.backends.wgpu_browser``)."""

    target: str
    """The ``module:Class`` of the backend the worker runs."""
    in_its_own_process = True

    def __init__(self, *, start: bool = True, **options: Any) -> None:
        super().__init__(self.target, environment=self.environment(), start=start, **options)

    def environment(self) -> dict[str, str]:
        """The worker's own variables (none by default); ``Unavailable`` when what it needs is missing."""
        return {}


def worker_main() -> None:
    """Entry of a worker process: keep a private copy of stdout for replies, point fd 1 at stderr."""
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    _serve(_Channel(sys.stdin.buffer, replies))


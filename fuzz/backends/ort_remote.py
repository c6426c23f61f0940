"""ONNX Runtime builds that run in a worker process of their own: Node, a browser, another Python.

``RemoteOrtBackend`` is an ``OrtBackend`` (the same models, session cache, prefix mode, probe and error
mapping) whose sessions live in a worker speaking the protocol of ``fuzz.backends.ort_worker``. The
worker is supervised here as ``IsolatedBackend`` supervises its own: a deadline on every request, a death
(or a crashed browser tab, which the worker reports) raised as ``Crashed`` and a hang as ``TimedOut``,
each with how the process ended and the case it was running; the whole process tree is killed and a fresh
worker is started at the next request, which re-sends the models it needs. A worker that cannot be
started again makes the backend ``Lost``.

Subclasses say how to start the worker (``_command``) and describe what it reported (``_describe``).
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import os
import select
import shutil
import signal
import subprocess
import threading
import time
from abc import abstractmethod
from pathlib import Path
from typing import Any

import numpy as np

from fuzz.backends.base import Crashed, Lost, TimedOut, Unavailable
from fuzz.backends.isolation import DEFAULT_TIMEOUT_S, START_TIMEOUT_S, how_it_ended
from fuzz.backends.ort_session import OrtBackend
from fuzz.backends.ort_worker import HEADER, Message, array_blob, blob_array, encode
from fuzz.model.case import Case

STDERR_LINES_KEPT = 20
"""Lines of a worker's stderr quoted when it fails to start."""


class _Died(Exception):
    """The worker closed its pipes (it died, or is dying)."""


class _Hung(Exception):
    """The worker did not answer before the deadline."""


class RemoteError(RuntimeError):
    """The build refused a request; the message is its own (``OrtBackend`` maps it to an outcome)."""


EARLIER_REQUESTS_KEPT = 3
"""Answered requests a crash or hang report quotes: enough to name the request that left a build unusable."""


class WorkerLink:
    """One worker process at a time, started on demand, answering one request at a time.

    ``command`` starts it (``--reply-fd N`` is appended: replies come on that pipe, never on stdout). Its
    stderr is passed on to ours line by line (the last lines are kept for a failure to start). The first
    reply (to ``hello``) is ``info``; a ``process_groups`` list in it names the worker's own detached
    children (a browser), killed with it, and ``scratch`` the folders removed after it (a browser profile).
    """

    def __init__(self, name: str, command: list[str], *, cwd: Path | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, start_timeout_s: float = START_TIMEOUT_S) -> None:
        self.name = name
        self.command = command
        self.cwd = cwd
        self.timeout_s = timeout_s
        self.start_timeout_s = start_timeout_s
        self.doing = "starting"
        """What the current request is for, in words (the case's summary), quoted when the worker dies."""
        self.generation = 0
        """How many workers were started; the models a worker holds belong to its generation."""
        self.restarts = 0
        """How many workers were replaced after a crash or a hang."""
        self.info: dict[str, Any] = {}
        self._process: subprocess.Popen[bytes] | None = None
        self._replies = -1
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES_KEPT)
        self._answered: collections.deque[str] = collections.deque(maxlen=EARLIER_REQUESTS_KEPT)
        """The worker's last answered requests (what, and how it answered), quoted when it dies or hangs: a
        build can be left unusable by an earlier request and fail on a later, harmless one."""

    @property
    def running(self) -> bool:
        return self._process is not None

    def start(self) -> dict[str, Any]:
        """Start a worker and return its ``hello`` info; ``Unavailable`` if it does not come up."""
        read_end, write_end = os.pipe()
        try:
            process = subprocess.Popen(
                [*self.command, "--reply-fd", str(write_end)], stdin=subprocess.PIPE, stdout=2,
                stderr=subprocess.PIPE, pass_fds=(write_end,), cwd=self.cwd, start_new_session=True)
        except OSError as err:
            os.close(read_end)
            raise Unavailable(f"{self.name}: cannot start {self.command[0]}: {err}") from err
        finally:
            os.close(write_end)
        self._process, self._replies, self.generation = process, read_end, self.generation + 1
        self._stderr.clear()
        self._answered.clear()
        threading.Thread(target=self._pass_on_stderr, args=(process,), daemon=True).start()
        assert process.stdin is not None
        os.set_blocking(process.stdin.fileno(), False)
        started = time.monotonic()
        try:
            header, _ = self._exchange({"op": "hello"}, [], self.start_timeout_s)
        except (_Died, _Hung) as err:
            how = self.stop(kill=True)
            said = " | ".join(self._stderr) or "nothing on stderr"
            late = f"did not answer within {self.start_timeout_s:g} s" if isinstance(err, _Hung) else how
            raise Unavailable(f"{self.name}: worker {late} while starting "
                              f"({time.monotonic() - started:.2f} s); it said: {said}") from None
        self.info = header.get("info", {})
        return self.info

    def _pass_on_stderr(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stderr is not None
        for raw in process.stderr:
            line = raw.decode(errors="replace").rstrip()
            self._stderr.append(line)
            with contextlib.suppress(OSError):
                os.write(2, raw)

    def request(self, header: dict[str, Any], blobs: list[bytes] | None = None) -> Message:
        """Send one request and return the reply; ``Crashed``/``TimedOut`` if the worker dies or hangs
        (it is then killed and replaced at the next request), ``Lost`` if it cannot be started again."""
        if self._process is None:
            self.restarts += 1
            try:
                self.start()
            except Unavailable as err:
                raise Lost(self.name, str(err)) from err
        assert self._process is not None
        pid, started = self._process.pid, time.monotonic()
        try:
            reply = self._exchange(header, blobs or [], self.timeout_s)
        except _Died:
            earlier, how = self._earlier(), self.stop(kill=False)
            raise Crashed(self.name, f"worker {pid} {how} after {time.monotonic() - started:.3f} s "
                                     f"running: {self.doing}{earlier}") from None
        except _Hung:
            earlier, how = self._earlier(), self.stop(kill=True)
            raise TimedOut(self.name, f"no answer within {self.timeout_s:g} s; worker {pid} {how} "
                                      f"running: {self.doing}{earlier}") from None
        if "crashed" in reply[0]:
            earlier, how = self._earlier(), self.stop(kill=True)
            raise Crashed(self.name, f"{reply[0]['crashed']} after {time.monotonic() - started:.3f} s "
                                     f"(worker {pid} {how}) running: {self.doing}{earlier}")
        error = reply[0].get("error")
        self._answered.append(f"{self.doing} ({'error: ' + str(error)[:120] if error else 'answered'})")
        return reply

    def _earlier(self) -> str:
        """The worker's last answered requests, for a crash or hang report ("" for a fresh worker)."""
        if not self._answered:
            return "; the first request of this worker"
        return "; this worker's requests before it, oldest first: " + " | ".join(self._answered)

    def _exchange(self, header: dict[str, Any], blobs: list[bytes], timeout: float) -> Message:
        deadline = time.monotonic() + timeout
        self._write(encode(header, blobs), deadline)
        (size,) = HEADER.unpack(self._read(HEADER.size, deadline))
        reply = json.loads(self._read(size, deadline))
        return reply, [self._read(n, deadline) for n in reply.pop("blobs", [])]

    def _write(self, data: bytes, deadline: float) -> None:
        assert self._process is not None and self._process.stdin is not None
        fd, view = self._process.stdin.fileno(), memoryview(data)
        while view:
            if not select.select([], [fd], [], max(0.0, deadline - time.monotonic()))[1]:
                raise _Hung
            try:
                view = view[os.write(fd, view):]
            except BlockingIOError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                raise _Died from None

    def _read(self, size: int, deadline: float) -> bytes:
        chunks = []
        while size:
            if not select.select([self._replies], [], [], max(0.0, deadline - time.monotonic()))[0]:
                raise _Hung
            chunk = os.read(self._replies, min(size, 1 << 20))
            if not chunk:
                raise _Died
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def stop(self, *, kill: bool) -> str:
        """End the worker and its process groups (at once if ``kill``, else once it has ended by itself);
        say how it ended."""
        process, self._process = self._process, None
        if process is None:
            return "not running"
        groups = [process.pid, *self.info.get("process_groups", [])]
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        if kill:
            for group in groups:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(group, signal.SIGKILL)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for group in groups[1:]:  # a browser outlives its driver unless killed too
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        for folder in self.info.get("scratch", []):  # what it would have removed, had it ended by itself
            shutil.rmtree(folder, ignore_errors=True)
        os.close(self._replies)
        self._replies = -1
        return how_it_ended(process.returncode)


class RemoteSession:
    """A session in the worker, by model id; re-created there from the model bytes when the worker no longer
    holds it (evicted, released after a refused run, or a fresh worker after a crash). ``run`` as
    ``InferenceSession.run``."""

    def __init__(self, link: WorkerLink, model: bytes) -> None:
        self.link = link
        self.model = model
        self.model_id = hashlib.sha256(model).hexdigest()[:24]

    def load(self) -> None:
        header, _ = self.link.request({"op": "load", "model": self.model_id}, [self.model])
        if not header["ok"]:
            raise RemoteError(header["error"])

    def run(self, names: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        items, blobs = zip(*(array_blob(name, x) for name, x in feeds.items()), strict=True) if feeds else ((), ())
        request = {"op": "run", "model": self.model_id, "inputs": list(items), "outputs": list(names)}
        header, out = self.link.request(request, list(blobs))
        if header.get("missing"):
            self.load()
            header, out = self.link.request(request, list(blobs))
        if not header["ok"]:
            raise RemoteError(header["error"])
        return [blob_array(item, blob) for item, blob in zip(header["outputs"], out, strict=True)]


class RemoteOrtBackend(OrtBackend):
    """An ORT build in a worker process (see the module docstring); already out of process, so never
    wrapped in ``IsolatedBackend`` (``crash_prone`` is False: a crash cannot reach this process)."""

    in_its_own_process = True

    crash_prone = False
    binds_on_device = False
    value_device = "cpu"
    start_timeout_s = START_TIMEOUT_S

    def __init__(self, *, timeout_s: float = DEFAULT_TIMEOUT_S, cache_size: int | None = None) -> None:
        self.timeout_s = timeout_s
        self.link: WorkerLink | None = None
        super().__init__(cache_size=cache_size)

    @abstractmethod
    def _command(self) -> tuple[list[str], Path | None]:
        """The worker's command line (without ``--reply-fd``) and working folder; ``Unavailable`` when
        something it needs is missing here, with what to install."""

    @abstractmethod
    def _describe(self, info: dict[str, Any]) -> None:
        """Check the ``hello`` info (``Unavailable`` if the build cannot run here) and keep what
        ``_device``, ``_versions`` and ``_implementation`` report."""

    def _runtime(self) -> Any:
        return None

    def _load(self) -> None:
        command, cwd = self._command()
        self.link = WorkerLink(self.name, command, cwd=cwd, timeout_s=self.timeout_s,
                               start_timeout_s=self.start_timeout_s)
        try:
            self._describe(self.link.start())
        except Unavailable:
            self.link.stop(kill=True)
            raise

    def _session_of(self, model: bytes, op: str) -> RemoteSession:
        """The worker forbids CPU fallback itself, so placement needs no check here (any ``op``)."""
        assert self.link is not None
        session = RemoteSession(self.link, model)
        try:
            session.load()
        except RemoteError as err:
            raise self._creation_error(err) from err
        return session

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        assert self.link is not None
        self.link.doing = case.summary()
        return super().run(case)

    @property
    def restarts(self) -> int:
        """How many times the worker was replaced after a crash or a hang."""
        return self.link.restarts if self.link else 0

    def close(self) -> None:
        super().close()
        if self.link is not None and self.link.running:
            self.link.stop(kill=True)

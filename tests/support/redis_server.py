"""A real ``redis-server`` on loopback for the tests that share an example database (no tests here):
started on a free port, stopped and started again on that port at will, always stopped in the end."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from redis import Redis

SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


class RedisServer:
    """One ``redis-server`` process, keeping no data on disk; ``url`` stays the same across restarts."""

    def __init__(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen([SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                         "--appendonly", "no"], stdout=subprocess.DEVNULL)
        for _ in range(200):
            try:
                Redis(port=self.port).ping()
                return
            except Exception:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not answer on port {self.port}")

    def stop(self) -> None:
        """Stop it (SIGTERM, as a shutdown or a crash looks to its clients: connections refused)."""
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)
            self.process = None


@contextmanager
def redis_server() -> Iterator[RedisServer]:
    """A started server, stopped at the end; skips the test, loudly, where ``redis-server`` is missing."""
    if not shutil.which("redis-server"):
        pytest.skip("REDIS-SERVER IS NOT INSTALLED: run scripts/setup.sh (Debian package redis-server)")
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()

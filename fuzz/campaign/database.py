"""Hypothesis example databases for campaigns: a directory or Redis, keyed per work unit, mergeable, and
robust to a full disk and to a shared database that goes away.

``open_database("DIR")`` is a ``LocalDatabase``: Hypothesis's directory database whose values are written
atomically in their own folder (``fuzz.atomic``; Hypothesis's own writes a temporary file in ``/tmp`` and,
from another file system, copies it in place non-atomically) and which remembers a full disk instead of
dropping it silently, so a campaign can stop. ``open_database("redis://HOST:PORT")`` is Hypothesis's
``RedisExampleDatabase`` shared by every shard that names it, with short time-outs and no retries of its
own. ``FallbackDatabase`` is what a campaign's workers use with a shared database: when it cannot be
reached, the local directory stands in, and the shared one is tried again with a back-off.
Hypothesis offers ``MultiplexedDatabase`` (every call on every database: one that fails still fails the
call), ``ReadOnlyDatabase`` and ``BackgroundWriteDatabase`` (a failure still ends its thread), none of
which survives a database that is gone, hence this wrapper.

``UnitDatabase`` puts each work unit under its own key prefix (so a rerun of a unit replays what it
found) and records the keys it touched, which is what ``copy_keys`` needs to merge databases through
the public API. A second prefix, ``shared_key``, holds the campaign's findings as serialised corpus
entries (``fuzz.corpus.entry.to_bytes``): every shard appends what it finds there and re-checks what
the others appended.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

from fuzz import atomic
from fuzz.atomic import OutOfSpace

LOCAL = "hypothesis-db"
"""A campaign's own database under its ``--out`` (the default, and the stand-in for a shared one)."""
REDIS_TIMEOUT_S = 5.0
"""How long one Redis call may wait for the server (connecting: 2 s) before it counts as unreachable."""
FIRST_RETRY_S, LAST_RETRY_S = 1.0, 30.0
"""The back-off between attempts to reach a lost shared database: doubling from the first to the last."""


def _redis(spec: str) -> ExampleDatabase:
    from hypothesis.extra.redis import RedisExampleDatabase
    from redis import Redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    url = urlparse(spec)
    if not url.hostname or not url.port:
        raise ValueError(f"bad database URL {spec!r}: expected redis://HOST:PORT")
    db_index = int(url.path.strip("/") or 0)
    # redis-py retries a refused connection ten times by default (3.6 s a call); FallbackDatabase retries instead
    client = Redis(host=url.hostname, port=url.port, db=db_index, socket_connect_timeout=2.0,
                   socket_timeout=REDIS_TIMEOUT_S, retry=Retry(NoBackoff(), 0))
    return RedisExampleDatabase(client)


def is_shared(spec: str) -> bool:
    """Whether ``spec`` names a database on a server (that can be lost), not a directory."""
    return spec.startswith("redis://")


def open_database(spec: str) -> ExampleDatabase:
    """A directory path (a ``LocalDatabase``), or ``redis://HOST:PORT[/DB]``; ``ValueError`` for a malformed URL."""
    if is_shared(spec):
        return _redis(spec)
    if "://" in spec:
        raise ValueError(f"bad database {spec!r}: a directory path or redis://HOST:PORT")
    Path(spec).mkdir(parents=True, exist_ok=True)
    return LocalDatabase(spec)


def unreachable_errors() -> tuple[type[BaseException], ...]:
    """The errors that mean a shared database cannot be used now (any Redis error, any OS error)."""
    from redis.exceptions import RedisError

    return (RedisError, OSError)


class LocalDatabase(DirectoryBasedExampleDatabase):
    """Hypothesis's directory database (same layout) with atomic writes and a memory of a full disk.

    A value that cannot be stored is dropped, as Hypothesis's own does; a full disk is also kept in
    ``out_of_space`` (the first one) for the campaign to stop on.
    """

    def __init__(self, path: Path | str) -> None:
        super().__init__(path)
        self.out_of_space: OutOfSpace | None = None

    def health(self) -> DatabaseHealth:
        return DatabaseHealth(out_of_space=self.out_of_space)

    def save(self, key: bytes, value: bytes) -> None:
        key_path = self._key_path(key)
        if key_path.name != self._metakeys_hash:
            self.save(self._metakeys_name, key)  # Hypothesis's index of every key, as its own save keeps it
        path = self._value_path(key, value)
        if path.exists():
            return
        temporary_dir = self.path / atomic.PARTIAL  # not in the key's folder, which other workers list
        try:
            key_path.mkdir(parents=True, exist_ok=True)
            temporary_dir.mkdir(exist_ok=True)
            atomic.write_bytes(path, value, temporary_dir)
        except OSError as err:
            if atomic.out_of_space(err) and self.out_of_space is None:
                self.out_of_space = OutOfSpace.of(err, "an example database value", path)


@dataclass
class DatabaseHealth:
    """What a worker's database went through: for the campaign's messages and its summary."""

    process: int = field(default_factory=os.getpid)
    outages: list[list[float]] = field(default_factory=list)
    """``[lost, back]`` wall-clock times of each time the shared database was unreachable (``back`` is
    ``inf`` while it still is)."""
    reason: str = ""
    """The error of the first call that failed, in one line."""
    out_of_space: OutOfSpace | None = None

    @property
    def lost(self) -> bool:
        """Whether the shared database is unreachable now (its last outage is open)."""
        return bool(self.outages) and self.outages[-1][1] == float("inf")

    def unreachable_s(self, now: float) -> float:
        """Seconds it was (or is, until ``now``) unreachable, in all."""
        return sum(min(end, now) - start for start, end in self.outages)


class FallbackDatabase(ExampleDatabase):
    """``shared`` while it answers; while it does not, ``local``, and ``shared`` again after a back-off.

    The first call that fails opens an outage; the next attempt waits ``FIRST_RETRY_S``, doubling up to
    ``LAST_RETRY_S``; the first call that succeeds closes the outage and copies what was saved locally
    meanwhile into ``shared``, so the other shards see it. Each call either reaches ``shared`` or is
    served by ``local``: nothing raises out of it for a lost database.
    """

    def __init__(self, shared: ExampleDatabase, local: LocalDatabase, clock: Callable[[], float] = time.time,
                 on_change: Callable[[DatabaseHealth], None] | None = None) -> None:
        super().__init__()
        self.shared, self.local, self.clock = shared, local, clock
        self.on_change = on_change
        """Called when the shared database is lost and when it is back (``lost`` tells which)."""
        self.errors = unreachable_errors()
        self.state = DatabaseHealth()
        self.retry_at = 0.0
        self.backoff = FIRST_RETRY_S
        self.saved_meanwhile: set[bytes] = set()

    @property
    def out_of_space(self) -> OutOfSpace | None:
        return self.local.out_of_space

    def health(self) -> DatabaseHealth:
        """A copy of the state, with the local database's full disk."""
        return DatabaseHealth(self.state.process, [list(o) for o in self.state.outages], self.state.reason,
                              self.local.out_of_space)

    @property
    def lost(self) -> bool:
        return self.state.lost

    def _fail(self, error: BaseException) -> None:
        now = self.clock()
        if not self.lost:
            self.state.outages.append([now, float("inf")])
            self.state.reason = self.state.reason or f"{type(error).__name__}: {str(error).splitlines()[0]}"
            self.backoff = FIRST_RETRY_S
            if self.on_change is not None:
                self.on_change(self.health())
        else:
            self.backoff = min(2 * self.backoff, LAST_RETRY_S)
        self.retry_at = now + self.backoff

    def _back(self) -> None:
        self.state.outages[-1][1] = self.clock()
        keys, self.saved_meanwhile = self.saved_meanwhile, set()
        try:
            copy_keys(self.local, self.shared, keys)
        except self.errors as error:  # lost again while catching up: the rest waits for the next return
            self.saved_meanwhile |= keys
            self._fail(error)
        else:
            if self.on_change is not None:
                self.on_change(self.health())

    def _call(self, name: str, *args: Any) -> Any:
        if not self.lost or self.clock() >= self.retry_at:
            try:
                result = getattr(self.shared, name)(*args)
                if name == "fetch":
                    result = list(result)  # Redis's fetch is lazy: its error would come from the caller's loop
            except self.errors as error:
                self._fail(error)
            else:
                if self.lost:
                    self._back()
                return result
        if name == "save":
            self.saved_meanwhile.add(args[0])
        elif name == "move":
            self.saved_meanwhile.add(args[1])
        return getattr(self.local, name)(*args)

    def fetch(self, key: bytes) -> Iterable[bytes]:
        found: Iterable[bytes] = self._call("fetch", key)
        return found

    def save(self, key: bytes, value: bytes) -> None:
        self._call("save", key, value)

    def delete(self, key: bytes, value: bytes) -> None:
        self._call("delete", key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self._call("move", src, dest, value)


def campaign_database(spec: str, out: Path) -> LocalDatabase | FallbackDatabase:
    """The database a campaign's worker uses: ``spec`` itself, or for a shared one a ``FallbackDatabase``
    standing in with ``out/hypothesis-db``."""
    if not is_shared(spec):
        return open_database(spec)  # type: ignore[return-value]
    return FallbackDatabase(open_database(spec), LocalDatabase(Path(out) / LOCAL))


def shared_key(property_name: str, backends: Iterable[str]) -> bytes:
    """Where the serialised findings of one property over one backend set live."""
    return f"lafuzz/findings/{property_name}/{','.join(sorted(backends))}".encode()


class UnitDatabase(ExampleDatabase):
    """A view of ``inner`` whose keys are prefixed by ``prefix``; remembers every key it used."""

    def __init__(self, inner: ExampleDatabase, prefix: str) -> None:
        super().__init__()
        self.inner = inner
        self.prefix = prefix.encode() + b"/"
        self.keys_used: set[bytes] = set()

    def _key(self, key: bytes) -> bytes:
        full = self.prefix + key
        self.keys_used.add(full)
        return full

    def save(self, key: bytes, value: bytes) -> None:
        self.inner.save(self._key(key), value)

    def fetch(self, key: bytes) -> Iterable[bytes]:
        return self.inner.fetch(self._key(key))

    def delete(self, key: bytes, value: bytes) -> None:
        self.inner.delete(self._key(key), value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self.inner.move(self._key(src), self._key(dest), value)


def copy_keys(source: ExampleDatabase, destination: ExampleDatabase, keys: Iterable[bytes]) -> int:
    """Copy every value stored under ``keys``; returns how many values were copied."""
    copied = 0
    for key in keys:
        for value in source.fetch(key):
            destination.save(key, value)
            copied += 1
    return copied

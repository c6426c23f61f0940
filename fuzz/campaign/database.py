"""Hypothesis example databases for campaigns: a directory or Redis, keyed per work unit, mergeable.

``open_database("DIR")`` is a directory database, ``open_database("redis://HOST:PORT")`` is
Hypothesis's ``RedisExampleDatabase`` shared by every shard that names it. ``UnitDatabase`` puts
each work unit under its own key prefix (so a rerun of a unit replays what it found) and records
the keys it touched, which is what ``copy_keys`` needs to merge databases through the public API.
A second prefix, ``shared_key``, holds the campaign's findings as serialised corpus entries
(``fuzz.corpus.entry.to_bytes``): every shard appends what it finds there and re-checks what the
others appended.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlparse

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase


def open_database(spec: str) -> ExampleDatabase:
    """A directory path, or ``redis://HOST:PORT[/DB]``; raises ``ValueError`` for a malformed URL."""
    if spec.startswith("redis://"):
        from hypothesis.extra.redis import RedisExampleDatabase
        from redis import Redis

        url = urlparse(spec)
        if not url.hostname or not url.port:
            raise ValueError(f"bad database URL {spec!r}: expected redis://HOST:PORT")
        db_index = int(url.path.strip("/") or 0)
        return RedisExampleDatabase(Redis(host=url.hostname, port=url.port, db=db_index))
    if "://" in spec:
        raise ValueError(f"bad database {spec!r}: a directory path or redis://HOST:PORT")
    Path(spec).mkdir(parents=True, exist_ok=True)
    return DirectoryBasedExampleDatabase(spec)


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

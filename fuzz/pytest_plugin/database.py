"""The plan's example database: the Hypothesis profile's own, with a local stand-in while it is unreachable.

A profile may name a database on a server (``RedisExampleDatabase``, or a ``MultiplexedDatabase`` holding
one). If that server goes away mid-session, every test would fail on its connection error; instead the
plan's tests go on with a directory database beside their saved failures (``--lafuzz-out``), retry the
profile's database with a back-off (``fuzz.campaign.database.FallbackDatabase``, as campaigns do), say so
once when it is lost and once when it is back, and the session's summary says how long it was gone.
A directory or in-memory database cannot be lost and is used as it is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from hypothesis import settings as Settings
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase, InMemoryExampleDatabase

from fuzz.campaign.database import LOCAL, DatabaseHealth, FallbackDatabase, LocalDatabase


def describe(database: ExampleDatabase) -> str:
    """A database in a few words: ``redis://HOST:PORT/DB`` for Redis's, else its class (their reprs run long)."""
    client = getattr(database, "redis", None)
    where = getattr(getattr(client, "connection_pool", None), "connection_kwargs", None)
    if where:
        return f"redis://{where.get('host')}:{where.get('port')}/{where.get('db', 0)}"
    return type(database).__name__


def with_stand_in(chosen: Settings, out: Path, say: Callable[[str], None]) -> tuple[Settings, FallbackDatabase | None]:
    """``chosen`` with its database wrapped in a ``FallbackDatabase`` standing in with ``out/hypothesis-db``
    (and the wrapper), or as it is (and None) when it has no database that can be lost."""
    database = chosen.database
    if database is None or isinstance(database, DirectoryBasedExampleDatabase | InMemoryExampleDatabase):
        return chosen, None
    local, name = Path(out) / LOCAL, describe(database)

    def changed(health: DatabaseHealth) -> None:
        if health.lost:
            say(f"lafuzz: the example database {name} cannot be reached ({health.reason}): going on with "
                f"{local}, retrying it with a back-off")
        else:
            lost, back = health.outages[-1]
            say(f"lafuzz: the example database {name} is back after {back - lost:.1f} s")

    fallback = FallbackDatabase(database, LocalDatabase(local), on_change=changed)
    return Settings(chosen, database=fallback), fallback


def outage_line(fallback: FallbackDatabase | None) -> str | None:
    """The session summary's line about a database that was lost, if it was."""
    if fallback is None or not fallback.state.outages:
        return None
    health = fallback.state
    still = " (still unreachable at the end)" if health.lost else ""
    return (f"lafuzz: the example database {describe(fallback.shared)} was unreachable for "
            f"{health.unreachable_s(time.time()):.1f} s in all{still}; {fallback.local.path} stood in")

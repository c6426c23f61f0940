"""A shared example database that goes away: a local one stands in, the shared one is retried with a
back-off, the campaign says so once and records how long it was gone, and nothing found is lost (the
corpus has it, and ``lafuzz merge`` still works without the server). Against a real ``redis-server``."""

from __future__ import annotations

import pytest
from hypothesis.database import InMemoryExampleDatabase
from redis.exceptions import ConnectionError as RedisConnectionError
from support.redis_server import redis_server

from fuzz.campaign.campaign import CampaignConfig, run_campaign
from fuzz.campaign.database import (
    LOCAL,
    DatabaseHealth,
    FallbackDatabase,
    LocalDatabase,
    open_database,
    shared_key,
)
from fuzz.campaign.progress import Progress
from fuzz.campaign.summary import EXIT_NEW_FINDINGS, Summary
from fuzz.cli import main
from fuzz.corpus import entry as corpus

BROKEN = "support.fakes:BrokenBackend"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Flaky(InMemoryExampleDatabase):
    """A shared database that refuses every call while ``up`` is False, lazily on fetch as Redis's does."""

    def __init__(self) -> None:
        super().__init__()
        self.up, self.calls = True, 0

    def _answer(self) -> None:
        self.calls += 1
        if not self.up:
            raise RedisConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    def fetch(self, key: bytes):
        self._answer()
        yield from super().fetch(key)

    def save(self, key: bytes, value: bytes) -> None:
        self._answer()
        super().save(key, value)


def test_a_lost_database_is_retried_with_a_back_off_and_caught_up_when_back(tmp_path) -> None:
    shared, clock, changes = Flaky(), Clock(), list[DatabaseHealth]()
    database = FallbackDatabase(shared, LocalDatabase(tmp_path / LOCAL), clock, on_change=changes.append)
    database.save(b"k", b"before")
    shared.up = False
    database.save(b"k", b"meanwhile")  # refused: the local one takes it
    assert database.lost and [h.lost for h in changes] == [True]
    assert "Connection refused" in database.health().reason
    tried = []
    for _ in range(400):  # one call every half second for 200 s
        clock.now += 0.5
        before = shared.calls
        assert list(database.fetch(b"k")) == [b"meanwhile"]  # served locally, never an error
        if shared.calls > before:
            tried.append(clock.now - 100.0)
        if clock.now >= 300.0:
            break
    assert tried[:6] == [1.0, 3.0, 7.0, 15.0, 31.0, 61.0] and tried[6] - tried[5] == 30.0  # doubling, capped
    shared.up = True
    clock.now += 30.0
    database.save(b"k", b"after")
    assert not database.lost and [h.lost for h in changes] == [True, False]
    assert set(shared.fetch(b"k")) == {b"before", b"meanwhile", b"after"}  # what was saved meanwhile caught up
    [[lost, back]] = database.health().outages
    assert (lost, back) == (100.0, clock.now)


def test_a_real_server_stopped_and_started_again(tmp_path) -> None:
    clock = Clock()
    with redis_server() as server:
        database = FallbackDatabase(open_database(server.url), LocalDatabase(tmp_path / LOCAL), clock)
        database.save(b"k", b"one")
        server.stop()
        database.save(b"k", b"two")
        assert database.lost and list(database.fetch(b"k")) == [b"two"]
        server.start()  # an empty server: it keeps nothing on disk
        clock.now += 1.0
        assert list(database.fetch(b"k")) == []  # the shared one answers again
        assert not database.lost and set(open_database(server.url).fetch(b"k")) == {b"two"}


class Watching(Progress):
    """The progress line, calling ``hook`` with every note the campaign prints."""

    def __init__(self, hook) -> None:
        super().__init__(interval=60)
        self.hook, self.notes = hook, list[str]()

    def note(self, message: str) -> None:
        self.notes.append(message)
        self.hook(message)
        super().note(message)


def test_a_campaign_whose_redis_server_dies_goes_on_locally_and_its_findings_still_merge(tmp_path, capsys) -> None:
    out = tmp_path / "shard"
    with redis_server() as server:
        def stop_at_first_finding(message: str) -> None:
            if "new finding" in message:
                server.stop()

        progress = Watching(stop_at_first_finding)
        config = CampaignConfig(properties=["backends-agree", "prefix-oracle"], backends=["oracle", BROKEN], seed=7,
                                jobs=2, time_budget=None, example_budget=120, examples_per_unit=20, limits="ci",
                                out=out, database=server.url, known_corpus=None)
        summary = run_campaign(config, progress)
        lost = [n for n in progress.notes if "cannot be reached" in n]
        assert len(lost) == 1, progress.notes  # once, for both workers
        assert server.url in lost[0] and "(ConnectionError: " in lost[0] and str(out / LOCAL) in lost[0]
        assert summary.exit_status == EXIT_NEW_FINDINGS and summary.units > 2
        assert summary.database_outages and summary.database_unreachable_s > 0
        assert Summary.read(out / "summary.json").database_unreachable_s == summary.database_unreachable_s
        assert any((out / LOCAL).iterdir()), "the local database took nothing"
        entries = list(corpus.entry_dirs(out / "corpus"))
        assert {f["id"] for f in summary.findings} == {e.name for e in entries}

        capsys.readouterr()
        assert main(["merge", str(out), "--out", str(tmp_path / "merged")]) == 0  # the server is still down
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"example database {server.url} unreachable" in err, err
        merged = Summary.read(tmp_path / "merged" / "summary.json")
        assert {f["id"] for f in merged.findings} == {e.name for e in entries}
        assert sum(merged.database_values_copied.values()) > 0  # from the local one
        assert main(["replay", str(tmp_path / "merged"), "--backends", f"oracle,{BROKEN}"]) == 1


def test_shared_findings_published_locally_reach_the_other_workers_of_the_shard(tmp_path) -> None:
    """While the shared database is gone, what one worker publishes is in the local stand-in, which the
    other workers of the same shard read."""
    shared = Flaky()
    shared.up = False
    key = shared_key("backends-agree", ["oracle", "broken"])
    one = FallbackDatabase(shared, LocalDatabase(tmp_path / LOCAL))
    two = FallbackDatabase(shared, LocalDatabase(tmp_path / LOCAL))
    one.save(key, b"a finding")
    assert list(two.fetch(key)) == [b"a finding"]


@pytest.mark.parametrize("spec", ["redis://127.0.0.1", "mongodb://x:1"])
def test_a_malformed_database_is_still_a_value_error(spec: str) -> None:
    with pytest.raises(ValueError):
        open_database(spec)

"""A full disk, injected at the write layer (``fuzz.atomic._store``, where every result the suite writes
reaches the disk): a write that does not fit writes what fits and fails with ``ENOSPC``, as ``write(2)``
does. Nothing half-written is left, a campaign stops with one line and keeps what it wrote, its summary is
written if the room it held back (``fuzz.output.Reserve``) lets it, and no command prints a traceback."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pytest

from fuzz import atomic
from fuzz.atomic import PARTIAL
from fuzz.campaign import campaign as campaign_module
from fuzz.campaign.database import LocalDatabase
from fuzz.campaign.summary import EXIT_NEW_FINDINGS, EXIT_OUT_OF_SPACE, Summary, exit_status
from fuzz.cli import main
from fuzz.corpus import entry as corpus

REAL_STORE = atomic._store


class FullDisk:
    """The disk under ``root`` with ``free`` bytes left; ``fills_after``: unlimited until a write to a path
    containing it completes, then nothing left. ``room`` is what releasing the reserve gives back."""

    def __init__(self, root: Path, free: float = 0, fills_after: str | None = None, room: int = 0) -> None:
        self.root, self.free, self.fills_after, self.room = root, free, fills_after, room
        self.refused: list[Path] = []

    def store(self, path: Path, data: bytes) -> None:
        if not path.is_relative_to(self.root):
            return REAL_STORE(path, data)
        fits = data[: int(max(0, min(self.free, len(data))))]
        with open(path, "xb") as file:
            file.write(fits)
        self.free -= len(fits)
        if len(fits) < len(data):
            self.refused.append(path)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        if self.fills_after is not None and self.fills_after in str(path):
            self.free = 0

    def reserve(self, directory: Path) -> _Reserve:
        return _Reserve(self)


class _Reserve:
    """``fuzz.output.Reserve`` on the fake disk: releasing it gives the disk its room."""

    def __init__(self, disk: FullDisk) -> None:
        self.disk = disk

    def release(self) -> None:
        self.disk.free += self.disk.room
        self.disk.room = 0


@pytest.fixture
def disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def install(**kwargs) -> FullDisk:
        fake = FullDisk(tmp_path / "out", **kwargs)
        monkeypatch.setattr(atomic, "_store", fake.store)
        monkeypatch.setattr(campaign_module, "Reserve", fake.reserve)
        return fake
    return install


def _partial_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(PARTIAL) and (p.is_file() or any(p.iterdir()))]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path: Path, disk) -> None:
    target = tmp_path / "out" / "summary.json"
    target.parent.mkdir()
    target.write_text("the old summary")
    disk(free=10)
    with pytest.raises(OSError) as refused:
        atomic.write_text(target, "a new summary, longer than ten bytes")
    assert refused.value.errno == errno.ENOSPC and refused.value.filename == str(target)  # not the temporary's
    assert target.read_text() == "the old summary"
    assert os.listdir(target.parent) == ["summary.json"]


def test_a_failed_folder_leaves_no_partial_folder_and_the_old_one_whole(tmp_path: Path, disk) -> None:
    old = tmp_path / "out" / "entry"
    old.mkdir(parents=True)
    (old / "entry.json").write_text("old")
    disk(free=5)
    with pytest.raises(OSError), atomic.staged_directory(old) as staging:
        atomic.write_text(staging / "arrays.npz", "0123")
        atomic.write_text(staging / "entry.json", "the new entry")
    assert os.listdir(tmp_path / "out") == ["entry"] and (old / "entry.json").read_text() == "old"


def test_the_example_database_drops_a_value_that_does_not_fit_and_remembers_why(tmp_path: Path, disk) -> None:
    disk(free=300)
    database = LocalDatabase(tmp_path / "out" / "db")
    database.save(b"key", b"small")
    database.save(b"key", b"x" * 1000)
    assert sorted(database.fetch(b"key")) == [b"small"]  # the big one is not there, not even truncated
    assert database.out_of_space is not None and "example database value" in database.out_of_space.what
    assert Path(database.out_of_space.path).is_relative_to(tmp_path / "out" / "db")
    assert not _partial_files(tmp_path / "out")


def test_a_new_finding_outranks_a_full_disk_which_outranks_the_rest() -> None:
    new, known = [{"known_failure": None}], [{"known_failure": {"issue": "x"}}]
    assert exit_status(new, 10, interrupted=False, out_of_space=True) == EXIT_NEW_FINDINGS
    assert exit_status(known, 0, interrupted=True, lost=2, out_of_space=True) == EXIT_OUT_OF_SPACE


CAMPAIGN = ["campaign", "--examples", "200", "--examples-per-unit", "20", "-j", "1", "--limits", "ci", "--seed", "3",
            "--properties", "backends-agree"]


def _campaign(tmp_path: Path, backends: str, capsys) -> tuple[int, list[str], list[str]]:
    status = main([*CAMPAIGN, "--backends", backends, "--out", str(tmp_path / "out"), "--corpus", str(tmp_path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, out + err
    return status, out.splitlines(), [line for line in err.splitlines() if "disk full" in line]


def test_a_disk_that_fills_mid_campaign_stops_it_keeps_the_corpus_and_still_gets_the_summary(
        tmp_path: Path, disk, capsys) -> None:
    """Full right after the first corpus entry: the next write (an example database value) is refused."""
    fake = disk(free=float("inf"), fills_after="/corpus/", room=2**20)
    status, out, full = _campaign(tmp_path, "oracle,support.fakes:BrokenBackend", capsys)
    assert status == EXIT_NEW_FINDINGS  # the finding saved before the disk filled
    assert len(full) == 1, full  # said once
    assert re.fullmatch(r"\[lafuzz\] disk full: could not save an example database value to \S+/hypothesis-db/\S+ "
                        r"\(No space left on device\): stopping, no new unit; what was written is kept", full[0])
    summary = Summary.read(tmp_path / "out" / "summary.json")  # the reserve's room made it fit
    refused = Path(summary.out_of_space["path"]) if summary.out_of_space else None
    assert refused and fake.refused[0].name.startswith(f".{refused.name}.")  # the file meant, not its temporary
    assert summary.units < 10, "the campaign went on taking units after the disk filled"
    assert "the disk filled up" in out[-1] and "summary: " + str(tmp_path / "out" / "summary.json") in out[-1]
    assert not _partial_files(tmp_path / "out")
    [entry] = corpus.entry_dirs(tmp_path / "out" / "corpus")
    assert corpus.read_entry(entry).finding.backends == ("oracle", "broken")
    assert main(["replay", str(entry), "--backends", "oracle,support.fakes:BrokenBackend"]) == 1  # it reproduces


def test_a_disk_with_no_room_at_all_exits_5_and_the_last_line_says_the_summary_was_not_written(
        tmp_path: Path, disk, capsys) -> None:
    disk(free=0)
    status, out, full = _campaign(tmp_path, "oracle,support.fakes:SlightlyOffBackend", capsys)
    assert status == EXIT_OUT_OF_SPACE
    assert len(full) == 1 and full[0].startswith("[lafuzz] disk full: could not save an example database value"), full
    assert "exit 5; the disk filled up" in out[-1] and "summary: NOT written (disk full)" in out[-1], out[-1]
    assert "report: NOT written (disk full)" in out[-1]
    assert not (tmp_path / "out" / "summary.json").exists() and not _partial_files(tmp_path / "out")


def test_any_command_on_a_full_disk_is_one_line(tmp_path: Path, disk, capsys) -> None:
    disk(free=4000)
    assert main(["import-cuda", "--corpus", str(tmp_path / "out")]) == EXIT_OUT_OF_SPACE
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and re.fullmatch(r"lafuzz import-cuda: disk full: could not save its output to \S+ "
                                          r"\(No space left on device\)", err[0]), err
    assert not _partial_files(tmp_path / "out")
    for entry in corpus.entry_dirs(tmp_path / "out"):
        corpus.read_entry(entry)  # the entries written before it are whole

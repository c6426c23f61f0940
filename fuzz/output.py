"""A command's output directory (``--out``): created, proven writable and checked for room before any work.

A campaign that found a bug and then could not save it, or a benchmark that ran for minutes and then
could not write its results, has wasted its run; so every command that writes results checks its
directory first, by creating and deleting a probe file in it (permissions alone do not tell: root
ignores them, a read-only mount does not), and by the free space ``shutil.disk_usage`` reports.
Each problem is one ``UsageError`` line (exit 2).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from fuzz.usage import UsageError

MIN_FREE_BYTES = 64 * 2**20
"""Free space an output directory must have at the start: a summary, a report and a few corpus entries
need far less, a campaign's example database and memory plots somewhat more."""


def prepare_output(path: Path, option: str = "--out", min_free: int = MIN_FREE_BYTES) -> Path:
    """``path`` created if needed, written to and cleaned up once, with at least ``min_free`` bytes free;
    ``UsageError`` naming ``option`` and the path otherwise."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"{option} {path}: cannot create the directory ({err.strerror})") from None
    probe = path / f".lafuzz-write-probe-{os.getpid()}"
    try:
        probe.write_bytes(b"probe")
        probe.unlink()
    except OSError as err:
        raise UsageError(f"{option} {path}: cannot write there ({err.strerror})") from None
    free = shutil.disk_usage(path).free
    if free < min_free:
        raise UsageError(f"{option} {path}: only {free / 2**20:.1f} MiB free, at least {min_free / 2**20:.0f} MiB "
                         "needed")
    return path


RESERVE_BYTES = 16 * 2**20
"""Room a campaign holds back in its output directory for its summary and report: several times what a
10-minute campaign's ``summary.json`` takes (docs/campaign.md)."""
RESERVE_NAME = ".lafuzz-reserve"


class Reserve:
    """A file of ``size`` bytes in ``directory``, taken at the start and given back when the disk fills, so
    that the summary still fits. A file system that cannot give the room leaves no reserve (nothing fails)."""

    def __init__(self, directory: Path, size: int = RESERVE_BYTES) -> None:
        self.path: Path | None = Path(directory) / RESERVE_NAME
        try:
            with open(self.path, "wb") as file:
                os.posix_fallocate(file.fileno(), 0, size)  # real blocks, on tmpfs too; not a sparse file
        except OSError:
            self.release()

    def release(self) -> None:
        """Give the room back (idempotent)."""
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None

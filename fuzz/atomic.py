"""Files and folders written whole or not at all: every result the suite writes goes through here.

A file is written to a hidden temporary name beside it and renamed over the final name
(``os.replace``); a folder (a corpus entry, an upstream export) is built under ``<name>.partial`` and
renamed into place. A write that fails, a full disk above all, removes what it had started and raises,
so a reader never meets a truncated summary, entry or database value, and what was there before stays.

A full disk is ``OSError`` with ``ENOSPC`` (no space) or ``EDQUOT`` (over quota): ``out_of_space``
tells it from other errors, and ``OutOfSpace`` says, in one line, what could not be saved where.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PARTIAL = ".partial"
"""The suffix of a folder being built (readers skip it: ``fuzz.corpus.entry.entry_dirs``)."""
OUT_OF_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def out_of_space(error: BaseException) -> bool:
    """Whether ``error`` is a full disk or an exhausted quota."""
    return isinstance(error, OSError) and error.errno in OUT_OF_SPACE_ERRNOS


@dataclass(frozen=True)
class OutOfSpace:
    """What a full disk kept from being saved: the path, in words what it was, and the error's text."""

    path: str
    what: str
    reason: str = "No space left on device"

    @classmethod
    def of(cls, error: OSError, what: str, path: Path | str | None = None) -> OutOfSpace:
        """From the ``OSError``; ``path`` where the error names none (or names a temporary file)."""
        return cls(str(path if path is not None else error.filename), what, error.strerror or str(error))

    def line(self) -> str:
        return f"disk full: could not save {self.what} to {self.path} ({self.reason})"


def _store(path: Path, data: bytes) -> None:
    """Create ``path`` holding ``data``: the one place bytes reach the disk (tests replace it to fill one)."""
    with open(path, "xb") as file:
        file.write(data)


def write_bytes(path: Path | str, data: bytes, temporary_dir: Path | None = None) -> Path:
    """Replace ``path`` with ``data`` atomically; on any error nothing of the new file remains.

    The temporary file lies beside ``path``, or in ``temporary_dir`` (on the same file system) where readers
    list ``path``'s folder while others write into it (a shared example database).
    """
    path = Path(path)
    temporary = (temporary_dir or path.parent) / f".{path.name}.{os.getpid()}{PARTIAL}"
    temporary.unlink(missing_ok=True)
    try:
        _store(temporary, data)
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            temporary.unlink()
        if isinstance(error, OSError):  # named by the file meant, not the temporary one
            raise OSError(error.errno, error.strerror, str(path)) from error
        raise
    return path


def write_text(path: Path | str, text: str) -> Path:
    """``write_bytes`` of ``text`` in UTF-8."""
    return write_bytes(path, text.encode())


def append_text(path: Path | str, text: str) -> Path:
    """``path`` replaced by its old content followed by ``text`` (for files another program owns and reads
    after us, such as GitHub's job summary): all of it, or as it was."""
    path = Path(path)
    old = path.read_bytes() if path.exists() else b""
    return write_bytes(path, old + text.encode())


@contextlib.contextmanager
def staged_directory(final: Path | str) -> Iterator[Path]:
    """Build a folder under ``<final>.partial`` and rename it to ``final`` when the block ends without error
    (an earlier ``final`` is replaced); on an error the partial folder is removed and the error goes on."""
    final = Path(final)
    staging = final.with_name(final.name + PARTIAL)
    shutil.rmtree(staging, ignore_errors=True)
    try:
        staging.mkdir(parents=True)
        yield staging
        if final.exists():
            # rename cannot replace a folder that has files: move the old one aside first, then drop it
            old = final.with_name(final.name + ".old" + PARTIAL)
            shutil.rmtree(old, ignore_errors=True)
            final.rename(old)
            staging.rename(final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            staging.rename(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def copy_directory(source: Path | str, destination: Path | str) -> Path:
    """Copy the folder ``source`` to ``destination`` (absent or replaced), whole or not at all, each file
    through ``write_bytes``."""
    source = Path(source)
    with staged_directory(destination) as staging:
        for path in sorted(source.rglob("*")):
            target = staging / path.relative_to(source)
            if path.is_dir() and not path.is_symlink():
                target.mkdir(parents=True, exist_ok=True)
            elif path.is_file() and not path.is_symlink():
                target.parent.mkdir(parents=True, exist_ok=True)
                write_bytes(target, path.read_bytes())
    return Path(destination)

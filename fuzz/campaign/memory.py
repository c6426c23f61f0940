"""What changed in the implementation: since a git revision, or since the last clean campaign.

The corpus remembers the implementation at the last campaign that ended with nothing new: ``HASHES`` in the
corpus directory holds a SHA-256 of each file under ``fuzz.campaign.focus.IMPLEMENTATION_ROOTS``. The corpus
is committed, so a fresh clone with an edited kernel differs from it, and a plain campaign there leans towards
the edit. Reading the record needs files only (no git); a record that is missing or unreadable is one note and
no focus, never an error.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

from fuzz import atomic
from fuzz.campaign.focus import implementation_files

HASHES = "implementation-hashes.json"
"""The record's file name in the corpus directory."""

FORMAT = "lafuzz-implementation-hashes/1"

ROOT = Path(__file__).resolve().parents[2]
"""The checkout the running suite was imported from: the implementation a campaign tests."""


class Unreadable(ValueError):
    """The record is missing or not a record (one line says which)."""


def hashes(root: Path = ROOT) -> dict[str, str]:
    """Relative path -> SHA-256 of every implementation file under ``root``."""
    return {path: hashlib.sha256((root / path).read_bytes()).hexdigest() for path in implementation_files(root)}


def recorded(corpus: Path) -> dict[str, str]:
    """The hashes recorded in ``corpus``; ``Unreadable`` saying why there are none."""
    path = corpus / HASHES
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        raise Unreadable(f"{path} does not exist (no clean campaign recorded the implementation yet)") from None
    except (OSError, ValueError) as err:
        raise Unreadable(f"{path} cannot be read ({err})") from None
    files = document.get("files") if isinstance(document, dict) and document.get("format") == FORMAT else None
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise Unreadable(f"{path} is not a record of implementation hashes (format {FORMAT})")
    return files


def changed(before: dict[str, str], now: dict[str, str]) -> list[str]:
    """The files added, removed or edited between two sets of hashes, sorted."""
    return sorted(path for path in before.keys() | now.keys() if before.get(path) != now.get(path))


def record(corpus: Path, now: dict[str, str]) -> bool:
    """Write ``now`` as the record in ``corpus`` (atomically); False where it already says so (nothing written)."""
    try:
        if recorded(corpus) == now:
            return False
    except Unreadable:
        pass
    atomic.write_text(corpus / HASHES, json.dumps({"format": FORMAT, "files": now}, indent=1, sort_keys=True) + "\n")
    return True


def changed_since(revision: str, root: Path = ROOT) -> list[str]:
    """The files changed since ``revision`` in the git checkout at ``root``: committed since, staged, unstaged and
    untracked (not ignored). ``ValueError`` with git's message for a bad revision or a folder that is no checkout."""
    if revision.startswith("-"):
        raise ValueError(f"--since {revision}: not a revision")

    def git(*args: str) -> list[str]:
        try:
            done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True)
        except FileNotFoundError:
            raise ValueError("--since needs git, which is not installed here") from None
        except subprocess.CalledProcessError as err:
            raise ValueError(f"--since {revision}: git {' '.join(args[:2])} failed: {err.stderr.strip()}") from None
        return [line for line in done.stdout.splitlines() if line]

    return sorted(set(git("diff", "--name-only", revision, "--")) |
                  set(git("ls-files", "--others", "--exclude-standard")))

"""The committed record of the implementation's hashes (``corpus/implementation-hashes.json``,
``fuzz.campaign.memory``) is that of the committed implementation: a plain campaign in a fresh clone with one
edited kernel then leans towards that kernel, where a stale record would turn the focus off ("no focus: ... changed,
which serves every backend and op") and spread the budget evenly again."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from fuzz.campaign import memory
from fuzz.campaign.focus import IMPLEMENTATION_ROOTS, LEFT_OUT

ROOT = Path(__file__).resolve().parents[2]


def _committed_hashes() -> dict[str, str]:
    """Relative path -> SHA-256 of each implementation file as committed at HEAD."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", "HEAD", "--",
                             *IMPLEMENTATION_ROOTS], capture_output=True, text=True, check=True).stdout.split()
    paths = [p for p in listed if not set(Path(p).parts) & set(LEFT_OUT)]
    blobs = subprocess.run(["git", "-C", str(ROOT), "cat-file", "--batch"], input="".join(f"HEAD:{p}\n" for p in paths)
                           .encode(), capture_output=True, check=True).stdout
    found, at = {}, 0
    for path in paths:
        header_end = blobs.index(b"\n", at)
        size = int(blobs[at:header_end].split()[2])
        found[path] = hashlib.sha256(blobs[header_end + 1:header_end + 1 + size]).hexdigest()
        at = header_end + 1 + size + 1
    return found


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                    reason="needs git and a checkout (an installed wheel has no committed record to keep current)")
def test_the_committed_record_is_the_committed_implementation() -> None:
    stale = memory.changed(memory.recorded(ROOT / "corpus"), _committed_hashes())
    assert not stale, (f"corpus/{memory.HASHES} is stale for {', '.join(stale[:8])}: re-record it before committing "
                       "(python -c \"from pathlib import Path; from fuzz.campaign import memory; "
                       "memory.record(Path('corpus'), memory.hashes())\")")

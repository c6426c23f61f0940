"""Replay of the real corpus (corpus/), one test per entry and backend check: no regression allowed.

An entry marked as a known failure must still fail (``xfail``); if it passes, the test fails and
says "now fixed" so that the mark is removed. Reference entries (the CUDA EP's results) are checked
against every backend this machine has.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz import corpus
from fuzz.backends import REGISTRY, Unavailable, create
from fuzz.replay import NOW_FIXED, REGRESSION, SKIPPED, STILL_FAILING, replay_entry

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
ENTRIES = list(corpus.entry_dirs(CORPUS))


@pytest.fixture(scope="module")
def available():
    """Every backend this machine has, created once for the module."""
    backends = {}
    for name in REGISTRY:
        try:
            backends[name] = create(name)
        except Unavailable:
            continue
    yield backends
    for backend in backends.values():
        backend.close()


def test_corpus_is_there():
    assert len(ENTRIES) >= 64, f"expected the 64 CUDA reference entries at least under {CORPUS}"


@pytest.mark.parametrize("directory", ENTRIES, ids=lambda d: f"{d.parent.name}/{d.name}")
def test_replay_entry(directory, available):
    verdicts = replay_entry(corpus.read_entry(directory), available)
    lines = "\n".join(v.line() for v in verdicts)
    assert not [v for v in verdicts if v.verdict in (REGRESSION, NOW_FIXED)], lines
    if all(v.verdict == SKIPPED for v in verdicts):
        pytest.skip(lines)
    if any(v.verdict == STILL_FAILING for v in verdicts):
        pytest.xfail(lines)

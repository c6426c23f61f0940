"""Replay of the real corpus (corpus/), one test per entry: no regression allowed.

An entry marked as a known failure must still fail (``xfail``); if it passes, the test fails and
says "now fixed" so that the mark is removed. To keep CI near a minute on two cores, an entry
marked as a known failure is replayed on the backend its mark names, and every other reference
entry (the CUDA EP's results) on one fast backend, taken round-robin (``CI_BACKENDS``), so each
fast backend meets a quarter of them. ``lafuzz replay`` checks every entry on every backend.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz.corpus import entry as corpus
from fuzz.corpus.replay import NOW_FIXED, REGRESSION, SKIPPED, STILL_FAILING, replay_entry
from fuzz.engine.properties import PROPERTIES
from fuzz.model.findings import Kind

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
ENTRIES = list(corpus.entry_dirs(CORPUS))
CI_BACKENDS = ("oracle", "ort-cpu", "wgpu", "wgpu-dawn")
"""The backends that run a small case in milliseconds (ort-webgpu compiles a shader per new shape)."""


def test_corpus_is_there():
    assert len(ENTRIES) >= 64, f"expected the 64 CUDA reference entries at least under {CORPUS}"


def _ci_backends(entry: corpus.Entry, number: int, available: dict) -> dict:
    """The backends one entry is replayed on in CI (see the module docstring)."""
    if entry.finding.known and entry.expected_arrays:
        names = [entry.finding.known.backend]
    elif entry.expected_arrays:
        fast = [n for n in CI_BACKENDS if n in available]
        names = [fast[number % len(fast)]] if fast else []
    else:
        names = list(entry.finding.backends)
    return {n: available[n] for n in names if n in available}


@pytest.mark.slow
@pytest.mark.parametrize("number", range(len(ENTRIES)), ids=lambda i: f"{ENTRIES[i].parent.name}/{ENTRIES[i].name}")
def test_replay_entry(number, available, backend):
    entry = corpus.read_entry(ENTRIES[number])
    chosen = _ci_backends(entry, number, available)
    if PROPERTIES[entry.finding.property].invalid_input or entry.finding.kind in (Kind.CRASH, Kind.TIMEOUT):
        chosen = {name: backend(name, isolate=True) for name in chosen}  # the corpus holds cases that crash one
    verdicts = replay_entry(entry, chosen)
    lines = "\n".join(v.line() for v in verdicts)
    assert not [v for v in verdicts if v.verdict in (REGRESSION, NOW_FIXED)], lines
    if all(v.verdict == SKIPPED for v in verdicts):
        pytest.skip(lines)
    if any(v.verdict == STILL_FAILING for v in verdicts):
        pytest.xfail(lines)

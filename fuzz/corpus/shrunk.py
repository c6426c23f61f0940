"""Which documented issues a campaign counts as shrunk from its start, so that their backends sit out the cases
the issues affect without shrinking them again."""

from __future__ import annotations

from collections.abc import Iterable

from fuzz.backends.registry import WORKER_BUILDS
from fuzz.corpus.known_issues import KNOWN_ISSUES
from fuzz.model.findings import Kind


def preshrunk(backends: Iterable[str]) -> set[str]:
    """The documented issues of the builds in worker processes among ``backends``. A campaign counts them as shrunk
    from its start (the builds sit out the cases they affect): shrinking a crash there again costs a worker, or a
    browser, per example (seconds each: docs/other-builds.md); ``lafuzz matrix`` and the tests check them instead."""
    names = set(backends)
    return {known.id for known in KNOWN_ISSUES if known.backend in WORKER_BUILDS and known.backend in names}


def shrunk_by_the_first_worker(backends: Iterable[str], worker: int) -> set[str]:
    """The documented crashes and hangs of ``backends`` that campaign worker ``worker`` counts as shrunk from its
    start: in every worker but the first (number 0), which shrinks each once for the whole campaign. Each example
    of such a shrink costs a fresh crash-isolated process, its session and shaders anew, and a shrink takes many
    (docs/campaign.md#swarm-shares)."""
    if worker == 0:
        return set()
    names = set(backends)
    return {known.id for known in KNOWN_ISSUES if known.backend in names and known.kind in (Kind.CRASH, Kind.TIMEOUT)}

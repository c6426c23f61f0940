"""Replay: re-check corpus entries, deterministically, on the backends at hand.

An entry found by a campaign is re-checked with its property over its recorded backends (skipped
when one is missing here). A reference entry (one that stores expected outputs, such as the CUDA
EP's) is checked once per available backend, against a stand-in backend that returns the stored
outputs. Each check ends in one verdict:

- ``pass``: the property holds and the entry carries no mark (a fixed bug whose entry guards it);
- ``regression``: it fails and no known-failure mark covers the failing backends;
- ``still failing`` / ``now fixed``: the entry is marked as a known failure of an implementation,
  and the failure is (or is no longer) there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from fuzz.backends import Backend, Capabilities, Unsupported
from fuzz.campaign.unit import resolve_property
from fuzz.corpus.entry import Entry
from fuzz.engine.case import Case
from fuzz.engine.properties import PropertyFailure

PASS, REGRESSION, STILL_FAILING, NOW_FIXED, SKIPPED = "pass", "regression", "still failing", "now fixed", "skipped"


class StoredBackend(Backend):
    """Returns an entry's stored outputs for its own case (a reference computed elsewhere)."""

    def __init__(self, name: str, case: Case, outputs: dict[str, np.ndarray]) -> None:
        self.name = name
        self.case = case
        self.outputs = outputs

    def capabilities(self) -> Capabilities:
        return Capabilities(dtypes=(str(self.case.dtype),), window="native", aliasing=False,
                            device="stored results", versions={})

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        if not case.identical(self.case):
            raise Unsupported(self.name, "stored results exist only for the entry's own case")
        return self.outputs["output"], self.outputs["present_state"]


@dataclass(frozen=True)
class Verdict:
    """The outcome of re-checking one entry on one backend set."""

    entry: Entry
    backends: tuple[str, ...]
    verdict: str
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.verdict == REGRESSION

    def line(self) -> str:
        head = f"{self.verdict:<13} {self.entry.property}/{self.entry.id} [{', '.join(self.backends)}]"
        return f"{head}: {self.detail}" if self.detail else head


def _judge(entry: Entry, backends: list[Backend]) -> Verdict:
    names = tuple(b.name for b in backends)
    mark = entry.known_failure
    try:
        resolve_property(entry.property).check(entry.case, backends)
    except PropertyFailure as failure:
        detail = f"{failure.kind}: {failure.signature}"
        covered = mark is not None and mark.get("backend") in failure.backends
        if covered:
            return Verdict(entry, names, STILL_FAILING, f"{detail} (known: {mark.get('implementation')})")
        return Verdict(entry, names, REGRESSION, detail)
    if mark is not None and mark.get("backend") in names:
        return Verdict(entry, names, NOW_FIXED, f"marked as failing in {mark.get('implementation')}: remove the mark")
    return Verdict(entry, names, PASS)


def replay_entry(entry: Entry, available: dict[str, Backend]) -> list[Verdict]:
    """Every verdict for one entry given the backends available by name."""
    if entry.expected_arrays:
        reference = StoredBackend(entry.backends[0], entry.case, entry.expected_arrays)
        return [_judge(entry, [reference, backend]) for name, backend in available.items()
                if name not in entry.backends]
    missing = [n for n in entry.backends if n not in available]
    if missing:
        return [Verdict(entry, entry.backends, SKIPPED, f"backend(s) not available: {', '.join(missing)}")]
    return [_judge(entry, [available[n] for n in entry.backends])]


def replay(entries: Iterable[Entry], available: dict[str, Backend]) -> list[Verdict]:
    """Verdicts for every entry, in order."""
    return [v for entry in entries for v in replay_entry(entry, available)]

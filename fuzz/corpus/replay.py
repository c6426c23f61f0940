"""Replay: re-check corpus entries, deterministically, on the backends at hand.

An entry found by a campaign is re-checked with its property over its recorded backends (skipped
when one is missing here). A reference entry (one that stores expected outputs, such as the CUDA
EP's) is checked once per available backend, against a backend that returns the stored outputs
(``StoredBackend``). Each check ends in one verdict:

- ``pass``: the property holds and the entry carries no mark (a fixed bug whose entry guards it);
- ``regression``: it fails and no known-failure mark covers the failing backends;
- ``still failing`` / ``now fixed``: the failure is known (``fuzz.corpus.classifier.Classifier``:
  a documented issue in play for the backends' versions, or the entry's own ``known_failure`` mark)
  and is (or, for a marked entry, is no longer) there. With ``strict`` nothing is known: a known
  failure is a regression;
- ``error``: the check raised instead of passing or failing (a backend outside its typed outcomes);
- ``refused``: the entry records a backend that is not a registry name (``module:Class`` would import code
  named by data: ``fuzz.backends.registry.check_recorded``); nothing is imported, and the entry is still
  checked on its other backends.

An entry that cannot be read (``fuzz.corpus.entry.CorpusError``) is not replayed: ``unreadable_line``
names it in the same column layout.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

import numpy as np

from fuzz.backends import Backend, Capabilities, Unsupported
from fuzz.backends.registry import UnknownRecordedBackend, check_recorded
from fuzz.corpus.classifier import Classifier
from fuzz.corpus.entry import CorpusError, Entry
from fuzz.engine.properties import resolve_property
from fuzz.model.case import Case
from fuzz.model.findings import PropertyFailure

PASS, REGRESSION, STILL_FAILING, NOW_FIXED, SKIPPED = "pass", "regression", "still failing", "now fixed", "skipped"
REFUSED = "refused"
"""A recorded backend name that is not a registry name: ``lafuzz replay`` and ``repro`` exit 2."""
HARNESS_ERROR = "error"
"""The check itself raised (a backend outside its typed outcomes, or a bug here): reported, never a traceback."""
FAILED = (REGRESSION, HARNESS_ERROR)
"""The verdicts that make ``lafuzz replay`` exit 1."""
UNREADABLE = "unreadable"
VERDICT_WIDTH = 13
"""The width of the verdict column of replay's lines."""


class StoredBackend(Backend):
    """Returns an entry's stored outputs for its own case (a reference computed elsewhere)."""

    def __init__(self, name: str, case: Case, outputs: dict[str, np.ndarray]) -> None:
        self.name = name
        self.case = case
        self.outputs = outputs

    def capabilities(self) -> Capabilities:
        return Capabilities(dtypes=(str(self.case.dtype),), window="native", aliasing=False,
                            device="stored results", versions={}, ops=(self.case.op.name,))

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

    def line(self) -> str:
        name = f"{self.entry.finding.property}/{self.entry.id}"
        head = f"{self.verdict:<{VERDICT_WIDTH}} {name} [{', '.join(self.backends)}]"
        return f"{head}: {self.detail}" if self.detail else head


def unreadable_line(error: CorpusError) -> str:
    """One line naming an entry that could not be read, and why (``unreadable  <property>/<id>: ...``)."""
    return f"{UNREADABLE:<{VERDICT_WIDTH}} {error.name}: {error.problem}"


def _judge(entry: Entry, backends: list[Backend], strict: bool) -> Verdict:
    names = tuple(b.name for b in backends)
    mark = entry.finding.known
    classifier = Classifier.for_backends(backends, {entry.id: mark} if mark else {}, strict=strict)
    try:
        resolve_property(entry.finding.property).check(entry.finding.case, backends)
    except PropertyFailure as failure:
        found = classifier.classify(failure.finding, entry_id=entry.id)
        detail = f"{found.kind}: {found.signature}" + (f" ({found.note})" if found.note else "")
        if found.known is not None:
            return Verdict(entry, names, STILL_FAILING, f"{detail} (known: {found.known.implementation})")
        return Verdict(entry, names, REGRESSION, detail)
    except Exception as error:  # one entry's broken check must not end the replay of the others
        first_line = next(iter(str(error).splitlines()), "")
        return Verdict(entry, names, HARNESS_ERROR, f"{type(error).__name__}: {first_line}")
    if mark is not None and mark.backend in names:
        return Verdict(entry, names, NOW_FIXED, f"marked as failing in {mark.implementation}: remove the mark")
    return Verdict(entry, names, PASS)


def recorded_backends(entry: Entry, given: Collection[str] = ()) -> tuple[tuple[str, ...], list[Verdict]]:
    """The entry's recorded backends that are registry names or the names of backends ``given`` on the
    command line (a ``module:Class`` there is the user's choice), and a ``refused`` verdict for each other
    one (nothing is imported to find out)."""
    names, refused = [], []
    for name in entry.finding.backends:
        try:
            names.append(name if name in given else check_recorded(name, f"entry {entry.finding.property}/{entry.id}"))
        except UnknownRecordedBackend as err:
            refused.append(Verdict(entry, (name,), REFUSED, err.args[0]))
    return tuple(names), refused


def replay_entry(entry: Entry, available: dict[str, Backend], *, strict: bool = False) -> list[Verdict]:
    """Every verdict for one entry given the backends available by name (``strict``: nothing is known).

    A reference entry's recorded backend only names its stored results; the backends of any other entry are
    ``recorded_backends``: a name that is neither a registry name nor one of ``available`` is refused, and
    the entry is checked on the rest."""
    recorded = entry.finding.backends
    if entry.expected_arrays:
        reference = StoredBackend(recorded[0], entry.finding.case, entry.expected_arrays)
        return [_judge(entry, [reference, backend], strict)
                for name, backend in available.items() if name not in recorded]
    names, verdicts = recorded_backends(entry, available)
    missing = [n for n in names if n not in available]
    if missing:
        verdicts.append(Verdict(entry, names, SKIPPED, f"backend(s) not available: {', '.join(missing)}"))
    elif names:
        verdicts.append(_judge(entry, [available[n] for n in names], strict))
    return verdicts


def replay(entries: Iterable[Entry], available: dict[str, Backend], *, strict: bool = False) -> list[Verdict]:
    """Verdicts for every entry, in order."""
    return [v for entry in entries for v in replay_entry(entry, available, strict=strict)]

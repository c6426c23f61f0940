"""The one place that decides whether a finding is known: ``Classifier``, against the catalogue of known issues.

``Classifier`` answers "is this finding known?" for campaigns, replay and tests alike. It is made
with the implementations of the backends in play (``for_backends``) and is ``strict`` when known
issues must count as new (``--strict``). A finding is known when a documented issue in play covers
it (its backend among the failing ones, same kind, the case affected), or when a corpus entry with
the finding's id carries a ``known_failure`` mark naming one of its backends (a mark that names a
documented issue holds where that issue is in play). A failure an issue covers on another version than the
documented ones is new, noted "known in 0.4.0, also in 1.0.0-dev". ``affecting`` answers the question asked
before a case runs: does an issue in play of this backend affect it (so the backend may sit the case out once the
issue is shrunk)?
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from fuzz.backends.base import Backend
from fuzz.corpus.known_issue import KnownIssue
from fuzz.corpus.known_issues import KNOWN_ISSUES
from fuzz.implementation import Implementation
from fuzz.model.case import Case
from fuzz.model.findings import Finding, KnownMark


class Classifier:
    """Decides whether a finding is known.

    ``marks`` are the corpus's ``known_failure`` marks by entry id; ``implementations`` what each
    backend in play runs, by backend name (a backend left out, or None, is matched by name alone);
    ``strict``: nothing is known, every issue is checked in full.
    """

    def __init__(
        self,
        marks: dict[str, KnownMark] | None = None,
        implementations: Mapping[str, Implementation | None] | None = None,
        strict: bool = False,
    ) -> None:
        self.marks = dict(marks or {})
        self.implementations = dict(implementations or {})
        self.strict = strict

    @classmethod
    def for_backends(
        cls, backends: Iterable[Backend], marks: dict[str, KnownMark] | None = None, strict: bool = False
    ) -> Classifier:
        """For these backends, as each reports its implementation."""
        return cls(marks, {b.name: b.implementation for b in backends}, strict)

    @classmethod
    def from_corpus(cls, entries: Iterable[tuple[str, KnownMark | None]]) -> Classifier:
        """From ``(entry id, mark)`` pairs, e.g. every entry of a corpus."""
        return cls({entry_id: mark for entry_id, mark in entries if mark is not None})

    def in_play(self, known: KnownIssue) -> bool:
        """Whether ``known`` counts as known here: not strict, and its backend runs an affected version."""
        return not self.strict and known.has(self.implementations.get(known.backend))

    def affecting(self, backend: str, case: Case) -> KnownIssue | None:
        """The first issue in play of ``backend`` that affects ``case``, if any."""
        return next(iter(self.every_affecting(backend, case)), None)

    def every_affecting(self, backend: str, case: Case) -> list[KnownIssue]:
        """Every issue in play of ``backend`` that affects ``case``: a hybrid-block case can be one of several
        (a shared beta in LinearAttention's half, a kernel of one tap in the convolution)."""
        return [i for i in KNOWN_ISSUES if i.backend == backend and i.affects(case) and self.in_play(i)]

    def documented(self, finding: Finding) -> KnownIssue | None:
        """The issue in play that covers ``finding``, if any."""
        return next((i for i in KNOWN_ISSUES if i.covers(finding) and self.in_play(i)), None)

    def classify(self, finding: Finding, entry_id: str | None = None) -> Finding:
        """``finding`` with ``known`` set when it is known (and, for a documented issue, the issue's id
        as its id). ``entry_id`` names the corpus entry the finding re-checks (replay), whose mark counts.
        A finding an issue covers that is not in play is new, with a note saying where it is known."""
        documented = self.documented(finding)
        if documented is not None:
            return finding.with_(known=documented.mark(), id=entry_id or documented.id)
        mark = self.marks.get(entry_id or finding.id)
        if mark is not None and mark.backend in finding.backends and self._mark_holds(mark):
            return finding.with_(known=mark, id=entry_id or finding.id)
        outside = next((i for i in KNOWN_ISSUES if i.covers(finding)), None)
        return finding if outside is None else finding.with_(note=self._note(outside))

    def _mark_holds(self, mark: KnownMark) -> bool:
        """A mark naming a documented issue holds where the issue is in play; any other, unless strict."""
        named = next((i for i in KNOWN_ISSUES if i.id == mark.issue), None)
        return self.in_play(named) if named is not None else not self.strict

    def _note(self, known: KnownIssue) -> str:
        """Why an issue that covers a finding did not make it known."""
        where = f"{known.id}: known in {known.known_in}"
        if self.strict:
            return f"{where}; --strict: reported as new"
        running = self.implementations.get(known.backend)
        if running is None:  # a backend that does not say what it runs has every version (``KnownIssue.has``)
            return where
        return f"{where}, also in {running.version if running.name == known.implementation else running}"

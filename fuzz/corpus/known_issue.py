"""What a known issue is: one documented wrong behaviour of one implementation, the cases it affects, and where
it was seen.

An issue is documented for one implementation and a range of its versions (``implementation``,
``versions``: a ``packaging`` specifier set such as ``==0.4.0``). A backend that reports another
version (a local build's ``1.0.0-dev``, a release with fixes, a version it cannot name) is checked
in full: the issue is not applied to it. The catalogue of issues is ``fuzz.corpus.known_issues``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict

from packaging.specifiers import SpecifierSet

from fuzz.engine.hybrid_block import la_calls
from fuzz.implementation import Implementation
from fuzz.model.case import Case
from fuzz.model.findings import Finding, Kind, KnownMark
from fuzz.model.ops import CAUSAL_CONV, LINEAR_ATTENTION
from oracles.validation import ValidationError


@dataclass(frozen=True)
class KnownIssue:
    """One known wrong behaviour of one implementation."""

    id: str
    backend: str
    """The backend at fault (its name in the factory)."""
    implementation: str
    """What the backend runs when it has the issue (``Implementation.name``)."""
    versions: SpecifierSet
    """The versions of ``implementation`` that have it."""
    seen_with: str
    """Where it was seen, in words (the rest of the stack, the machines)."""
    kind: Kind
    """``MISMATCH`` for a wrong result on a valid case, or the error-parity kind for an invalid one."""
    summary: str
    applies: Callable[[Case], bool]
    """True for the cases the issue affects."""
    misread: Callable[[Case], Case] | None = None
    """For a wrong result: the case as the implementation effectively reads it (the oracle on it
    reproduces the implementation)."""
    op: str = LINEAR_ATTENTION.name
    """The op whose cases it affects (``applies`` is asked about that op's cases only)."""

    def affects(self, case: Case) -> bool:
        """Whether ``case`` is one the issue affects: a call of its op for which ``applies`` holds is the case
        or one the case makes (a hybrid-block case's LinearAttention calls: ``calls_in``)."""
        if case.op.name == self.op:
            return self.applies(case)
        return any(call.op.name == self.op and self.applies(call) for call in calls_in(case)[1:])

    @property
    def known_in(self) -> str:
        """The versions that have it, in words: ``0.4.0`` for one version, else the specifier set."""
        specifiers = list(self.versions)
        if len(specifiers) == 1 and specifiers[0].operator in ("==", "==="):
            return specifiers[0].version
        return str(self.versions)

    def mark(self) -> KnownMark:
        return KnownMark(
            backend=self.backend,
            issue=self.id,
            implementation=f"{self.implementation} {self.known_in} with {self.seen_with}",
            explanation=self.summary,
        )

    def has(self, implementation: Implementation | None) -> bool:
        """Whether ``implementation`` is one this issue is documented for; None (a backend that does not
        say what it runs: a test's fake) is taken to be one."""
        return implementation is None or implementation.within(self.implementation, self.versions)

    def covers(self, finding: Finding) -> bool:
        """Whether ``finding`` is an instance of this issue."""
        return self.backend in finding.backends and self.kind == finding.kind and self.affects(finding.case)


def calls_in(case: Case) -> tuple[Case, ...]:
    """The case, and for a hybrid-block case (CausalConvWithState with the LinearAttention half in its notes)
    LinearAttention's calls too: a defect of either op shows through the block."""
    if case.op.name != CAUSAL_CONV.name or "block" not in case.notes:
        return (case,)
    try:
        return (case, *la_calls(case))
    except ValidationError:
        return (case,)


class Build(TypedDict):
    """Where an issue was seen: the implementation, its versions that have it, the rest of the stack in words."""

    implementation: str
    versions: SpecifierSet
    seen_with: str

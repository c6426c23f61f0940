"""The one finding model: what went wrong, on which backends, in which minimal case, and whether it is known.

A property check that fails raises ``PropertyFailure`` carrying a ``Finding``; the Hypothesis
driver (``fuzz.campaign.unit``) hands the shrunk ``Finding`` to its caller; a corpus entry
(``fuzz.corpus.entry``) is made from a ``Finding`` and read back into one; a campaign summary lists
``Finding.to_json()`` with where its entry was written. Whether a finding is already known (a
documented defect of a real implementation, or a corpus mark) is decided in one place,
``fuzz.corpus.classifier.Classifier``, which sets ``Finding.known``.
"""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any

from fuzz.model.case import Case
from fuzz.model.ops import LINEAR_ATTENTION


class Kind(enum.StrEnum):
    """How a property failed (or, for ``REFERENCE`` and ``NEAR_MISS``, an entry that is not a failure)."""

    MISMATCH = "mismatch"
    """Results differ beyond the tolerance model, or are not bitwise identical / exactly zero where required."""
    REJECTED_VALID = "rejected-valid"
    """A valid case was refused."""
    CLOBBERED_INPUT = "clobbered-input"
    """The call wrote into an array the caller passed (not an aliased binding)."""
    CRASH = "crash"
    """The process running the backend died (signal or abnormal exit)."""
    TIMEOUT = "timeout"
    """The backend did not answer in time."""
    ACCEPTED_INVALID = "accepted-invalid"
    """Values were returned for an input that breaks a rule of the contract."""
    UNCLEAR_ERROR = "unclear-error"
    """An invalid input was refused with an empty message."""
    HARNESS_ERROR = "harness-error"
    """The suite itself (or a backend outside its typed outcomes) raised: a bug to fix here."""
    REFERENCE = "reference"
    """A corpus entry holding results computed elsewhere (the CUDA EP's), not a failure."""
    NEAR_MISS = "near-miss"
    """A corpus entry holding a case that passed close to its tolerance (``fuzz.corpus.candidates``), not a
    failure."""


@dataclass(frozen=True)
class KnownMark:
    """Why a finding is not new: the backend at fault, the documented issue, the implementation it was seen in."""

    backend: str
    issue: str
    implementation: str
    explanation: str

    def to_json(self) -> dict[str, str]:
        return {"backend": self.backend, "issue": self.issue, "implementation": self.implementation,
                "explanation": self.explanation}

    @classmethod
    def from_json(cls, document: dict[str, Any] | None) -> KnownMark | None:
        """The mark stored in a corpus entry or summary (None for none); ``issue`` may be absent in marks
        a person wrote by hand."""
        if not document:
            return None
        return cls(backend=document["backend"], issue=document.get("issue", ""),
                   implementation=document.get("implementation", ""), explanation=document.get("explanation", ""))


def finding_key(property_name: str, backends: tuple[str, ...], signature: str) -> str:
    """The stable id of a finding: a hash of what makes two findings the same."""
    text = json.dumps([property_name, sorted(backends), signature])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Finding:
    """A minimal failing case and the property's verdict on it."""

    property: str
    backends: tuple[str, ...]
    """The implementations involved, the one at fault first."""
    kind: Kind
    signature: str
    """Stable across random values (property, backends, kind, detail, op): two findings with the same
    property, backends and signature are the same finding."""
    report: str
    """The human account: the mismatch report, or what the backend said."""
    case: Case
    mismatch: dict[str, Any] | None = None
    """Where and by how much a comparison failed (``fuzz.engine.compare.Mismatch.facts``)."""
    known: KnownMark | None = None
    id: str = field(default="")
    """The corpus id: a documented issue's id when one covers the finding, else ``finding_key``."""
    note: str = ""
    """Why a documented issue that covers it did not make it known, e.g. "ort-webgpu-shared-beta:
    known in 0.4.0, also in 0.5.0" (another version is checked in full), or ``--strict``; for a known
    crash confirmed on its documented case instead of shrunk, that it still reproduces
    (``fuzz.corpus.documented_case.REPLAYED``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "backends", tuple(self.backends))
        object.__setattr__(self, "kind", Kind(self.kind))
        if not self.id:
            object.__setattr__(self, "id", finding_key(self.property, self.backends, self.signature))

    @classmethod
    def of(cls, *, property: str, backends: tuple[str, ...], kind: Kind, detail: str, report: str, case: Case,
           mismatch: dict[str, Any] | None = None) -> Finding:
        """A new finding; its signature is built from the parts that stay the same across random values, the
        op among them (named after the rest, for any op but LinearAttention, whose signatures predate ops)."""
        signature = f"{property}/{'+'.join(backends)}/{kind}/{detail}"
        if case.op is not LINEAR_ATTENTION:
            signature += f"@{case.op.name}"
        return cls(property=property, backends=tuple(backends), kind=kind, signature=signature, report=report,
                   case=case, mismatch=mismatch)

    def with_(self, **changes: Any) -> Finding:
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        """The finding's facts, JSON-ready (the case as its one-line summary; the corpus keeps its arrays)."""
        return {"id": self.id, "property": self.property, "backends": list(self.backends), "kind": str(self.kind),
                "signature": self.signature, "report": self.report, "summary": self.case.summary(),
                "mismatch": self.mismatch, "known_failure": self.known.to_json() if self.known else None,
                "note": self.note}


class PropertyFailure(AssertionError):
    """Raised by a property check that does not hold; ``finding`` says what, where and on which case."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.report)
        self.finding = finding

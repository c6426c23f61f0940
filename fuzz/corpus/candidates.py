"""Near misses: the passing cases that came closest to their tolerance, kept as corpus candidates.

A case that passed at nine tenths of its tolerance is the one a small change (a reordered sum, a
new kernel geometry) tips over. Each work unit hands back its worst passing case (``NearMiss``); a
campaign keeps the ``KEEP`` highest error/tolerance ratios and writes them as ordinary corpus
entries under ``<out>/near-misses/<property>/<id>`` (kind ``near-miss``), so ``lafuzz repro`` re-checks
one and ``lafuzz promote`` copies one into the regression corpus, where replay must keep passing it.
"""

from __future__ import annotations

import builtins
import heapq
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuzz.corpus.entry import Entry, read_entry, write_entry
from fuzz.model.case import Case
from fuzz.model.findings import Finding, Kind

KEEP = 20
"""How many near misses a campaign keeps (the highest ratios)."""
DIRECTORY = "near-misses"
"""Where a campaign writes its near misses, under its ``--out``."""


@dataclass(frozen=True)
class NearMiss:
    """The passing case of one unit that came closest to its tolerance, and where (``"a/b|output"``)."""

    ratio: float
    part: str
    property: str
    unit: str
    case: Case

    @builtins.property  # the field ``property`` shadows the builtin in this class body
    def backends(self) -> tuple[str, ...]:
        """The backends of the comparison that came close (the pair of ``part``)."""
        return tuple(self.part.split("|")[0].split("/"))

    def entry(self, provenance: dict[str, Any]) -> Entry:
        """The near miss as a corpus entry (a ``near-miss`` finding that is no failure)."""
        where = self.part.split("|")[1]
        finding = Finding(
            property=self.property, backends=self.backends, kind=Kind.NEAR_MISS,
            signature=f"{self.property}/{'+'.join(self.backends)}/near-miss/{where}/{self.unit}",
            report=f"passed at error/tolerance {self.ratio:.4g} on {where} of {' vs '.join(self.backends)} "
                   f"(unit {self.unit}); a candidate regression entry: lafuzz promote <this directory>",
            case=self.case, mismatch={"ratio": self.ratio, "part": self.part})
        return Entry(finding, expected={"contract": f"property {self.property!r} holds for these backends"},
                     provenance={**provenance, "unit": self.unit})


def highest(near_misses: list[NearMiss], keep: int = KEEP) -> list[NearMiss]:
    """The ``keep`` near misses with the highest ratios, highest first."""
    return heapq.nlargest(keep, near_misses, key=lambda miss: miss.ratio)


def write_candidates(out: Path, near_misses: list[NearMiss], provenance: dict[str, Any]) -> list[dict[str, Any]]:
    """Write each near miss as an entry under ``out/near-misses``; one summary row per entry, highest first."""
    rows = []
    for miss in near_misses:
        path = write_entry(Path(out) / DIRECTORY, miss.entry(provenance))
        rows.append({"ratio": miss.ratio, "part": miss.part, "property": miss.property, "unit": miss.unit,
                     "summary": miss.case.summary(), "path": str(path), "reproduce": f"lafuzz repro {path}",
                     "promote": f"lafuzz promote {path}"})
    return rows


def promote(candidate: Path, corpus: Path) -> Path:
    """Copy a candidate entry (read and checked first: ``CorpusError``) into ``corpus`` as a regression entry;
    ``FileExistsError`` if the corpus already has an entry with its id."""
    entry = read_entry(candidate)
    target = Path(corpus) / entry.relative_dir()
    if target.exists():
        raise FileExistsError(f"{target} already exists in the corpus")
    entry.provenance = {**entry.provenance, "promoted_from": str(candidate)}
    return write_entry(corpus, entry)

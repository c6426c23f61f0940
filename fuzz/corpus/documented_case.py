"""A documented issue's own minimal case, replayed in place of shrinking a new one.

Shrinking a crash or hang of a build in a crash-isolated process costs a fresh process per example, and a shrink
takes many (docs/campaign.md#swarm-shares), to end at a case the corpus already holds: the entry whose
``known_failure`` mark names the issue. Running that entry's case once with its property on the same backends says
whether the issue still reproduces as documented. ``replay`` answers with the finding, classified and noted
``REPLAYED``, when it fails as the issue; otherwise with why not (documentation that may be stale: the caller
shrinks, as for any finding), and with what the case did fail with, if anything, as a finding of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fuzz.backends import Backend, Lost
from fuzz.corpus.classifier import Classifier
from fuzz.corpus.entry import CorpusError, Entry, entry_dirs, read_entry
from fuzz.corpus.known_issue import KnownIssue
from fuzz.engine.properties import resolve_property
from fuzz.model.findings import Finding, PropertyFailure

REPLAYED = "still reproduces: documented case replayed"
"""The note of a known finding confirmed by its documented case rather than shrunk."""


def documented_entry(root: Path | None, issue_id: str) -> tuple[Entry, Path] | None:
    """The entry under corpus ``root`` named for ``issue_id`` whose ``known_failure`` mark names it, and its
    directory; None where there is none (or it cannot be read: replay falls back to shrinking)."""
    for directory in entry_dirs(root) if root is not None else ():
        if directory.name != issue_id:
            continue
        try:
            entry = read_entry(directory)
        except CorpusError:
            continue
        if entry.finding.known is not None and entry.finding.known.issue == issue_id:
            return entry, directory
    return None


@dataclass(frozen=True)
class Replay:
    """What replaying an issue's documented case said."""

    confirmed: bool
    """The case failed as the issue: ``finding`` stands for it."""
    finding: Finding | None
    """What the case failed with, classified (None: it did not fail, or could not be run)."""
    why: str = ""
    """Why the issue is not confirmed, in words."""


def replay(known: KnownIssue, root: Path | None, backends: Sequence[Backend], classifier: Classifier) -> Replay:
    """Run ``known``'s documented case under ``root`` once, with the entry's property, on those of ``backends``
    the entry records. ``Lost`` (a backend that can no longer run) is raised as the property raises it."""
    found = documented_entry(root, known.id)
    if found is None:
        return Replay(False, None, f"no entry of the corpus {root} documents {known.id}")
    entry, where = found
    at_hand = [b for b in backends if b.name in entry.finding.backends]
    missing = sorted(set(entry.finding.backends) - {b.name for b in at_hand})
    if missing:
        return Replay(False, None, f"its documented case {where} needs {', '.join(missing)}")
    try:
        resolve_property(entry.finding.property).check(entry.finding.case, at_hand)
    except PropertyFailure as failure:
        finding = classifier.classify(failure.finding)
        documented = classifier.documented(finding)
        if documented is not None and documented.id == known.id:
            return Replay(True, finding.with_(note=REPLAYED, report=f"{REPLAYED}: {where}\n{finding.report}"))
        return Replay(False, finding, f"its documented case {where} failed otherwise: {finding.signature}")
    except Lost:
        raise
    except Exception as error:  # a harness error: not a verdict on the issue, which is then shrunk
        return Replay(False, None, f"replaying its documented case {where} raised {type(error).__name__}: {error}")
    return Replay(False, None, f"its documented case {where} passed")

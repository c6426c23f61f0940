"""The findings matrix: every documented finding of the corpus, run on every build present, one verdict each.

A build is judged as an exported ``repro.py`` judges it, from the case alone (``fuzz.export.plan``): a valid
case must give the oracle's results, an invalid one must be refused, ``T = 0`` may be refused or passed
through. The verdicts, and the exit status an exported repro gives for each (1 the defect is there, 0 it is
not, 2 nothing can be told):

- ``wrong results`` (1): values outside the tolerance model, or of another shape;
- ``crash`` (1), with the signal or the trap; ``hang`` (1);
- ``refused`` (1 for a valid case, 0 for an invalid one, which must be refused);
- ``accepted invalid`` (1): values returned for input that breaks a rule;
- ``fixed`` (0): the oracle's results (or, at ``T = 0``, the allowed pass-through);
- ``cannot load`` (2): the build cannot load or place the model (an older schema, no kernel).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fuzz.backends import Backend, Crashed, Rejected, TimedOut, Unavailable, Unsupported
from fuzz.corpus.entry import Entry, entry_dirs, read_entry
from fuzz.corpus.known_issues import KNOWN_ISSUES
from fuzz.engine.compare import MismatchError, assert_agrees_with_oracle
from fuzz.engine.properties import _passes_through
from fuzz.export.plan import Expectation, expectation_of
from fuzz.model.case import Case

WRONG, CRASH, HANG, REFUSED, ACCEPTED, FIXED, CANNOT_LOAD = (
    "wrong results", "crash", "hang", "refused", "accepted invalid", "fixed", "cannot load")
DETAIL_CHARS = 90
"""A cell quotes at most this much of a build's message."""
_SIGNAL = re.compile(r"killed by (SIG[A-Z0-9]+)|wasm trap \(([^)]*)\)|tab crashed|browser went away"
                     r"|leaving the WebGPU backend unusable \(Failed to execute '(\w+)'")


@dataclass(frozen=True)
class Cell:
    """One build's verdict on one finding."""

    verdict: str
    detail: str
    status: int
    """What an exported repro exits with for it: 1 defect, 0 fixed, 2 cannot check."""

    def text(self) -> str:
        return f"{self.verdict} ({self.detail})" if self.detail else self.verdict


def _short(message: str) -> str:
    line = " ".join(message.split())
    return line if len(line) <= DETAIL_CHARS else line[: DETAIL_CHARS - 3] + "..."


def _crash_detail(message: str) -> str:
    found = _SIGNAL.search(message)
    if found is None:
        return _short(message)
    if found.group(3):
        return f"{found.group(3)} threw, the next run hangs"
    return found.group(1) or (f"wasm trap: {found.group(2)}" if found.group(2) else found.group(0))


def judge(case: Case, backend: Backend) -> Cell:
    """Run ``case`` once on ``backend`` and say what it did, against what the contract expects."""
    expectation, _ = expectation_of(case)
    try:
        result = backend.run(case)
    except Unsupported as err:
        return Cell(CANNOT_LOAD, _short(err.message), 2)
    except Rejected as err:
        return Cell(REFUSED, _short(err.message), 1 if expectation is Expectation.OUTPUTS else 0)
    except Crashed as err:
        return Cell(CRASH, _crash_detail(err.message), 1)
    except TimedOut as err:
        return Cell(HANG, _short(err.message), 1)
    output, state = np.asarray(result[0]), np.asarray(result[1])
    if expectation is Expectation.REJECTION_OR_PASS_THROUGH and _passes_through(case, (output, state)):
        return Cell(FIXED, "passes the state through", 0)
    if expectation is not Expectation.OUTPUTS:
        zeros = " (all zeros)" if output.size and not np.any(output) else ""
        return Cell(ACCEPTED, f"returns values{zeros}", 1)
    try:
        assert_agrees_with_oracle(case, (output, state), label=backend.name)
    except MismatchError as err:
        m = err.mismatch
        if m.actual_shape != m.expected_shape:
            return Cell(WRONG, f"{m.tensor} of shape {m.actual_shape}, not {m.expected_shape}", 1)
        zeros = ", all zeros" if not np.any(output) else ""
        return Cell(WRONG, f"{m.tensor} {m.where()}: {m.actual:.4g} for {m.expected:.4g}{zeros}", 1)
    return Cell(FIXED, "", 0)


def documented_findings(corpus: Path) -> list[Entry]:
    """The corpus entries of the documented findings (an entry named for its known issue, as ``lafuzz export``
    folders are), by id; the other marked entries are further instances of them found by campaigns."""
    documented = {known.id for known in KNOWN_ISSUES}
    return sorted((e for d in entry_dirs(corpus) if d.name in documented for e in [read_entry(d)]), key=lambda e: e.id)


@dataclass(frozen=True)
class Matrix:
    """Findings (rows) by builds (columns)."""

    findings: tuple[str, ...]
    builds: tuple[str, ...]
    implementations: dict[str, str]
    """Build name -> what it runs, in words."""
    cells: dict[tuple[str, str], Cell]

    def markdown(self) -> str:
        """The matrix as a Markdown table: a row per finding, a column per build."""
        head = "| finding | " + " | ".join(f"{b} ({self.implementations[b]})" for b in self.builds) + " |"
        rule = "|---|" + "---|" * len(self.builds)
        rows = [f"| {f} | " + " | ".join(self.cells[f, b].text().replace("|", "/") for b in self.builds) + " |"
                for f in self.findings]
        return "\n".join([head, rule, *rows])

    def to_json(self) -> dict[str, object]:
        return {"findings": list(self.findings), "builds": list(self.builds), "implementations": self.implementations,
                "cells": {f"{f}|{b}": {"verdict": c.verdict, "detail": c.detail, "status": c.status}
                          for (f, b), c in self.cells.items()}}


OUR_KERNEL = "wgpu"
"""The one build of the suite's own WGSL kernel a matrix shows by default (its other forms give the same verdicts)."""


def builds(names: Iterable[str]) -> list[str]:
    """The builds a matrix shows by default among backend ``names``: every ONNX Runtime build and our kernel."""
    from fuzz.backends.ort_session import OrtBackend
    from fuzz.backends.registry import backend_class

    def is_build(name: str) -> bool:
        try:
            return name == OUR_KERNEL or issubclass(backend_class(name), OrtBackend)
        except (KeyError, Unavailable):
            return False

    return [n for n in names if is_build(n)]


def findings_matrix(entries: Iterable[Entry], backends: Sequence[Backend]) -> Matrix:
    """Every entry's case judged on every backend (the oracle, the reference, left out)."""
    entries = list(entries)
    builds = [b for b in backends if b.name != "oracle"]
    cells = {(entry.id, b.name): judge(entry.finding.case, b) for entry in entries for b in builds}
    implementations = {b.name: str(b.capabilities().implementation or b.capabilities().device) for b in builds}
    return Matrix(tuple(e.id for e in entries), tuple(b.name for b in builds), implementations, cells)

"""``--check``: each bug's targeted case must fail with the bug planted and pass without it.

The planted runs happen in a planted copy of the tree (``fuzz.bench.hunt.tree``), one process per bug; the
unplanted ones in one process on the tree itself. Each process is ``python -m fuzz.bench.hunt.targeted`` with
cwd and ``PYTHONPATH`` the tree it checks, so the kernels, oracles and engine it imports are that tree's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from fuzz.bench.hunt.catalogue import CATALOGUE, Bug
from fuzz.bench.hunt.targeted import FAILS, PASSES
from fuzz.bench.hunt.tree import environment, planted_copy

CHECK_TIMEOUT_S = 600.0
"""The longest one checking process may run (cold compiles of large heads on lavapipe take a minute or two)."""


@dataclass(frozen=True)
class CaseRun:
    """One targeted case's verdict in one tree."""

    verdict: str
    detail: str
    seconds: float


@dataclass(frozen=True)
class BugCheck:
    """A bug's targeted case, planted and unplanted."""

    id: str
    planted: CaseRun
    unplanted: CaseRun

    @property
    def proven(self) -> bool:
        """The case fails with the bug and passes without it."""
        return self.planted.verdict == FAILS and self.unplanted.verdict == PASSES

    def line(self) -> str:
        mark = "ok " if self.proven else "BAD"
        return (f"{mark} {self.id}: planted {self.planted.verdict} ({self.planted.seconds:.1f} s: "
                f"{self.planted.detail[:90]}), unplanted {self.unplanted.verdict} ({self.unplanted.seconds:.1f} s)")


def run_cases(root: Path, ids: Sequence[str], catalogue: Path = CATALOGUE, swap: str | None = None
              ) -> dict[str, CaseRun]:
    """The verdicts of the named bugs' targeted cases in the tree at ``root`` (one process), as ``catalogue`` has
    them, with the backends of ``swap`` (``OLD=NEW,...``: ``fuzz.bench.hunt.targeted.parse_swap``) in place."""
    env = environment(root)
    command = [sys.executable, "-m", "fuzz.bench.hunt.targeted", ",".join(ids), "--catalogue", str(catalogue.resolve())]
    try:
        done = subprocess.run([*command, *(["--swap", swap] if swap else [])], cwd=root, env=env,
                              capture_output=True, text=True, timeout=CHECK_TIMEOUT_S, check=False)
        out, err = done.stdout, done.stderr
    except subprocess.TimeoutExpired as timeout:
        partial = timeout.stdout
        out = partial.decode() if isinstance(partial, bytes) else partial or ""
        err = f"timed out after {CHECK_TIMEOUT_S:.0f} s"
    runs = {}
    for line in out.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            runs[row["id"]] = CaseRun(row["verdict"], row["detail"], row["seconds"])
    last = err.strip().splitlines()[-1] if err.strip() else "no output"
    return {i: runs.get(i, CaseRun("error", f"the checking process gave no verdict: {last}", 0.0)) for i in ids}


def check_bugs(bugs: Sequence[Bug], source: Path, report: Callable[[str], None], catalogue: Path = CATALOGUE,
               swap: str | None = None) -> list[BugCheck]:
    """Check every bug's targeted case unplanted (one process on ``source``) and planted (a copy per bug); the
    bugs are ``catalogue``'s, their cases run with the backends of ``swap`` in place (``run_cases``)."""
    unplanted = run_cases(source, [b.id for b in bugs], catalogue, swap)
    checks = []
    for bug in bugs:
        with planted_copy(bug, source) as root:
            planted = run_cases(root, [bug.id], catalogue, swap)[bug.id]
        result = BugCheck(bug.id, planted, unplanted[bug.id])
        report(result.line())
        checks.append(result)
    return checks


def write_checks(checks: Sequence[BugCheck], path: Path) -> None:
    """The checks as JSON: one row per bug, with ``proven``."""
    rows = [{**asdict(c), "proven": c.proven} for c in checks]
    path.write_text(json.dumps(rows, indent=1) + "\n")

"""One bug hunted: the README's campaign run in a planted copy of the tree, timed to its first new finding.

``hunt`` launches ``python -m fuzz.cli campaign --time BUDGET --seed SEED --out OUT`` (and any extra campaign
arguments) with cwd and ``PYTHONPATH`` the planted copy, and reads its output live. The time to the bug is the
wall time from launch to the first ``[lafuzz] new finding:`` line (process start and imports included: what a
developer waits); the campaign's own clock (``first_seen`` in ``summary.json``) is kept beside it. With
``stop_at_first`` the campaign is sent SIGINT at that line: it finishes its running units and writes its
summary (``fuzz.campaign.campaign.Campaign._on_interrupt``), which saves benchmark time. A campaign still running
``HARD_STOP_S`` past its budget is killed with its process group (a hang is a result too). A hunt stopped itself
(Ctrl-C, SIGTERM) kills the campaigns it is running (``stop_all``): each runs in a session of its own, which
the terminal's signal does not reach, in a planted copy that is about to be deleted.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from fuzz.bench.hunt.catalogue import Bug
from fuzz.bench.hunt.tree import environment

NEW_FINDING = "[lafuzz] new finding:"
"""The campaign's progress note of a new finding (``fuzz.campaign.campaign.Campaign._record``)."""

HARD_STOP_S = 120.0
"""How long past its budget a campaign may run (ending units, shrinking, writing) before it is killed."""

_RUNNING: set[subprocess.Popen[str]] = set()
_RUNNING_LOCK = threading.Lock()
_STOPPED = threading.Event()


def _kill(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def stop_all() -> int:
    """Kill every campaign a hunt is running now, with its process group, and any launched from now on; how many
    were running."""
    with _RUNNING_LOCK:
        _STOPPED.set()
        running = list(_RUNNING)
    for process in running:
        _kill(process)
    return len(running)


@dataclass
class HuntResult:
    """What the campaign did against one planted bug."""

    id: str
    op: str
    component: str
    found: bool
    """A new finding (not a known one) was reported."""
    seconds: float | None
    """Wall time from launch to the first new finding's line; None when none came."""
    campaign_seconds: float | None = None
    """The campaign's own ``first_seen`` of that finding (its clock starts after its set-up)."""
    minimal_case: str = ""
    property: str = ""
    backends: list[str] = field(default_factory=list)
    exit_status: int | None = None
    seed: int = 0
    """The campaign's seed."""
    wall_s: float = 0.0
    """The whole run, launch to exit."""
    note: str = ""
    """What went wrong around the run, if anything (no summary, killed past the budget)."""

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> HuntResult:
        return cls(**{k: v for k, v in row.items() if k in cls.__dataclass_fields__})


def _pump(stream: IO[str], lines: queue.Queue[str | None], log: IO[str]) -> None:
    for line in stream:
        log.write(line)
        lines.put(line)
    lines.put(None)


def _first_new(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The new finding the campaign saw first (by ``first_seen``), or None."""
    new = [f for f in summary.get("findings", []) if not f.get("known_failure")]
    seen = summary.get("first_seen", {}).get("findings", {})
    return min(new, key=lambda f: seen.get(f["id"], float("inf")), default=None)


def campaign_command(budget_s: float, seed: int, out: Path, extra: Sequence[str]) -> list[str]:
    """The README's default campaign, as run in a planted copy."""
    return [sys.executable, "-m", "fuzz.cli", "campaign", "--time", f"{budget_s:g}s", "--seed", str(seed),
            "--out", str(out), *extra]


def hunt(bug: Bug, root: Path, out: Path, *, budget_s: float, seed: int, extra: Sequence[str] = (),
         stop_at_first: bool = True, cache_dir: Path | None = None) -> HuntResult:
    """Run the campaign in the planted tree at ``root`` against ``bug``, writing under ``out`` (``campaign.log``
    and the campaign's own output); ``cache_dir``: an empty shader cache for this run (else the user's)."""
    out.mkdir(parents=True, exist_ok=True)
    env = environment(root)
    if cache_dir is not None:
        env["LAFUZZ_CACHE_DIR"] = str(cache_dir)
        env.pop("MESA_SHADER_CACHE_DIR", None)
    result = HuntResult(bug.id, bug.op, bug.component, found=False, seconds=None, seed=seed)
    start = time.monotonic()
    with (out / "campaign.log").open("w") as log:
        process = subprocess.Popen(campaign_command(budget_s, seed, out / "campaign", extra), cwd=root, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                                   start_new_session=True)
        with _RUNNING_LOCK:
            _RUNNING.add(process)
            if _STOPPED.is_set():
                _kill(process)
        try:
            result.exit_status = _follow(process, log, start, start + budget_s + HARD_STOP_S, result, stop_at_first)
        finally:
            with _RUNNING_LOCK:
                _RUNNING.discard(process)
    result.wall_s = round(time.monotonic() - start, 1)
    _read_summary(result, out / "campaign" / "summary.json")
    return result


def _follow(process: subprocess.Popen[str], log: IO[str], start: float, deadline: float, result: HuntResult,
            stop_at_first: bool) -> int:
    """Read the campaign's output until it exits: the seconds from ``start`` to its first new finding into
    ``result`` (then, with ``stop_at_first``, SIGINT), SIGKILL to its group past ``deadline``; its exit status."""
    assert process.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_pump, args=(process.stdout, lines, log), daemon=True).start()
    while True:
        try:
            line = lines.get(timeout=max(0.1, min(1.0, deadline - time.monotonic())))
        except queue.Empty:
            if time.monotonic() > deadline:
                _kill(process)
                result.note = f"killed {HARD_STOP_S:.0f} s past its budget"
            continue
        if line is None:
            return process.wait()
        if line.startswith(NEW_FINDING) and result.seconds is None:
            result.seconds = round(time.monotonic() - start, 1)
            if stop_at_first:
                process.send_signal(signal.SIGINT)


def _read_summary(result: HuntResult, path: Path) -> None:
    """Fill in the finding's case, property, backends and ``first_seen`` from the campaign's summary."""
    if not path.exists():
        result.note = result.note or "the campaign wrote no summary"
        result.found = result.seconds is not None
        return
    summary = json.loads(path.read_text())
    first = _first_new(summary)
    result.found = first is not None or result.seconds is not None
    if first is not None:
        result.minimal_case = first.get("summary", "")
        result.property = first.get("property", "")
        result.backends = list(first.get("backends", []))
        result.campaign_seconds = summary.get("first_seen", {}).get("findings", {}).get(first["id"])

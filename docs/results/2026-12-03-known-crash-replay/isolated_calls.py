"""Runs `lafuzz campaign` in this process (give `-j 1`) with every call of a crash-isolated backend recorded, then
prints, per isolated backend, its calls, the calls that ended its process (a crash or a hang), the processes it
started anew, and the seconds of each kind; then every call that ended or restarted a process, in order:

    .venv/bin/python docs/results/2026-12-03-known-crash-replay/isolated_calls.py \
        campaign -j 1 --seed 4215104394 --time 90s --out /tmp/run
"""

import atexit
import sys
import time
from collections.abc import Callable

import numpy as np

from fuzz.backends.isolation import IsolatedBackend
from fuzz.model.case import Case

Run = Callable[[IsolatedBackend, Case], tuple[np.ndarray, np.ndarray]]

CALLS: list[tuple[str, float, bool, bool, str]] = []
"""(backend, seconds, restarted a process first, ended its process, the case)."""


def _recorded(method: Run) -> Run:
    def run(self: IsolatedBackend, case: Case) -> tuple[np.ndarray, np.ndarray]:
        restarts, started, ended = self.restarts, time.perf_counter(), False
        try:
            return method(self, case)
        except Exception:
            ended = self._process is None
            raise
        finally:
            CALLS.append((self.name, time.perf_counter() - started, self.restarts > restarts, ended, case.summary()))
    return run


def report() -> None:
    for name in sorted({c[0] for c in CALLS}):
        calls = [c for c in CALLS if c[0] == name]
        restarted = [c for c in calls if c[2]]
        print(f"{name} [isolated]: {len(calls)} calls, {sum(c[1] for c in calls):.1f} s; "
              f"{sum(c[3] for c in calls)} ended the process; {len(restarted)} started a new one first: "
              f"{sum(c[1] for c in restarted):.1f} s")
    for number, (name, took, started_anew, ended, case) in enumerate(CALLS):
        if started_anew or ended:
            marks = (" restart" if started_anew else "") + (" ENDED" if ended else "")
            print(f"  #{number} {took:.2f} s {name}{marks} {case}")


setattr(IsolatedBackend, "run", _recorded(IsolatedBackend.run))  # noqa: B010  (mypy refuses assigning a method)
atexit.register(report)

from fuzz.cli import main  # noqa: E402  (after the calls are wrapped)

sys.exit(main(sys.argv[1:]))

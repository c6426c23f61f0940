"""The campaign's live progress line and its resident-memory sampler.

On a terminal the line is rewritten in place (``\\r``); otherwise (CI logs, pipes) a full line is
printed every ``interval`` seconds, so a log shows progress without thousands of updates.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from typing import TextIO

import psutil


def tree_rss_mib() -> float:
    """Resident memory of this process and all its children, in MiB."""
    me = psutil.Process(os.getpid())
    total = me.memory_info().rss
    for child in me.children(recursive=True):
        try:
            total += child.memory_info().rss
        except psutil.Error:
            continue
    return total / 2**20


class Progress:
    """Tracks elapsed time, examples and findings; samples memory; draws the progress line."""

    def __init__(self, stream: TextIO | None = None, interval: float | None = None) -> None:
        self.stream = stream or sys.stderr  # the standard error of the moment, not of the import
        self.tty = self.stream.isatty()
        self.interval = interval if interval is not None else (0.5 if self.tty else 10.0)
        self.start = time.monotonic()
        self.last_draw = -float("inf")
        self.examples = 0
        self.units = 0
        self.findings: Counter = Counter()
        self.coverage = (0, 0)
        """``(buckets reached, buckets in all)`` of ``fuzz.campaign.coverage``."""
        self.peak_rss_mib = 0.0
        self.rss_samples: list[tuple[float, float]] = []

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.start

    @property
    def rate(self) -> float:
        return self.examples / self.elapsed if self.elapsed > 0 else 0.0

    def sample_memory(self) -> None:
        rss = tree_rss_mib()
        self.peak_rss_mib = max(self.peak_rss_mib, rss)
        self.rss_samples.append((round(self.elapsed, 2), round(rss, 1)))

    def line(self) -> str:
        found = ", ".join(f"{kind} {n}" for kind, n in sorted(self.findings.items())) or "none"
        return (
            f"[lafuzz] {self.elapsed:7.1f}s  {self.examples} cases  {self.rate:6.1f}/s  "
            f"{self.units} units  coverage {self.coverage[0]}/{self.coverage[1]}  findings: {found}  "
            f"rss {self.peak_rss_mib:.0f} MiB"
        )

    def tick(self, force: bool = False) -> None:
        """Sample memory and redraw when the interval has passed (or ``force``)."""
        now = time.monotonic()
        if not force and now - self.last_draw < self.interval:
            return
        self.last_draw = now
        self.sample_memory()
        if self.tty:
            self.stream.write("\r\x1b[K" + self.line())
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def note(self, message: str) -> None:
        """A message on its own line (not overwritten by the progress line)."""
        self.stream.write(("\r\x1b[K" if self.tty else "") + message + "\n")
        self.stream.flush()
        self.last_draw = -float("inf")

    def finish(self) -> None:
        self.tick(force=True)
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()

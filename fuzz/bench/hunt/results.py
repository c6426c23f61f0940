"""The benchmark's results: a JSON document, a Markdown table and a plot of bugs found against time.

A run (``HuntRun``) holds how it ran (budget, seed, shader cache warm or cold, campaign arguments, commit, host)
and one ``HuntResult`` per bug. ``summary_line`` says found N of M and the median time of the found ones; the
plot is a step curve of the number of bugs found by each time, with ``--compare`` a second run over it.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fuzz import atomic
from fuzz.bench.hunt.hunting import HuntResult


@dataclass
class HuntRun:
    """One benchmark run: its settings and a result per bug."""

    budget_s: float
    seed: int
    cache: str
    """``warm`` (the user's shader cache) or ``cold`` (an empty one per bug)."""
    campaign_args: list[str]
    commit: str
    host: str
    started: str
    results: list[HuntResult] = field(default_factory=list)

    @property
    def found(self) -> list[HuntResult]:
        return [r for r in self.results if r.found]

    @property
    def median_s(self) -> float | None:
        """Median time to the bug of the bugs found (None where none was)."""
        times = [r.seconds for r in self.found if r.seconds is not None]
        return round(statistics.median(times), 1) if times else None

    def summary_line(self) -> str:
        median = "n/a" if self.median_s is None else f"{self.median_s:.1f} s"
        return (f"found {len(self.found)} of {len(self.results)} bugs in {self.budget_s:g} s each "
                f"(median time to a bug {median}; shader cache {self.cache})")

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "found": len(self.found), "median_s": self.median_s}

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> HuntRun:
        fields = {k: v for k, v in document.items() if k in cls.__dataclass_fields__ and k != "results"}
        return cls(**fields, results=[HuntResult.from_json(r) for r in document.get("results", [])])


def write_json(run: HuntRun, path: Path) -> None:
    atomic.write_text(path, json.dumps(run.to_json(), indent=1) + "\n")


def read_json(path: Path) -> HuntRun:
    return HuntRun.from_json(json.loads(path.read_text()))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown(run: HuntRun) -> str:
    """The table: one row per bug (id, component, found, seconds, minimal case, the finding's backends)."""
    lines = [f"# Time to a bug: {run.summary_line()}", "",
             f"- Commit {run.commit}, host {run.host}, started {run.started}; seed {run.seed}; campaign arguments: "
             f"`{' '.join(run.campaign_args) or '(none)'}`.", "",
             "| bug | component | found | seconds | campaign's clock | minimal case | backends |",
             "|---|---|---|---:|---:|---|---|"]
    for r in run.results:
        seconds = "" if r.seconds is None else f"{r.seconds:.1f}"
        clock = "" if r.campaign_seconds is None else f"{r.campaign_seconds:.1f}"
        found = "yes" if r.found else ("no" + (f" ({r.note})" if r.note else ""))
        lines.append(f"| {r.id} | {_cell(r.component)} | {found} | {seconds} | {clock} | "
                     f"{_cell(r.minimal_case)} | {', '.join(r.backends)} |")
    return "\n".join(lines) + "\n"


def _steps(run: HuntRun) -> tuple[list[float], list[int]]:
    times = sorted(r.seconds for r in run.found if r.seconds is not None)
    return [0.0, *times, run.budget_s], [0, *range(1, len(times) + 1), len(times)]


def plot(run: HuntRun, path: Path, other: HuntRun | None = None, labels: tuple[str, str] = ("this run", "compared")
         ) -> None:
    """Bugs found against time as a step curve (PNG), with ``other`` overlaid when given."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    for each, label, colour in ((other, labels[1], "#8a8a8a"), (run, labels[0], "#b3261e")):
        if each is None:
            continue
        x, y = _steps(each)
        ax.step(x, y, where="post", color=colour, label=f"{label}: {len(each.found)} of {len(each.results)}")
    ax.set_xlabel("seconds from launch")
    ax.set_ylabel("bugs found")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, max(len(run.results), len(other.results) if other else 0) + 0.5)
    ax.axhline(len(run.results), color="#cccccc", linewidth=0.8)
    ax.set_title(f"Time to a bug: campaigns of {run.budget_s:g} s, shader cache {run.cache}")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

"""A campaign as GitHub Actions shows it: a Markdown job summary and an error annotation per new finding.

``publish`` appends the summary to the file ``$GITHUB_STEP_SUMMARY`` names (GitHub renders it on the
run's page; several steps may each append) and, when ``GITHUB_ACTIONS=true``, prints one
``::error title=...::`` workflow command per new finding on standard output, which GitHub lists
as an annotation of the run. Outside GitHub Actions neither variable is set and nothing happens.
Workflow command values are escaped as GitHub's toolkit does: ``%``, CR and LF in both the message and
the title, ``:`` and ``,`` in the title.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, TextIO

from fuzz import atomic
from fuzz.campaign.summary import Summary

STEP_SUMMARY = "GITHUB_STEP_SUMMARY"
ACTIONS = "GITHUB_ACTIONS"


def _escape_message(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_message(text).replace(":", "%3A").replace(",", "%2C")


def _cell(text: str) -> str:
    """Text for one Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def error_annotation(finding: dict[str, Any]) -> str:
    """The ``::error`` workflow command of a new finding: what, on which backends, how to reproduce it."""
    title = f"lafuzz: new {finding['kind']} in {finding['property']} on {'/'.join(finding['backends'])}"
    message = f"{finding['report']}\nreproduce: {finding['reproduce']}"
    return f"::error title={_escape_property(title)}::{_escape_message(message)}"


def _finding_row(finding: dict[str, Any]) -> str:
    known = finding.get("known_failure")
    status = f"known ({known.get('issue') or finding['id']})" if known else "**new**"
    cells = [
        status,
        finding["property"],
        "/".join(finding["backends"]),
        finding["kind"],
        finding["summary"],
        f"`{finding['reproduce']}`",
    ]
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def step_summary(summary: Summary) -> str:
    """The campaign as a Markdown job summary: the verdict, what ran, each property and each finding."""
    config = summary.config
    new = len(summary.new_findings)
    lines = [
        f"## lafuzz campaign: {new} new, {len(summary.findings) - new} known finding(s) (exit {summary.exit_status})",
        "",
        f"{summary.checked_examples} cases checked in {summary.elapsed_s:.0f} s ({summary.cases_per_second}/s) on "
        f"{', '.join(f'`{b}`' for b in config['backends'])}; seed {config['seed']}, shard {config['shard']}, "
        f"limits {config['limits']}.",
        "",
        "| property | units | cases | known-issue cases | findings |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {name} | {row.get('units', 0)} | {row.get('examples', 0)} | {row.get('known', 0)} | "
            f"{row.get('findings', 0)} |"
            for name, row in summary.per_property.items()
        ),
    ]
    if summary.findings:
        lines += [
            "",
            "| finding | property | backends | kind | minimal case | reproduce |",
            "|---|---|---|---|---|---|",
            *(_finding_row(f) for f in summary.findings),
        ]
    return "\n".join(lines) + "\n"


def publish(summary: Summary, environ: Mapping[str, str], out: TextIO | None = None) -> None:
    """Print the annotations under GitHub Actions (to ``out``, default the standard output of the moment);
    append the job summary to ``$GITHUB_STEP_SUMMARY`` if set (atomically: ``fuzz.atomic.append_text``)."""
    if environ.get(ACTIONS) == "true":
        for finding in summary.new_findings:
            print(error_annotation(finding), file=out or sys.stdout)
    if path := environ.get(STEP_SUMMARY):
        atomic.append_text(path, step_summary(summary))

"""What CI reads of a campaign: ``lafuzz campaign --junit FILE``, the GitHub job summary and annotations.

Two short campaigns through the command line, with the test fakes: one finds a new bug (a planted
one), the other only a documented issue (known). Each runs as GitHub Actions would run it: with
``GITHUB_STEP_SUMMARY`` naming a file and ``GITHUB_ACTIONS=true``.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree

import pytest

from fuzz.campaign import github
from fuzz.campaign.summary import Summary
from fuzz.cli import main

BROKEN = "support.fakes:BrokenBackend"
KNOWN = "support.fakes:SharedBetaBackend"
EARLIER_STEP = "## an earlier step's summary\n"


@dataclass
class Run:
    """One campaign's outputs."""

    status: int
    stdout: str
    junit: ElementTree.Element
    step_summary: str
    summary: Summary


def _campaign(root: Path, backends: str, seed: int, examples: int, per_unit: int) -> Run:
    step_summary, junit = root / "step-summary.md", root / "reports" / "junit.xml"
    step_summary.write_text(EARLIER_STEP)
    stdout = io.StringIO()
    with pytest.MonkeyPatch.context() as env, contextlib.redirect_stdout(stdout):
        env.setenv(github.STEP_SUMMARY, str(step_summary))
        env.setenv(github.ACTIONS, "true")
        status = main(
            [
                "campaign",
                "--examples",
                str(examples),
                "--examples-per-unit",
                str(per_unit),
                "-j",
                "1",
                "--seed",
                str(seed),
                "--limits",
                "ci",
                "--backends",
                backends,
                "--properties",
                "backends-agree,leading-zeros",
                "--out",
                str(root / "out"),
                "--corpus",
                str(root / "none"),
                "--junit",
                str(junit),
            ]
        )
    return Run(
        status,
        stdout.getvalue(),
        ElementTree.parse(junit).getroot(),
        step_summary.read_text(),
        Summary.read(root / "out" / "summary.json"),
    )


@pytest.fixture(scope="module")
def new_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The oracle and a backend with a planted bug (slot 0 wrong with a window of 2 or more)."""
    return _campaign(tmp_path_factory.mktemp("new"), f"oracle,{BROKEN}", seed=11, examples=80, per_unit=20)


@pytest.fixture(scope="module")
def known_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The oracle and a backend with ORT WebGPU's documented shared-beta defect."""
    return _campaign(tmp_path_factory.mktemp("known"), f"oracle,{KNOWN}", seed=2, examples=60, per_unit=30)


def _cases(junit: ElementTree.Element) -> dict[str, ElementTree.Element]:
    return {f"{c.get('classname')}::{c.get('name')}": c for c in junit.iter("testcase")}


def _counts_agree(junit: ElementTree.Element) -> None:
    """The counts a CI system shows are the test cases' own outcomes."""
    [suite] = junit.findall("testsuite")
    cases = list(suite.iter("testcase"))
    for node in (junit, suite):
        assert int(node.get("tests")) == len(cases)
        assert int(node.get("failures")) == sum(c.find("failure") is not None for c in cases)
        assert int(node.get("skipped")) == sum(c.find("skipped") is not None for c in cases)


@pytest.mark.slow
def test_junit_fails_a_new_finding_with_its_report_and_repro_command(new_run: Run) -> None:
    assert new_run.status == 1
    _counts_agree(new_run.junit)
    [finding] = [f for f in new_run.summary.findings if f["property"] == "backends-agree"]
    cases = _cases(new_run.junit)
    failure = cases[f"lafuzz.property::backends-agree[oracle,{BROKEN}]"].find("failure")
    assert failure is not None and finding["id"] in failure.get("message")
    found = cases[f"lafuzz.finding.backends-agree::{finding['id']} (oracle/broken mismatch)"].find("failure")
    assert found is not None and found.get("type") == "mismatch"
    assert "value mismatch at slot 0" in found.text and f"reproduce: {finding['reproduce']}" in found.text
    properties = {p.get("name"): p.get("value") for p in new_run.junit.iter("property")}
    assert properties["seed"] == "11" and properties["exit_status"] == "1"


@pytest.mark.slow
def test_junit_skips_a_known_finding_naming_its_issue(known_run: Run) -> None:
    assert known_run.status == 0
    _counts_agree(known_run.junit)
    cases = _cases(known_run.junit)
    assert cases[f"lafuzz.property::backends-agree[oracle,{KNOWN}]"].find("failure") is None
    [known] = [c for name, c in cases.items() if name.startswith("lafuzz.finding.")]
    skipped = known.find("skipped")
    assert skipped is not None and "known issue ort-webgpu-shared-beta of ort-webgpu" in skipped.get("message")
    assert known.find("failure") is None and known_run.junit.get("failures") == "0"


@pytest.mark.slow
def test_step_summary_is_appended_with_every_property_and_finding(new_run: Run, known_run: Run) -> None:
    for run in (new_run, known_run):
        assert run.step_summary.startswith(EARLIER_STEP), "the job summary of earlier steps was overwritten"
        body = run.step_summary[len(EARLIER_STEP) :]
        new = len(run.summary.new_findings)
        assert body.startswith(f"## lafuzz campaign: {new} new, {len(run.summary.findings) - new} known finding(s)")
        assert "| backends-agree |" in body and "| leading-zeros |" in body
        for finding in run.summary.findings:
            assert f"`{finding['reproduce']}`" in body
    assert "| **new** | backends-agree |" in new_run.step_summary
    assert "| known (ort-webgpu-shared-beta) | backends-agree |" in known_run.step_summary


@pytest.mark.slow
def test_each_new_finding_is_one_error_annotation(new_run: Run, known_run: Run) -> None:
    errors = [line for line in new_run.stdout.splitlines() if line.startswith("::error ")]
    assert len(errors) == len(new_run.summary.new_findings) >= 1
    title, message = errors[0].removeprefix("::error title=").split("::", 1)
    assert title.startswith("lafuzz%3A new mismatch in ") and "," not in title
    assert "\n" not in message and "%0Areproduce: lafuzz repro " in message
    assert "::error" not in known_run.stdout, "a known finding was annotated as an error"


@pytest.mark.slow
def test_outside_github_actions_nothing_is_published(new_run: Run) -> None:
    out = io.StringIO()
    github.publish(new_run.summary, {}, out)
    assert out.getvalue() == ""

"""Known issues are keyed by implementation and version range: a build of another version is checked
in full (its failures are new, noted "known in 0.4.0, also in 0.5.0"), and ``--strict`` makes
known failures new for every version. Fakes play the EP (``support.fakes``): the real
shared-beta defect, reporting version 0.4.0 or 0.5.0."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from support.fakes import SharedBetaAt040, SharedBetaAt050, SharedBetaBackend

from fuzz.backends.oracle import OracleBackend
from fuzz.campaign.campaign import CampaignConfig, run_campaign
from fuzz.campaign.progress import Progress
from fuzz.cli import main
from fuzz.corpus import entry as corpus
from fuzz.corpus.classifier import Classifier
from fuzz.corpus.known_issues import issue
from fuzz.corpus.replay import REGRESSION, STILL_FAILING, replay_entry
from fuzz.engine.properties import resolve_property
from fuzz.implementation import Implementation
from fuzz.model.findings import Finding, KnownMark, PropertyFailure

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
SHARED_BETA_ENTRY = CORPUS / "backends-agree" / "ort-webgpu-shared-beta"
SHARED_BETA = issue("ort-webgpu-shared-beta")
NEXT = "ort-webgpu-shared-beta: known in 0.4.0, also in 0.5.0"


def _failure(ep) -> Finding:
    """The finding of the shared-beta corpus case on the oracle and ``ep``, unclassified."""
    case = corpus.read_entry(SHARED_BETA_ENTRY).finding.case
    with pytest.raises(PropertyFailure) as failure:
        resolve_property("backends-agree").check(case, [OracleBackend(), ep])
    return failure.value.finding


@pytest.mark.parametrize(
    ("name", "version", "has"),
    [
        ("onnxruntime-ep-webgpu", "0.4.0", True),
        ("onnxruntime-ep-webgpu", "0.5.0", False),
        ("onnxruntime-ep-webgpu", "1.0.0-dev", False),
        ("onnxruntime-ep-webgpu", "0.4.0.dev1", False),
        ("onnxruntime-ep-webgpu", "unknown", False),
        ("onnxruntime-webgpu", "0.4.0", False),
    ],
)
def test_an_issue_has_the_versions_of_its_range(name, version, has):
    assert SHARED_BETA.has(Implementation(name, version)) is has
    assert SHARED_BETA.has(None), "a backend that does not say what it runs is matched by name"


def test_a_range_matches_dev_builds_inside_it():
    assert Implementation("x", "0.5.0.dev3").within("x", SpecifierSet(">=0.4,<=0.5"))
    assert not Implementation("x", "0.6.0").within("x", SpecifierSet(">=0.4,<=0.5"))


def test_known_in_its_version_new_in_another_with_a_note():
    known = Classifier.for_backends([SharedBetaAt040()]).classify(_failure(SharedBetaAt040()))
    assert known.known is not None and known.known.issue == SHARED_BETA.id and known.note == ""
    new = Classifier.for_backends([SharedBetaAt050()]).classify(_failure(SharedBetaAt050()))
    assert new.known is None and new.id != SHARED_BETA.id
    assert new.note == NEXT
    assert new.to_json()["note"] == NEXT


def test_strict_makes_every_known_issue_new():
    for ep in (SharedBetaAt040(), SharedBetaBackend()):
        classifier = Classifier.for_backends([ep], strict=True)
        found = classifier.classify(_failure(ep))
        assert found.known is None and "--strict" in found.note
        assert classifier.affecting(ep.name, _failure(ep).case) is None


def test_a_backend_of_another_version_does_not_sit_known_cases_out():
    case = _failure(SharedBetaAt040()).case
    assert Classifier.for_backends([SharedBetaAt040()]).affecting("ort-webgpu", case) is SHARED_BETA
    assert Classifier.for_backends([SharedBetaAt050()]).affecting("ort-webgpu", case) is None


def test_a_corpus_mark_follows_the_version_range_of_its_issue():
    """The entry's own mark names the documented issue: it holds for 0.4.0 only; a hand-written mark
    naming no issue holds for any version, except under --strict."""
    finding = _failure(SharedBetaAt050())
    documented = {"e": SHARED_BETA.mark()}
    assert (
        Classifier(documented, {"ort-webgpu": Implementation("onnxruntime-ep-webgpu", "0.4.0")})
        .classify(finding, entry_id="e")
        .known
    )
    assert Classifier.for_backends([SharedBetaAt050()], documented).classify(finding, entry_id="e").known is None
    by_hand = {"e": KnownMark(backend="ort-webgpu", issue="", implementation="a build", explanation="")}
    assert Classifier.for_backends([SharedBetaAt050()], by_hand).classify(finding, entry_id="e").known
    assert Classifier.for_backends([SharedBetaAt050()], by_hand, strict=True).classify(finding, "e").known is None


def test_replay_of_the_shared_beta_entry_by_version_and_strict():
    entry = corpus.read_entry(SHARED_BETA_ENTRY)
    oracle = OracleBackend()
    [same] = replay_entry(entry, {"oracle": oracle, "ort-webgpu": SharedBetaAt040()})
    assert same.verdict == STILL_FAILING
    [other] = replay_entry(entry, {"oracle": oracle, "ort-webgpu": SharedBetaAt050()})
    assert other.verdict == REGRESSION and NEXT in other.line()
    [strict] = replay_entry(entry, {"oracle": oracle, "ort-webgpu": SharedBetaAt040()}, strict=True)
    assert strict.verdict == REGRESSION


@pytest.mark.parametrize("command", ["replay", "repro"])
def test_strict_on_the_command_line(command, capsys):
    """``replay`` exits 0 on a known failure and 1 with --strict; ``repro`` exits 1 while the entry
    fails either way, and --strict reports it as a regression instead of "still failing"."""
    args = [command, str(SHARED_BETA_ENTRY), "--backends", "oracle,support.fakes:SharedBetaAt040"]
    assert main(args) == (0 if command == "replay" else 1)
    assert "still failing" in capsys.readouterr().out
    assert main([*args, "--strict"]) == 1
    assert "regression" in capsys.readouterr().out


def test_another_version_on_the_command_line_is_a_regression(capsys):
    assert main(["replay", str(SHARED_BETA_ENTRY), "--backends", "oracle,support.fakes:SharedBetaAt050"]) == 1
    assert NEXT in capsys.readouterr().out


STRICT = "ort-webgpu-shared-beta: known in 0.4.0; --strict: reported as new"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("ep", "strict", "note"),
    [("SharedBetaAt050", False, NEXT), ("SharedBetaAt040", True, STRICT)],
    ids=["another-version", "strict"],
)
def test_campaign_checks_in_full(tmp_path, ep, strict, note):
    """The 0.4.0 defect in a 0.5.0 build, or in 0.4.0 under --strict, is a new finding (exit 1), saved
    with its note, in the report."""
    config = CampaignConfig(
        properties=["backends-agree"],
        backends=["oracle", f"support.fakes:{ep}"],
        seed=2,
        time_budget=None,
        example_budget=60,
        examples_per_unit=30,
        limits="ci",
        out=tmp_path / "next",
        known_corpus=None,
        strict=strict,
    )
    summary = run_campaign(config, Progress(interval=60))
    assert summary.exit_status == 1, summary.findings
    [finding] = summary.findings
    assert finding["known_failure"] is None and finding["note"] == note
    assert corpus.read_entry(Path(finding["corpus_path"])).finding.note == note
    assert note in (tmp_path / "next" / "report.html").read_text()

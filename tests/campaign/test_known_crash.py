"""A backend running in the worker's own process sits out the cases of its documented crashes: running one would
take the worker down. Crash-isolated, it runs them, and the crash is a (known) finding, confirmed on its documented
case rather than shrunk (each shrink example would cost a process)."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import numpy as np
from hypothesis import settings
from support.fakes import IsolatedCrashes

from fuzz.backends import Capabilities
from fuzz.backends.oracle import OracleBackend
from fuzz.campaign import profiles
from fuzz.campaign.campaign import Campaign, CampaignConfig
from fuzz.campaign.junit import junit_xml
from fuzz.campaign.progress import Progress
from fuzz.campaign.shard import WorkUnit
from fuzz.campaign.unit import UnitResult, run_unit
from fuzz.corpus.documented_case import REPLAYED
from fuzz.corpus.entry import read_entry
from fuzz.model.case import Case
from fuzz.ops.causal_conv.strategies import ConvLimits
from fuzz.ops.linear_attention.strategies import Limits

ONE_TAP = replace(ConvLimits.ci(), kernel_sizes=(1, 2), ndims=(1,))


class CrashesOnOneTap(OracleBackend):
    """Stands for the WebGPU EP in-process (by name, the backend its documented crash is of): were it to run a case
    of a kernel of one tap, the test would fail (the real EP would have killed the process)."""

    name = "ort-webgpu"

    def capabilities(self) -> Capabilities:
        return replace(super().capabilities(), ops=("CausalConvWithState",))

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        assert case.inputs["weight"].shape[-1] != 1, "ran a case a documented crash of this backend affects"
        return super().run(case)


def test_an_in_process_backend_sits_out_its_documented_crashes() -> None:
    result = run_unit(WorkUnit("backends-agree", 0, 3), [OracleBackend(), CrashesOnOneTap()], limits=ONE_TAP,
                      settings=settings(settings(), max_examples=40))
    assert result.finding is None, result.finding.report
    assert result.known["ort-webgpu-conv-kernel-size-one"] > 0 and result.checked > 0


class BlockCrashesOnOneTap(CrashesOnOneTap):
    """The same, running both ops, so that it forms a hybrid block by itself."""

    def capabilities(self) -> Capabilities:
        return replace(OracleBackend.capabilities(self), ops=("LinearAttention", "CausalConvWithState"))

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        if case.op.name == "CausalConvWithState":
            return super().run(case)
        return OracleBackend.run(self, case)


def test_a_documented_crash_is_sat_out_whatever_other_issue_a_hybrid_case_has() -> None:
    """A hybrid case can be one of several issues of one backend (a shared beta in LinearAttention's half, a kernel
    of one tap in the convolution): the in-process backend sits it out for the crash, whichever issue comes first."""
    wide = replace(ONE_TAP, kernel_sizes=(1,), max_channels=12)  # room for two kv heads, so a shared beta matters
    result = run_unit(WorkUnit("hybrid-block", 0, 3), [OracleBackend(), BlockCrashesOnOneTap()], limits=wide,
                      settings=settings(settings(), max_examples=60))
    assert result.finding is None, result.finding.report
    assert result.known["ort-webgpu-conv-kernel-size-one"] > 0 and result.checked > 0, dict(result.known)


CORPUS = Path(__file__).resolve().parents[2] / "corpus"
KV_HEADS_ZERO = "ort-webgpu-kv-heads-zero"


def _heads_zero(case: Case) -> bool:
    return case.attrs.get("kv_num_heads") == 0


def _unit_meeting_heads_zero(backend: IsolatedCrashes, documented: Path | None) -> UnitResult:
    """An error-parity unit whose seed draws kv_num_heads = 0 among its first examples, in a case Hypothesis takes
    about 20 examples to shrink (seeded as campaigns are)."""
    return run_unit(WorkUnit("error-parity", 0, 11), [OracleBackend(), backend], limits=Limits.ci(),
                    settings=settings(profiles.get("campaign"), max_examples=40, database=None),
                    documented=documented)


def test_a_documented_crash_is_confirmed_on_its_documented_case_not_shrunk() -> None:
    """A crash-isolated backend's documented crash, met once: its documented case is replayed once, the issue is
    reported as still reproducing and counts as shrunk. Two processes started anew (the replay's, the next case's)
    in place of one per shrink example."""
    crashing = IsolatedCrashes(_heads_zero)
    result = _unit_meeting_heads_zero(crashing, CORPUS)
    documented = read_entry(CORPUS / "error-parity" / KV_HEADS_ZERO).finding.case
    assert result.finding is None, result.finding.report
    [replayed] = result.replayed
    assert replayed.id == KV_HEADS_ZERO and replayed.known is not None and replayed.note == REPLAYED
    assert replayed.case.identical(documented) and str(CORPUS / "error-parity" / KV_HEADS_ZERO) in replayed.report
    assert len([case for case in crashing.runs if _heads_zero(case)]) == 2  # the case met, then the documented one
    assert crashing.restarts == 2 and result.known[KV_HEADS_ZERO] >= 1


def test_without_a_documented_case_a_documented_crash_is_shrunk() -> None:
    """The same unit with no corpus at hand shrinks the crash as any finding: a process per example."""
    crashing = IsolatedCrashes(_heads_zero)
    result = _unit_meeting_heads_zero(crashing, None)
    assert result.finding is not None and result.finding.id == KV_HEADS_ZERO and result.replayed == []
    assert crashing.restarts >= 10


def test_a_documented_case_that_no_longer_crashes_is_shrunk_and_said() -> None:
    """Stale documentation: the backend crashes on kv_num_heads = 0 but not on the documented case (the linear rule
    there). The issue is shrunk as before, and its report says why the documented case did not confirm it."""
    crashing = IsolatedCrashes(lambda case: _heads_zero(case) and case.attrs.get("update_rule") != "linear")
    result = _unit_meeting_heads_zero(crashing, CORPUS)
    assert result.replayed == []
    assert result.finding is not None and result.finding.id == KV_HEADS_ZERO and result.finding.note != REPLAYED
    assert "did not confirm it" in result.finding.report and "passed" in result.finding.report


def test_a_campaign_reports_a_confirmed_crash_as_known_saved_once_with_its_note(tmp_path: Path) -> None:
    """What a unit confirmed by replay is a known finding like a shrunk one: in the summary (exit 0), in the
    campaign's corpus with its mark and the documented case, and skipped in JUnit, each saying it was replayed."""
    result = _unit_meeting_heads_zero(IsolatedCrashes(_heads_zero), CORPUS)
    config = CampaignConfig(properties=["error-parity"], backends=["oracle"], out=tmp_path, known_corpus=CORPUS)
    campaign = Campaign(config, Progress(io.StringIO()), backend_info={"oracle": {}})
    campaign.corpus_dir.mkdir(parents=True)
    campaign.absorb(result, [])
    summary = campaign.summary()
    [finding] = summary.findings
    assert finding["id"] == KV_HEADS_ZERO and finding["known_failure"]["issue"] == KV_HEADS_ZERO
    assert finding["note"] == REPLAYED and summary.exit_status == 0
    saved, documented = (read_entry(path).finding for path in (Path(finding["corpus_path"]), CORPUS / "error-parity" /
                                                                KV_HEADS_ZERO))
    assert saved.known is not None and saved.case.identical(documented.case)
    [skipped] = junit_xml(summary).iter("skipped")
    assert f"known issue {KV_HEADS_ZERO}" in skipped.get("message", "") and REPLAYED in skipped.get("message", "")

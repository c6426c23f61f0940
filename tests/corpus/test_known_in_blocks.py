"""A defect of one op seen through a property that composes ops is the same known issue: the hybrid block's
LinearAttention half with a shared beta on the WebGPU EP is ``ort-webgpu-shared-beta`` (the entry was found by a
campaign on an NVIDIA H200)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from fuzz.corpus import entry as corpus
from fuzz.corpus.classifier import Classifier
from fuzz.corpus.known_issue import calls_in
from fuzz.implementation import Implementation
from fuzz.model.findings import Finding
from fuzz.model.ops import LINEAR_ATTENTION

ENTRY = Path(__file__).resolve().parents[2] / "corpus" / "hybrid-block" / "ort-webgpu-shared-beta-in-hybrid-block"


def _unmarked() -> Finding:
    """The entry's finding as a campaign first reports it: no mark, its own id."""
    return corpus.read_entry(ENTRY).finding.with_(known=None, id="")


def test_the_block_makes_linear_attention_calls_with_the_shared_beta() -> None:
    case = _unmarked().case
    calls = calls_in(case)
    assert [c.op.name for c in calls[1:]] == [LINEAR_ATTENTION.name] * 2
    assert all(c.inputs["beta"].shape[2] == 1 and c.attrs["kv_num_heads"] == 2 for c in calls[1:])


def test_shared_beta_through_the_hybrid_block_is_known() -> None:
    finding = _unmarked()
    known = Classifier({}, {"ort-webgpu": Implementation("onnxruntime-ep-webgpu", "0.4.0")}).classify(finding)
    assert known.known is not None and known.known.issue == "ort-webgpu-shared-beta", known.note
    assert known.id == "ort-webgpu-shared-beta"
    assert Classifier(strict=True).classify(finding).known is None
    fixed = Classifier({}, {"ort-webgpu": Implementation("onnxruntime-ep-webgpu", "0.5.0")}).classify(finding)
    assert fixed.known is None and "known in 0.4.0, also in 0.5.0" in (fixed.note or "")


def test_a_block_with_beta_per_head_is_not_the_shared_beta_issue() -> None:
    finding = _unmarked()
    notes = {**finding.case.notes, "block": {**finding.case.notes["block"], "beta_shared": False}}
    per_head = finding.with_(case=replace(finding.case, notes=notes))
    assert Classifier().documented(per_head) is None

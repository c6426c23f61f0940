"""GatedDeltaNet and GatedDeltaNetStateReplay cases as the suite keeps them: a summary line, a corpus entry that
reads back bit for bit, and a one-node ONNX model of each (which ONNX Runtime 1.31.1's CPU EP has no kernel for)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz.backends.onnx_model import build_model
from fuzz.corpus.entry import Entry, read_entry, write_entry
from fuzz.model.case import Case
from fuzz.model.findings import Finding, Kind
from fuzz.ops.gated_delta_net.strategies import GdnLayout, GdnShape, build_gdn_case
from fuzz.ops.state_replay.strategies import build_replay_case

GDN = build_gdn_case(GdnShape(lengths=(3, 2), ragged=True, q_heads=2, group=2, d_k=3, d_v=2),
                     GdnLayout(capacity=2, capture_counts=(2, 5), gate_activation="qwen", beta_activation="sigmoid"),
                     seed=1)
CASES = {"GatedDeltaNet": GDN, "GatedDeltaNetStateReplay": build_replay_case(GDN, 1, 2, pads=(1, 2, 3))}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_case_reads_back_from_its_corpus_entry(case: Case, tmp_path: Path) -> None:
    prop = "gdn-backends-agree" if case.op.name == "GatedDeltaNet" else "replay-agree"
    finding = Finding.of(property=prop, backends=("wgpu-gdn",), kind=Kind.MISMATCH, detail="output:value",
                         report="planted", case=case)
    entry = read_entry(write_entry(tmp_path, Entry(finding)))
    assert entry.finding.case.identical(case) and entry.finding.signature.endswith(f"@{case.op.name}")


def test_the_summary_names_requests_heads_and_capture() -> None:
    assert "B=2 N=5 lens=3,2" in GDN.summary() and "Hq=Hk=2 Hv=4" in GDN.summary()
    assert "captured=2,2" in GDN.summary() and "gate=qwen" in GDN.summary()
    assert "kept_count=2" in CASES["GatedDeltaNetStateReplay"].summary()


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_its_model_loads_and_the_cpu_ep_has_no_kernel(case: Case) -> None:
    ort = pytest.importorskip("onnxruntime")
    model = build_model(case.dtype, tuple(case.inputs), dict(case.attrs), op=case.op)
    if case.op.name == "GatedDeltaNetStateReplay" and "GatedDeltaNetStateReplay" not in {
            s.name for s in ort.capi.onnxruntime_pybind11_state.get_all_operator_schema()}:
        with pytest.raises(Exception, match="GatedDeltaNetStateReplay"):
            ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        return
    with pytest.raises(Exception, match="NOT_IMPLEMENTED"):
        ort.InferenceSession(model, providers=["CPUExecutionProvider"])

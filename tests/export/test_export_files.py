"""What an export writes, without running ONNX Runtime: the model and its check, the test data set
(round trip through onnx's reader and repro.py's own), the tolerance pair against the suite's
tolerance model, what each case expects, and the campaign's export hook."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from fuzz.campaign.unit import save
from fuzz.corpus.entry import Entry, read_entry
from fuzz.engine.tolerance import Budget
from fuzz.export import repro_template
from fuzz.export.bounds import uniform_bounds
from fuzz.export.exporter import ISSUE, REPRO, UPSTREAM, export_entry, export_upstream
from fuzz.export.onnx_files import CHECKER_NOTE, MODEL, TEST_DATA, reference_outputs
from fuzz.export.plan import Expectation, ExportError, expectation_of, plan
from fuzz.ops.linear_attention.tolerance import exact_answer
from oracles.validation import INPUT_NAMES
from tests.support.random_cases import random_case
from tests.support.repro_module import load_repro

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
ENTRIES = ("backends-agree/ort-webgpu-shared-beta", "error-parity/ort-webgpu-kv-heads-zero",
           "error-parity/ort-webgpu-empty-sequence", "error-parity/ort-webgpu-unvalidated-shapes")


@pytest.mark.parametrize("name", ENTRIES)
def test_test_data_round_trips_to_the_case(tmp_path, name):
    entry = read_entry(CORPUS / name)
    case = entry.finding.case
    out = export_entry(entry, tmp_path / "export", check=False)
    model = onnx.load(out / MODEL)
    onnx.checker.check_model(model, full_check=True)
    assert [n.domain for n in model.graph.node] == ["com.microsoft"]
    assert not onnx.defs.has("LinearAttention", "com.microsoft"), "onnx can now check the node: update CHECKER_NOTE"
    assert CHECKER_NOTE in (out / ISSUE).read_text()
    graph_inputs = [i.name for i in model.graph.input]
    assert graph_inputs == [n for n in INPUT_NAMES if n in case.inputs]
    data = out / TEST_DATA
    for number, name_ in enumerate(graph_inputs):
        tensor = onnx.load_tensor(str(data / f"input_{number}.pb"))
        assert tensor.name == name_
        array = numpy_helper.to_array(tensor)
        assert array.dtype == case.inputs[name_].dtype and array.tobytes() == case.inputs[name_].tobytes()
        own_name, own_array = repro_template.read_tensor(data / f"input_{number}.pb")
        assert own_name == name_ and own_array.shape == array.shape and own_array.tobytes() == array.tobytes()
    repro, wanted = load_repro(out / REPRO), plan(entry)
    assert case.summary() == repro.CASE and wanted.expectation == repro.EXPECTATION and wanted.provider == repro.EP
    assert max(len(line) for line in (out / REPRO).read_text().splitlines()) <= 120
    expected = reference_outputs(case, plan(entry).expectation)
    written = sorted(data.glob("output_*.pb"))
    assert [onnx.load_tensor(str(p)).name for p in written] == list(expected)
    for path, (name_, array) in zip(written, expected.items(), strict=True):
        assert numpy_helper.to_array(onnx.load_tensor(str(path))).tobytes() == array.tobytes(), name_


def test_repro_reads_float16_and_empty_tensors(tmp_path):
    for array in (np.arange(6, dtype=np.float16).reshape(1, 2, 3), np.zeros((1, 0, 4), np.float32)):
        path = tmp_path / "t.pb"
        path.write_bytes(numpy_helper.from_array(array, "x").SerializeToString())
        name, read = repro_template.read_tensor(path)
        assert name == "x" and read.dtype == array.dtype and read.shape == array.shape
        assert read.tobytes() == array.tobytes()


@pytest.mark.parametrize("index", range(16))
def test_tolerance_pair_contains_the_models_bound(index):
    case = random_case(np.random.default_rng(index), index, window=index % 3)
    expected = reference_outputs(case, Expectation.OUTPUTS)
    dims = case.dims()
    exact = exact_answer(case.inputs, case.attrs)
    for name, bound in uniform_bounds(case, expected).items():
        values, block = exact.part(name)
        model = Budget((case.dtype,), dims.seq_len + dims.d_k).tolerance(values, block)
        pair = bound.atol + bound.rtol * np.abs(expected[name].astype(np.float64))
        assert np.all(pair >= model), (name, case.summary())
        assert np.all(np.abs(expected[name] - values) <= pair), "the rounded reference itself must pass"


def test_expectation_follows_the_case():
    entries = {name: read_entry(CORPUS / name).finding.case for name in ENTRIES}
    assert expectation_of(entries[ENTRIES[0]])[0] is Expectation.OUTPUTS
    assert expectation_of(entries[ENTRIES[1]]) == (Expectation.REJECTION, "kv_num_heads: expected >= 1, received 0")
    assert expectation_of(entries[ENTRIES[2]])[0] is Expectation.REJECTION_OR_PASS_THROUGH
    assert expectation_of(entries[ENTRIES[3]])[0] is Expectation.REJECTION


def _as(entry: Entry, **changes) -> Entry:
    return Entry(entry.finding.with_(**changes), provenance=entry.provenance)


def test_what_one_call_cannot_show_is_refused():
    entry = read_entry(CORPUS / ENTRIES[0])
    with pytest.raises(ExportError, match="property 'select-resume' compares several calls"):
        plan(_as(entry, property="select-resume"))
    with pytest.raises(ExportError, match="no ONNX Runtime backend among oracle, wgpu"):
        plan(_as(entry, backends=("oracle", "wgpu")))
    windowed = entry.finding.case.with_attrs(state_window=1)
    with pytest.raises(ExportError, match="ran this case as W = 0 prefix runs"):
        plan(_as(entry, case=windowed))


def test_an_existing_folder_that_is_not_an_export_is_left_alone(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ExportError, match="is not an earlier export"):
        export_entry(read_entry(CORPUS / ENTRIES[0]), tmp_path, check=False)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_saving_an_ort_finding_exports_it_beside_the_entry(tmp_path, capsys):
    finding = read_entry(CORPUS / ENTRIES[0]).finding
    save(finding, tmp_path, on_saved=export_upstream)
    upstream = tmp_path / "backends-agree" / finding.id / UPSTREAM
    assert (upstream / REPRO).is_file() and (upstream / MODEL).is_file()
    assert "Not cross-checked at export" in (upstream / ISSUE).read_text()
    assert capsys.readouterr().err == ""


def test_a_failed_export_keeps_the_entry_and_says_so_in_one_line(tmp_path, capsys):
    finding = read_entry(CORPUS / ENTRIES[0]).finding.with_(property="select-resume")
    save(finding, tmp_path, on_saved=export_upstream)
    entry_dir = tmp_path / "select-resume" / finding.id
    assert read_entry(entry_dir).id == finding.id
    assert not (entry_dir / UPSTREAM).exists()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "not exported upstream: " in lines[0] and "compares several calls" in lines[0]


def test_findings_without_onnx_runtime_are_not_exported(tmp_path, capsys):
    finding = read_entry(CORPUS / ENTRIES[0]).finding.with_(backends=("oracle", "wgpu"), known=None)
    save(finding, tmp_path, on_saved=export_upstream)
    assert not (tmp_path / "backends-agree" / finding.id / UPSTREAM).exists()
    assert capsys.readouterr().err == ""

"""A GatedDeltaNet finding exported as an upstream report: the CUDA EP's acceptance of ``cu_seqlens = [3, 2]`` for
two tokens (docs/findings.md), built from the op's strategies and its rule breaker; and a mismatch, judged by
repro.py over ``output``, ``final_state`` and the capsule's captured prefix only. No ONNX Runtime on this machine
runs the op: repro.py says it cannot check it here."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest

from fuzz.backends.ort_node import node_command, npm_folder
from fuzz.corpus.entry import Entry
from fuzz.export import op_export
from fuzz.export.exporter import ISSUE, REPRO, export_entry, run_repro
from fuzz.export.onnx_files import MODEL, TEST_DATA
from fuzz.export.plan import Expectation, ExportError, plan
from fuzz.model.case import Case
from fuzz.model.findings import Finding, Kind
from fuzz.ops.gated_delta_net.bad_inputs import BREAKERS
from fuzz.ops.gated_delta_net.strategies import GdnLayout, GdnShape, build_gdn_case
from fuzz.ops.state_replay.strategies import build_replay_case
from tests.support.repro_module import load_repro

FOUND_WITH = {"backends": {"ort-cuda": {"versions": {"onnxruntime": "1.31.1"}, "device": "NVIDIA H100 80GB HBM3"}}}
"""Where the campaign found the CUDA EP's findings (docs/results/2026-12-06-gdn-campaign-h100)."""


def _entry(case: Case, prop: str, kind: Kind, detail: str) -> Entry:
    finding = Finding.of(property=prop, backends=("ort-cuda", "oracle"), kind=kind, detail=detail,
                         report=f"ort-cuda: {detail}", case=case)
    return Entry(finding, provenance=FOUND_WITH)


def _decreasing_cu_seqlens() -> Case:
    """One request of one token, bent by the breaker to a ragged call of two tokens, then broken by it."""
    (breaker,) = (b for b in BREAKERS if b.rule == "cu-seqlens-decreasing")
    shape, layout = breaker.bend(GdnShape(lengths=(1,), ragged=False, q_heads=1, group=1, d_k=2, d_v=2), GdnLayout())
    return breaker.edit(build_gdn_case(shape, layout, 7))


@pytest.fixture(scope="module")
def accepted_invalid(tmp_path_factory: pytest.TempPathFactory) -> Path:
    case = _decreasing_cu_seqlens()
    assert case.inputs["cu_seqlens"].tolist() == [3, 2] and case.inputs["query"].shape[0] == 2, case.summary()
    entry = _entry(case, "error-parity", Kind.ACCEPTED_INVALID, "cu-seqlens-decreasing")
    return export_entry(entry, tmp_path_factory.mktemp("gdn") / "cu-seqlens", check=False)


def test_the_accepted_invalid_report_names_the_rule_and_the_build(accepted_invalid: Path) -> None:
    (node,) = onnx.load(accepted_invalid / MODEL).graph.node
    assert (node.domain, node.op_type) == ("com.microsoft", "GatedDeltaNet")
    assert list(node.output) == ["output", "final_state", "state_update"]
    assert not list((accepted_invalid / TEST_DATA).glob("output_*.pb")), "a case to refuse has no expected outputs"
    repro = load_repro(accepted_invalid / REPRO)
    _, cu_seqlens = repro.read_tensor(accepted_invalid / TEST_DATA / f"input_{list(node.input).index('cu_seqlens')}.pb")
    assert cu_seqlens.dtype == np.int32 and cu_seqlens.tolist() == [3, 2]
    assert (repro.EP, repro.EXPECTATION) == ("CUDAExecutionProvider", "rejection")
    issue = (accepted_invalid / ISSUE).read_text()
    assert issue.startswith("# CUDAExecutionProvider: com.microsoft GatedDeltaNet accepts invalid input")
    assert "The case breaks a rule of the operator: cu_seqlens: expected non-decreasing prefix sums" in issue
    assert "pip install numpy onnxruntime-gpu==1.31.1" in issue
    assert "without `state_window`" not in issue, "onnx has no GatedDeltaNet of its own to compare with"


@pytest.mark.slow
def test_an_ep_without_the_op_cannot_check_it(accepted_invalid: Path, need) -> None:
    """The CPU EP has no GatedDeltaNet kernel: neither "fixed" nor "defect", but "cannot check here" (exit 2)."""
    need("ort-cpu")
    run = run_repro(accepted_invalid, "--ep", "CPUExecutionProvider")
    assert run.status == 2, run.output
    assert "cannot check here: CPUExecutionProvider has no kernel for the node in this onnxruntime" in run.output, (
        run.output)


@pytest.mark.slow
def test_repro_mjs_reads_the_int32_inputs_and_cannot_check_either(accepted_invalid: Path, need, tmp_path) -> None:
    """onnxruntime-node's WebGPU EP has no GatedDeltaNet either: repro.mjs reads cu_seqlens and says so (exit 2)."""
    need("ort-node")
    folder = tmp_path / "js"
    shutil.copytree(accepted_invalid, folder)
    (folder / "node_modules").symlink_to(npm_folder("repro.mjs", "onnxruntime-node") / "node_modules")
    node = node_command("repro.mjs", "repro.mjs", "onnxruntime-node")[0]
    run = subprocess.run([node, "repro.mjs"], cwd=folder, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "cannot check here: this runtime cannot load or place the model" in run.stdout, run.stdout


def _captured_call() -> Case:
    """A captured call whose second request captures less than the capacity: part of its capsule row is open."""
    shape = GdnShape(lengths=(3, 1), ragged=True, q_heads=1, group=2, d_k=2, d_v=3)
    return build_gdn_case(shape, GdnLayout(capacity=2, capture_counts=(2, 2)), 4)


@pytest.fixture(scope="module")
def mismatch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    entry = _entry(_captured_call(), "gdn-backends-agree", Kind.MISMATCH, "final_state:value")
    return export_entry(entry, tmp_path_factory.mktemp("gdn") / "mismatch", check=False)


def test_a_mismatch_is_judged_over_the_captured_prefix(mismatch: Path) -> None:
    repro = load_repro(mismatch / REPRO)
    _, expected = repro.load_test_data(mismatch / TEST_DATA)
    assert list(expected) == ["output", "final_state", "state_update"]
    assert expected["final_state"].dtype == np.float32
    open_entries = np.isnan(expected["state_update"])
    assert open_entries[1].any() and not open_entries[0].any(), "request 1 captured one token of two"
    answer = {name: np.where(np.isnan(want), np.float32(1e30), want) for name, want in expected.items()}
    assert repro.judge({"outputs": answer}, expected, "EP", 1.0) == repro.EXIT_FIXED, "open entries are not compared"
    for name, index in (("final_state", (0, 1, 2, 0)), ("state_update", (1, 0)), ("output", (3, 1, 2))):
        wrong = {**answer, name: answer[name].copy()}
        wrong[name][index] += np.float32(1e-2)
        assert repro.judge({"outputs": wrong}, expected, "EP", 1.0) == repro.EXIT_DEFECT, name


def test_what_a_report_of_the_op_cannot_show_is_refused() -> None:
    call = build_gdn_case(GdnShape(lengths=(2,), ragged=False, q_heads=1, group=1, d_k=2, d_v=2),
                          GdnLayout(capacity=1), 3)
    replay = build_replay_case(call, 0, 1)
    with pytest.raises(ExportError, match="GatedDeltaNetStateReplay has no kernel in any released ONNX Runtime"):
        plan(_entry(replay, "replay-agree", Kind.MISMATCH, "destination_out:value"))
    with pytest.raises(ExportError, match="property 'gdn-resume' compares several calls"):
        plan(_entry(call, "gdn-resume", Kind.MISMATCH, "final_state:value"))
    assert plan(_entry(call, "gdn-backends-agree", Kind.MISMATCH, "output:value")).expectation is Expectation.OUTPUTS


def test_another_implementations_outputs_are_judged_by_the_ops_tolerance(mismatch: Path) -> None:
    """ISSUE.md's last section judges a GatedDeltaNet answer over its three outputs, the capsule's open entries
    left out; a wrong element is named in the op's terms."""
    repro = load_repro(mismatch / REPRO)
    _, expected = repro.load_test_data(mismatch / TEST_DATA)
    case = _captured_call()
    judge = op_export.for_op(case.op).disagreement
    assert judge is not None
    answer = tuple(np.where(np.isnan(want), np.float32(1e30), want) for want in expected.values())
    ratio, _ = judge(case, answer)
    assert ratio <= 1.0
    wrong = (answer[0], answer[1].copy(), answer[2])
    wrong[1][1, 0, 2, 1] += np.float32(1e-2)
    ratio, where = judge(case, wrong)
    assert ratio > 1.0 and where == "final_state[1, 0, 2, 1] (request 1, value head 0, d_v row 2, d_k column 1)", where


JUDGE_IN_NODE = """
import { judge } from './repro-core.mjs';
import { readFileSync } from 'node:fs';
const c = JSON.parse(readFileSync('case.json', 'utf8')), [name, index] = JSON.parse(process.argv[2]);
const expected = {}, got = {};
for (const file of c.outputs) {
  const t = (await import('./repro-core.mjs')).readTensor(new Uint8Array(readFileSync(`test_data_set_0/${file}`)));
  expected[t.name] = { dims: t.dims, values: Array.from(t.data) };
  got[t.name] = { dims: t.dims, values: Array.from(t.data, (v) => (Number.isNaN(v) ? 1e30 : v)) };
}
if (name) got[name].values[index] += 0.01;
const verdict = judge({ stage: 'session.run', outputs: got }, expected, c);
console.log(verdict.lines.join('\\n'));
process.exit(verdict.status);
"""
"""repro-core.mjs's verdict on the exported case's own reference, its open capsule entries filled, and with one
element (its first argument: output name and flat index) moved."""


@pytest.mark.parametrize(("moved", "said"), [
    (None, "fixed: the runtime agrees with the reference"),
    (("final_state", 5), "DEFECT: the runtime returned wrong values"),
    (("state_update", 0), "DEFECT: the runtime returned wrong values"),
], ids=["open-entries-filled", "final-state-moved", "captured-entry-moved"])
def test_repro_mjs_judges_the_captured_prefix_only(mismatch: Path, tmp_path, moved, said) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    folder = tmp_path / "js"
    shutil.copytree(mismatch, folder)
    (folder / "judge.mjs").write_text(JUDGE_IN_NODE)
    run = subprocess.run([node, "judge.mjs", json.dumps(moved or ["", 0])], cwd=folder, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == (0 if said.startswith("fixed") else 1) and said in run.stdout, run.stdout + run.stderr

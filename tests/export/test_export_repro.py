"""The exported repro.py, run as a maintainer would (its own process, numpy and onnxruntime only) on
the documented findings of the WebGPU plugin EP: exit 1 and the evidence while the defect is there,
exit 0 on an EP that does what the contract asks."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import onnx
import pytest

from fuzz.corpus.entry import read_entry
from fuzz.export.exporter import export_entry, run_repro

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
SHARED_BETA = "backends-agree/ort-webgpu-shared-beta"
CRASHES = {"error-parity/ort-webgpu-kv-heads-zero": "SIGFPE", "error-parity/ort-webgpu-empty-sequence": "SIGSEGV"}


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``exported(entry)``: the export of a corpus entry (without its own check run), made once."""
    made: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in made:
            out = tmp_path_factory.mktemp("export") / Path(name).name
            made[name] = export_entry(read_entry(CORPUS / name), out, check=False)
        return made[name]

    return get


@pytest.mark.slow
def test_shared_beta_repro_fails_with_the_worst_element(exported, need):
    need("ort-webgpu")
    run = run_repro(exported(SHARED_BETA))
    assert run.status == 1, run.output
    assert "worst element: output[0, 0, 1] (batch 0, token 0, head 1, value col 0): expected -0.08194705, got 0.0" in (
        run.output
    ), run.output
    assert "DEFECT: WebGpuExecutionProvider returned wrong values" in run.output


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CRASHES))
def test_crash_repro_reports_the_signal(exported, need, name):
    need("ort-webgpu")
    run = run_repro(exported(name))
    if run.status == 0:
        pytest.skip(f"the crash does not reproduce on this machine's WebGPU adapter: {run.output}")
    assert run.status == 1, run.output
    assert f"DEFECT: session.run died with {CRASHES[name]}" in run.output, run.output


@pytest.mark.slow
@pytest.mark.parametrize(("entry", "said"), [
    (SHARED_BETA, ("fixed: CPUExecutionProvider agrees with the reference within the tolerance",)),
    ("error-parity/ort-webgpu-empty-sequence",
     ("fixed: CPUExecutionProvider returned an empty output and passed the past state through",)),
    ("error-parity/ort-webgpu-unvalidated-shapes", ("fixed: session.run refused the case: ", "decay must be rank 3")),
], ids=["shared-beta", "empty-sequence", "unvalidated-shape"])
def test_the_cpu_ep_is_fixed_for_the_webgpu_eps_defects(entry: str, said: tuple[str, ...], exported, need):
    """Each case the WebGPU EP gets wrong, the CPU EP gets right: its repro says ``fixed`` (exit 0), and why."""
    need("ort-cpu")
    run = run_repro(exported(entry), "--ep", "CPUExecutionProvider")
    assert run.status == 0, run.output
    assert all(line in run.output for line in said), run.output


@pytest.mark.slow
def test_an_ep_this_onnxruntime_lacks_cannot_be_checked(exported):
    run = run_repro(exported(SHARED_BETA), "--ep", "NoSuchExecutionProvider")
    assert run.status == 2, run.output
    assert "cannot check here: NoSuchExecutionProvider is not in this onnxruntime" in run.output


@pytest.mark.slow
def test_a_model_this_onnxruntime_cannot_load_is_never_fixed(exported, need, tmp_path: Path):
    """An older schema refuses the node at load time (as onnxruntime-webgpu 1.27.0 refuses ``state_window``):
    that says nothing about the defect, so the verdict is "cannot check" (exit 2), not "fixed" (exit 0)."""
    need("ort-cpu")
    folder = shutil.copytree(exported("error-parity/ort-webgpu-kv-heads-zero"), tmp_path / "older-schema")
    model = onnx.load(folder / "model.onnx")
    model.graph.node[0].attribute.append(onnx.helper.make_attribute("attribute_of_a_newer_schema", 1))
    onnx.save(model, folder / "model.onnx")
    run = run_repro(folder, "--ep", "CPUExecutionProvider")
    assert run.status == 2, run.output
    assert "cannot check here: this onnxruntime" in run.output and "cannot load the model" in run.output
    assert "fixed" not in run.output, run.output

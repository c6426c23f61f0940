"""A CausalConvWithState finding exported as an upstream report: the model holds the conv node, repro.py names an
element in the op's own terms, fails while the WebGPU EP's defect is there and passes on the CPU EP."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import onnx
import pytest

from fuzz.corpus.entry import read_entry
from fuzz.export.exporter import export_entry, run_repro

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
FLOAT16 = "backends-agree/ort-webgpu-conv-float16-accumulation"
ONE_TAP = "backends-agree/ort-webgpu-conv-kernel-size-one"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    made: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in made:
            made[name] = export_entry(read_entry(CORPUS / name), tmp_path_factory.mktemp("conv") / "x", check=False)
        return made[name]

    return get


def test_the_model_holds_one_conv_node(exported) -> None:
    model = onnx.load(exported(ONE_TAP) / "model.onnx")
    (node,) = model.graph.node
    assert (node.domain, node.op_type) == ("com.microsoft", "CausalConvWithState")
    assert list(node.input) == ["input", "weight"]
    issue = (exported(ONE_TAP) / "ISSUE.md").read_text()
    assert issue.startswith("# WebGpuExecutionProvider: com.microsoft CausalConvWithState crashes the process")
    assert "| `dilation` | absent (default `1`) |" in issue and "| `weight` | `(1, 1, 1)` |" in issue


def test_float16_repro_fails_naming_the_element(exported, need) -> None:
    need("ort-webgpu")
    run = run_repro(exported(FLOAT16))
    assert run.status == 1, run.output
    assert "worst element: output[0, 0, 0] (batch 0, channel 0, position 0)" in run.output, run.output


def test_cpu_ep_passes_both_cases(exported, need) -> None:
    need("ort-cpu")
    for name in (FLOAT16, ONE_TAP):
        run = run_repro(exported(name), "--ep", "CPUExecutionProvider")
        assert run.status == 0 and "fixed: CPUExecutionProvider agrees with the reference" in run.output, run.output


def test_one_tap_repro_reports_the_crash(exported, need) -> None:
    need("ort-webgpu")
    run = run_repro(exported(ONE_TAP))
    assert run.status == 1 and "DEFECT: session.run died with SIGSEGV" in run.output, run.output

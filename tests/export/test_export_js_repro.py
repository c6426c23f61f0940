"""The exported JavaScript reproductions give repro.py's verdicts and exit statuses: repro.mjs on
onnxruntime-node, repro.html (served by serve.mjs) in the ort-web backend's Chromium. Each needs only its npm
package, which the test lends the export folder (a link to the node_modules `lafuzz setup` installed)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import onnx
import pytest

from fuzz.backends.ort_node import node_command, npm_folder
from fuzz.corpus.entry import read_entry
from fuzz.export.exporter import export_entry

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
SHARED_BETA = "backends-agree/ort-webgpu-shared-beta"
KV_HEADS_ZERO = "error-parity/ort-webgpu-kv-heads-zero"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``exported(entry)``: the export of a corpus entry, with the npm packages linked in, made once."""
    made: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in made:
            out = export_entry(read_entry(CORPUS / name), tmp_path_factory.mktemp("js") / Path(name).name, check=False)
            (out / "node_modules").symlink_to(npm_folder("repro.mjs", "onnxruntime-node") / "node_modules")
            made[name] = out
        return made[name]

    return get


def _repro_mjs(folder: Path) -> subprocess.CompletedProcess[str]:
    node = node_command("repro.mjs", "repro.mjs", "onnxruntime-node")[0]
    return subprocess.run([node, "repro.mjs"], cwd=folder, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def with_node(need) -> None:
    need("ort-node")


def test_repro_mjs_reports_the_wrong_values_and_the_crash(exported, with_node):
    run = _repro_mjs(exported(SHARED_BETA))
    assert run.returncode == 1, run.stdout + run.stderr
    assert "worst element: output[0, 0, 1]: expected -0.08194705098867416, got 0" in run.stdout, run.stdout
    run = _repro_mjs(exported(KV_HEADS_ZERO))
    assert run.returncode == 1 and "DEFECT: session.run died: SIGFPE" in run.stdout, run.stdout


def test_repro_mjs_cannot_check_a_model_the_runtime_cannot_load(exported, with_node, tmp_path):
    folder = tmp_path / "unloadable"
    shutil.copytree(exported(SHARED_BETA), folder, symlinks=True)
    model = onnx.load(str(folder / "model.onnx"))
    model.graph.node[0].op_type = "LinearAttentionOfANewerRelease"  # what an older runtime meets
    onnx.save(model, str(folder / "model.onnx"))
    run = _repro_mjs(folder)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "cannot check here: this runtime cannot load or place the model" in run.stdout, run.stdout


def test_repro_page_reports_the_defect_in_chromium(exported, need):
    browser = need("ort-web")
    folder = exported(SHARED_BETA)
    server = subprocess.Popen([node_command("serve", "serve.mjs", "onnxruntime-web")[0], "serve.mjs"], cwd=folder,
                              stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        header, _ = browser.link.request({"op": "repro", "url": url})
    finally:
        server.kill()
        server.wait()
    assert header["status"] == 1, header
    assert "DEFECT: the runtime returned wrong values" in header["text"], header["text"]

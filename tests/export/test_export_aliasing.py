"""An ``aliasing`` finding exported as an upstream report: repro.py runs the case with separate state buffers,
then with past_state and present_state bound to one OrtValue, and compares the bits. The CUDA EP's documented
finding cannot run here (exit 2); the same case on the CPU EP, which updates a bound state in place correctly,
is "fixed" (exit 0); and a run with one buffer whose bits differ is a defect (exit status 1)."""

from __future__ import annotations

import runpy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from fuzz.corpus.entry import Entry, read_entry
from fuzz.export.exporter import ISSUE, REPRO, export_entry, run_repro
from fuzz.export.onnx_files import MODEL, TEST_DATA
from fuzz.export.plan import Expectation, plan

ALIASED_STATE = Path(__file__).resolve().parents[2] / "corpus" / "aliasing" / "ort-cuda-conv-aliased-state"
CPU = "CPUExecutionProvider"


def _on_cpu(entry: Entry) -> Entry:
    """The finding's case at ``W = 0`` (the CPU EP's conv has no window; the last slot is the state it reads) as if
    the CPU EP had shown it (it has not: its repro must say fixed)."""
    case = entry.finding.case
    case = case.with_attrs(state_window=None).with_inputs(past_state=case.inputs["past_state"][-1])
    return Entry(entry.finding.with_(backends=("ort-cpu",), known=None, case=case), provenance={})


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``exported("cuda" | "cpu")``: the corpus entry's export for that EP (without its check run), made once."""
    made: dict[str, Path] = {}

    def get(ep: str) -> Path:
        if ep not in made:
            entry = read_entry(ALIASED_STATE)
            made[ep] = export_entry(entry if ep == "cuda" else _on_cpu(entry), tmp_path_factory.mktemp(ep) / "x",
                                    check=False)
        return made[ep]

    return get


def test_the_cuda_finding_is_an_aliasing_check_on_the_device(exported) -> None:
    wanted = plan(read_entry(ALIASED_STATE))
    assert (wanted.provider, wanted.value_device) == ("CUDAExecutionProvider", "cuda")
    assert wanted.expectation is Expectation.ALIASED_AS_SEPARATE
    folder = exported("cuda")
    assert sorted(p.name for p in folder.iterdir()) == [ISSUE, MODEL, REPRO, TEST_DATA]
    assert max(len(line) for line in (folder / REPRO).read_text().splitlines()) <= 120
    script = runpy.run_path(str(folder / REPRO))
    assert (script["EP"], script["VALUE_DEVICE"], script["EXPECTATION"]) == (
        "CUDAExecutionProvider", "cuda", "aliased-as-separate")
    issue = (folder / ISSUE).read_text()
    assert "bound through `IOBinding` as the `past_state` input and as the `present_state` output" in issue
    assert "python repro.py --runs 200" in issue and "node repro.mjs" not in issue


def test_without_the_ep_the_repro_cannot_check(exported) -> None:
    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime has the CUDA EP: the repro would check it (tests/backends/test_ort_cuda.py)")
    run = run_repro(exported("cuda"))
    assert run.status == 2, run.output
    assert "cannot check here: CUDAExecutionProvider is not in this onnxruntime" in run.output


def test_an_ep_that_refuses_the_model_cannot_show_the_binding(exported, need) -> None:
    """The CPU EP has no conv window: it refuses the W = 7 model, which says nothing about aliasing (exit 2)."""
    need("ort-cpu")
    run = run_repro(exported("cuda"), "--ep", CPU, "--runs", "1")
    assert run.status == 2, run.output
    assert f"cannot check here: {CPU} refuses the model, so it cannot show how it binds the state" in run.output


def test_the_cpu_ep_updates_the_state_in_place_correctly(exported, need) -> None:
    need("ort-cpu")
    run = run_repro(exported("cpu"), "--runs", "3")
    assert run.status == 0, run.output
    assert "expectation: aliased-as-separate on CPUExecutionProvider (3 runs with one buffer" in run.output
    assert "0 of 3 runs with one buffer differ from the run with separate buffers" in run.output, run.output
    assert f"fixed: {CPU} gives the same bits" in run.output


def _cpu_runs(folder: Path, script: dict[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The separate and the one-buffer run of the exported case on the CPU EP, through repro.py's own binding."""
    inputs, _ = script["load_test_data"](folder / TEST_DATA)
    session = ort.InferenceSession(str(folder / MODEL), providers=[CPU])
    separate = script["run_bound"](session, inputs, "cpu", one_buffer=False)
    one_buffer = script["run_bound"](session, inputs, "cpu", one_buffer=True)
    return separate, one_buffer


def test_a_run_with_other_bits_is_a_defect(exported, need, capsys) -> None:
    """One of three runs with one buffer has one bit of present_state flipped: the verdict is DEFECT (exit 1), and
    it names that element."""
    need("ort-cpu")
    folder = exported("cpu")
    script = runpy.run_path(str(folder / REPRO))
    separate, one_buffer = _cpu_runs(folder, script)
    state = one_buffer["present_state"]
    assert state.tobytes() == separate["present_state"].tobytes(), "the CPU EP must update a bound state in place"
    flipped = state.copy()
    flipped.view(np.uint16)[0, 2, 3, 0] ^= 0x0400
    status = script["judge_aliasing"](separate, [one_buffer, {**one_buffer, "present_state": flipped}, one_buffer],
                                      CPU)
    said = capsys.readouterr().out
    assert status == 1, said
    assert "1 of 3 runs with one buffer differ from the run with separate buffers" in said
    assert "worst element: present_state[0, 2, 3, 0] (batch 0, state position 2, channel axis 1 3, channel axis 2 0)" \
        in said and "1 of 112 present_state elements differ in that run" in said, said
    assert f"DEFECT: {CPU} returns other bits" in said

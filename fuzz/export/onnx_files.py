"""The ONNX files of an exported reproduction: ``model.onnx`` and ``test_data_set_0/``.

The layout is the one ``onnx_test_runner`` and ONNX's backend tests read: the model beside a
folder of ``input_N.pb`` / ``output_N.pb`` ``TensorProto`` files, numbered in the graph's order and
named as the graph's inputs and outputs. Omitted optional inputs have no file. The expected
outputs are the float64 oracle's, rounded once to the case's type; a case the EP must refuse has
none, and ``T = 0`` has the pass-through answer (an empty output, the past state unchanged).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from fuzz import atomic
from fuzz.backends.onnx_model import build_model
from fuzz.engine.op_testing import exact_for
from fuzz.export.plan import Expectation
from fuzz.model.case import Case
from fuzz.model.ops import LINEAR_ATTENTION, Op

OUTPUT_NAMES = ("output", "present_state")
TEST_DATA = "test_data_set_0"
MODEL = "model.onnx"
def checker_note(op: Op) -> str:
    """What the model check covers, for ISSUE.md."""
    return (
        f"`onnx.checker.check_model(full_check=True)` (onnx {onnx.__version__}) passes: it checks the graph, "
        "the types and the declared shapes, but not the node against a schema, because the onnx package has no "
        f"schemas for the com.microsoft domain (its own ai.onnx `{op.name}`, opset 27, is a different "
        "schema without `state_window`)."
    )


CHECKER_NOTE = checker_note(LINEAR_ATTENTION)
"""What the model check of a LinearAttention model covers, for ISSUE.md."""


def reference_outputs(case: Case, expectation: Expectation) -> dict[str, np.ndarray]:
    """The outputs the EP must return, in the case's type (none when it must refuse the case)."""
    if expectation is Expectation.REJECTION:
        return {}
    if expectation is Expectation.REJECTION_OR_PASS_THROUGH:
        dims = case.op.validate(**case.kwargs(), allow_empty_sequence=True)
        past = case.inputs.get("past_state")
        state = past if past is not None else np.zeros(dims.state_shape, case.dtype)
        return {"output": np.zeros(dims.output_shape, case.dtype), "present_state": state}
    exact = exact_for(case)
    return {"output": exact.output.astype(case.dtype), "present_state": exact.present_state.astype(case.dtype)}


def _symbolic_shapes(case: Case) -> dict[str, tuple[str, ...]]:
    """Output shapes in words, for a case whose sizes do not add up (the EP must refuse it)."""
    if case.op is not LINEAR_ATTENTION:  # the output has the input's rank; the state, the past state's, if any
        past = case.inputs.get("past_state")
        state = tuple(f"s{i}" for i in range(past.ndim)) if past is not None else ("B", "C", "L")
        return {"output": tuple(f"d{i}" for i in range(case.inputs["input"].ndim)), "present_state": state}
    slot = ("B", "H_kv", "d_k", "d_v")
    state = ("W", *slot) if case.state_window else slot
    return {"output": ("B", "T", "H_out_times_d_v"), "present_state": state}


def write_model(folder: Path, case: Case, outputs: dict[str, np.ndarray]) -> Path:
    """Write the one-node model of ``case`` with declared shapes and check it with ``onnx.checker``."""
    present = tuple(name for name in case.op.input_names if name in case.inputs)
    shapes: dict[str, tuple[int | str, ...]] = {name: case.inputs[name].shape for name in present}
    shapes.update({name: a.shape for name, a in outputs.items()} if outputs else _symbolic_shapes(case))
    path = Path(folder) / MODEL
    atomic.write_bytes(path, build_model(case.dtype, present, case.attrs, op=case.op, shapes=shapes))
    onnx.checker.check_model(onnx.load(path), full_check=True)
    return path


def write_test_data(folder: Path, case: Case, outputs: dict[str, np.ndarray]) -> Path:
    """Write the inputs present and the expected outputs as numbered ``TensorProto`` files."""
    data = Path(folder) / TEST_DATA
    data.mkdir(parents=True, exist_ok=True)
    inputs = [name for name in case.op.input_names if name in case.inputs]
    for number, name in enumerate(inputs):
        tensor = numpy_helper.from_array(np.ascontiguousarray(case.inputs[name]), name)
        atomic.write_bytes(data / f"input_{number}.pb", tensor.SerializeToString())
    for number, name in enumerate(n for n in OUTPUT_NAMES if n in outputs):
        tensor = numpy_helper.from_array(np.ascontiguousarray(outputs[name]), name)
        atomic.write_bytes(data / f"output_{number}.pb", tensor.SerializeToString())
    return data

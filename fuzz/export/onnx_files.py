"""The ONNX files of an exported reproduction: ``model.onnx`` and ``test_data_set_0/``.

The layout is the one ``onnx_test_runner`` and ONNX's backend tests read: the model beside a
folder of ``input_N.pb`` / ``output_N.pb`` ``TensorProto`` files, numbered in the graph's order and
named as the graph's inputs and outputs. Omitted optional inputs have no file. The expected
outputs are the float64 oracle's, rounded once to each output's type (the case's, unless the op fixes it), NaN
where the contract leaves an entry unspecified (GatedDeltaNet's capsule past the captured prefix); a case the EP
must refuse has none, and ``T = 0`` has the pass-through answer (an empty output, the past state unchanged).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from fuzz import atomic
from fuzz.backends.onnx_model import build_model
from fuzz.engine.op_testing import exact_for
from fuzz.export import op_export
from fuzz.export.plan import Expectation
from fuzz.model.case import Case
from fuzz.model.ops import LINEAR_ATTENTION, Op

TEST_DATA = "test_data_set_0"
MODEL = "model.onnx"
def checker_note(op: Op) -> str:
    """What the model check covers, for ISSUE.md (and how onnx's own op of that name, if any, differs)."""
    own = ""
    if onnx.defs.has(op.name):
        schema = onnx.defs.get_schema(op.name)
        without = " without `state_window`" if op.windowed else ""
        own = f" (its own ai.onnx `{op.name}`, opset {schema.since_version}, is a different schema{without})"
    return (
        f"`onnx.checker.check_model(full_check=True)` (onnx {onnx.__version__}) passes: it checks the graph, "
        "the types and the declared shapes, but not the node against a schema, because the onnx package has no "
        f"schemas for the com.microsoft domain{own}."
    )


CHECKER_NOTE = checker_note(LINEAR_ATTENTION)
"""What the model check of a LinearAttention model covers, for ISSUE.md."""


def reference_outputs(case: Case, expectation: Expectation) -> dict[str, np.ndarray]:
    """The outputs the EP must return, each in its type (none when it must refuse the case)."""
    if expectation is Expectation.REJECTION:
        return {}
    if expectation is Expectation.REJECTION_OR_PASS_THROUGH:
        dims = case.op.validate(**case.kwargs(), allow_empty_sequence=True)
        past = case.inputs.get("past_state")
        state = past if past is not None else np.zeros(dims.state_shape, case.dtype)
        return {"output": np.zeros(dims.output_shape, case.dtype), "present_state": state}
    exact = exact_for(case)
    return {name: exact.part(name)[0].astype(case.op.fixed_types.get(name, case.dtype)) for name in case.op.outputs}


def write_model(folder: Path, case: Case, outputs: dict[str, np.ndarray]) -> Path:
    """Write the one-node model of ``case`` with declared shapes and check it with ``onnx.checker``."""
    present = tuple(name for name in case.op.input_names if name in case.inputs)
    shapes: dict[str, tuple[int | str, ...]] = {name: case.inputs[name].shape for name in present}
    declared = {name: a.shape for name, a in outputs.items()} if outputs else None
    shapes.update(declared or op_export.for_op(case.op).symbolic_shapes(case))
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
    for number, name in enumerate(n for n in case.op.outputs if n in outputs):
        tensor = numpy_helper.from_array(np.ascontiguousarray(outputs[name]), name)
        atomic.write_bytes(data / f"output_{number}.pb", tensor.SerializeToString())
    return data

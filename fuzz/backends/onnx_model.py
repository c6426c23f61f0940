"""A minimal ONNX model holding one ``com.microsoft::LinearAttention`` node, built per case signature.

One model serves every case with the same *signature*: element type, which optional inputs are
present, and the attributes exactly as set. Shapes stay symbolic, so sizes never force a new model
(or a new ORT session) - which is what lets the ORT backends cache sessions by signature.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import TensorProto, helper

from fuzz.engine.case import Case
from oracles.validation import INPUT_NAMES

ELEMENT_TYPES = {
    "float32": TensorProto.FLOAT,
    "float16": TensorProto.FLOAT16,
    "bfloat16": TensorProto.BFLOAT16,
}
"""The operator's element types by name; NumPy has no bfloat16, so types are named, not dtypes."""

ModelKey = tuple[str, tuple[str, ...], tuple[tuple[str, str, Any], ...]]
"""``(element type, present inputs, ((attribute, python type, value), ...))``: hashable, exact."""


def model_key(case: Case) -> ModelKey:
    """The signature of the model that runs ``case``.

    Attribute values keep their Python type in the key, so ``scale=0`` (an INT attribute, which
    the schema refuses) and ``scale=0.0`` never share a model.
    """
    attrs = tuple(sorted((k, type(_plain(v)).__name__, _plain(v)) for k, v in case.attrs.items()))
    present = tuple(name for name in INPUT_NAMES if name in case.inputs)
    return str(case.dtype), present, attrs


def build_model_for(key: ModelKey) -> bytes:
    """Serialise the model of a signature produced by ``model_key``."""
    elem, present, attrs = key
    return build_model(elem, present, {name: value for name, _, value in attrs})


def build_model(
    dtype: np.dtype | str,
    present_inputs: tuple[str, ...],
    attrs: dict[str, Any],
    *,
    opset: int = 21,
    shapes: dict[str, tuple[int | str, ...]] | None = None,
) -> bytes:
    """Serialise a one-node LinearAttention model.

    ``dtype`` is a NumPy dtype or a name in ``ELEMENT_TYPES`` (``"bfloat16"`` builds a model no
    NumPy array can feed, useful to provoke an EP that cannot place the node). ``present_inputs``
    names the inputs the case provides; omitted optional inputs become empty names in the node,
    as ONNX requires. ``attrs`` holds exactly the attributes to set: a key that is absent stays
    absent (``scale`` absent and ``scale = 0.0`` are different models). ``shapes`` gives inputs and
    outputs a declared shape (sizes or symbolic names; ``onnx.checker`` needs one): a standalone model
    for a bug report has them, the backends' models stay shapeless so one serves every size.
    """
    type_name = dtype if isinstance(dtype, str) else str(np.dtype(dtype))
    elem = ELEMENT_TYPES.get(type_name)
    if elem is None:
        raise ValueError(f"build_model: element type must be one of {sorted(ELEMENT_TYPES)}, got {type_name}")
    node_inputs = [name if name in present_inputs else "" for name in INPUT_NAMES]
    while node_inputs and not node_inputs[-1]:
        node_inputs.pop()
    shapes = shapes or {}
    graph_inputs = [
        helper.make_tensor_value_info(name, elem, shapes.get(name)) for name in INPUT_NAMES if name in present_inputs
    ]
    node = helper.make_node(
        "LinearAttention",
        node_inputs,
        ["output", "present_state"],
        domain="com.microsoft",
        **{k: _plain(v) for k, v in attrs.items()},
    )
    graph = helper.make_graph(
        [node],
        "linear_attention",
        graph_inputs,
        [helper.make_tensor_value_info(name, elem, shapes.get(name)) for name in ("output", "present_state")],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid("com.microsoft", 1)],
    )
    model.ir_version = 10
    return model.SerializeToString()


def _plain(value: Any) -> Any:
    """NumPy scalars as Python values, so ONNX picks the attribute type the value really has."""
    return value.item() if isinstance(value, np.generic) else value

"""A minimal ONNX model holding one ``com.microsoft::LinearAttention`` node, built per case signature."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from oracles.validation import INPUT_NAMES

_ONNX_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16}


def build_model(
    dtype: np.dtype,
    present_inputs: tuple[str, ...],
    attrs: dict,
    *,
    opset: int = 21,
) -> bytes:
    """Serialise a one-node LinearAttention model.

    ``present_inputs`` names the inputs the case provides; omitted optional inputs become empty
    names in the node, as ONNX requires. ``attrs`` holds exactly the attributes to set: a key
    that is absent stays absent (``scale`` absent and ``scale = 0.0`` are different models).
    Shapes are left symbolic so one model serves every size with the same layout.
    """
    elem = _ONNX_TYPES.get(np.dtype(dtype))
    if elem is None:
        raise ValueError(f"build_model: dtype must be float32 or float16, got {dtype}")
    node_inputs = [name if name in present_inputs else "" for name in INPUT_NAMES]
    while node_inputs and not node_inputs[-1]:
        node_inputs.pop()
    graph_inputs = []
    for name in INPUT_NAMES:
        if name in present_inputs:
            graph_inputs.append(helper.make_tensor_value_info(name, elem, None))
    node = helper.make_node(
        "LinearAttention",
        node_inputs,
        ["output", "present_state"],
        domain="com.microsoft",
        **attrs,
    )
    graph = helper.make_graph(
        [node],
        "linear_attention",
        graph_inputs,
        [helper.make_tensor_value_info("output", elem, None),
         helper.make_tensor_value_info("present_state", elem, None)],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid("com.microsoft", 1)],
    )
    model.ir_version = 10
    return model.SerializeToString()

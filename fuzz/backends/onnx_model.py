"""Minimal ONNX models of a ``com.microsoft`` op under test (``fuzz.model.ops``), built per case signature.

One model serves every case with the same *signature*: the op, element type, which optional inputs are
present, and the attributes exactly as set. Shapes stay symbolic, so sizes never force a new model
(or a new ORT session) - which is what lets the ORT backends cache sessions by signature.

``build_model`` holds one node: one call of the operator. ``build_prefix_model`` holds several
independent nodes that share the graph's ``past_state`` and the op's other inputs without a sequence axis
(a convolution's ``weight`` and ``bias``): each reads its own sequence inputs, so one run evaluates several
``W = 0`` calls over prefixes of one sequence (prefix mode in one run).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import TensorProto, helper

from fuzz.model.case import Case
from fuzz.model.ops import LINEAR_ATTENTION, Op, op_named

ELEMENT_TYPES = {
    "float32": TensorProto.FLOAT,
    "float16": TensorProto.FLOAT16,
    "bfloat16": TensorProto.BFLOAT16,
    "int32": TensorProto.INT32,
    "int64": TensorProto.INT64,
}
"""The operator's element types by name; NumPy has no bfloat16, so types are named, not dtypes."""

ModelKey = tuple[str, tuple[str, ...], tuple[tuple[str, str, Any], ...], str]
"""``(element type, present inputs, ((attribute, python type, value), ...), op name)``: hashable, exact."""


def model_key(case: Case) -> ModelKey:
    """The signature of the model that runs ``case``.

    Attribute values keep their Python type in the key, so ``scale=0`` (an INT attribute, which
    the schema refuses) and ``scale=0.0`` never share a model.
    """
    attrs = tuple(sorted((k, type(_plain(v)).__name__, _plain(v)) for k, v in case.attrs.items()))
    present = tuple(name for name in case.op.input_names if name in case.inputs)
    return str(case.dtype), present, attrs, case.op.name


PrefixKey = tuple[str, int, ModelKey]
"""``("prefixes", calls, key of the W = 0 call)``: the model of ``build_prefix_model``."""


def prefix_model_key(legacy: Case, calls: int) -> PrefixKey:
    """The signature of the model that runs ``calls`` prefixes of the ``W = 0`` case ``legacy`` in one run."""
    if calls < 1:
        raise ValueError(f"prefix_model_key: a prefix model needs at least one call, got {calls}")
    return "prefixes", calls, model_key(legacy)


def prefix_input_name(name: str, call: int) -> str:
    """The graph input that feeds input ``name`` (a token input) of node ``call`` of a prefix model."""
    return f"{name}_{call}"


def prefix_state_name(call: int) -> str:
    """The graph output holding the final state of node ``call`` of a prefix model."""
    return f"present_state_{call}"


def prefix_output_name(calls: int) -> str:
    """The graph output holding the output of the last (longest) node of a prefix model of ``calls`` nodes."""
    return f"output_{calls - 1}"


def build_model_for(key: ModelKey) -> bytes:
    """Serialise the model of a signature produced by ``model_key``."""
    elem, present, attrs, op = key
    return build_model(elem, present, {name: value for name, _, value in attrs}, op=op_named(op))


def build_model(
    dtype: np.dtype | str,
    present_inputs: tuple[str, ...],
    attrs: dict[str, Any],
    *,
    op: Op = LINEAR_ATTENTION,
    opset: int = 21,
    shapes: dict[str, tuple[int | str, ...]] | None = None,
) -> bytes:
    """Serialise a one-node model of ``op`` (LinearAttention unless told).

    ``dtype`` is a NumPy dtype or a name in ``ELEMENT_TYPES`` (``"bfloat16"`` builds a model no
    NumPy array can feed, useful to provoke an EP that cannot place the node). ``present_inputs``
    names the inputs the case provides; omitted optional inputs become empty names in the node,
    as ONNX requires. ``attrs`` holds exactly the attributes to set: a key that is absent stays
    absent (``scale`` absent and ``scale = 0.0`` are different models). ``shapes`` gives inputs and
    outputs a declared shape (sizes or symbolic names; ``onnx.checker`` needs one): a standalone model
    for a bug report has them, the backends' models stay shapeless so one serves every size.
    """
    shapes = shapes or {}

    def typed(name: str) -> Any:  # a tensor of the call's dtype, unless the op fixes its type
        return helper.make_tensor_value_info(name, _element_type(op.fixed_types.get(name, dtype)), shapes.get(name))

    graph_inputs = [typed(name) for name in op.input_names if name in present_inputs]
    node = _node(op, {name: name for name in present_inputs}, list(op.outputs), attrs)
    outputs = [typed(name) for name in op.outputs]
    return _serialise([node], graph_inputs, outputs, opset)


def build_prefix_model(key: PrefixKey) -> bytes:
    """Serialise the model of ``prefix_model_key``: ``calls`` nodes of the op, node ``i`` reading the
    sequence inputs ``query_i``, ``key_i``, ... (``prefix_input_name``) and the shared inputs (``past_state``,
    and the op's inputs without a sequence axis: ``weight``, ``bias``).

    The nodes are independent ``W = 0`` calls, so one run gives what ``calls`` runs of ``build_model``'s
    model give, bit for bit, at the cost of one run. Outputs: every node's final state
    (``prefix_state_name``) and the last node's output (``prefix_output_name``).
    """
    _, calls, (elem_name, present, attrs, op_name) = key
    op = op_named(op_name)
    elem = _element_type(elem_name)
    token_inputs = [name for name in op.sequence_inputs if name in present]
    shared = [name for name in op.input_names if name in present and name not in token_inputs]
    graph_inputs = [helper.make_tensor_value_info(name, elem, None) for name in shared]
    nodes = []
    for call in range(calls):
        graph_inputs += [helper.make_tensor_value_info(prefix_input_name(n, call), elem, None) for n in token_inputs]
        feeds = {n: prefix_input_name(n, call) for n in token_inputs}
        feeds.update({n: n for n in shared})
        nodes.append(_node(op, feeds, [f"output_{call}", prefix_state_name(call)],
                           {name: value for name, _, value in attrs}))
    outputs = [helper.make_tensor_value_info(prefix_state_name(call), elem, None) for call in range(calls)]
    outputs.append(helper.make_tensor_value_info(prefix_output_name(calls), elem, None))
    return _serialise(nodes, graph_inputs, outputs, opset=21)


def _element_type(dtype: np.dtype | str) -> int:
    type_name = dtype if isinstance(dtype, str) else str(np.dtype(dtype))
    elem = ELEMENT_TYPES.get(type_name)
    if elem is None:
        raise ValueError(f"build_model: element type must be one of {sorted(ELEMENT_TYPES)}, got {type_name}")
    return elem


WRITTEN_ONLY_WHEN_SET = ("state_window",)
"""Attributes left out of a model at their default 0: schemas older than the window (onnxruntime-webgpu
1.27.0) refuse to load a node that carries them at all, and 0 means the same as absent."""


def _node(op: Op, feeds: dict[str, str], outputs: list[str], attrs: dict[str, Any]) -> Any:
    """A node of ``op`` reading input ``name`` from ``feeds[name]`` and writing ``outputs``; omitted optional
    inputs become empty names, as ONNX requires. ``state_window = 0`` is not written (``WRITTEN_ONLY_WHEN_SET``)."""
    node_inputs = [feeds.get(name, "") for name in op.input_names]
    while node_inputs and not node_inputs[-1]:
        node_inputs.pop()
    written = {k: _plain(v) for k, v in attrs.items() if not (k in WRITTEN_ONLY_WHEN_SET and _plain(v) == 0)}
    return helper.make_node(op.name, node_inputs, outputs, domain=op.domain, **written)


def _serialise(nodes: list, inputs: list, outputs: list, opset: int) -> bytes:
    graph = helper.make_graph(nodes, nodes[0].op_type, inputs, outputs)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid("com.microsoft", 1)],
    )
    model.ir_version = 10
    return model.SerializeToString()


def _plain(value: Any) -> Any:
    """NumPy scalars as Python values, so ONNX picks the attribute type the value really has."""
    return value.item() if isinstance(value, np.generic) else value

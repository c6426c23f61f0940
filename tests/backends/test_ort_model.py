"""The one-node model: inputs present or omitted as the case says, attributes exactly as given; the prefix
model: one such node per call, each with its own token inputs, all reading the one past state."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from support.ort_cases import fixed_case

from fuzz.backends.onnx_model import build_model, build_model_for, build_prefix_model, model_key, prefix_model_key


def _node(model_bytes: bytes) -> onnx.NodeProto:
    model = onnx.load_from_string(model_bytes)
    (node,) = model.graph.node
    return node


def test_omitted_optional_inputs_are_empty_names():
    case = fixed_case("delta", past=False)  # beta present, past_state and decay absent
    node = _node(build_model_for(model_key(case)))
    assert list(node.input) == ["query", "key", "value", "", "", "beta"]
    assert list(node.output) == ["output", "present_state"]
    assert node.domain == "com.microsoft" and node.op_type == "LinearAttention"


def test_attributes_exactly_as_given_but_a_zero_window():
    case = fixed_case("linear")
    absent = _node(build_model_for(model_key(case)))
    assert {a.name for a in absent.attribute} == {"q_num_heads", "kv_num_heads", "update_rule"}
    zero = _node(build_model_for(model_key(case.with_attrs(scale=0.0, state_window=0))))
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in zero.attribute}
    assert attrs["scale"] == 0.0 and "state_window" not in attrs
    assert model_key(case) != model_key(case.with_attrs(scale=0.0)) != model_key(case.with_attrs(scale=0))


def test_sizes_share_a_model_and_types_do_not():
    assert model_key(fixed_case("gated", d=4, seq_len=2)) == model_key(fixed_case("gated", d=8, seq_len=7))
    assert model_key(fixed_case("gated")) != model_key(fixed_case("gated", np.float16))


def test_element_types():
    model = onnx.load_from_string(build_model("bfloat16", ("query", "key", "value"), {"q_num_heads": 1,
                                                                                    "kv_num_heads": 1}))
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16
    with pytest.raises(ValueError, match="element type"):
        build_model(np.float64, ("query", "key", "value"), {})


def test_prefix_model_has_a_node_per_call_sharing_the_past_state():
    case = fixed_case("gated", past=True)  # decay present, beta absent
    model = onnx.load_from_string(build_prefix_model(prefix_model_key(case, 3)))
    assert [list(node.input) for node in model.graph.node] == [
        [f"query_{i}", f"key_{i}", f"value_{i}", "past_state", f"decay_{i}"] for i in range(3)]
    assert [list(node.output) for node in model.graph.node] == [[f"output_{i}", f"present_state_{i}"] for i in range(3)]
    assert [i.name for i in model.graph.input] == ["past_state", *(f"{n}_{i}" for i in range(3)
                                                                   for n in ("query", "key", "value", "decay"))]
    assert [o.name for o in model.graph.output] == ["present_state_0", "present_state_1", "present_state_2", "output_2"]
    assert all(_node(build_model_for(model_key(case))).attribute == node.attribute for node in model.graph.node)


def test_prefix_model_needs_a_call():
    with pytest.raises(ValueError, match="at least one call"):
        prefix_model_key(fixed_case("linear"), 0)


@pytest.mark.parametrize("window", [0, 1, 3, -1])
def test_state_window_is_written_only_when_it_is_not_zero(window: int):
    """A schema older than the window refuses any node carrying the attribute, even at 0 (its default)."""
    node = _node(build_model_for(model_key(fixed_case("linear").with_attrs(state_window=window))))
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    assert attrs.get("state_window", 0) == window and ("state_window" in attrs) == (window != 0)

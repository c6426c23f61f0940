"""The ONNX project's reference implementation of ``ai.onnx`` CausalConvWithState (``onnx.reference``) as a backend.

A second reference, written independently of ours, for the part of the contract the two ops share: the
``ai.onnx`` op (opset 27) has ``activation`` and no other attribute, so it runs cases with ``ndim = 1``,
channels first and ``dilation = 1``; its window is served through ``W = 0`` prefix runs (the op's
``window_by_prefix``). It is a peer for valid cases only: its own checks are the ranks and the activation's
name, so an invalid case is not one it can be asked about (``Unsupported``). It runs float32: it computes
float16 in float16 arithmetic, which no tolerance of the suite's model covers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from fuzz.backends.base import Backend, Capabilities, Rejected, Unavailable, Unsupported
from fuzz.model.case import Case
from fuzz.model.ops import CAUSAL_CONV
from oracles.validation import ValidationError

OPSET = 27
"""The ``ai.onnx`` opset of CausalConvWithState."""

SHARED_ATTRIBUTES = {"ndim": 1, "dilation": 1, "channels_last": 0}
"""The com.microsoft attributes the ai.onnx op lacks, with the only value it computes."""


def reference_model(present: tuple[str, ...], activation: str) -> onnx.ModelProto:
    """A one-node ``ai.onnx`` CausalConvWithState model reading the inputs ``present`` (float32)."""
    names = [name if name in present else "" for name in CAUSAL_CONV.input_names]
    while not names[-1]:
        names.pop()
    node = helper.make_node("CausalConvWithState", names, list(CAUSAL_CONV.outputs), activation=activation)
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in names if name]
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in CAUSAL_CONV.outputs]
    graph = helper.make_graph([node], "causal_conv_with_state", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


class OnnxReferenceBackend(Backend):
    """``onnx.reference.ReferenceEvaluator`` on the ``ai.onnx`` op, one evaluator per input set and activation."""

    name = "onnx-reference"

    def __init__(self) -> None:
        """``Unavailable`` where the installed onnx has no reference of the op (before onnx 1.23)."""
        self._evaluators: dict[tuple[tuple[str, ...], str], Any] = {}
        probe = {"input": np.ones((1, 1, 2), np.float32), "weight": np.ones((1, 1, 2), np.float32)}
        try:
            self._run_plain(probe, "none")
        except Exception as err:  # an onnx without the op fails in its own ways (NotImplementedError, RuntimeError)
            why = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise Unavailable(f"{self.name}: onnx {onnx.__version__} cannot evaluate ai.onnx CausalConvWithState "
                              f"(opset {OPSET}): {why}") from err

    def capabilities(self) -> Capabilities:
        return Capabilities(
            dtypes=("float32",), window="prefix", aliasing=False, device="host CPU (NumPy, onnx.reference)",
            versions={"onnx": onnx.__version__}, ops=(CAUSAL_CONV.name,),
            notes=("ai.onnx CausalConvWithState (opset 27): ndim 1, channels first, dilation 1; "
                   "W > 0 through W = 0 prefix runs",),
        )

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        if case.op is not CAUSAL_CONV:
            raise Unsupported(self.name, f"runs CausalConvWithState only, not {case.op.name}")
        try:
            dims = case.dims()
        except ValidationError as err:
            raise Unsupported(self.name, f"a peer for valid cases only (it checks ranks and names alone): {err}") \
                from err
        outside = {k: case.attr(k) for k, v in SHARED_ATTRIBUTES.items() if case.attr(k) != v}
        if outside:
            raise Unsupported(self.name, f"the ai.onnx op has no such attribute values: {outside}")
        if case.dtype != np.float32:
            raise Unsupported(self.name, f"computes {case.dtype} in {case.dtype} arithmetic (float32 only here)")
        if not dims.state_window:
            return self._run_plain(dict(case.inputs), str(case.attr("activation")))
        past = case.inputs.get("past_state")
        seeded = {**case.inputs, **({"past_state": past[-1]} if past is not None else {})}
        output, _ = self._run_plain(seeded, str(case.attr("activation")))
        present = CAUSAL_CONV.window_by_prefix(self._run_legacy, dict(case.inputs), dict(case.attrs))
        return output, present.astype(case.dtype)

    def _run_legacy(self, **call: Any) -> tuple[np.ndarray, np.ndarray]:
        inputs = {name: call[name] for name in CAUSAL_CONV.input_names if call.get(name) is not None}
        return self._run_plain(inputs, str(call.get("activation", "none")))

    def _run_plain(self, inputs: dict[str, np.ndarray], activation: str) -> tuple[np.ndarray, np.ndarray]:
        key = (tuple(name for name in CAUSAL_CONV.input_names if name in inputs), activation)
        if key not in self._evaluators:
            self._evaluators[key] = ReferenceEvaluator(reference_model(*key))
        try:
            with np.errstate(over="ignore"):  # its SiLU's exp overflows to inf for large negative sums: the limit
                output, present = self._evaluators[key].run(None, inputs)
        except (ValueError, IndexError, TypeError) as err:
            raise Rejected(self.name, str(err) or type(err).__name__) from err
        return np.asarray(output), np.asarray(present)

    def close(self) -> None:
        self._evaluators.clear()

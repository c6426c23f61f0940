"""The ONNX project's reference implementations (``onnx.reference``) of ``ai.onnx`` CausalConvWithState and
LinearAttention (opset 27) as one backend.

A second reference, written independently of ours, for the part of each contract the ``ai.onnx`` op shares with
the ``com.microsoft`` one (``Overlap``):

- CausalConvWithState has ``activation`` and no other attribute, so it runs cases with ``ndim = 1``, channels first
  and ``dilation = 1``; float32 only: it computes float16 in float16 arithmetic, which no tolerance of the suite's
  model covers.
- LinearAttention has the same inputs and attributes less ``state_window``; it runs ``H_q`` a multiple of ``H_kv``
  with one key head per kv head, float32 and float16 (computed in float32 and rounded once, as the contract allows).
  It refuses a ``decay`` or ``beta`` that the rule does not use, which ``com.microsoft`` ignores: such an input is
  left off the call.

Both windows are served through ``W = 0`` prefix runs (the op's ``window_by_prefix``). It is a peer for valid cases
only: its own checks differ from the contract's (the conv's are the ranks and the activation's name), so an invalid
case is not one it can be asked about (``Unsupported``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper
from onnx.reference import ReferenceEvaluator

from fuzz.backends.base import Backend, Capabilities, Rejected, Unavailable, Unsupported
from fuzz.model.case import Case
from fuzz.model.ops import CAUSAL_CONV, LINEAR_ATTENTION, Op
from oracles.validation import DELTA_RULES, GATED_RULES, ValidationError

OPSET = 27
"""The ``ai.onnx`` opset of both ops."""

SHARED_ATTRIBUTES = {"ndim": 1, "dilation": 1, "channels_last": 0}
"""The com.microsoft CausalConvWithState attributes the ai.onnx op lacks, with the only value it computes."""

EVALUATORS_KEPT = 256
"""Evaluators cached (one per node: inputs, attributes, dtype); an explicit ``scale`` makes a node of its own."""


@dataclass(frozen=True)
class Overlap:
    """What of a ``com.microsoft`` op its ``ai.onnx`` namesake computes, and how a call becomes one of the other."""

    op: Op
    attributes: Mapping[str, Callable[[Any], Any]]
    """The ai.onnx op's attributes (named as com.microsoft's) with their Python type; the node has no other."""
    outside: Callable[[Any, np.dtype], str | None]
    """Why a valid call (its dims and dtype) is outside the ai.onnx op's contract; None when inside."""
    unused: Callable[[Mapping[str, Any]], frozenset[str]]
    """The inputs of a call (by its attributes) that the ai.onnx op refuses and com.microsoft ignores."""
    probe: Mapping[str, Any]
    """A small valid call (inputs and attributes) that shows the installed onnx evaluates the op."""


def _conv_outside(dims: Any, dtype: np.dtype) -> str | None:
    values = {"ndim": dims.ndim, "dilation": dims.dilation, "channels_last": int(dims.channels_last)}
    outside = {k: v for k, v in values.items() if v != SHARED_ATTRIBUTES[k]}
    if outside:
        return f"the ai.onnx op has no such attribute values: {outside}"
    if dtype != np.float32:
        return f"computes {dtype} in {dtype} arithmetic (float32 only here)"
    return None


def _la_outside(dims: Any, dtype: np.dtype) -> str | None:
    if dims.q_heads < dims.kv_heads:
        return f"the ai.onnx op has no inverse GQA: q_num_heads {dims.q_heads} < kv_num_heads {dims.kv_heads}"
    if dims.key_heads != dims.kv_heads:
        return f"the ai.onnx op reads one key head per kv head, not {dims.key_heads} for {dims.kv_heads}"
    return None


def _la_unused(call: Mapping[str, Any]) -> frozenset[str]:
    rule = call.get("update_rule", LINEAR_ATTENTION.attribute_defaults["update_rule"])
    return frozenset({*(() if rule in GATED_RULES else ("decay",)), *(() if rule in DELTA_RULES else ("beta",))})


OVERLAPS = (
    Overlap(CAUSAL_CONV, {"activation": str}, _conv_outside, lambda _: frozenset(),
            {"input": np.ones((1, 1, 2), np.float32), "weight": np.ones((1, 1, 2), np.float32)}),
    Overlap(LINEAR_ATTENTION, {"update_rule": str, "q_num_heads": int, "kv_num_heads": int, "scale": float,
                               "chunk_size": int}, _la_outside, _la_unused,
            {"query": np.ones((1, 1, 1), np.float32), "key": np.ones((1, 1, 1), np.float32),
             "value": np.ones((1, 1, 1), np.float32), "q_num_heads": 1, "kv_num_heads": 1, "update_rule": "linear"}),
)
"""Each op the ai.onnx opset has a reference of, in the order ``capabilities().ops`` lists them."""


def reference_model(op: Op, present: tuple[str, ...], attributes: Mapping[str, Any], dtype: np.dtype
                    ) -> onnx.ModelProto:
    """A one-node ``ai.onnx`` model of ``op`` reading the inputs ``present``, every tensor of ``dtype``."""
    names = [name if name in present else "" for name in op.input_names]
    while not names[-1]:
        names.pop()
    node = helper.make_node(op.name, names, list(op.outputs), **attributes)
    element = helper.np_dtype_to_tensor_dtype(dtype)
    inputs = [helper.make_tensor_value_info(name, element, None) for name in names if name]
    outputs = [helper.make_tensor_value_info(name, element, None) for name in op.outputs]
    graph = helper.make_graph([node], op.name, inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


class OnnxReferenceBackend(Backend):
    """``onnx.reference.ReferenceEvaluator`` on the ``ai.onnx`` ops, one evaluator per node."""

    name = "onnx-reference"

    def __init__(self) -> None:
        """The ops the installed onnx evaluates; ``Unavailable`` where it has neither (before onnx 1.23)."""
        self._evaluators: dict[tuple[Any, ...], Any] = {}
        self._overlaps: dict[str, Overlap] = {}
        why: list[str] = []
        for overlap in OVERLAPS:
            try:
                self._run_call(overlap, **overlap.probe)
            except Exception as err:  # an onnx without the op fails in its own ways (NotImplementedError, ...)
                first = str(err).splitlines()[0] if str(err) else type(err).__name__
                why.append(f"ai.onnx {overlap.op.name}: {first}")
            else:
                self._overlaps[overlap.op.name] = overlap
        if not self._overlaps:
            raise Unavailable(f"{self.name}: onnx {onnx.__version__} cannot evaluate opset {OPSET}: {'; '.join(why)}")

    def capabilities(self) -> Capabilities:
        notes = {CAUSAL_CONV.name: "ai.onnx CausalConvWithState: ndim 1, channels first, dilation 1, float32",
                 LINEAR_ATTENTION.name: "ai.onnx LinearAttention: H_q a multiple of H_kv, one key head per kv head"}
        return Capabilities(
            dtypes=("float32", "float16"), window="prefix", aliasing=False, device="host CPU (NumPy, onnx.reference)",
            versions={"onnx": onnx.__version__}, ops=tuple(self._overlaps),
            notes=(*(f"{notes[op]} (opset {OPSET})" for op in self._overlaps), "W > 0 through W = 0 prefix runs"),
        )

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        overlap = self._overlaps.get(case.op.name)
        if overlap is None:
            raise Unsupported(self.name, f"runs {', '.join(self._overlaps)} only, not {case.op.name}")
        try:
            dims = case.dims()
        except ValidationError as err:
            raise Unsupported(self.name, f"a peer for valid cases only (its checks are not the contract's): {err}") \
                from err
        why = overlap.outside(dims, case.dtype)
        if why:
            raise Unsupported(self.name, why)

        def run_call(**call: Any) -> tuple[np.ndarray, np.ndarray]:
            return self._run_call(overlap, **call)

        if not dims.state_window:
            return run_call(**case.kwargs())
        past = case.inputs.get("past_state")
        output, _ = run_call(**{**case.kwargs(), "past_state": None if past is None else past[-1]})
        present = case.op.window_by_prefix(run_call, dict(case.inputs), dict(case.attrs))
        return output, present.astype(case.dtype)

    def _run_call(self, overlap: Overlap, **call: Any) -> tuple[np.ndarray, np.ndarray]:
        """One ``W = 0`` call with the oracle's signature, on the ai.onnx op (``state_window`` is not read)."""
        op = overlap.op
        unused = overlap.unused(call)
        inputs = {name: call[name] for name in op.input_names if call.get(name) is not None and name not in unused}
        attributes = {name: kind(call[name]) for name, kind in overlap.attributes.items() if call.get(name) is not None}
        dtype = inputs[op.lead_input].dtype
        key = (op.name, tuple(inputs), tuple(attributes.items()), dtype.str)
        if key not in self._evaluators:
            if len(self._evaluators) >= EVALUATORS_KEPT:
                self._evaluators.clear()
            self._evaluators[key] = ReferenceEvaluator(reference_model(op, tuple(inputs), attributes, dtype))
        try:
            with np.errstate(over="ignore"):  # its exps overflow to inf where the float64 answer is past float32's too
                output, present = self._evaluators[key].run(None, inputs)
        except (ValueError, IndexError, TypeError) as err:
            raise Rejected(self.name, str(err) or type(err).__name__) from err
        return np.asarray(output), np.asarray(present)

    def close(self) -> None:
        self._evaluators.clear()

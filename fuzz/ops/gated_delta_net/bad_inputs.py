"""Hypothesis strategies for invalid GatedDeltaNet calls: each case breaks exactly one rule of docs/spec.md §8.

A valid call is drawn under the op's limits, its shape and layout first bent so that the rule can be broken (the
standard-GQA rule needs two query heads, the per-key decay one a gated rule with capture), then one ``Breaker``
edits its inputs or attributes. ``notes["broken_rule"]`` names the rule, and every case is confirmed invalid by
the oracle's validation before it is returned, so a breaker that stopped breaking shows as a failed draw, not as
a valid case fed to ``error-parity``. An empty call is outside this op's contract (no pass-through answer).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from hypothesis import strategies as st

from fuzz.model.case import Case
from fuzz.ops.gated_delta_net.strategies import (
    DEFAULT_LIMITS,
    GdnLayout,
    GdnLimits,
    GdnShape,
    build_gdn_case,
    gdn_layouts,
    gdn_shapes,
)
from oracles.gated_delta_net.validation import MAX_CAPACITY
from oracles.validation import ValidationError

Bend = Callable[[GdnShape, GdnLayout], tuple[GdnShape, GdnLayout]]


@dataclass(frozen=True)
class Breaker:
    """One rule: how a valid call is bent so that the rule applies, and the edit that breaks it."""

    rule: str
    bend: Bend
    edit: Callable[[Case], Case]


def _keep(shape: GdnShape, layout: GdnLayout) -> tuple[GdnShape, GdnLayout]:
    return shape, layout


def _unpacked(shape: GdnShape, layout: GdnLayout) -> tuple[GdnShape, GdnLayout]:
    return replace(shape, packed=False), layout


def _standard_gqa(shape: GdnShape, layout: GdnLayout) -> tuple[GdnShape, GdnLayout]:
    return replace(shape, packed=False, q_heads=max(2, shape.q_heads), group=1), layout


def _captured(shape: GdnShape, layout: GdnLayout) -> tuple[GdnShape, GdnLayout]:
    """Capture on, so a per-key decay (which capture refuses) off: the call breaks the breaker's rule alone."""
    return shape, replace(layout, capacity=max(1, layout.capacity), capture_counts=None, active=None,
                          decay_per_key=False)


def _per_key_captured(shape: GdnShape, layout: GdnLayout) -> tuple[GdnShape, GdnLayout]:
    shape, layout = _captured(shape, layout)
    return shape, replace(layout, update_rule="gated_delta", gate_activation="none", decay_per_key=False)


def _uncaptured(shape: GdnShape, layout: GdnLayout) -> tuple[GdnShape, GdnLayout]:
    return shape, replace(layout, capacity=0, capture_counts=None)


def _ragged(shape: GdnShape, layout: GdnLayout) -> tuple[GdnShape, GdnLayout]:
    return replace(shape, ragged=True, rank4=False, lengths=(*shape.lengths[:-1], shape.lengths[-1] + 1)), layout


def _rank4(shape: GdnShape, layout: GdnLayout) -> tuple[GdnShape, GdnLayout]:
    return replace(shape, ragged=False, rank4=True, lengths=(shape.lengths[0] or 1,) * len(shape.lengths)), layout


def _rule(rule: str, gate: str = "none", beta: str = "none") -> Bend:
    return lambda shape, layout: (shape, replace(layout, update_rule=rule, gate_activation=gate, beta_activation=beta,
                                                 decay_per_key=False))


def _with_state(shape: GdnShape, layout: GdnLayout) -> tuple[GdnShape, GdnLayout]:
    return shape, replace(layout, has_initial_state=True)


def _fewer_value_heads(case: Case) -> Case:
    value = case.inputs["value"]
    return case.with_inputs(value=np.ascontiguousarray(value[..., :-1, :]))


def _fewer_key_heads(case: Case) -> Case:
    key = case.inputs["key"]
    return case.with_inputs(key=np.concatenate([key, key[..., :1, :]], axis=-2))


def _per_key_decay(case: Case) -> Case:
    decay = case.inputs["decay"]
    return case.with_inputs(decay=np.repeat(decay[..., None], case.dims().d_k, axis=-1))


def _counts(case: Case) -> Case:
    return case.with_inputs(capture_count=np.ones(case.dims().batch, np.int32))


def _cu_seqlens(change: Callable[[np.ndarray], np.ndarray]) -> Callable[[Case], Case]:
    return lambda case: case.with_inputs(cu_seqlens=change(case.inputs["cu_seqlens"].copy()))


def _decreasing(bounds: np.ndarray) -> np.ndarray:
    bounds[-2] = bounds[-1] + 1
    return bounds


def _past_the_end(bounds: np.ndarray) -> np.ndarray:
    bounds[-1] += 1
    return bounds


def _cu_seqlens_at_rank4(case: Case) -> Case:
    d = case.dims()
    return case.with_inputs(cu_seqlens=np.arange(0, d.total_tokens + 1, d.lengths[0], dtype=np.int32))


def _gates(case: Case) -> Case:
    heads = case.dims().v_heads
    return case.with_inputs(a_log=np.zeros(heads, np.float32), dt_bias=np.zeros(heads, np.float32))


def _extra(name: str, shape: Callable[[Case], tuple[int, ...]]) -> Callable[[Case], Case]:
    return lambda case: case.with_inputs(**{name: np.full(shape(case), -0.5, np.float32)})


def _token_gate(case: Case) -> tuple[int, ...]:
    return (*case.dims().token_shape, case.dims().v_heads)


def _state_as(dtype: type) -> Callable[[Case], Case]:
    return lambda case: case.with_inputs(initial_state=case.inputs["initial_state"].astype(dtype))


def _state_heads(case: Case) -> Case:
    state = case.inputs["initial_state"]
    return case.with_inputs(initial_state=np.concatenate([state, state[:, :1]], axis=1))


BREAKERS = (
    Breaker("standard-gqa", _standard_gqa, _fewer_value_heads),
    Breaker("key-heads", _unpacked, _fewer_key_heads),
    Breaker("per-key-decay-with-capture", _per_key_captured, _per_key_decay),
    Breaker("capture-count-without-capacity", _uncaptured, _counts),
    Breaker("capacity-without-capture-count", _captured, lambda case: case.with_inputs(capture_count=None)),
    Breaker("capacity-above-8", _captured, lambda case: case.with_attrs(state_update_capacity=MAX_CAPACITY + 1)),
    Breaker("capture-count-shape", _captured,
            lambda case: case.with_inputs(capture_count=np.ones(case.dims().batch + 1, np.int32))),
    Breaker("capture-count-int64", _captured,
            lambda case: case.with_inputs(capture_count=case.inputs["capture_count"].astype(np.int64))),
    Breaker("cu-seqlens-decreasing", _ragged, _cu_seqlens(_decreasing)),
    Breaker("cu-seqlens-past-the-end", _ragged, _cu_seqlens(_past_the_end)),
    Breaker("cu-seqlens-with-rank4", _rank4, _cu_seqlens_at_rank4),
    Breaker("a-log-without-qwen", _rule("gated_delta"), _gates),
    Breaker("qwen-without-a-log", _rule("gated_delta", gate="qwen"), lambda case: case.with_inputs(a_log=None)),
    Breaker("decay-for-ungated-rule", _rule("delta"), _extra("decay", _token_gate)),
    Breaker("beta-for-rule-without-beta", _rule("gated"), _extra("beta", _token_gate)),
    Breaker("missing-decay", _rule("gated_delta"), lambda case: case.with_inputs(decay=None)),
    Breaker("missing-beta", _rule("delta"), lambda case: case.with_inputs(beta=None)),
    Breaker("initial-state-float16", _with_state, _state_as(np.float16)),
    Breaker("initial-state-heads", _with_state, _state_heads),
    Breaker("unknown-gate-activation", _keep, lambda case: case.with_attrs(gate_activation="sigmoid")),
    Breaker("unknown-update-rule", _keep, lambda case: case.with_attrs(update_rule="gated_linear")),
    Breaker("qk-l2-norm-2", _keep, lambda case: case.with_attrs(qk_l2_norm=2)),
    Breaker("state-update-active-shape", _captured,
            lambda case: case.with_inputs(state_update_active=np.ones(2, np.int32))),
)
"""Every rule a drawn call breaks: the schema's refusals (standard GQA, a per-key decay with capture, counts
without a capacity and the reverse, a capacity past 8, bad ``cu_seqlens``, the in-op gates' inputs without
``gate_activation = 'qwen'``) and the shapes and types of each input."""

GDN_RULES = tuple(b.rule for b in BREAKERS)
"""The rule names, as they appear in ``notes["broken_rule"]``."""


@st.composite
def invalid_gdn_cases(draw: st.DrawFn, limits: GdnLimits = DEFAULT_LIMITS) -> Case:
    """A GatedDeltaNet call that breaks exactly one rule (``notes["broken_rule"]``), confirmed invalid."""
    breaker = draw(st.sampled_from(BREAKERS))
    shape = draw(gdn_shapes(limits))
    shape, layout = breaker.bend(shape, draw(gdn_layouts(shape, dtypes=limits.dtypes)))
    case = breaker.edit(build_gdn_case(shape, layout, draw(st.integers(0, 2**32 - 1))))
    try:
        case.op.validate(**case.kwargs())
    except ValidationError:
        return Case(inputs=case.inputs, attrs=case.attrs, op=case.op,
                    notes={**case.notes, "broken_rule": breaker.rule})
    raise AssertionError(f"{breaker.rule}: the edited call is still valid: {case.summary()}")

"""Hypothesis strategies for invalid CausalConvWithState calls: each case breaks exactly one rule.

As LinearAttention's (``fuzz.ops.linear_attention.bad_inputs``): a valid case is drawn, one ``Breaker`` edits its
shapes, dtypes or attributes to break a single rule of ``oracles.causal_conv.validate``, and fresh values
are realised. ``notes["broken_rule"]`` names the rule; every case is confirmed invalid by the shared
validation before it is returned. ``T = 0`` is the rule a backend may answer by passing the state through
(``fuzz.ops.linear_attention.bad_inputs.PASS_THROUGH_RULES``, the same name for every op).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from fuzz.model.case import Case
from fuzz.model.ops import CAUSAL_CONV
from fuzz.ops.causal_conv.strategies import ConvLimits, conv_cases
from fuzz.ops.linear_attention.bad_inputs import Breaker, always, confirmed_invalid
from fuzz.ops.linear_attention.strategies import one_of_values
from oracles.causal_conv import ConvDims
from oracles.validation import MAX_STATE_WINDOW


@dataclass
class ConvDraft:
    """The editable description of a call: input shapes and dtypes, attributes, and the valid call's sizes."""

    shapes: dict[str, tuple[int, ...]]
    dtypes: dict[str, str]
    attrs: dict[str, Any]
    dims: ConvDims

    def resize(self, name: str, axis: int, by: int) -> None:
        shape = list(self.shapes[name])
        shape[axis] += by
        self.shapes[name] = tuple(shape)


def _set_attr(name: str, bad: tuple[Any, ...]) -> Callable[[ConvDraft, np.random.Generator], None]:
    def edit(draft: ConvDraft, rng: np.random.Generator) -> None:
        draft.attrs[name] = bad[int(rng.integers(0, len(bad)))]
    return edit


def _channels_last_with_ndim(draft: ConvDraft, rng: np.random.Generator) -> None:
    """``channels_last = 1`` with ``ndim`` 2 or 3 (input shapes kept: the attributes are checked first)."""
    draft.attrs.update(channels_last=1, ndim=int(rng.integers(2, 4)))


def _window_out_of_range(draft: ConvDraft, rng: np.random.Generator) -> None:
    draft.attrs["state_window"] = int(rng.choice([MAX_STATE_WINDOW + 1, -1]))
    draft.shapes.pop("past_state", None)


def _rank(name: str) -> Callable[[ConvDraft, np.random.Generator], None]:
    def edit(draft: ConvDraft, rng: np.random.Generator) -> None:
        shape = draft.shapes[name]
        draft.shapes[name] = (*shape, 1) if rng.random() < 0.5 or len(shape) == 1 else shape[:-1]
    return edit


def _input_rank(draft: ConvDraft, rng: np.random.Generator) -> None:
    """Channels first: one axis more or fewer. Channels last takes any number of channel axes, so there only
    ``(B, T)`` breaks the rank rule."""
    if draft.dims.channels_last:
        draft.shapes["input"] = draft.shapes["input"][:2]
    else:
        _rank("input")(draft, rng)


def _grow(name: str, axis: int) -> Callable[[ConvDraft, np.random.Generator], None]:
    def edit(draft: ConvDraft, rng: np.random.Generator) -> None:
        draft.resize(name, axis, int(rng.integers(1, 3)))
    return edit


def _kernel_zero(draft: ConvDraft, rng: np.random.Generator) -> None:
    shape = draft.shapes["weight"]
    draft.shapes["weight"] = (*shape[:-1], 0)
    draft.shapes.pop("past_state", None)


def _dtype_mismatch(draft: ConvDraft, rng: np.random.Generator) -> None:
    name = str(rng.choice([n for n in draft.shapes if n != "input"]))
    draft.dtypes[name] = "float16" if draft.dtypes["input"] == "float32" else "float32"


def _past_shape(draft: ConvDraft, rng: np.random.Generator) -> None:
    """One axis of the state one longer, or the state of the other window layout (5-D for 4-D...)."""
    shape = draft.shapes.get("past_state") or draft.dims.state_shape
    if rng.random() < 0.5:
        draft.shapes["past_state"] = shape
        draft.resize("past_state", int(rng.integers(0, len(shape))), 1)
    else:
        window = draft.dims.state_window
        draft.shapes["past_state"] = draft.dims.slot_shape if window else (1, *draft.dims.slot_shape)


def _empty_sequence(draft: ConvDraft, rng: np.random.Generator) -> None:
    shape = list(draft.shapes["input"])
    shape[1 if draft.dims.channels_last else -1] = 0
    draft.shapes["input"] = tuple(shape)


CONV_BREAKERS: tuple[Breaker, ...] = (
    Breaker("activation", always, _set_attr("activation", ("", "relu", "SILU", "gelu"))),
    Breaker("ndim-range", always, _set_attr("ndim", (0, 4, -1))),
    Breaker("dilation-range", always, _set_attr("dilation", (0, -1))),
    Breaker("channels-last-value", always, _set_attr("channels_last", (2, -1))),
    Breaker("channels-last-ndim", always, _channels_last_with_ndim),
    Breaker("state-window-range", always, _window_out_of_range),
    Breaker("input-rank", always, _input_rank),
    Breaker("weight-rank", always, _rank("weight")),
    Breaker("bias-rank", lambda d: d.has_bias, _rank("bias")),
    Breaker("dtype-mismatch", always, _dtype_mismatch),
    Breaker("weight-channels", always, _grow("weight", 0)),
    Breaker("weight-group", always, _grow("weight", 1)),
    Breaker("kernel-size-zero", always, _kernel_zero),
    Breaker("bias-size", lambda d: d.has_bias, _grow("bias", 0)),
    Breaker("past-state-shape", always, _past_shape),
    Breaker("empty-sequence", always, _empty_sequence),
)
"""Every rule the conv bad-input strategies break, one breaker per rule."""

CONV_RULES: tuple[str, ...] = tuple(b.rule for b in CONV_BREAKERS)
"""The rule names, as they appear in ``notes["broken_rule"]``."""


def _realise(draft: ConvDraft, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {name: rng.standard_normal(shape).astype(draft.dtypes.get(name, draft.dtypes["input"]))
            for name, shape in draft.shapes.items()}


def break_conv_case(case: Case, breaker: Breaker, seed: int) -> Case:
    """The valid ``case`` with ``breaker``'s rule broken, values realised from ``seed``."""
    dims = case.dims()
    if not breaker.applies(dims):
        raise ValueError(f"break_conv_case: rule {breaker.rule!r} has a precondition this case misses: "
                         f"{case.summary()}")
    rng = np.random.default_rng(seed)
    draft = ConvDraft(shapes={n: a.shape for n, a in case.inputs.items()},
                      dtypes={n: str(a.dtype) for n, a in case.inputs.items()}, attrs=dict(case.attrs), dims=dims)
    breaker.edit(draft, rng)
    return confirmed_invalid(Case(inputs=_realise(draft, rng), attrs=draft.attrs,
                                  notes={"broken_rule": breaker.rule, "seed": seed}, op=CAUSAL_CONV))


@st.composite
def invalid_conv_cases(draw: st.DrawFn, limits: ConvLimits, rules: tuple[str, ...] = CONV_RULES) -> Case:
    """A CausalConvWithState case that breaks exactly one rule of ``rules`` (default: all, drawn uniformly)."""
    unknown = set(rules) - set(CONV_RULES)
    if unknown:
        raise ValueError(f"invalid_conv_cases: unknown rule(s) {sorted(unknown)}; known: {', '.join(CONV_RULES)}")
    breaker = draw(one_of_values(tuple(b for b in CONV_BREAKERS if b.rule in rules)))
    valid = draw(conv_cases(limits))
    assume(breaker.applies(valid.dims()))
    return break_conv_case(valid, breaker, draw(st.integers(0, 2**32 - 1)))

"""Hypothesis strategies for invalid LinearAttention calls: each case breaks exactly one rule.

A valid case is drawn first (``fuzz.strategies.cases``); one ``Breaker`` then edits the shapes,
dtypes or attributes to break a single rule of docs/spec.md §1-2, and fresh values are realised for the
new shapes. ``notes["broken_rule"]`` names the rule, so a finding says which rule a backend let
through. Every produced case is confirmed invalid by the shared validation before it is returned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st

from fuzz.model.case import Case
from fuzz.ops.linear_attention.strategies import Limits, cases, one_of_values
from oracles.prefix import SEQUENCE_INPUTS
from oracles.validation import DELTA_RULES, GATED_RULES, MAX_STATE_WINDOW, Dims, ValidationError


@dataclass
class Draft:
    """The editable description of a call: input shapes and dtypes, attributes."""

    shapes: dict[str, tuple[int, ...]]
    dtypes: dict[str, str]
    attrs: dict[str, Any]
    dims: Dims
    """Sizes of the valid case the draft was taken from."""

    def slot_shape(self, kv_heads: int | None = None) -> tuple[int, ...]:
        d = self.dims
        return (d.batch, kv_heads or d.kv_heads, d.d_k, d.d_v)

    def past_shape(self, kv_heads: int | None = None) -> tuple[int, ...]:
        window = int(self.attrs.get("state_window", 0))
        slot = self.slot_shape(kv_heads)
        return (window, *slot) if window else slot


@dataclass(frozen=True)
class Breaker:
    """One rule of an op's contract, and how to break it in a draft of a valid call (its sizes: ``Dims``,
    ``ConvDims``; its draft: ``Draft``, ``fuzz.ops.causal_conv.bad_inputs.ConvDraft``)."""

    rule: str
    applies: Callable[[Any], bool]
    """Whether the rule can be broken in a call of these sizes."""
    edit: Callable[[Any, np.random.Generator], None]


def always(_: Any) -> bool:
    """A breaker's ``applies`` for a rule every call can break."""
    return True


def _wrong_rank(name: str) -> Breaker:
    def edit(draft: Draft, rng: np.random.Generator) -> None:
        shape = draft.shapes.get(name) or _default_shape(draft, name)
        draft.shapes[name] = (*shape, 1) if rng.random() < 0.5 else shape[:-1]
    return Breaker(f"{name}-rank", always, edit)


def _default_shape(draft: Draft, name: str) -> tuple[int, ...]:
    """A valid shape for an optional input the draft does not have yet."""
    d = draft.dims
    if name == "past_state":
        return draft.past_shape()
    return (d.batch, d.seq_len, d.kv_heads)


def _mismatch_axis(axis: int, rule: str) -> Breaker:
    def edit(draft: Draft, rng: np.random.Generator) -> None:
        name = str(rng.choice([n for n in ("key", "value", "decay", "beta") if n in draft.shapes]))
        shape = list(draft.shapes[name])
        shape[axis] += 1
        draft.shapes[name] = tuple(shape)
    return Breaker(rule, always, edit)


def _set_last(name: str, last: Callable[[Dims], int], rule: str, applies: Callable[[Dims], bool] = always,
              ) -> Breaker:
    def edit(draft: Draft, rng: np.random.Generator) -> None:
        shape = draft.shapes.get(name) or _default_shape(draft, name)
        draft.shapes[name] = (*shape[:-1], last(draft.dims))
    return Breaker(rule, applies, edit)


def _heads_indivisible(draft: Draft, rng: np.random.Generator) -> None:
    """``H_q = p``, ``H_kv = p + 1``: neither divides the other; every other shape kept consistent."""
    d = draft.dims
    p = int(rng.integers(2, 4))
    draft.attrs.update(q_num_heads=p, kv_num_heads=p + 1)
    draft.shapes.update(query=(d.batch, d.seq_len, p * d.d_k), key=(d.batch, d.seq_len, d.d_k),
                        value=(d.batch, d.seq_len, (p + 1) * d.d_v))
    for name in ("decay", "beta"):
        if name in draft.shapes:
            draft.shapes[name] = (d.batch, d.seq_len, p + 1)
    if "past_state" in draft.shapes:
        draft.shapes["past_state"] = draft.past_shape(kv_heads=p + 1)


def _heads_zero(draft: Draft, rng: np.random.Generator) -> None:
    draft.attrs[str(rng.choice(["q_num_heads", "kv_num_heads"]))] = 0


def _window_out_of_range(draft: Draft, rng: np.random.Generator) -> None:
    draft.attrs["state_window"] = int(rng.choice([MAX_STATE_WINDOW + 1, -1]))
    draft.shapes.pop("past_state", None)


def _unknown_rule(draft: Draft, rng: np.random.Generator) -> None:
    draft.attrs["update_rule"] = str(rng.choice(["", "softmax", "GATED", "gated-delta"]))


def _drop(name: str) -> Callable[[Draft, np.random.Generator], None]:
    def edit(draft: Draft, rng: np.random.Generator) -> None:
        draft.shapes.pop(name, None)
    return edit


def _past_rank(draft: Draft, rng: np.random.Generator) -> None:
    """A 4-D past for ``W > 0`` or a 5-D one for ``W = 0``."""
    window = int(draft.attrs.get("state_window", 0))
    draft.shapes["past_state"] = draft.slot_shape() if window else (1, *draft.slot_shape())


def _past_shape(draft: Draft, rng: np.random.Generator) -> None:
    shape = list(draft.shapes.get("past_state") or draft.past_shape())
    shape[int(rng.integers(0, len(shape)))] += 1
    draft.shapes["past_state"] = tuple(shape)


def _dtype_mismatch(draft: Draft, rng: np.random.Generator) -> None:
    name = str(rng.choice([n for n in draft.shapes if n != "query"]))
    draft.dtypes[name] = "float16" if draft.dtypes["query"] == "float32" else "float32"


def _empty_sequence(draft: Draft, rng: np.random.Generator) -> None:
    for name in SEQUENCE_INPUTS:
        if name in draft.shapes:
            draft.shapes[name] = (draft.shapes[name][0], 0, *draft.shapes[name][2:])


BREAKERS: tuple[Breaker, ...] = (
    Breaker("update-rule", always, _unknown_rule),
    Breaker("state-window-range", always, _window_out_of_range),
    Breaker("heads-zero", always, _heads_zero),
    Breaker("heads-indivisible", always, _heads_indivisible),
    *(_wrong_rank(name) for name in ("query", "key", "value", "decay", "beta")),
    _mismatch_axis(0, "batch-mismatch"),
    _mismatch_axis(1, "sequence-mismatch"),
    _set_last("query", lambda d: d.q_heads * d.d_k + 1, "query-hidden-indivisible", lambda d: d.q_heads >= 2),
    _set_last("key", lambda d: d.key_heads * d.d_k + 1, "key-hidden-indivisible", lambda d: d.d_k >= 2),
    _set_last("key", lambda d: (d.kv_heads + 1) * d.d_k, "key-heads-indivisible"),
    _set_last("value", lambda d: d.kv_heads * d.d_v + 1, "value-hidden-indivisible", lambda d: d.kv_heads >= 2),
    _set_last("decay", lambda d: d.kv_heads * d.d_k + 1, "decay-last-dim"),
    _set_last("beta", lambda d: d.kv_heads + 1, "beta-last-dim"),
    Breaker("decay-missing", lambda d: d.update_rule in GATED_RULES, _drop("decay")),
    Breaker("beta-missing", lambda d: d.update_rule in DELTA_RULES, _drop("beta")),
    Breaker("past-state-rank", always, _past_rank),
    Breaker("past-state-shape", always, _past_shape),
    Breaker("dtype-mismatch", always, _dtype_mismatch),
    Breaker("empty-sequence", always, _empty_sequence),
)
"""Every rule the bad-input strategies break, one breaker per rule."""

RULES: tuple[str, ...] = tuple(b.rule for b in BREAKERS)
"""The rule names, as they appear in ``notes["broken_rule"]``."""

PASS_THROUGH_RULES = frozenset({"empty-sequence"})
"""Rules whose breach a backend may answer by passing the past state through (docs/spec.md §2, ``T = 0``)."""


def _realise(draft: Draft, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Fresh values for the draft's shapes: normal data, ``decay <= 0``, ``beta`` in ``[0, 1]``."""
    arrays = {}
    for name, shape in draft.shapes.items():
        if name == "decay":
            x = -rng.uniform(0.0, 1.0, shape)
        elif name == "beta":
            x = rng.uniform(0.0, 1.0, shape)
        else:
            x = rng.standard_normal(shape)
        arrays[name] = x.astype(draft.dtypes.get(name, draft.dtypes["query"]))
    return arrays


def break_case(case: Case, breaker: Breaker, seed: int) -> Case:
    """The valid ``case`` with ``breaker``'s rule broken, values realised from ``seed``."""
    if not breaker.applies(case.dims()):
        raise ValueError(f"break_case: rule {breaker.rule!r} has a precondition this case misses: {case.summary()}")
    rng = np.random.default_rng(seed)
    draft = Draft(
        shapes={n: a.shape for n, a in case.inputs.items()},
        dtypes={n: str(a.dtype) for n, a in case.inputs.items()},
        attrs=dict(case.attrs), dims=case.dims(),
    )
    breaker.edit(draft, rng)
    return confirmed_invalid(Case(inputs=_realise(draft, rng), attrs=draft.attrs,
                                  notes={"broken_rule": breaker.rule, "seed": seed}))


def confirmed_invalid(broken: Case) -> Case:
    """``broken`` if its op's validation refuses it (a breaker that left a case valid is a bug here)."""
    try:
        broken.dims()
    except ValidationError:
        return broken
    raise AssertionError(f"breaker {broken.notes['broken_rule']!r} left the case valid: {broken.summary()}")


@st.composite
def invalid_cases(draw: st.DrawFn, limits: Limits, rules: tuple[str, ...] = RULES) -> Case:
    """A case that breaks exactly one rule of ``rules`` (default: all of them, drawn uniformly)."""
    unknown = set(rules) - set(RULES)
    if unknown:
        raise ValueError(f"invalid_cases: unknown rule(s) {sorted(unknown)}; known: {', '.join(RULES)}")
    breaker = draw(one_of_values(tuple(b for b in BREAKERS if b.rule in rules)))
    valid = draw(cases(limits))
    # a rule with a precondition (e.g. H_kv >= 2) may not apply to this draw: try another
    assume(breaker.applies(valid.dims()))
    return break_case(valid, breaker, draw(st.integers(0, 2**32 - 1)))

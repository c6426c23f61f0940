"""Hypothesis strategies for valid GatedDeltaNet cases (docs/spec.md §8), under the op's ``GdnLimits``.

A case is drawn as a ``GdnShape`` (requests and their lengths, heads, sizes, the spelling) and a ``GdnLayout``
(rule, gates, capture plan, dtype), then realised from a seed by ``build_gdn_case``, so a test or a planted bug's
targeted case can name one exactly. The delta rules are fed L2-normalised keys (the schema's precondition; with
``qk_l2_norm`` the op normalises them itself), and decays are negative, as a model's are.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
from hypothesis import strategies as st

from fuzz.model.case import Case
from fuzz.model.ops import GATED_DELTA_NET, Op
from oracles.gated_delta_net.validation import MAX_CAPACITY
from oracles.validation import DELTA_RULES, GATED_RULES, UPDATE_RULES

DTYPES = ("float32", "float16")


@dataclass(frozen=True)
class GdnLimits:
    """Size caps and feature choices for drawn GatedDeltaNet cases (and the calls a replay replays)."""

    op: ClassVar[Op] = GATED_DELTA_NET
    max_batch: int = 3
    max_len: int = 6
    """Most tokens of one request."""
    max_heads: int = 3
    """Most query/key heads."""
    max_group: int = 3
    """Most value heads per query head (inverse GQA)."""
    max_d: int = 8
    """Most ``d_k`` and ``d_v``."""
    min_d: int = 1
    dtypes: tuple[str, ...] = DTYPES

    @classmethod
    def ci(cls) -> GdnLimits:
        """Small sizes for CI: every rule, gate, capture plan and spelling."""
        return cls(max_batch=2, max_len=5, max_heads=2, max_group=2, max_d=4)

    @classmethod
    def default(cls) -> GdnLimits:
        """Interactive fuzzing: moderate sizes."""
        return cls()

    @classmethod
    def campaign(cls) -> GdnLimits:
        """The fixed campaign slice: requests longer than the largest capacity, so capture counts fall on every
        side of ``T`` and ``C``."""
        return cls(max_batch=3, max_len=10, max_heads=2, max_group=3, max_d=8)

    @classmethod
    def big(cls) -> GdnLimits:
        """Large heads and long requests."""
        return cls(max_batch=4, max_len=64, max_heads=4, max_group=4, max_d=64)

    def describe(self) -> str:
        """One line for logs and the report."""
        return (f"GatedDeltaNet: B<={self.max_batch}, T<={self.max_len}, H_q<={self.max_heads}, H_v/H_q<="
                f"{self.max_group}, d {self.min_d}-{self.max_d}, {','.join(self.dtypes)}")


DEFAULT_LIMITS = GdnLimits()


@dataclass(frozen=True)
class GdnShape:
    """The sizes of a GatedDeltaNet call."""

    lengths: tuple[int, ...]
    """Tokens of each request (``B = len(lengths)``)."""
    ragged: bool
    """Pass ``cu_seqlens`` (rank 3 only); else every request has ``lengths[0]`` tokens."""
    q_heads: int
    group: int
    """``H_v / H_q``."""
    d_k: int
    d_v: int
    rank4: bool = False
    """The ``(B, S)`` spelling of the token axis."""
    packed: bool = False
    """Packed QKV (``key`` and ``value`` absent; ``initial_state`` then present)."""

    @property
    def v_heads(self) -> int:
        return self.q_heads * self.group


@dataclass(frozen=True)
class GdnLayout:
    """Everything about a GatedDeltaNet call but its sizes and values."""

    update_rule: str = "gated_delta"
    dtype: str = "float32"
    gate_activation: str = "none"
    beta_activation: str = "none"
    qk_l2_norm: int = 0
    capacity: int = 0
    capture_counts: tuple[int, ...] | None = None
    """Each request's ``capture_count`` as passed (clamped by the op); None: the capacity."""
    active: int | None = None
    """``state_update_active`` as passed; None: absent."""
    decay_per_key: bool = False
    has_initial_state: bool = True
    scale: float | None = None


def _attributes(layout: GdnLayout) -> dict[str, Any]:
    attrs: dict[str, Any] = {"update_rule": layout.update_rule, "state_update_capacity": layout.capacity}
    if layout.gate_activation != "none":
        attrs["gate_activation"] = layout.gate_activation
    if layout.beta_activation != "none":
        attrs["beta_activation"] = layout.beta_activation
    if layout.qk_l2_norm:
        attrs["qk_l2_norm"] = 1
    if layout.scale is not None:
        attrs["scale"] = layout.scale
    return attrs


def _unit_rows(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def build_gdn_case(shape: GdnShape, layout: GdnLayout, seed: int) -> Case:
    """The GatedDeltaNet case of ``shape`` and ``layout``, its values drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    f32, dtype = np.float32, np.dtype(layout.dtype)
    batch, hq, hv, dk, dv = len(shape.lengths), shape.q_heads, shape.v_heads, shape.d_k, shape.d_v
    tokens = sum(shape.lengths) if shape.ragged else batch * shape.lengths[0]
    lead: tuple[int, ...] = (batch, shape.lengths[0]) if shape.rank4 else (tokens,)
    q = rng.standard_normal((*lead, hq, dk))
    k = rng.standard_normal((*lead, hq, dk))
    if layout.update_rule in DELTA_RULES and not layout.qk_l2_norm:
        k = _unit_rows(k)
    v = rng.standard_normal((*lead, hv, dv))
    inputs: dict[str, np.ndarray] = {}
    if shape.packed:
        flat = [x.reshape(*lead, -1) for x in (q, k, v)]
        inputs["query"] = np.concatenate(flat, axis=-1).astype(dtype)
    else:
        inputs.update(query=q.astype(dtype), key=k.astype(dtype), value=v.astype(dtype))
    if shape.ragged:
        inputs["cu_seqlens"] = np.concatenate([[0], np.cumsum(shape.lengths)]).astype(np.int32)
    if layout.update_rule in GATED_RULES:
        per = (*lead, hv, dk) if layout.decay_per_key else (*lead, hv)
        raw = rng.standard_normal(per) if layout.gate_activation == "qwen" else -rng.uniform(0.01, 1.0, per)
        inputs["decay"] = raw.astype(f32)
    if layout.update_rule in DELTA_RULES:
        logits = layout.beta_activation == "sigmoid"
        inputs["beta"] = (rng.standard_normal((*lead, hv)) if logits else rng.uniform(0, 1, (*lead, hv))).astype(f32)
    if layout.has_initial_state or shape.packed or not (shape.ragged or shape.rank4):
        inputs["initial_state"] = (0.5 * rng.standard_normal((batch, hv, dv, dk))).astype(f32)
    if layout.gate_activation == "qwen":
        inputs["a_log"] = (0.5 * rng.standard_normal(hv)).astype(f32)
        inputs["dt_bias"] = (0.5 * rng.standard_normal(hv)).astype(f32)
    if layout.capacity:
        counts = layout.capture_counts or (layout.capacity,) * batch
        inputs["capture_count"] = np.array(counts, dtype=np.int32)
    if layout.active is not None:
        inputs["state_update_active"] = np.array([layout.active], dtype=np.int32)
    return Case(inputs=inputs, attrs=_attributes(layout), op=GATED_DELTA_NET, notes={"seed": seed})


@st.composite
def gdn_shapes(draw: st.DrawFn, limits: GdnLimits = DEFAULT_LIMITS) -> GdnShape:
    """Requests, heads and sizes; ragged requests may be empty (one request has a token at least)."""
    max_len, max_d = limits.max_len, limits.max_d
    batch = draw(st.integers(1, limits.max_batch))
    ragged = draw(st.booleans())
    if ragged:
        lengths = tuple(draw(st.lists(st.integers(0, max_len), min_size=batch, max_size=batch)
                             .filter(lambda ls: sum(ls) > 0)))
    else:
        lengths = (draw(st.integers(1, max_len)),) * batch
    return GdnShape(lengths=lengths, ragged=ragged, q_heads=draw(st.integers(1, limits.max_heads)),
                    group=draw(st.integers(1, limits.max_group)), d_k=draw(st.integers(limits.min_d, max_d)),
                    d_v=draw(st.integers(limits.min_d, max_d)), rank4=not ragged and draw(st.booleans()),
                    packed=draw(st.booleans()))


@st.composite
def gdn_layouts(draw: st.DrawFn, shape: GdnShape, *, capture: bool | None = None,
                dtypes: tuple[str, ...] = DTYPES) -> GdnLayout:
    """Rule, gates, capture plan and dtype for ``shape``; ``capture`` True forces ``C > 0`` with capture on."""
    rule = draw(st.sampled_from(UPDATE_RULES))
    capacity = 0 if capture is False else draw(st.integers(1 if capture else 0, MAX_CAPACITY))
    counts = tuple(draw(st.lists(st.integers(-1, capacity + 2), min_size=len(shape.lengths),
                                 max_size=len(shape.lengths)))) if capacity else None
    return GdnLayout(
        update_rule=rule, dtype=draw(st.sampled_from(dtypes)),
        gate_activation=draw(st.sampled_from(("none", "qwen"))) if rule in GATED_RULES else "none",
        beta_activation=draw(st.sampled_from(("none", "sigmoid"))) if rule in DELTA_RULES else "none",
        qk_l2_norm=draw(st.integers(0, 1)), capacity=capacity, capture_counts=counts,
        active=None if capture else draw(st.sampled_from((None, 0, 1))),
        decay_per_key=capacity == 0 and rule in GATED_RULES and draw(st.booleans()),
        has_initial_state=draw(st.booleans()),
        scale=draw(st.sampled_from((None, 0.5))))


@st.composite
def gdn_cases(draw: st.DrawFn, limits: GdnLimits = DEFAULT_LIMITS, *, capture: bool | None = None,
              dtypes: tuple[str, ...] | None = None) -> Case:
    """A valid GatedDeltaNet case under ``limits`` (``dtypes``, where given, narrows the limits' own)."""
    shape = draw(gdn_shapes(limits))
    chosen = tuple(d for d in limits.dtypes if d in dtypes) if dtypes is not None else limits.dtypes
    layout = draw(gdn_layouts(shape, capture=capture, dtypes=chosen or limits.dtypes[:1]))
    return build_gdn_case(shape, layout, draw(st.integers(0, 2**32 - 1)))


@st.composite
def aliased_cases(draw: st.DrawFn, limits: GdnLimits = DEFAULT_LIMITS) -> Case:
    """A valid case with an initial state, ``initial_state`` and ``final_state`` to be bound as one allocation (the
    schema allows it)."""
    shape = draw(gdn_shapes(limits))
    layout = replace(draw(gdn_layouts(shape, dtypes=limits.dtypes)), has_initial_state=True)
    return replace(build_gdn_case(shape, layout, draw(st.integers(0, 2**32 - 1))), aliased=True)


def capture_cases(limits: GdnLimits) -> st.SearchStrategy[Case]:
    """Float32 cases with capture on (``C >= 1``, active): the calls a decoder resumes from by replay."""
    return gdn_cases(limits, capture=True, dtypes=("float32",))

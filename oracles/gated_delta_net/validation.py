"""Input validation for GatedDeltaNet: every shape, type and attribute rule of docs/spec.md §8.

The same ``ValidationError`` as the other ops (``oracles.validation``): a broken rule names the input or
attribute, what was expected and what was received. ``validate`` checks the attributes, then each array on its
own, then how they fit together, and returns the call's ``GdnDims``. The capture counts are values, not shapes,
but they decide what the call writes, so ``GdnDims.captured`` holds them already clamped.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from oracles.validation import DELTA_RULES, GATED_RULES, UPDATE_RULES, ValidationError, check_array, check_int_attr

INPUT_NAMES = ("query", "key", "value", "cu_seqlens", "decay", "beta", "initial_state", "a_log", "dt_bias",
               "capture_count", "state_update_active")
"""The operator's inputs, in the order of the ONNX schema."""

GATE_ACTIVATIONS = ("none", "qwen")
BETA_ACTIVATIONS = ("none", "sigmoid")

MAX_CAPACITY = 8
"""Largest ``state_update_capacity`` the schema allows."""

FLOAT32_ONLY = (np.dtype(np.float32), np.dtype(np.float64))
"""The schema's ``TS`` inputs are float32; float64 is accepted so the oracle can be fed exact data."""


@dataclass(frozen=True)
class GdnDims:
    """The sizes, layout and capture plan of one valid GatedDeltaNet call, derived from its inputs."""

    batch: int
    total_tokens: int
    starts: tuple[int, ...]
    """Token index where each request begins (``cu_seqlens[:-1]``, or ``b * S`` when uniform)."""
    lengths: tuple[int, ...]
    """Tokens of each request."""
    q_heads: int
    """``H_q``, equal to the key heads ``H_k``."""
    v_heads: int
    d_k: int
    d_v: int
    rank: int
    """3: a token axis ``N``; 4: ``(B, S)`` (packed QKV: 2 and 3)."""
    packed: bool
    """``key`` and ``value`` absent: ``query`` holds q, k and v along its last axis."""
    update_rule: str
    scale: float
    """The effective scale (``1 / sqrt(d_k)`` for an attribute of 0)."""
    gate_activation: str
    beta_activation: str
    qk_l2_norm: bool
    capacity: int
    decay_per_key: bool | None
    """True for a ``(..., H_v, d_k)`` decay, False for ``(..., H_v)``, None when absent."""
    has_initial_state: bool
    dtype: np.dtype
    capture_active: bool
    """False when ``state_update_active`` is 0: nothing is captured and the capsule is zeros."""
    captured: tuple[int, ...]
    """Entries each request captures: ``clamp(capture_count[b], 0, min(C, S_b))``; zeros when inactive."""

    @property
    def group(self) -> int:
        """Value heads per query/key head: value head ``h`` reads query and key head ``h // group``."""
        return self.v_heads // self.q_heads

    @property
    def state_shape(self) -> tuple[int, int, int, int]:
        """``initial_state`` and ``final_state``: V-major ``(B, H_v, d_v, d_k)``."""
        return (self.batch, self.v_heads, self.d_v, self.d_k)

    @property
    def row_width(self) -> int:
        """Floats of one request's capsule row: ``C * (H_v + H_k d_k + H_v d_v)``."""
        return self.capacity * (self.v_heads + self.q_heads * self.d_k + self.v_heads * self.d_v)

    @property
    def token_shape(self) -> tuple[int, ...]:
        """The leading axes of the token-major tensors: ``(N,)`` or ``(B, S)``."""
        lead = 2 if self.packed else 3
        return (self.total_tokens,) if self.rank == lead else (self.batch, self.total_tokens // self.batch)

    @property
    def output_shape(self) -> tuple[int, ...]:
        return (*self.token_shape, self.v_heads, self.d_v)

    @property
    def state_update_shape(self) -> tuple[int, int]:
        return (self.batch, self.row_width)


def _check_ts(name: str, x: Any, shape: tuple[int, ...]) -> np.ndarray:
    """A float32 input (``TS``) of exactly ``shape``."""
    if not isinstance(x, np.ndarray):
        raise ValidationError(name, "a numpy.ndarray", type(x).__name__)
    if x.dtype not in FLOAT32_ONLY:
        raise ValidationError(name, "dtype float32 (the state and gate type, whatever query's type)",
                              f"dtype {x.dtype}")
    if x.shape != shape:
        raise ValidationError(name, f"shape {shape}", f"shape {x.shape}")
    return x


def _check_int32(name: str, x: Any, shape: tuple[int, ...]) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        raise ValidationError(name, "a numpy.ndarray", type(x).__name__)
    if x.dtype != np.int32:
        raise ValidationError(name, "dtype int32", f"dtype {x.dtype}")
    if x.shape != shape:
        raise ValidationError(name, f"shape {shape}", f"shape {x.shape}")
    return x


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValidationError(name, f"one of {', '.join(choices)}", repr(value))
    return str(value)


def _heads(query: np.ndarray, key: Any, value: Any, initial_state: Any, lead: int) -> tuple[int, int, int, int, bool]:
    """``(H_q, H_v, d_k, d_v, packed)`` from the q/k/v shapes, or from ``initial_state`` for packed QKV."""
    if key is None and value is None:
        if not isinstance(initial_state, np.ndarray) or initial_state.ndim != 4:
            raise ValidationError("initial_state", "a (B, H_v, d_v, d_k) input (packed QKV takes its heads from it)",
                                  "None" if initial_state is None else f"shape {np.shape(initial_state)}")
        _, h_v, d_v, d_k = initial_state.shape
        if min(h_v, d_v, d_k) < 1:
            raise ValidationError("initial_state", "H_v, d_v, d_k >= 1", f"shape {initial_state.shape}")
        width = query.shape[lead]
        qk = width - h_v * d_v
        if qk < 2 * d_k or qk % (2 * d_k):
            raise ValidationError("query.shape[-1]", f"2 * H_q * {d_k} + {h_v} * {d_v} with H_q >= 1", width)
        return qk // (2 * d_k), h_v, d_k, d_v, True
    if key is None or value is None:
        missing = "key" if key is None else "value"
        raise ValidationError(missing, "an input (key and value are both present, or both absent for packed QKV)",
                              "None")
    for name, x in (("key", key), ("value", value)):
        x = check_array(name, x, query.ndim)
        if x.dtype != query.dtype:
            raise ValidationError(name, f"the dtype of query ({query.dtype})", f"dtype {x.dtype}")
        if x.shape[:lead] != query.shape[:lead]:
            raise ValidationError(name, f"token axes {query.shape[:lead]} as in query", f"shape {x.shape}")
    h_q, d_k = query.shape[lead:]
    h_k, d_k_key = key.shape[lead:]
    h_v, d_v = value.shape[lead:]
    if h_q < 1 or d_k < 1:
        raise ValidationError("query", "H_q >= 1 and d_k >= 1", f"shape {query.shape}")
    if h_k != h_q or d_k_key != d_k:
        raise ValidationError("key", f"heads and size ({h_q}, {d_k}) as in query", f"shape {key.shape}")
    if h_v < 1 or d_v < 1:
        raise ValidationError("value", "H_v >= 1 and d_v >= 1", f"shape {value.shape}")
    return h_q, h_v, d_k, d_v, False


def _requests(query: np.ndarray, lead: int, cu_seqlens: Any, initial_state: Any,
              allow_empty: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(starts, lengths)`` of the requests: ragged from ``cu_seqlens``, else uniform."""
    tokens = int(np.prod(query.shape[:lead]))
    if tokens < 1 and not allow_empty:
        raise ValidationError("query", "N >= 1 tokens (an empty call is outside the contract)", f"shape {query.shape}")
    if cu_seqlens is not None:
        if lead != 1:
            raise ValidationError("cu_seqlens", "rank-3 inputs (one token axis; ragged packing has no (B, S) spelling)",
                                  f"query of shape {query.shape}")
        if not isinstance(cu_seqlens, np.ndarray) or cu_seqlens.dtype != np.int32 or cu_seqlens.ndim != 1 \
                or cu_seqlens.shape[0] < 2:
            raise ValidationError("cu_seqlens", "an int32 tensor of shape (B + 1,) with B >= 1",
                                  f"{getattr(cu_seqlens, 'dtype', type(cu_seqlens).__name__)} "
                                  f"shape {np.shape(cu_seqlens)}")
        bounds = [int(x) for x in cu_seqlens]
        if bounds[0] != 0 or bounds[-1] != tokens or any(b < a for a, b in itertools.pairwise(bounds)):
            raise ValidationError("cu_seqlens", f"non-decreasing prefix sums from 0 to N = {tokens}", bounds)
        return tuple(bounds[:-1]), tuple(b - a for a, b in itertools.pairwise(bounds))
    if lead == 2:
        batch, seq = query.shape[:2]
        if batch < 1:
            raise ValidationError("query", "batch >= 1", f"shape {query.shape}")
    else:
        if not isinstance(initial_state, np.ndarray) or initial_state.ndim != 4:
            raise ValidationError("initial_state", "an input (rank-3 uniform packing takes the batch size from it)",
                                  "None" if initial_state is None else f"shape {np.shape(initial_state)}")
        batch = initial_state.shape[0]
        if batch < 1 or tokens % batch:
            raise ValidationError("initial_state.shape[0]", f"a batch size B >= 1 dividing N = {tokens}", batch)
        seq = tokens // batch
    return tuple(b * seq for b in range(batch)), (seq,) * batch


def validate(
    query: Any,
    key: Any = None,
    value: Any = None,
    cu_seqlens: Any = None,
    decay: Any = None,
    beta: Any = None,
    initial_state: Any = None,
    a_log: Any = None,
    dt_bias: Any = None,
    capture_count: Any = None,
    state_update_active: Any = None,
    *,
    update_rule: Any = "gated_delta",
    scale: Any = 0.0,
    chunk_size: Any = None,
    gate_activation: Any = "none",
    beta_activation: Any = "none",
    qk_l2_norm: Any = 0,
    state_update_capacity: Any = 0,
    allow_empty_sequence: bool = False,
) -> GdnDims:
    """Check one GatedDeltaNet call against the contract (docs/spec.md §8) and return its sizes.

    Raises ``ValidationError`` on the first broken rule. An empty call (``N = 0``) is refused unless
    ``allow_empty_sequence``.
    """
    rule = _check_choice("update_rule", update_rule, UPDATE_RULES)
    gate = _check_choice("gate_activation", gate_activation, GATE_ACTIVATIONS)
    beta_act = _check_choice("beta_activation", beta_activation, BETA_ACTIVATIONS)
    l2 = check_int_attr("qk_l2_norm", qk_l2_norm, 0, 1)
    capacity = check_int_attr("state_update_capacity", state_update_capacity, 0, MAX_CAPACITY)
    if chunk_size is not None:  # a tuning hint: any integer
        check_int_attr("chunk_size", chunk_size, -(2**63), None)
    if isinstance(scale, bool) or not isinstance(scale, int | float | np.floating | np.integer) \
            or not np.isfinite(scale):
        raise ValidationError("scale", "a finite float", repr(scale))

    packed = key is None and value is None
    query = check_array("query", query, None)
    if query.ndim not in ((2, 3) if packed else (3, 4)):
        raise ValidationError("query", "rank 2 or 3 (packed QKV)" if packed else "rank 3 or 4",
                              f"rank {query.ndim} with shape {query.shape}")
    lead = query.ndim - (1 if packed else 2)  # the token axes: N, or (B, S)
    h_q, h_v, d_k, d_v, packed = _heads(query, key, value, initial_state, lead)
    if h_v % h_q:
        raise ValidationError("value heads H_v", f"a multiple of the query/key heads H_q = {h_q}", h_v)
    starts, lengths = _requests(query, lead, cu_seqlens, initial_state, allow_empty_sequence)
    batch, tokens = len(starts), int(np.prod(query.shape[:lead]))
    token_axes = query.shape[:lead]

    decay_per_key = None
    if decay is not None:
        if rule not in GATED_RULES:
            raise ValidationError("decay", f"absent (update_rule {rule!r} has no decay)", f"shape {np.shape(decay)}")
        per_head, per_key = (*token_axes, h_v), (*token_axes, h_v, d_k)
        decay = _check_ts("decay", decay, per_key if np.shape(decay) == per_key else per_head)
        decay_per_key = decay.shape == per_key
        if decay_per_key and capacity > 0:
            raise ValidationError("decay", f"per-head shape {per_head} (a per-key decay cannot be captured with "
                                  f"state_update_capacity {capacity})", f"shape {decay.shape}")
    elif rule in GATED_RULES:
        raise ValidationError("decay", f"an input (update_rule {rule!r} requires it)", "None")
    if beta is not None:
        if rule not in DELTA_RULES:
            raise ValidationError("beta", f"absent (update_rule {rule!r} has no beta)", f"shape {np.shape(beta)}")
        _check_ts("beta", beta, (*token_axes, h_v))
    elif rule in DELTA_RULES:
        raise ValidationError("beta", f"an input (update_rule {rule!r} requires it)", "None")
    for name, x in (("a_log", a_log), ("dt_bias", dt_bias)):
        if gate == "qwen":
            if x is None:
                raise ValidationError(name, "an input (gate_activation 'qwen' requires it)", "None")
            _check_ts(name, x, (h_v,))
        elif x is not None:
            raise ValidationError(name, "absent (it requires gate_activation 'qwen')", f"shape {np.shape(x)}")
    if initial_state is not None:
        _check_ts("initial_state", initial_state, (batch, h_v, d_v, d_k))

    if capacity == 0 and capture_count is not None:
        raise ValidationError("capture_count", "absent (state_update_capacity is 0)",
                              f"shape {np.shape(capture_count)}")
    if capacity > 0 and capture_count is None:
        raise ValidationError("capture_count", f"an input (state_update_capacity {capacity} requires it)", "None")
    active = True
    if state_update_active is not None:
        active = int(_check_int32("state_update_active", state_update_active, (1,))[0]) != 0
    captured = (0,) * batch
    if capacity > 0:
        counts = _check_int32("capture_count", capture_count, (batch,))
        if active:
            captured = tuple(int(np.clip(c, 0, min(capacity, n))) for c, n in zip(counts, lengths, strict=True))

    return GdnDims(
        batch=batch, total_tokens=tokens, starts=starts, lengths=lengths, q_heads=h_q, v_heads=h_v, d_k=d_k,
        d_v=d_v, rank=query.ndim, packed=packed, update_rule=rule,
        scale=float(scale) if scale != 0 else 1.0 / float(np.sqrt(d_k)), gate_activation=gate,
        beta_activation=beta_act, qk_l2_norm=bool(l2), capacity=capacity, decay_per_key=decay_per_key,
        has_initial_state=initial_state is not None, dtype=query.dtype, capture_active=active, captured=captured,
    )

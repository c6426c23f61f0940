"""Input validation for LinearAttention: every shape and attribute rule of the contract.

One module, one exception type, one set of messages, shared by the oracle, the WGSL kernel's
Python front end and the fuzzing engine. Every message names the input (or attribute), what was
expected and what was received, so a rejected case explains itself without a debugger.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

UPDATE_RULES = ("linear", "gated", "delta", "gated_delta")
"""The four recurrences of the operator, in the order of the schema."""

GATED_RULES = frozenset({"gated", "gated_delta"})
"""Rules that decay the state each token, and so require ``decay``."""

DELTA_RULES = frozenset({"delta", "gated_delta"})
"""Rules that retrieve before updating (delta rule), and so require ``beta``."""

MAX_STATE_WINDOW = 8
"""Largest ``state_window`` the schema allows."""

SUPPORTED_DTYPES = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.float64))
"""float32 and float16 are the operator's types; float64 is accepted so the oracle can be fed exact data."""

INPUT_NAMES = ("query", "key", "value", "past_state", "decay", "beta")
"""The operator's inputs, in the order of the ONNX schema."""


class ValidationError(ValueError):
    """An input or attribute breaks a rule of the LinearAttention contract.

    The broken input travels as data (``input``, ``expected``, ``received``), so a caller that needs
    to know which input was rejected reads it instead of parsing the message; the message says the
    same in words: ``"{input}: expected {expected}, received {received}"``.
    """

    input: str
    """The input or attribute that breaks the rule (``"decay"``, ``"kv_num_heads"``, ``"query.shape[2]"``)."""
    expected: str
    """What the rule demands, in words."""
    received: Any
    """What the call had instead."""

    def __init__(self, input: str, expected: str, received: Any) -> None:
        super().__init__(f"{input}: expected {expected}, received {received}")
        self.input = input
        self.expected = expected
        self.received = received

    def __reduce__(self) -> tuple[type[ValidationError], tuple[str, str, Any]]:
        # pickling rebuilds from ``args`` by default, which holds only the message
        return type(self), (self.input, self.expected, self.received)


@dataclass(frozen=True)
class Dims:
    """The sizes and layouts of one valid LinearAttention call, derived from its inputs."""

    batch: int
    seq_len: int
    q_heads: int
    kv_heads: int
    key_heads: int
    d_k: int
    d_v: int
    state_window: int
    update_rule: str
    scale: float
    dtype: np.dtype
    has_past: bool
    decay_per_row: bool | None
    """True for a ``(B, T, H_kv*d_k)`` decay, False for ``(B, T, H_kv)``, None when absent."""
    beta_shared: bool | None
    """True for a ``(B, T, 1)`` beta, False for ``(B, T, H_kv)``, None when absent."""

    @property
    def out_heads(self) -> int:
        return max(self.q_heads, self.kv_heads)

    @property
    def state_shape(self) -> tuple[int, ...]:
        """Shape of ``past_state`` and ``present_state``."""
        slot = (self.batch, self.kv_heads, self.d_k, self.d_v)
        return (self.state_window, *slot) if self.state_window else slot

    @property
    def output_shape(self) -> tuple[int, int, int]:
        return (self.batch, self.seq_len, self.out_heads * self.d_v)


def check_array(name: str, x: Any, rank: int | None) -> np.ndarray:
    """``x`` if it is a NumPy array of a supported float dtype and, unless ``rank`` is None, of that rank."""
    if not isinstance(x, np.ndarray):
        raise ValidationError(name, "a numpy.ndarray", type(x).__name__)
    if x.dtype not in SUPPORTED_DTYPES:
        raise ValidationError(name, "dtype float32 or float16", f"dtype {x.dtype}")
    if rank is not None and x.ndim != rank:
        raise ValidationError(name, f"rank {rank}", f"rank {x.ndim} with shape {x.shape}")
    return x


def check_int_attr(name: str, value: Any, low: int, high: int | None) -> int:
    """``value`` as an int if it is an integer (not a bool) in ``[low, high]`` (``high`` None: no upper bound)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValidationError(name, "an integer", repr(value))
    value = int(value)
    if value < low or (high is not None and value > high):
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise ValidationError(name, bound, value)
    return value


def _check_divides(name: str, total: int, divisor: int, what: str) -> int:
    if divisor <= 0 or total % divisor:
        raise ValidationError(name, f"a multiple of {what} = {divisor}", total)
    return total // divisor


def validate(
    query: Any,
    key: Any,
    value: Any,
    past_state: Any = None,
    decay: Any = None,
    beta: Any = None,
    *,
    q_num_heads: Any,
    kv_num_heads: Any,
    update_rule: Any = "gated_delta",
    scale: Any = 0.0,
    state_window: Any = 0,
    chunk_size: Any = None,
    allow_empty_sequence: bool = False,
) -> Dims:
    """Check one LinearAttention call against the contract and return its sizes.

    Raises ``ValidationError`` on the first broken rule. ``T = 0`` is outside the contract and is
    rejected unless ``allow_empty_sequence`` (a backend that passes the state through may use it).
    """
    if update_rule not in UPDATE_RULES:
        raise ValidationError("update_rule", f"one of {', '.join(UPDATE_RULES)}", repr(update_rule))
    window = check_int_attr("state_window", state_window, 0, MAX_STATE_WINDOW)
    if chunk_size is not None:
        # a tuning hint that must not change results: any integer is accepted, as ORT accepts it
        check_int_attr("chunk_size", chunk_size, -(2**63), None)
    h_q = check_int_attr("q_num_heads", q_num_heads, 1, None)
    h_kv = check_int_attr("kv_num_heads", kv_num_heads, 1, None)
    if isinstance(scale, bool) or not isinstance(scale, int | float | np.floating | np.integer):
        raise ValidationError("scale", "a float", repr(scale))
    if not np.isfinite(scale):
        raise ValidationError("scale", "a finite float", scale)

    query = check_array("query", query, 3)
    key = check_array("key", key, 3)
    value = check_array("value", value, 3)
    dtype = query.dtype
    provided = {"key": key, "value": value, "past_state": past_state, "decay": decay, "beta": beta}
    for name, x in provided.items():
        if isinstance(x, np.ndarray) and x.dtype != dtype:
            raise ValidationError(name, f"the dtype of query ({dtype})", f"dtype {x.dtype}")

    batch, seq_len, q_hidden = query.shape
    for name, x in (("key", key), ("value", value)):
        if x.shape[:2] != (batch, seq_len):
            raise ValidationError(name, f"(batch, sequence) = {(batch, seq_len)} as in query", f"shape {x.shape}")
    if batch < 1:
        raise ValidationError("query", "batch >= 1", f"shape {query.shape}")
    if seq_len < 1 and not allow_empty_sequence:
        raise ValidationError("query", "sequence length T >= 1 (T = 0 is outside the contract)", f"shape {query.shape}")

    if h_q >= h_kv:
        _check_divides("q_num_heads", h_q, h_kv, "kv_num_heads")
    else:
        _check_divides("kv_num_heads", h_kv, h_q, "q_num_heads")
    d_k = _check_divides("query.shape[2]", q_hidden, h_q, "q_num_heads")
    if d_k < 1:
        raise ValidationError("query.shape[2]", "q_num_heads * d_k with d_k >= 1", q_hidden)
    n_k = _check_divides("key.shape[2]", key.shape[2], d_k, "d_k")
    if n_k < 1:
        raise ValidationError("key.shape[2]", f"n_k * d_k with n_k >= 1 and d_k = {d_k}", key.shape[2])
    _check_divides("kv_num_heads", h_kv, n_k, "the number of key heads n_k")
    d_v = _check_divides("value.shape[2]", value.shape[2], h_kv, "kv_num_heads")
    if d_v < 1:
        raise ValidationError("value.shape[2]", "kv_num_heads * d_v with d_v >= 1", value.shape[2])

    decay_per_row = None
    if decay is not None:
        decay = check_array("decay", decay, 3)
        if decay.shape[:2] != (batch, seq_len) or decay.shape[2] not in (h_kv, h_kv * d_k):
            raise ValidationError("decay", f"shape {(batch, seq_len, h_kv)} or {(batch, seq_len, h_kv * d_k)}",
                                  f"shape {decay.shape}")
        decay_per_row = decay.shape[2] == h_kv * d_k and d_k != 1
    elif update_rule in GATED_RULES:
        raise ValidationError("decay", f"an input (update_rule {update_rule!r} requires it)", "None")

    beta_shared = None
    if beta is not None:
        beta = check_array("beta", beta, 3)
        if beta.shape[:2] != (batch, seq_len) or beta.shape[2] not in (h_kv, 1):
            raise ValidationError("beta", f"shape {(batch, seq_len, h_kv)} or {(batch, seq_len, 1)}",
                                  f"shape {beta.shape}")
        beta_shared = beta.shape[2] == 1 and h_kv != 1
    elif update_rule in DELTA_RULES:
        raise ValidationError("beta", f"an input (update_rule {update_rule!r} requires it)", "None")

    dims = Dims(
        batch=batch, seq_len=seq_len, q_heads=h_q, kv_heads=h_kv, key_heads=n_k, d_k=d_k, d_v=d_v,
        state_window=window, update_rule=update_rule,
        scale=float(scale) if scale != 0 else 1.0 / float(np.sqrt(d_k)),
        dtype=dtype, has_past=past_state is not None,
        decay_per_row=decay_per_row, beta_shared=beta_shared,
    )
    if past_state is not None:
        past_state = check_array("past_state", past_state, None)
        if past_state.shape != dims.state_shape:
            layout = "(W, B, H_kv, d_k, d_v)" if window else "(B, H_kv, d_k, d_v)"
            raise ValidationError("past_state", f"shape {dims.state_shape} = {layout} for state_window {window}",
                                  f"shape {past_state.shape}")
    return dims

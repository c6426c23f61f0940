"""The float64 reference of LinearAttention: the contract of docs/spec.md §1-2 written as code.

The loop over tokens is the definition of the operator and stays a loop; everything else (batch,
heads, rows, columns) is vectorised with NumPy so the oracle stays fast enough for fuzzing.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

import numpy as np

from .validation import DELTA_RULES, GATED_RULES, Dims, validate


def _per_kv_head(dims: Dims, key: np.ndarray, decay: np.ndarray | None, beta: np.ndarray | None):
    """Reshape the key, decay and beta to one entry per kv head: ``(B, T, H_kv, ...)``."""
    b, t, h = dims.batch, dims.seq_len, dims.kv_heads
    k = key.reshape(b, t, dims.key_heads, dims.d_k)
    # kv head h reads key head h // (H_kv / n_k)
    k = np.repeat(k, h // dims.key_heads, axis=2)
    g = None
    if decay is not None:
        g = decay.reshape(b, t, h, -1)  # (..., 1) per head or (..., d_k) per key row
        g = np.broadcast_to(g, (b, t, h, dims.d_k))
    bt = None
    if beta is not None:
        bt = np.broadcast_to(beta, (b, t, h))
    return k, g, bt


def _readout(dims: Dims, state: np.ndarray, q_t: np.ndarray) -> np.ndarray:
    """``o = scale * S^T q`` for every output head of one token: returns ``(B, H_out, d_v)``."""
    if dims.q_heads >= dims.kv_heads:
        # standard GQA: query head i reads kv state i // (H_q / H_kv)
        s = np.repeat(state, dims.q_heads // dims.kv_heads, axis=1)
        q = q_t
    else:
        # inverse GQA: kv head h is read by query head h // (H_kv / H_q)
        s = state
        q = np.repeat(q_t, dims.kv_heads // dims.q_heads, axis=1)
    return dims.scale * np.einsum("bhkv,bhk->bhv", s, q)


def run_recurrence(
    dims: Dims,
    query: np.ndarray,
    key: np.ndarray,
    value: np.ndarray,
    initial_state: np.ndarray,
    decay: np.ndarray | None,
    beta: np.ndarray | None,
    *,
    keep: int | None = None,
    each: Callable[[np.ndarray], None] | None = None,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Run the recurrence token by token in float64.

    Returns the output ``(B, T, H_out*d_v)`` and the list of the states after each of the last ``keep``
    tokens (every token's by default), each ``(B, H_kv, d_k, d_v)``: all ``T`` of them take ``T`` slots of
    memory, gigabytes for a long call of large heads. ``each(state)`` sees the state after every token.
    """
    f64 = np.float64
    b, t = dims.batch, dims.seq_len
    q = query.astype(f64).reshape(b, t, dims.q_heads, dims.d_k)
    v = value.astype(f64).reshape(b, t, dims.kv_heads, dims.d_v)
    k, g, bt = _per_kv_head(
        dims,
        key.astype(f64),
        None if decay is None else decay.astype(f64),
        None if beta is None else beta.astype(f64),
    )
    state = initial_state.astype(f64, copy=True)
    outputs = np.empty((b, t, dims.out_heads, dims.d_v), dtype=f64)
    states: deque[np.ndarray] = deque(maxlen=keep)
    for i in range(t):
        if dims.update_rule in GATED_RULES:
            state = np.exp(g[:, i])[..., None] * state
        k_i = k[:, i][..., None]  # (B, H_kv, d_k, 1)
        if dims.update_rule in DELTA_RULES:
            retrieved = np.einsum("bhkv,bhk->bhv", state, k[:, i])
            state = state + bt[:, i][..., None, None] * k_i * (v[:, i] - retrieved)[:, :, None, :]
        else:
            state = state + k_i * v[:, i][:, :, None, :]
        outputs[:, i] = _readout(dims, state, q[:, i])
        states.append(state)
        if each is not None:
            each(state)
    return outputs.reshape(dims.output_shape), list(states)


def window_size(dims: Dims) -> int:
    """How many of the last states ``window_from_states`` reads: ``W``, or the final one (``W = 0``)."""
    return max(dims.state_window, 1)


def window_from_states(dims: Dims, states: Sequence[np.ndarray]) -> np.ndarray:
    """Arrange the states after the last tokens (every token's, or at least the last ``window_size``) into
    ``present_state``: the final state, or the right-aligned window.

    Slot ``j`` holds the state after ``T - W + j + 1`` tokens; slots that represent no token of
    this call (``T < W``) are exact zeros.
    """
    if dims.state_window == 0:
        return states[-1]
    window = dims.state_window
    before = dims.seq_len - len(states)  # tokens whose states were not kept
    present = np.zeros(dims.state_shape, dtype=np.float64)
    for j in range(window):
        tokens = dims.seq_len - window + j + 1
        if tokens >= 1:
            present[j] = states[tokens - 1 - before]
    return present


def seed_state(dims: Dims, past_state: np.ndarray | None) -> np.ndarray:
    """The state that seeds the recurrence: ``past_state[W-1]`` (or the 4-D state), zeros if absent."""
    slot_shape = (dims.batch, dims.kv_heads, dims.d_k, dims.d_v)
    if past_state is None:
        return np.zeros(slot_shape, dtype=np.float64)
    seed = past_state[dims.state_window - 1] if dims.state_window else past_state
    return seed.astype(np.float64)


def linear_attention(
    query: np.ndarray,
    key: np.ndarray,
    value: np.ndarray,
    past_state: np.ndarray | None = None,
    decay: np.ndarray | None = None,
    beta: np.ndarray | None = None,
    *,
    q_num_heads: int,
    kv_num_heads: int,
    update_rule: str = "gated_delta",
    scale: float = 0.0,
    state_window: int = 0,
    chunk_size: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The ONNX ``com.microsoft::LinearAttention`` operator, in float64.

    Same input and attribute names as the op. Returns ``(output, present_state)`` as float64
    arrays; ``present_state`` has the shape of ``past_state`` for the given ``state_window``.
    ``chunk_size`` is a tuning hint of the schema: checked to be an integer, then ignored.
    Raises ``ValidationError`` for any input the contract forbids.
    """
    dims = validate(
        query, key, value, past_state, decay, beta,
        q_num_heads=q_num_heads, kv_num_heads=kv_num_heads, update_rule=update_rule,
        scale=scale, state_window=state_window, chunk_size=chunk_size,
    )
    output, states = run_recurrence(dims, query, key, value, seed_state(dims, past_state), decay, beta,
                                    keep=window_size(dims))
    return output, window_from_states(dims, states)

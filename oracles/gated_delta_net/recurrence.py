"""The float64 reference of GatedDeltaNet: the token loop of docs/spec.md §8, with the transitions it captures.

Written for clarity: one request at a time, one token at a time, every value head at once. The gates are
computed here in float64 from the raw inputs (``qwen``, ``sigmoid``), the query and key normalised when asked,
and each token's transition (decay factor, key, delta) is the one step 3 applies, so a replay of the recorded
transitions (``oracles.gated_delta_net.replay``) rebuilds the state exactly as the loop built it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from oracles.validation import DELTA_RULES, GATED_RULES

from .capsule import pack_state_update
from .validation import GdnDims, validate

L2_EPSILON = 1e-12
"""Added to the squared norm before the square root, as ORT's WebGPU kernel does."""


@dataclass(frozen=True)
class Transition:
    """One token's update of one request's state: ``S <- decay * S + delta key^T`` per value head."""

    decay: np.ndarray
    """``(H_v,)``: the factor ``exp(g)`` (1 for the rules without decay); ``(H_v, d_k)`` for a per-key decay,
    which is never captured."""
    key: np.ndarray
    """``(H_k, d_k)``: the key heads as the recurrence used them (normalised under ``qk_l2_norm``)."""
    delta: np.ndarray
    """``(H_v, d_v)``: ``b * (v - r)``."""


def split_qkv(dims: GdnDims, query: np.ndarray, key: np.ndarray | None,
              value: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Query, key and value as float64 ``(N, H, d)``, from separate tensors or packed QKV."""
    n, hq, dk = dims.total_tokens, dims.q_heads, dims.d_k
    if dims.packed:
        flat = query.astype(np.float64).reshape(n, -1)
        q, k, v = np.split(flat, [hq * dk, 2 * hq * dk], axis=1)
        return q.reshape(n, hq, dk), k.reshape(n, hq, dk), v.reshape(n, dims.v_heads, dims.d_v)
    assert key is not None and value is not None
    return (query.astype(np.float64).reshape(n, hq, dk), key.astype(np.float64).reshape(n, hq, dk),
            value.astype(np.float64).reshape(n, dims.v_heads, dims.d_v))


def softplus(x: np.ndarray) -> np.ndarray:
    """``log(1 + exp(x))`` without overflow."""
    return np.logaddexp(0.0, x)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-x))`` without overflow."""
    return np.exp(-np.logaddexp(0.0, -x))


def log_decay(dims: GdnDims, decay: np.ndarray | None, a_log: np.ndarray | None,
              dt_bias: np.ndarray | None) -> np.ndarray | None:
    """The effective log-space decay ``g``, ``(N, H_v)`` or ``(N, H_v, d_k)``; None for a rule without decay."""
    if dims.update_rule not in GATED_RULES or decay is None:
        return None
    g = decay.astype(np.float64).reshape(dims.total_tokens, dims.v_heads, *((dims.d_k,) if dims.decay_per_key else ()))
    if dims.gate_activation == "qwen":
        assert a_log is not None and dt_bias is not None
        shape = (dims.v_heads,) + (1,) * (g.ndim - 2)
        bias = dt_bias.astype(np.float64).reshape(shape)
        g = -np.exp(a_log.astype(np.float64).reshape(shape)) * softplus(g + bias)
    return g


def update_rate(dims: GdnDims, beta: np.ndarray | None) -> np.ndarray:
    """The effective rate ``b``, ``(N, H_v)``: ones for a rule without the delta step."""
    if dims.update_rule not in DELTA_RULES or beta is None:
        return np.ones((dims.total_tokens, dims.v_heads))
    b = beta.astype(np.float64).reshape(dims.total_tokens, dims.v_heads)
    return sigmoid(b) if dims.beta_activation == "sigmoid" else b


def l2_normalised(x: np.ndarray) -> np.ndarray:
    """Each head vector (last axis) divided by ``sqrt(sum x^2 + L2_EPSILON)``."""
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + L2_EPSILON)


def run_request(dims: GdnDims, q: np.ndarray, k: np.ndarray, v: np.ndarray, g: np.ndarray | None,
                b: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[Transition]]:
    """One request's tokens in order from ``state`` ``(H_v, d_v, d_k)``.

    Returns its output ``(S, H_v, d_v)``, its final state and the transition of every token.
    """
    heads = np.arange(dims.v_heads) // dims.group  # value head h reads query/key head h // group
    outputs = np.empty((len(q), dims.v_heads, dims.d_v))
    transitions = []
    for t in range(len(q)):
        q_t, k_t = (l2_normalised(q[t]), l2_normalised(k[t])) if dims.qk_l2_norm else (q[t], k[t])
        kk, qq = k_t[heads], q_t[heads]  # (H_v, d_k)
        factor = np.ones(dims.v_heads) if g is None else np.exp(g[t])  # (H_v,) or (H_v, d_k)
        state = state * (factor[:, None, :] if factor.ndim == 2 else factor[:, None, None])
        retrieved = np.einsum("hvi,hi->hv", state, kk) if dims.update_rule in DELTA_RULES else 0.0
        delta = b[t][:, None] * (v[t] - retrieved)
        state = state + delta[:, :, None] * kk[:, None, :]
        outputs[t] = dims.scale * np.einsum("hvi,hi->hv", state, qq)
        transitions.append(Transition(decay=factor, key=k_t, delta=delta))
    return outputs, state, transitions


def run(dims: GdnDims, inputs: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, list[list[Transition]]]:
    """Every request of a validated call: ``(output (N, H_v, d_v), final_state, transitions per request)``."""
    q, k, v = split_qkv(dims, inputs["query"], inputs.get("key"), inputs.get("value"))
    g = log_decay(dims, inputs.get("decay"), inputs.get("a_log"), inputs.get("dt_bias"))
    b = update_rate(dims, inputs.get("beta"))
    initial = inputs.get("initial_state")
    states = np.zeros(dims.state_shape) if initial is None else initial.astype(np.float64)
    output = np.empty((dims.total_tokens, dims.v_heads, dims.d_v))
    final = np.empty(dims.state_shape)
    transitions = []
    for r, (start, length) in enumerate(zip(dims.starts, dims.lengths, strict=True)):
        span = slice(start, start + length)
        output[span], final[r], steps = run_request(dims, q[span], k[span], v[span],
                                                    None if g is None else g[span], b[span], states[r])
        transitions.append(steps)
    return output, final, transitions


def gated_delta_net(
    query: np.ndarray,
    key: np.ndarray | None = None,
    value: np.ndarray | None = None,
    cu_seqlens: np.ndarray | None = None,
    decay: np.ndarray | None = None,
    beta: np.ndarray | None = None,
    initial_state: np.ndarray | None = None,
    a_log: np.ndarray | None = None,
    dt_bias: np.ndarray | None = None,
    capture_count: np.ndarray | None = None,
    state_update_active: np.ndarray | None = None,
    **attributes: Any,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ONNX ``com.microsoft::GatedDeltaNet`` operator, in float64.

    Same input and attribute names as the op (``attributes``: ``update_rule``, ``scale``, ``chunk_size``,
    ``gate_activation``, ``beta_activation``, ``qk_l2_norm``, ``state_update_capacity``). Returns
    ``(output, final_state, state_update)`` as float64 arrays in the op's shapes; the capsule's entries past
    each request's captured prefix are NaN (unspecified by the contract). Raises ``ValidationError`` for any
    input the contract forbids.
    """
    inputs: dict[str, Any] = {
        "query": query, "key": key, "value": value, "cu_seqlens": cu_seqlens, "decay": decay, "beta": beta,
        "initial_state": initial_state, "a_log": a_log, "dt_bias": dt_bias, "capture_count": capture_count,
        "state_update_active": state_update_active}
    dims = validate(**inputs, **attributes)
    output, final, transitions = run(dims, inputs)
    return output.reshape(dims.output_shape), final, pack_state_update(dims, transitions)

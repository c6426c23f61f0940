"""A float64 NumPy reference of the recurrences of flash-linear-attention (FLA), written in FLA's conventions,
and FLA's own closeness criterion; independent of ``oracles/`` so that the two can be held against each other.

FLA's conventions (from its ``fla/ops/*/naive.py`` references and ``tests/ops``; restated, not copied):

- layout ``[B, T, heads, dim]``: ``q``, ``k`` of ``H`` heads, ``v`` of ``HV`` heads (``HV`` a multiple of ``H``;
  value head ``j`` reads query and key head ``j // (HV / H)``); the output has ``HV`` heads;
- a gate in log space: ``g`` ``[B, T, HV]`` scales the whole state of a head by ``exp(g)``, ``gk`` ``[B, T, HV, K]``
  scales key row ``i`` by ``exp(gk_i)``, before the token's update;
- the delta rules: ``u = beta * (v - S^T k)`` read from the gated state, then ``S += k u^T``; ``beta`` ``[B, T, HV]``;
- ``scale`` defaults to ``K ** -0.5`` and multiplies the query: ``o = (scale q)^T S`` from the updated state;
- ``initial_state`` and the final state ``[B, HV, K, V]``, or ``[B, HV, V, K]`` with ``state_v_first``.
"""

from __future__ import annotations

import numpy as np


def _f64(x: np.ndarray | None) -> np.ndarray | None:
    return None if x is None else np.asarray(x, dtype=np.float64)


def recurrent(q: np.ndarray, k: np.ndarray, v: np.ndarray, *, g: np.ndarray | None = None,
              gk: np.ndarray | None = None, beta: np.ndarray | None = None, scale: float | None = None,
              initial_state: np.ndarray | None = None, state_v_first: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Every FLA recurrence of one token loop, in float64: linear attention (no gate, no beta), simple GLA (``g``),
    GLA (``gk``), the delta rule (``beta``) and the gated delta rule (``g`` and ``beta``).

    Returns ``(o [B, T, HV, V], final_state)``, the state in ``initial_state``'s layout.
    """
    q64, k64, v64 = _f64(q), _f64(k), _f64(v)
    assert q64 is not None and k64 is not None and v64 is not None
    batch, steps, heads, dim_k = q64.shape
    value_heads, dim_v = v64.shape[2], v64.shape[3]
    group = value_heads // heads
    q64, k64 = np.repeat(q64, group, axis=2), np.repeat(k64, group, axis=2)
    g64, gk64, beta64 = _f64(g), _f64(gk), _f64(beta)
    scale = dim_k ** -0.5 if scale is None else scale
    state = np.zeros((batch, value_heads, dim_k, dim_v))
    if initial_state is not None:
        state = np.array(initial_state.swapaxes(-1, -2) if state_v_first else initial_state, dtype=np.float64)
    o = np.empty((batch, steps, value_heads, dim_v))
    for t in range(steps):
        if g64 is not None:
            state = state * np.exp(g64[:, t])[..., None, None]
        if gk64 is not None:
            state = state * np.exp(gk64[:, t])[..., None]
        key = k64[:, t]
        update = v64[:, t]
        if beta64 is not None:
            update = beta64[:, t][..., None] * (update - np.einsum("bhkv,bhk->bhv", state, key))
        state = state + key[..., :, None] * update[..., None, :]
        o[:, t] = np.einsum("bhk,bhkv->bhv", scale * q64[:, t], state)
    return o, (state.swapaxes(-1, -2) if state_v_first else state)


def l2_normalised(x: np.ndarray) -> np.ndarray:
    """FLA's query/key normalisation (``F.normalize(x, p=2, dim=-1)``): ``x / max(||x||, 1e-12)`` over the last
    axis, computed in float32 as FLA's tests do."""
    x32 = np.asarray(x, dtype=np.float32)
    norm = np.sqrt(np.sum(x32 * x32, axis=-1, keepdims=True, dtype=np.float32))
    return (x32 / np.maximum(norm, np.float32(1e-12))).astype(np.float32)


def gdn_gate(raw: np.ndarray, a_log: np.ndarray, dt_bias: np.ndarray | None) -> np.ndarray:
    """The gated-delta-net gate that FLA can fuse into its kernel (``use_gate_in_kernel``), computed here before the
    op: ``g = -exp(A_log) * softplus(raw + dt_bias)`` in float32, per value head."""
    x = raw.astype(np.float32) + (np.float32(0) if dt_bias is None else dt_bias.astype(np.float32))
    softplus = np.logaddexp(np.float32(0), x).astype(np.float32)
    return (-np.exp(a_log.astype(np.float32)) * softplus).astype(np.float32)


def error_ratio(ref: np.ndarray, tri: np.ndarray) -> float:
    """FLA's error measure: the RMS of the difference over the RMS of the reference (``+ 1e-8``)."""
    ref64, diff = np.asarray(ref, np.float64), np.asarray(tri, np.float64) - np.asarray(ref, np.float64)
    return float(np.sqrt(np.mean(diff * diff)) / (np.sqrt(np.mean(ref64 * ref64)) + 1e-8))


def fla_close(ref: np.ndarray, tri: np.ndarray, ratio: float, abs_tolerance: float = 1e-6) -> bool:
    """FLA's test criterion (``assert_close``, its strict branch): the largest absolute difference is at most
    ``abs_tolerance``, or the error ratio is below ``ratio``; NaN never passes."""
    if np.isnan(ref).any() or np.isnan(tri).any():
        return False
    diff = np.abs(np.asarray(tri, np.float64) - np.asarray(ref, np.float64))
    return bool(diff.max(initial=0.0) <= abs_tolerance or error_ratio(ref, tri) < ratio)

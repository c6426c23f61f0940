"""A float64 NumPy reference of causal-conv1d's two entry points, written in that project's conventions, and its
closeness criterion; independent of ``oracles/causal_conv`` so that the two can be held against each other.

causal-conv1d's conventions (from ``causal_conv1d/causal_conv1d_interface.py`` and its tests; restated, not copied):
``x`` is ``(batch, dim, seqlen)`` whatever its memory layout; ``weight`` ``(dim, width)``; ``bias`` ``(dim,)``;
output ``t`` of channel ``c`` is ``act(bias_c + sum_j weight[c, j] * xs[c, t + j])`` over the sequence ``xs`` of the
state's positions followed by ``x``, so the last tap reads the current position; ``act`` is none or SiLU.

- the whole-sequence function takes ``initial_states`` ``(batch, dim, width - 1)`` (zeros when absent) and returns
  ``final_states``, the last ``width - 1`` positions of ``xs``;
- the decode update takes a ``conv_state`` ``(batch, dim, state_len)`` with ``state_len >= width - 1``, reads its
  last ``width - 1`` positions, and shifts ``x`` into it; with ``cache_seqlens`` the buffer is circular: row ``b``
  reads the ``width - 1`` positions before index ``cache_seqlens[b] % state_len`` and writes ``x`` from there on.
"""

from __future__ import annotations

import numpy as np


def _convolve(xs: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, activation: str | None,
              seqlen: int) -> np.ndarray:
    """The last ``seqlen`` outputs over ``xs`` ``(batch, dim, width - 1 + seqlen)``, in float64."""
    width = weight.shape[1]
    w = weight.astype(np.float64)
    out = np.zeros((*xs.shape[:2], seqlen)) + (0.0 if bias is None else bias.astype(np.float64)[:, None])
    for j in range(width):
        out += w[:, j, None] * xs[..., j:j + seqlen]
    return out / (1.0 + np.exp(-out)) if activation in ("silu", "swish") else out


def causal_conv1d(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None,
                  initial_states: np.ndarray | None = None, activation: str | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The whole-sequence function: ``(out (batch, dim, seqlen), final_states (batch, dim, width - 1))``."""
    batch, dim, seqlen = x.shape
    width = weight.shape[1]
    start = np.zeros((batch, dim, width - 1)) if initial_states is None else initial_states.astype(np.float64)
    xs = np.concatenate([start, x.astype(np.float64)], axis=-1)
    return _convolve(xs, weight, bias, activation, seqlen), xs[..., xs.shape[-1] - (width - 1):]


def ordered(conv_state: np.ndarray, ends: np.ndarray, length: int) -> np.ndarray:
    """The ``length`` positions of a circular ``conv_state`` that end just before index ``ends[b]`` of row ``b``,
    oldest first (``ends`` taken modulo ``state_len``)."""
    state_len = conv_state.shape[-1]
    index = (ends[:, None] - length + np.arange(length)[None, :]) % state_len
    return np.take_along_axis(conv_state, index[:, None, :], axis=-1)


def causal_conv1d_update(x: np.ndarray, conv_state: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None,
                         activation: str | None = None, cache_seqlens: np.ndarray | None = None
                         ) -> tuple[np.ndarray, np.ndarray]:
    """The decode update: ``(out (batch, dim, seqlen), the updated conv_state)`` (a new array, same dtype)."""
    batch, _, seqlen = x.shape
    width, state_len = weight.shape[1], conv_state.shape[-1]
    updated = conv_state.copy()
    if cache_seqlens is None:
        xs = np.concatenate([conv_state.astype(np.float64), x.astype(np.float64)], axis=-1)
        updated[...] = xs[..., xs.shape[-1] - state_len:]
        return _convolve(xs[..., state_len - (width - 1):], weight, bias, activation, seqlen), updated
    seen = ordered(conv_state, cache_seqlens, width - 1).astype(np.float64)
    for t in range(seqlen):  # in order: a later position overwrites an earlier one on the same index
        updated[np.arange(batch), :, (cache_seqlens + t) % state_len] = x[:, :, t]
    xs = np.concatenate([seen, x.astype(np.float64)], axis=-1)
    return _convolve(xs, weight, bias, activation, seqlen), updated


TOLERANCES = {"float32": (3e-4, 1e-3), "float16": (3e-3, 5e-3)}
"""causal-conv1d's ``(rtol, atol)`` for an output against its reference, by activation dtype; states must be equal."""


def conv1d_close(ref: np.ndarray, out: np.ndarray, dtype: str) -> bool:
    """causal-conv1d's criterion (``torch.allclose``): ``|out - ref| <= atol + rtol * |ref|`` everywhere."""
    rtol, atol = TOLERANCES[dtype]
    return bool(np.all(np.abs(np.asarray(out, np.float64) - ref) <= atol + rtol * np.abs(ref)))

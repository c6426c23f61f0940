"""The prefix oracle: each window slot computed independently, by re-running W = 0 on a prefix.

This is the second formulation of the window, sharing nothing with ``window_from_states`` but the
``W = 0`` operator itself: slot ``j`` is the final state of a ``W = 0`` call over the first
``T - W + j + 1`` tokens, seeded with ``past_state[W-1]``; slots with no token are zeros.
Any backend that implements only ``W = 0`` (every ORT EP but CUDA) can be checked slot by slot
through it. ``slots_by_prefix`` is the formulation for any op with a right-aligned window
(``oracles.causal_conv.window_by_prefix`` uses it too); ``window_by_prefix`` is LinearAttention's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .validation import validate

LinearAttentionFn = Callable[..., tuple[np.ndarray, ...]]
"""Any implementation of the op with the oracle's signature, returning ``(output, present_state)``."""

SEQUENCE_INPUTS = ("query", "key", "value", "decay", "beta")
"""Inputs with a sequence axis (axis 1), cut to the prefix length."""

Inputs = dict[str, np.ndarray | None]
"""A call's inputs by ONNX name (None: omitted)."""


def prefix_inputs(inputs: Inputs, tokens: int) -> Inputs:
    """The inputs of a call restricted to its first ``tokens`` tokens (past state untouched)."""
    return {
        name: (x[:, :tokens] if name in SEQUENCE_INPUTS and x is not None else x)
        for name, x in inputs.items()
    }


def slots_by_prefix(
    run: LinearAttentionFn,
    inputs: Inputs,
    attrs: dict[str, Any],
    *,
    seq_len: int,
    state_shape: tuple[int, ...],
    cut: Callable[[Inputs, int], Inputs],
) -> np.ndarray:
    """``present_state`` of a ``W > 0`` call of any windowed op, slot by slot through ``W = 0`` prefix runs.

    ``state_shape`` is the windowed state's (window axis first); ``cut(inputs, tokens)`` restricts the
    inputs to their first ``tokens`` positions. ``run`` is called with ``state_window=0`` only, seeded
    with ``past_state[W-1]``. Returns float64 ``state_shape``.
    """
    window = state_shape[0] if state_shape else 0
    if int(attrs.get("state_window", 0)) == 0 or window == 0:
        raise ValueError("window_by_prefix: state_window must be in 1..8, the call has 0")
    past = inputs.get("past_state")
    legacy_attrs = {**attrs, "state_window": 0}
    present = np.zeros(state_shape, dtype=np.float64)
    for j in range(window):
        tokens = seq_len - window + j + 1
        if tokens < 1:
            continue
        prefix = cut(inputs, tokens)
        prefix["past_state"] = None if past is None else past[window - 1]
        _, state = run(**prefix, **legacy_attrs)
        present[j] = state
    return present


def window_by_prefix(run: LinearAttentionFn, inputs: Inputs, attrs: dict[str, Any]) -> np.ndarray:
    """``present_state`` of a LinearAttention ``W > 0`` call, evaluated slot by slot through ``W = 0`` prefix runs.

    ``run`` is called with ``state_window=0`` only. Returns a float64 array ``(W, B, H_kv, d_k, d_v)``.
    """
    call: dict[str, Any] = {**inputs, **attrs}
    dims = validate(**call)
    return slots_by_prefix(run, inputs, attrs, seq_len=dims.seq_len, state_shape=dims.state_shape, cut=prefix_inputs)

"""The prefix oracle: each window slot computed independently, by re-running W = 0 on a prefix.

This is the second formulation of the window, sharing nothing with ``window_from_states`` but the
``W = 0`` operator itself: slot ``j`` is the final state of a ``W = 0`` call over the first
``T - W + j + 1`` tokens, seeded with ``past_state[W-1]``; slots with no token are zeros.
Any backend that implements only ``W = 0`` (every ORT EP but CUDA) can be checked slot by slot
through it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from .validation import validate

LinearAttentionFn = Callable[..., tuple[np.ndarray, np.ndarray]]
"""Any implementation of the op with the oracle's signature, returning ``(output, present_state)``."""

SEQUENCE_INPUTS = ("query", "key", "value", "decay", "beta")
"""Inputs with a sequence axis (axis 1), cut to the prefix length."""


def prefix_inputs(inputs: Mapping[str, np.ndarray | None], tokens: int) -> dict[str, np.ndarray | None]:
    """The inputs of a call restricted to its first ``tokens`` tokens (past state untouched)."""
    return {
        name: (x[:, :tokens] if name in SEQUENCE_INPUTS and x is not None else x)
        for name, x in inputs.items()
    }


def window_by_prefix(
    run: LinearAttentionFn,
    inputs: Mapping[str, np.ndarray | None],
    attrs: Mapping[str, object],
) -> np.ndarray:
    """``present_state`` of a ``W > 0`` call, evaluated slot by slot through ``W = 0`` prefix runs.

    ``run`` is called with ``state_window=0`` only. Returns a float64 array ``(W, B, H_kv, d_k, d_v)``.
    """
    dims = validate(**inputs, **attrs, allow_empty_sequence=False)
    window = dims.state_window
    if window == 0:
        raise ValueError("window_by_prefix: state_window must be in 1..8, the call has 0")
    past = inputs.get("past_state")
    legacy_attrs = {**attrs, "state_window": 0}
    present = np.zeros(dims.state_shape, dtype=np.float64)
    for j in range(window):
        tokens = dims.seq_len - window + j + 1
        if tokens < 1:
            continue
        prefix = prefix_inputs(inputs, tokens)
        prefix["past_state"] = None if past is None else past[window - 1]
        _, state = run(**prefix, **legacy_attrs)
        present[j] = state
    return present

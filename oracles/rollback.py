"""Select-a-slot-and-resume (docs/spec.md §3): how a speculative decoder uses the window.

After a call over ``T`` draft tokens with window ``W``, accepting the first ``a`` tokens means the
next call must start from the state after ``a`` tokens. Slot ``a - (T - W) - 1`` holds it when
``T - W < a <= T``; ``a = 0`` is no slot at all, and the caller keeps the original past state.
"""

from __future__ import annotations

import numpy as np


def represented_acceptances(seq_len: int, window: int) -> range:
    """Accepted-token counts ``a >= 1`` that some slot of the window represents."""
    return range(max(1, seq_len - window + 1), seq_len + 1)


def slot_for_accepted(seq_len: int, window: int, accepted: int) -> int | None:
    """Slot holding the state after ``accepted`` tokens, or None for ``accepted = 0``.

    Raises ``ValueError`` when the window does not represent that prefix.
    """
    if window < 1:
        raise ValueError(f"slot_for_accepted: state_window must be >= 1, got {window}")
    if accepted == 0:
        return None
    if accepted not in represented_acceptances(seq_len, window):
        raise ValueError(
            f"slot_for_accepted: accepting {accepted} of T={seq_len} tokens is not represented by a "
            f"window of W={window} (represented: {list(represented_acceptances(seq_len, window))} or 0)"
        )
    return accepted - (seq_len - window) - 1


def next_past_state(
    present_state: np.ndarray,
    original_past: np.ndarray | None,
    seq_len: int,
    accepted: int,
) -> np.ndarray | None:
    """The ``past_state`` of the next call after accepting ``accepted`` of ``seq_len`` tokens.

    The chosen slot is copied into position ``W-1`` of a copy of ``present_state`` (the other slots
    are never read); ``accepted = 0`` returns ``original_past`` unchanged.
    """
    window = present_state.shape[0]
    slot = slot_for_accepted(seq_len, window, accepted)
    if slot is None:
        return original_past
    resumed = present_state.copy()
    resumed[window - 1] = present_state[slot]
    return resumed

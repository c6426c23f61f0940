"""The capsule (``state_update``) of GatedDeltaNet, docs/spec.md §8: where each captured transition lives.

Row ``b`` holds request ``b``'s first ``C`` entries as three blocks, struct-of-arrays:
``[decay: C x H_v | key: C x H_k x d_k | delta: C x H_v x d_v]``. ``pack_state_update`` writes the captured
prefix (NaN past it: unspecified), ``row_blocks`` reads the three blocks of a row back, and
``replay_descriptor`` addresses one row as GatedDeltaNetStateReplay's metadata does (§9).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .recurrence import Transition
    from .validation import GdnDims

DESCRIPTOR_FIELDS = ("source_offset", "destination_offset", "decay_offset", "key_offset", "delta_offset",
                     "num_heads_v", "head_size_v", "head_size_k", "num_heads_k", "capacity", "kept_count")
"""GatedDeltaNetStateReplay's 11 metadata fields, in order."""


def block_offsets(capacity: int, v_heads: int, k_heads: int, d_k: int) -> tuple[int, int, int]:
    """Offsets of the decay, key and delta blocks within one row."""
    return 0, capacity * v_heads, capacity * (v_heads + k_heads * d_k)


def pack_state_update(dims: GdnDims, transitions: Sequence[Sequence[Transition]]) -> np.ndarray:
    """``state_update`` ``(B, row_width)``: each request's first ``captured[b]`` transitions, NaN after them;
    all zeros when capture is off (``state_update_active`` 0)."""
    if not dims.capture_active:
        return np.zeros(dims.state_update_shape)
    rows = np.full(dims.state_update_shape, np.nan)
    c, hv, hk, dk, dv = dims.capacity, dims.v_heads, dims.q_heads, dims.d_k, dims.d_v
    d0, k0, x0 = block_offsets(c, hv, hk, dk)
    for b, steps in enumerate(transitions):
        decay = rows[b, d0:k0].reshape(c, hv)
        key = rows[b, k0:x0].reshape(c, hk, dk)
        delta = rows[b, x0:].reshape(c, hv, dv)
        for j in range(dims.captured[b]):
            decay[j], key[j], delta[j] = steps[j].decay, steps[j].key, steps[j].delta
    return rows


def row_blocks(row: np.ndarray, capacity: int, v_heads: int, k_heads: int, d_k: int,
               d_v: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One row's ``(decay (C, H_v), key (C, H_k, d_k), delta (C, H_v, d_v))``, as views."""
    d0, k0, x0 = block_offsets(capacity, v_heads, k_heads, d_k)
    return (row[d0:k0].reshape(capacity, v_heads), row[k0:x0].reshape(capacity, k_heads, d_k),
            row[x0:].reshape(capacity, v_heads, d_v))


def replay_descriptor(dims: GdnDims, request: int, kept: int, *, source_offset: int = 0,
                      destination_offset: int = 0, capsule_offset: int = 0) -> np.ndarray:
    """The int64 metadata replaying ``kept`` entries of row ``request`` of a capsule that starts at
    ``capsule_offset`` in its backing."""
    base = capsule_offset + request * dims.row_width
    d0, k0, x0 = block_offsets(dims.capacity, dims.v_heads, dims.q_heads, dims.d_k)
    return np.array([source_offset, destination_offset, base + d0, base + k0, base + x0, dims.v_heads, dims.d_v,
                     dims.d_k, dims.q_heads, dims.capacity, kept], dtype=np.int64)

"""GatedDeltaNetStateReplay in float64 (docs/spec.md §9): replay captured transitions over a source state.

The op addresses three flat float32 backings through an 11-field int64 descriptor (``capsule.DESCRIPTOR_FIELDS``).
``validate_replay`` holds every rule (each refused with a ``ValidationError`` before anything is written),
``replay_transitions`` is the replay itself on plain arrays, and ``gated_delta_net_state_replay`` is the op:
a copy of the destination backing with the destination view replaced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from oracles.validation import ValidationError

from .capsule import DESCRIPTOR_FIELDS

UINT32_MAX = 2**32 - 1
"""The kernel indexes in uint32: every field, extent and product must fit."""

REPLAY_INPUTS = ("source_backing", "capsule_backing", "destination_backing", "metadata")
"""The operator's inputs, in the order of its schema."""


@dataclass(frozen=True)
class ReplayDims:
    """One valid replay, field by field from the descriptor."""

    source_offset: int
    destination_offset: int
    decay_offset: int
    key_offset: int
    delta_offset: int
    v_heads: int
    d_v: int
    d_k: int
    k_heads: int
    capacity: int
    kept_count: int

    @property
    def state_elements(self) -> int:
        return self.v_heads * self.d_v * self.d_k

    def key_head(self, h: int) -> int:
        """The key head value head ``h`` reads: ``floor(h * H_k / H_v)``."""
        return h * self.k_heads // self.v_heads


def _backing(name: str, x: Any) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        raise ValidationError(name, "a numpy.ndarray", type(x).__name__)
    if x.dtype not in (np.float32, np.float64):
        raise ValidationError(name, "dtype float32 (the replay is float32 only)", f"dtype {x.dtype}")
    if x.ndim != 1 or not 0 < x.size <= UINT32_MAX:
        raise ValidationError(name, "rank 1 with 1 to 2^32 - 1 elements", f"shape {x.shape}")
    return x


def validate_replay(source_backing: Any, capsule_backing: Any, destination_backing: Any, metadata: Any, *,
                    same_buffer: tuple[str, ...] = ()) -> ReplayDims:
    """Check one replay against docs/spec.md §9 and return its fields.

    ``same_buffer`` names the inputs bound to the destination's own buffer (a device binding; NumPy arrays
    that share memory count too): the destination must be distinct from the source and the capsule.
    """
    backings = {name: _backing(name, x) for name, x in
                (("source_backing", source_backing), ("capsule_backing", capsule_backing),
                 ("destination_backing", destination_backing))}
    if not isinstance(metadata, np.ndarray) or metadata.dtype != np.int64 or metadata.shape != (11,):
        raise ValidationError("metadata", "an int64 tensor of shape (11,)",
                              f"{getattr(metadata, 'dtype', type(metadata).__name__)} shape {np.shape(metadata)}")
    for field, value in zip(DESCRIPTOR_FIELDS, metadata, strict=True):
        if not 0 <= int(value) <= UINT32_MAX:
            raise ValidationError(f"metadata.{field}", "in [0, 2^32 - 1] (the uint32 indexing range)", int(value))
    d = ReplayDims(*(int(x) for x in metadata))
    for field in DESCRIPTOR_FIELDS[5:10]:
        if getattr(d, _attr(field)) < 1:
            raise ValidationError(f"metadata.{field}", ">= 1", getattr(d, _attr(field)))
    if not 1 <= d.kept_count <= d.capacity:
        raise ValidationError("metadata.kept_count", f"in [1, capacity = {d.capacity}]", d.kept_count)
    extents = {"state": d.state_elements, "decay block": d.capacity * d.v_heads,
               "key block": d.capacity * d.k_heads * d.d_k, "delta block": d.capacity * d.v_heads * d.d_v}
    for what, extent in extents.items():
        if extent > UINT32_MAX:
            raise ValidationError("metadata", f"a {what} of at most 2^32 - 1 elements", extent)
    views = (("source_backing", "source_offset", "state"), ("destination_backing", "destination_offset", "state"),
             ("capsule_backing", "decay_offset", "decay block"), ("capsule_backing", "key_offset", "key block"),
             ("capsule_backing", "delta_offset", "delta block"))
    for backing, field, what in views:
        offset, size = getattr(d, field), backings[backing].size
        if offset + extents[what] > size:
            raise ValidationError(f"metadata.{field}", f"a {what} view of {extents[what]} elements inside "
                                  f"{backing} ({size} elements)", offset)
    shared = set(same_buffer) | {name for name in ("source_backing", "capsule_backing")
                                 if np.shares_memory(backings[name], backings["destination_backing"])}
    if shared:
        raise ValidationError("destination_backing", "a buffer distinct from source_backing and capsule_backing",
                              f"the same buffer as {', '.join(sorted(shared))}")
    return d


def _attr(field: str) -> str:
    """The ``ReplayDims`` attribute of a descriptor field."""
    return {"num_heads_v": "v_heads", "head_size_v": "d_v", "head_size_k": "d_k", "num_heads_k": "k_heads"}.get(
        field, field)


def replay_transitions(source: np.ndarray, decay: np.ndarray, key: np.ndarray, delta: np.ndarray,
                       kept: int) -> np.ndarray:
    """``source`` ``(H_v, d_v, d_k)`` after the first ``kept`` transitions, in float64.

    ``decay`` is ``(C, H_v)``, ``key`` ``(C, H_k, d_k)``, ``delta`` ``(C, H_v, d_v)``; value head ``h`` reads key
    head ``floor(h * H_k / H_v)``.
    """
    v_heads, k_heads = decay.shape[1], key.shape[1]
    heads = np.arange(v_heads) * k_heads // v_heads
    state = source.astype(np.float64, copy=True)
    for j in range(kept):
        k = key[j].astype(np.float64)[heads]  # (H_v, d_k)
        state = decay[j].astype(np.float64)[:, None, None] * state \
            + delta[j].astype(np.float64)[:, :, None] * k[:, None, :]
    return state


def gated_delta_net_state_replay(source_backing: np.ndarray, capsule_backing: np.ndarray,
                                 destination_backing: np.ndarray, metadata: np.ndarray) -> np.ndarray:
    """The ONNX ``com.microsoft::GatedDeltaNetStateReplay`` operator, in float64.

    Returns ``destination_out``: the destination backing (as float64, untouched outside its view) with the
    destination view holding the source view after ``kept_count`` capsule entries. Raises ``ValidationError``.
    """
    d = validate_replay(source_backing, capsule_backing, destination_backing, metadata)
    state_shape = (d.v_heads, d.d_v, d.d_k)
    source = source_backing[d.source_offset:d.source_offset + d.state_elements].reshape(state_shape)
    capsule = capsule_backing
    decay = capsule[d.decay_offset:d.decay_offset + d.capacity * d.v_heads].reshape(d.capacity, d.v_heads)
    key = capsule[d.key_offset:d.key_offset + d.capacity * d.k_heads * d.d_k].reshape(d.capacity, d.k_heads, d.d_k)
    delta = capsule[d.delta_offset:d.delta_offset + d.capacity * d.v_heads * d.d_v].reshape(
        d.capacity, d.v_heads, d.d_v)
    out = destination_backing.astype(np.float64, copy=True)
    out[d.destination_offset:d.destination_offset + d.state_elements] = \
        replay_transitions(source, decay, key, delta, d.kept_count).reshape(-1)
    return out

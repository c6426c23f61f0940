"""The exact answer to a GatedDeltaNetStateReplay call: the destination backing as the oracle leaves it.

The model is GatedDeltaNet's (``fuzz.ops.gated_delta_net.tolerance``): float32 throughout, ``depth`` the replayed
entries plus ``d_k`` plus ``d_v``, the block the view's largest magnitude. Outside the destination view nothing may
change, which ``replay-agree`` checks bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fuzz.engine.tolerance import array_digest, remembered
from fuzz.ops.gated_delta_net.tolerance import TensorAnswer
from oracles.gated_delta_net import ReplayDims, gated_delta_net_state_replay, validate_replay


def replay_depth(dims: ReplayDims) -> int:
    """Sequential operations behind one element: one rank-1 update per kept entry, and its two dot products."""
    return dims.kept_count + dims.d_k + dims.d_v


def destination_view(dims: ReplayDims, size: int) -> np.ndarray:
    """Which elements of a destination backing of ``size`` the replay writes."""
    view = np.zeros(size, bool)
    view[dims.destination_offset:dims.destination_offset + dims.state_elements] = True
    return view


def read_elements(dims: ReplayDims, sizes: dict[str, int]) -> dict[str, np.ndarray]:
    """Which elements of each source backing (by name, of ``sizes`` elements) the replay reads: the source view,
    and of each capsule block its first ``kept_count`` entries (the blocks are entry-major)."""
    source = np.zeros(sizes["source_backing"], bool)
    source[dims.source_offset:dims.source_offset + dims.state_elements] = True
    capsule = np.zeros(sizes["capsule_backing"], bool)
    for offset, per_entry in ((dims.decay_offset, dims.v_heads), (dims.key_offset, dims.k_heads * dims.d_k),
                              (dims.delta_offset, dims.v_heads * dims.d_v)):
        capsule[offset:offset + dims.kept_count * per_entry] = True
    return {"source_backing": source, "capsule_backing": capsule}


def exact_replay_answer(inputs: dict[str, Any], attrs: dict[str, Any]) -> TensorAnswer:
    """The float64 oracle's destination backing (remembered by content)."""
    dims = validate_replay(**inputs)
    return remembered(
        array_digest(f"GatedDeltaNetStateReplay {dims!r}", sorted(inputs.items())),
        lambda: TensorAnswer({"destination_out": gated_delta_net_state_replay(**inputs)},
                             {"destination_out": np.dtype(np.float32)}))

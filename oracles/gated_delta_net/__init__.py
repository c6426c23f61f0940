"""The float64 NumPy oracle of ONNX Runtime's GatedDeltaNet, its state-update capsule and GatedDeltaNetStateReplay
(docs/spec.md §8-9)."""

from .capsule import DESCRIPTOR_FIELDS, pack_state_update, replay_descriptor, row_blocks
from .recurrence import Transition, gated_delta_net
from .replay import REPLAY_INPUTS, ReplayDims, gated_delta_net_state_replay, replay_transitions, validate_replay
from .validation import INPUT_NAMES, GdnDims, validate

__all__ = [
    "DESCRIPTOR_FIELDS",
    "INPUT_NAMES",
    "REPLAY_INPUTS",
    "GdnDims",
    "ReplayDims",
    "Transition",
    "gated_delta_net",
    "gated_delta_net_state_replay",
    "pack_state_update",
    "replay_descriptor",
    "replay_transitions",
    "row_blocks",
    "validate",
    "validate_replay",
]

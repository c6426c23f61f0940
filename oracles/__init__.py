"""The float64 NumPy oracle of ONNX Runtime's LinearAttention and its state_window contract."""

from .prefix import window_by_prefix
from .recurrence import linear_attention
from .rollback import next_past_state, represented_acceptances, slot_for_accepted
from .validation import Dims, ValidationError, validate

__all__ = [
    "Dims",
    "ValidationError",
    "linear_attention",
    "next_past_state",
    "represented_acceptances",
    "slot_for_accepted",
    "validate",
    "window_by_prefix",
]

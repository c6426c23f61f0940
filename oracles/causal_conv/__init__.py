"""The float64 NumPy oracle of ONNX Runtime's CausalConvWithState and its state_window contract."""

from .convolution import causal_conv_with_state
from .prefix import window_by_prefix
from .validation import ACTIVATIONS, INPUT_NAMES, MAX_NDIM, ConvDims, validate

__all__ = [
    "ACTIVATIONS",
    "INPUT_NAMES",
    "MAX_NDIM",
    "ConvDims",
    "causal_conv_with_state",
    "validate",
    "window_by_prefix",
]

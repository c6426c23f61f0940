"""The suite's own WGSL kernels with state_window, on wgpu-native and on Dawn: LinearAttention and
CausalConvWithState.

``kernels.linear_attention.linear_attention`` is the ONNX op with NumPy in and out (the oracle's
signature plus ``aliased`` and ``options``: a ``KernelOptions``, which kernel runs it on which device);
``get_kernel(options).prepare`` binds device tensors for repeated dispatch, and
``LinearAttentionKernel.accept`` does select-a-slot-and-resume on the GPU (rebinding the slot as the next
seed where it can, copying it otherwise; ``Selection`` says which). ``kernels.causal_conv`` has the same
for CausalConvWithState (``causal_conv``, ``CausalConvKernel``); both kernels share that device-resident
machinery (``kernels.resident``). The functions are not re-exported here: their names would shadow the
modules.
"""

from .causal_conv import CausalConvKernel
from .device import DeviceTensor, DeviceUnavailable, FeatureMissing, GpuDevice, KernelUnsupported, get_device
from .linear_attention import BoundCall, LinearAttentionKernel, Selection, get_kernel
from .options import KernelOptions
from .timing import kernel_times_ns

__all__ = [
    "BoundCall",
    "CausalConvKernel",
    "DeviceTensor",
    "DeviceUnavailable",
    "FeatureMissing",
    "GpuDevice",
    "KernelOptions",
    "KernelUnsupported",
    "LinearAttentionKernel",
    "Selection",
    "get_device",
    "get_kernel",
    "kernel_times_ns",
]

"""The suite's own WGSL CausalConvWithState kernel as backends: on wgpu-native (Naga) and on Dawn (Tint).

The LinearAttention kernel's backends (``fuzz.backends.wgpu_kernel``) for the convolution: the NumPy API for a
case, the device-resident chain for a chain case (``fuzz.backends.device_chain``), ``ndim`` 2 and 3
``Unsupported`` (as in ONNX Runtime's kernels). The kernel has no geometry or prefill to vary, so there are no
variants to run on a software adapter, except the pipelines specialised on a call's shape that a GPU compiles.
"""

from __future__ import annotations

import numpy as np

from fuzz.backends.kernel_backend import KernelBackend
from fuzz.model.case import Case
from fuzz.model.ops import CAUSAL_CONV
from kernels.causal_conv import CausalConvKernel, causal_conv, get_kernel
from kernels.options import ConvKernelOptions


class _ConvKernelBackend(KernelBackend):
    """Runs a case through ``kernels.causal_conv`` on one WebGPU implementation."""

    op = CAUSAL_CONV
    template: str | None = None
    """Another template to compile instead of the kernel's own (a variant under test)."""
    specialise: bool | None = None
    """Pipelines specialised on each call's shape (``CausalConvKernel.specialise``); None: the kernel's default
    (on a GPU, specialised; on a software adapter one generic pipeline per dtype)."""
    kernel: CausalConvKernel

    def make_kernel(self, software: bool) -> CausalConvKernel:
        self.options = ConvKernelOptions(self.webgpu, self.adapter, self.template, self.specialise)
        """The kernel this backend runs."""
        return get_kernel(self.options)

    def kernel_notes(self) -> tuple[str, ...]:
        notes = ("ndim 1 (ndim 2 and 3 are unsupported, as in ONNX Runtime's kernels)",)
        return notes + (("pipelines specialised on each call's sizes and layouts",) if self.kernel.specialise else ())

    def call(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        return causal_conv(**case.kwargs(), aliased=case.aliased, options=self.options)


class WgpuConvBackend(_ConvKernelBackend):
    """The conv kernel on wgpu-native (``import wgpu``; naga compiles the shader)."""

    name = "wgpu-conv"
    webgpu = "wgpu"


class WgpuConvDawnBackend(_ConvKernelBackend):
    """The conv kernel on Dawn (``import wgpudawn``; Tint compiles the shader, as in ORT and browsers)."""

    name = "wgpu-conv-dawn"
    webgpu = "dawn"

"""The suite's own WGSL kernel as two backends: wgpu-native (naga) and Dawn (Tint).

Both run the same WGSL and the same Python (``kernels``); only the WebGPU implementation under
them differs, so a disagreement between them is a compiler or runtime difference.
"""

from __future__ import annotations

import numpy as np

from fuzz.backends.base import Backend, Capabilities, Rejected, Unavailable, Unsupported
from fuzz.engine.case import Case
from kernels.device import DeviceUnavailable, KernelUnsupported
from kernels.linear_attention import LinearAttentionKernel, get_kernel, linear_attention, workspaces
from oracles.validation import ValidationError


class _WgslKernelBackend(Backend):
    """Runs a case through ``kernels.linear_attention`` on one WebGPU implementation."""

    implementation: str
    template: str | None = None
    """Another WGSL template to compile instead of the kernel's own (a variant under test)."""

    def __init__(self, adapter: str | None = None) -> None:
        self.adapter = adapter
        try:
            self.kernel: LinearAttentionKernel = get_kernel(self.implementation, adapter, self.template)
        except DeviceUnavailable as err:
            raise Unavailable(f"{self.name}: {err}") from err

    def capabilities(self) -> Capabilities:
        device = self.kernel.device
        dtypes = ("float32", "float16") if "shader-f16" in device.features else ("float32",)
        notes = () if "shader-f16" in device.features else ("adapter lacks shader-f16: float16 is unsupported",)
        return Capabilities(
            dtypes=dtypes,
            window="native",
            aliasing=True,
            device=device.description,
            versions={device.module.__name__: device.version, "numpy": np.__version__},
            notes=notes,
        )

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        try:
            return linear_attention(
                **case.kwargs(), aliased=case.aliased, implementation=self.implementation, adapter=self.adapter,
                template=self.template,
            )
        except ValidationError as err:
            raise Rejected(self.name, str(err)) from err
        except KernelUnsupported as err:
            raise Unsupported(self.name, str(err)) from err

    def close(self) -> None:
        workspaces(self.kernel).clear()


class WgpuNativeBackend(_WgslKernelBackend):
    """The WGSL kernel on wgpu-native (``import wgpu``; naga compiles the shader)."""

    name = "wgpu"
    implementation = "wgpu"


class WgpuDawnBackend(_WgslKernelBackend):
    """The WGSL kernel on Dawn (``import wgpudawn``; Tint compiles the shader, as in ORT and browsers)."""

    name = "wgpu-dawn"
    implementation = "dawn"

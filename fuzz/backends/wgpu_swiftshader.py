"""The suite's WGSL kernels on SwiftShader's Vulkan (wgpu-native, Naga): the CPU platform Chromium's WebGPU runs on
where there is no GPU, beside lavapipe's.

SwiftShader differs from lavapipe where the kernels could depend on it unawares: it compiles SPIR-V with its own
JIT (Subzero, not LLVM), grants WebGPU's default of 256 invocations per workgroup (lavapipe 1024), runs subgroups
of its own width, and has no ``shader-f16`` (float16 cases are ``Unsupported``, as on any adapter without it).
The kernels keep within 256 invocations and WebGPU's default workgroup memory on every adapter, so no variant
is needed here; a pipeline SwiftShader refuses is a finding against the kernel.

``wgpu-swiftshader`` and ``wgpu-conv-swiftshader`` run in a worker process whose Vulkan loader sees SwiftShader
alone (``fuzz.backends.swiftshader`` says why); in it, the kernel backends below run on the adapter named
SwiftShader, whatever ``--device``/``--adapter`` chose for the others. A crash of the driver is an outcome.
"""

from __future__ import annotations

import os

from fuzz.backends.base import Unavailable
from fuzz.backends.isolation import WorkerBackend
from fuzz.backends.kernel_backend import KernelBackend, grants
from fuzz.backends.swiftshader import ADAPTER, DriverMissing, driver_environment, find_manifest
from fuzz.backends.wgpu_conv import WgpuConvBackend
from fuzz.backends.wgpu_kernel import WgpuNativeBackend
from kernels.device import DeviceUnavailable, describe_adapters, load_implementation


class _OnSwiftShader(KernelBackend):
    """A kernel backend bound to the SwiftShader adapter, which says what the adapter grants."""

    def choose_adapter(self) -> tuple[list[str], str | int | None]:
        adapters = describe_adapters(load_implementation(self.webgpu))
        if not any(ADAPTER.lower() in a.lower() for a in adapters):
            raise DeviceUnavailable(f"no {ADAPTER} adapter; the Vulkan loader here (VK_DRIVER_FILES="
                                    f"{os.environ.get('VK_DRIVER_FILES', 'unset')}) offers {adapters or 'none'}")
        return adapters, ADAPTER

    def kernel_notes(self) -> tuple[str, ...]:
        return (*grants(self.kernel.device), f"Vulkan driver {os.environ.get('VK_DRIVER_FILES')}",
                *super().kernel_notes())


class SwiftShaderKernel(_OnSwiftShader, WgpuNativeBackend):
    """LinearAttention's kernel on SwiftShader (in the worker process). It takes the kernel's own choice of
    reduction (``auto``: the subgroup one where the subgroups hold the row groups), not lavapipe's workgroup
    one, so the subgroup path runs on a second subgroup implementation."""

    name = "wgpu-swiftshader"
    software_path = "auto"


class SwiftShaderConvKernel(_OnSwiftShader, WgpuConvBackend):
    """CausalConvWithState's kernel on SwiftShader (in the worker process)."""

    name = "wgpu-conv-swiftshader"


class _SwiftShaderWorker(WorkerBackend):
    """A kernel backend on SwiftShader, in a worker whose Vulkan loader loads SwiftShader's driver alone."""

    def environment(self) -> dict[str, str]:
        try:
            return driver_environment(find_manifest())
        except DriverMissing as err:
            raise Unavailable(f"{self.name}: {err}") from err


class WgpuSwiftShaderBackend(_SwiftShaderWorker):
    """``wgpu-swiftshader``: LinearAttention's kernel on SwiftShader."""

    name = "wgpu-swiftshader"
    target = f"{__name__}:{SwiftShaderKernel.__name__}"


class WgpuConvSwiftShaderBackend(_SwiftShaderWorker):
    """``wgpu-conv-swiftshader``: CausalConvWithState's kernel on SwiftShader."""

    name = "wgpu-conv-swiftshader"
    target = f"{__name__}:{SwiftShaderConvKernel.__name__}"

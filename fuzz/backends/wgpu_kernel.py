"""The suite's own WGSL LinearAttention kernel as backends: wgpu-native (naga) and Dawn (Tint), and the
variants a campaign on a software adapter runs to reach what a GPU compiles.

Both runtimes run the same WGSL and the same Python (``kernels``); only the WebGPU implementation under
them differs, so a disagreement between them is a compiler or runtime difference. Both offer the
device-resident chain (``run_chain``, ``fuzz.backends.device_chain``): one prepared call per call length
re-dispatched over a chain's calls, all on one pair of state buffers, each resuming from the previous one's
accepted slot by the kernel's own select-and-resume.
"""

from __future__ import annotations

import numpy as np

from fuzz.backends.kernel_backend import KernelBackend
from fuzz.model.case import Case
from fuzz.model.ops import LINEAR_ATTENTION
from kernels.linear_attention import LinearAttentionKernel, get_kernel, linear_attention
from kernels.options import WIDE_ROW_GROUPS, KernelOptions
from kernels.shader import MAX_ROW_GROUPS


class _WgslKernelBackend(KernelBackend):
    """Runs a case through ``kernels.linear_attention`` on one WebGPU implementation."""

    op = LINEAR_ATTENTION
    template: str | None = None
    """Another token-loop template to compile instead of the kernel's own (a variant under test)."""
    chunk_template: str | None = None
    """Another chunked-prefill template to compile instead of the kernel's own (a variant under test)."""
    prefill: str = "token"
    """How the kernel takes a call's tokens (``kernels.options.PREFILLS``)."""
    software_path: str = "auto"
    """The kernel path (``kernels.options.KERNEL_PATHS``) on a software adapter; ``auto`` on a GPU."""
    software_row_groups: int | None = None
    """The geometry's bound on row groups per column (``kernels.options.ROW_GROUP_CHOICES``) on a
    software adapter; None: the kernel's default."""
    gpu_path: str = "auto"
    """The kernel path on a GPU (``auto``: the fastest there)."""
    gpu_row_groups: int | None = None
    """The bound on row groups per column on a GPU; None: the kernel's default (the fastest there)."""
    specialise: bool | None = None
    """Pipelines specialised on each call's shape (``LinearAttentionKernel.specialise``); None: the kernel's
    default (on a GPU, where that is what runs, specialised; on a software adapter generic)."""
    kernel: LinearAttentionKernel

    def make_kernel(self, software: bool) -> LinearAttentionKernel:
        self.options = KernelOptions(
            self.webgpu, self.adapter, self.template, self.chunk_template,
            path=self.software_path if software else self.gpu_path,
            max_row_groups=self.software_row_groups if software else self.gpu_row_groups,
            prefill=self.prefill, specialise=self.specialise)
        """The kernel this backend runs: the class's choices, those for a software adapter where it has one."""
        return get_kernel(self.options)

    def kernel_notes(self) -> tuple[str, ...]:
        options = self.options
        notes: tuple[str, ...] = ()
        if options.path != "auto":
            notes += (f"kernel path {options.path} (see software_path, gpu_path)",)
        if options.max_row_groups is not None:
            notes += (f"at most {options.max_row_groups} row groups per column (see software_row_groups, "
                      "gpu_row_groups)",)
        if options.prefill != "token":
            notes += (f"{options.prefill} prefill (kernels/chunked.wgsl) for every call",)
        if self.kernel.specialise:
            notes += ("pipelines specialised on each call's sizes and layouts",)
        return notes

    def call(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        return linear_attention(**case.kwargs(), aliased=case.aliased, options=self.options)


class WgpuNativeBackend(_WgslKernelBackend):
    """The WGSL kernel on wgpu-native (``import wgpu``; naga compiles the shader)."""

    name = "wgpu"
    webgpu = "wgpu"
    software_path = "workgroup"
    """On lavapipe Dawn takes the subgroup reduction wherever it fits (row groups up to the subgroup size:
    4, or 8 at llvmpipe's full SIMD width), so wgpu-native keeps the workgroup one: a campaign on a CPU runs
    both reductions at the small head sizes, where only the subgroup one would otherwise be compiled."""


class WgpuDawnBackend(_WgslKernelBackend):
    """The WGSL kernel on Dawn (``import wgpudawn``; Tint compiles the shader, as in ORT and browsers)."""

    name = "wgpu-dawn"
    webgpu = "dawn"


class WgpuChunkedBackend(WgpuNativeBackend):
    """The WGSL kernel's chunked prefill (``kernels/chunked.wgsl``) on wgpu-native, for every call: the
    second formulation of the contract, fuzzed beside the token loop (no call takes it by default)."""

    name = "wgpu-chunked"
    prefill = "chunked"


class WgpuWideBackend(WgpuDawnBackend):
    """The WGSL kernel on Dawn with the geometry the other kind of adapter compiles. On lavapipe (subgroups of 4,
    or 8 at full SIMD width) the default geometry stops at 16 row groups and never stages, so this backend takes a
    GPU's: up to 32 row groups per column, so heads of ``d_k > 64`` take the staged checkpoint stores
    (``KernelSpec.staged_stores``), the path an H200 runs at ``d_k = 128``. On a GPU, where that is Dawn's own
    geometry, it takes a software adapter's instead: at most 16 row groups and the workgroup reduction, which no
    other backend of a GPU campaign compiles. Either way a campaign runs both geometries."""

    name = "wgpu-wide"
    software_row_groups = WIDE_ROW_GROUPS
    gpu_path = "workgroup"
    gpu_row_groups = MAX_ROW_GROUPS


class WgpuSpecialisedBackend(WgpuNativeBackend):
    """The WGSL kernel on wgpu-native with a pipeline specialised on each call's sizes and layouts
    (``kernels.shader.SPECIALISED_FIELDS`` written in as constants): the form a GPU runs by default. On a GPU
    this is ``wgpu``; on lavapipe, where the kernel keeps the generic pipelines (a compilation per call shape
    costs seconds there), without this backend a campaign would never run the form GPUs run."""

    name = "wgpu-specialised"
    specialise = True

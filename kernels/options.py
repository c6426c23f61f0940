"""How a kernel is built and where it runs: one frozen value per op kernel.

Every choice that makes one ``LinearAttentionKernel`` differ from another (the WebGPU implementation and
adapter, the WGSL templates, the reduction path, the geometry bound, the prefill, specialisation) is a
field of ``KernelOptions``, so callers pass one value instead of threading eight parameters, and the value
is the key of the process-wide kernel cache (``kernels.linear_attention.get_kernel``). Each field is checked
when the value is made: a bad choice fails at once, not at the first call. ``ConvKernelOptions`` is the same
for ``CausalConvKernel`` (``kernels.causal_conv.get_kernel``), which has fewer choices.
"""

from __future__ import annotations

from dataclasses import dataclass

KERNEL_PATHS = ("auto", "subgroup", "workgroup", "scalar")
"""How a kernel compiles its pipelines. ``auto``: vector columns where d_v % 4 == 0, and the subgroup
reduction where the device has subgroups of at least the call's row groups, else the workgroup one;
``subgroup``: the same but the subgroup reduction required (``KernelUnsupported`` where it is not
possible); ``workgroup``: vector columns, always the workgroup reduction (the fallback);
``scalar``: one column per invocation and the workgroup reduction (the kernel before vectorisation)."""

ROW_GROUP_CHOICES = (2, 4, 8, 16, 32)
"""Bounds on the invocations per column a kernel may be built with: fewer give each invocation more rows
and a warp more adjacent columns, more give more invocations (the default: the kernel's
``_row_group_bound``)."""

WIDE_ROW_GROUPS = 32
"""The row-group bound on devices whose subgroups hold that many row groups (a GPU's, not lavapipe's 4 or 8):
fewer rows per invocation, so more of the reduction runs in parallel, which made decode faster on a GPU
(docs/benchmark.md#kernel-history)."""

PREFILLS = ("token", "chunked")
"""How a kernel takes a call's tokens: ``token``, the token loop (``kernels/linear_attention.wgsl``, the
default), or ``chunked``, the chunked prefill (``kernels/chunked.wgsl``). The chunked prefill agrees with
the token loop but was slower on a GPU at every length measured (docs/benchmark.md#kernel-history), so no
call takes it unless asked; campaigns fuzz both (``fuzz.campaign.swarm``)."""


@dataclass(frozen=True)
class KernelOptions:
    """One kernel's build and device choice; hashable, so it keys the kernel cache.

    Raises ``ValueError`` on construction for a path, row-group bound or prefill outside its choices.
    """

    implementation: str = "wgpu"
    """The WebGPU implementation: ``"wgpu"`` (wgpu-native, Naga) or ``"dawn"`` (wgpudawn, Tint)."""
    adapter: str | int | None = None
    """An adapter by name or number (``kernels.device.select_adapter``); None: the best one."""
    template: str | None = None
    """Another token-loop template to compile (a variant under test); None: ``kernels/linear_attention.wgsl``."""
    chunk_template: str | None = None
    """Another chunked-prefill template to compile; None: ``kernels/chunked.wgsl`` with the token loop's shared
    blocks (those of ``template`` where it is set)."""
    path: str = "auto"
    """One of ``KERNEL_PATHS``: which reduction and column width a call's pipeline takes."""
    max_row_groups: int | None = None
    """One of ``ROW_GROUP_CHOICES``: the most invocations sharing one column of the state; None: the device's
    best (``WIDE_ROW_GROUPS`` where its subgroups allow, else ``kernels.shader.MAX_ROW_GROUPS``)."""
    prefill: str = "token"
    """One of ``PREFILLS``: which template every call takes."""
    specialise: bool | None = None
    """Compile a pipeline per call shape (``KernelSpec.specialised``) rather than per geometry class; None: the
    device's best (on a GPU, where a compilation is cheap; not on a software adapter, where it takes seconds)."""

    def __post_init__(self) -> None:
        if self.path not in KERNEL_PATHS:
            raise ValueError(f"kernel path {self.path!r}: expected one of {', '.join(KERNEL_PATHS)}")
        if self.max_row_groups not in (None, *ROW_GROUP_CHOICES):
            raise ValueError(f"max_row_groups {self.max_row_groups}: expected one of {ROW_GROUP_CHOICES} or None")
        if self.prefill not in PREFILLS:
            raise ValueError(f"prefill {self.prefill!r}: expected one of {', '.join(PREFILLS)}")


@dataclass(frozen=True)
class ConvKernelOptions:
    """One CausalConvWithState kernel's build and device choice; hashable, so it keys that kernel's cache."""

    implementation: str = "wgpu"
    """The WebGPU implementation: ``"wgpu"`` (wgpu-native, Naga) or ``"dawn"`` (wgpudawn, Tint)."""
    adapter: str | int | None = None
    """An adapter by name or number (``kernels.device.select_adapter``); None: the best one."""
    template: str | None = None
    """Another template to compile (a variant under test); None: ``kernels/causal_conv.wgsl``."""
    specialise: bool | None = None
    """Compile a pipeline per call shape rather than one per storage type; None: the device's best (on a GPU,
    where a compilation is cheap; not on a software adapter, where it takes seconds)."""

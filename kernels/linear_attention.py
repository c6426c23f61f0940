"""LinearAttention on WebGPU: a device-resident API and the NumPy-in/NumPy-out operator on top.

``LinearAttentionKernel`` owns the compiled pipelines of one ``GpuDevice`` (a bounded LRU cache
keyed by ``KernelSpec``, the geometry class; everything else about a call is in its uniform,
``CallParams``). ``prepare`` binds device tensors to a pipeline and uniform and returns a
``BoundCall`` that can be dispatched any number of times without touching the host; ``accept``
performs SPEC §3's select-a-slot-and-resume, by rebinding the accepted slot as the next call's
seed where WebGPU's offset alignment allows it (no copy at all), else by a slot copy on the GPU.
Those device-resident parts are shared with the other op kernels (``kernels.resident``).
``linear_attention`` mirrors the ONNX op exactly like ``oracles.linear_attention``, reusing
device buffers across calls of the same shape.

Every call is validated by ``oracles.validation.validate`` before anything reaches the GPU, so
the kernel and the oracle reject the same inputs with the same messages.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from oracles.validation import Dims, validate

from .device import DeviceTensor, GpuDevice, KernelUnsupported, get_device
from .resident import BoundCall, ResidentKernel, Selection, Workspace, WorkspaceCache, run_cached, stand_in, workspaces
from .shader import BINDINGS, MAX_ROW_GROUPS, TEMPLATES, CallParams, KernelSpec, render, template_source

__all__ = [
    "KERNEL_DTYPES", "KERNEL_PATHS", "MAX_D_K", "PARAMS_BYTES", "PREFILLS", "ROW_GROUP_CHOICES", "WIDE_ROW_GROUPS",
    "BoundCall", "LinearAttentionKernel", "Selection", "Workspace", "WorkspaceCache", "check_supported", "get_kernel",
    "linear_attention", "scratch_bytes", "workspaces",
]

MAX_D_K = 256
"""Largest key head size (that of the ORT WebGPU EP); it bounds each invocation's private row block."""

KERNEL_PATHS = ("auto", "subgroup", "workgroup", "scalar")
"""How a kernel compiles its pipelines. ``auto``: vector columns where d_v % 4 == 0, and the subgroup
reduction where the device has subgroups of at least the call's row groups, else the workgroup one;
``subgroup``: the same but the subgroup reduction required (``KernelUnsupported`` where it is not
possible); ``workgroup``: vector columns, always the workgroup reduction (the fallback);
``scalar``: one column per invocation and the workgroup reduction (the kernel before vectorisation)."""

ROW_GROUP_CHOICES = (2, 4, 8, 16, 32)
"""Bounds on the invocations per column a kernel may be built with: fewer give each invocation more rows
and a warp more adjacent columns, more give more invocations (the default: ``_row_group_bound``)."""

WIDE_ROW_GROUPS = 32
"""The row-group bound on devices whose subgroups hold that many row groups (a GPU's, not lavapipe's 8)."""

PREFILLS = ("token", "chunked")
"""How a kernel takes a call's tokens: ``token``, the token loop (``kernels/linear_attention.wgsl``, the
default), or ``chunked``, the chunked prefill (``kernels/chunked.wgsl``). The chunked prefill agrees with
the token loop but was slower on the H200 at every length measured (fp16, ``B=1, H=32, d_k=d_v=128``:
215.5 against 81.4 us at ``T = 16``, 825.6 against 297.4 us at ``T = 64``), so no call takes it unless
asked; campaigns fuzz both (``fuzz.campaign.swarm``)."""

KERNEL_DTYPES = ("float32", "float16")
"""Storage types with a kernel; float16 needs the ``shader-f16`` feature."""

PARAMS_BYTES = CallParams.WORDS * 4
"""The per-call uniform (sizes, heads, layouts, window, scale, seed offset): with its ``zeros_known``
twin (``scratch_bytes``), the kernel's only device scratch (besides a few KiB of workgroup memory for the
reductions, which is no buffer)."""


def scratch_bytes(state_window: int, seq_len: int) -> int:
    """The device scratch of one bound call: its uniform, and where ``T < W`` a second one with
    ``zeros_known`` set, which dispatches take when the leading zero slots need not be stored again."""
    return PARAMS_BYTES * (2 if state_window > seq_len else 1)


def check_supported(device: GpuDevice, dims: Dims) -> None:
    """Raise ``KernelUnsupported`` for a valid call this kernel cannot run on ``device``."""
    dtype = str(dims.dtype)
    if dtype not in KERNEL_DTYPES:
        raise KernelUnsupported(f"no WebGPU kernel for dtype {dtype} (kernels exist for {', '.join(KERNEL_DTYPES)})")
    if dtype == "float16":
        device.require("shader-f16", "float16 LinearAttention")
    if dims.d_k > MAX_D_K:
        raise KernelUnsupported(f"d_k = {dims.d_k} exceeds the kernel's maximum of {MAX_D_K}")
    max_groups = device.limits["max-compute-workgroups-per-dimension"]
    if max(dims.batch, dims.kv_heads) > max_groups:
        raise KernelUnsupported(f"batch {dims.batch} or kv_num_heads {dims.kv_heads} exceeds {max_groups} workgroups")
    biggest = max(int(np.prod(dims.state_shape)), int(np.prod(dims.output_shape)), dims.batch * dims.seq_len
                  * max(dims.q_heads, dims.kv_heads) * dims.d_k) * dims.dtype.itemsize
    limit = device.limits["max-storage-buffer-binding-size"]
    if biggest > limit:
        raise KernelUnsupported(f"a {biggest}-byte tensor exceeds max-storage-buffer-binding-size {limit}")


class LinearAttentionKernel(ResidentKernel):
    """Compiled LinearAttention pipelines on one device, and the device-side operations around them."""

    BINDINGS = BINDINGS
    LABEL = "linear_attention"

    def __init__(self, device: GpuDevice, max_pipelines: int = 1024, template: str | None = None,
                 path: str = "auto", max_row_groups: int | None = None, prefill: str = "token",
                 chunk_template: str | None = None, specialise: bool | None = None) -> None:
        # a campaign's units draw head sizes 1-256 in both dtypes: with 64 pipelines the cache thrashed
        # (the default campaign on lavapipe ran at 65.6 cases/s; 81.0 with 1024, same seed)
        if path not in KERNEL_PATHS:
            raise ValueError(f"kernel path {path!r}: expected one of {', '.join(KERNEL_PATHS)}")
        if max_row_groups not in (None, *ROW_GROUP_CHOICES):
            raise ValueError(f"max_row_groups {max_row_groups}: expected one of {ROW_GROUP_CHOICES} or None")
        if prefill not in PREFILLS:
            raise ValueError(f"prefill {prefill!r}: expected one of {', '.join(PREFILLS)}")
        super().__init__(device, max_pipelines)
        self.max_row_groups = max_row_groups or self._row_group_bound(device, path)
        """The most invocations sharing one column of the state (``KernelSpec.for_sizes``)."""
        self.path = path
        """One of ``KERNEL_PATHS``: which reduction and column width ``spec_for`` picks."""
        self.prefill = prefill
        """One of ``PREFILLS``: which calls ``spec_for`` gives the chunked prefill."""
        self.template = template
        """The token-loop template compiled (None: ``kernels/linear_attention.wgsl``)."""
        self.chunk_template = chunk_template
        """The chunked-prefill template compiled (None: ``kernels/chunked.wgsl``)."""
        self.specialise = not device.software if specialise is None else specialise
        """Compile a pipeline per call shape (``KernelSpec.specialised``) rather than per geometry class; by
        default on GPUs, where that is cheap, and not on software adapters, where a compilation takes seconds."""

    @staticmethod
    def _row_group_bound(device: GpuDevice, path: str) -> int:
        """``WIDE_ROW_GROUPS`` where a subgroup reduction over that many row groups is possible, else
        ``MAX_ROW_GROUPS``: on the H200 (subgroups of 32), 32 row groups of 4 rows took fp16 decode from
        12.4 to 11.2 us at ``T = 1`` and from 43.4 to 31.6 us at ``T = 8`` (W = 0)."""
        size = device.subgroup_size
        wide = path in ("auto", "subgroup") and size is not None and size >= WIDE_ROW_GROUPS
        return WIDE_ROW_GROUPS if wide else MAX_ROW_GROUPS

    def spec_for(self, dims: Dims) -> KernelSpec:
        """The pipeline a validated call runs on: its geometry class, with this kernel's path and prefill applied,
        specialised on the call's shape where this kernel specialises."""
        spec = self._geometry(dims)
        return spec.specialised(CallParams.for_call(dims, aliased=False, seed_offset=0)) if self.specialise else spec

    def _geometry(self, dims: Dims) -> KernelSpec:
        spec = replace(KernelSpec.for_dims(dims, self.max_row_groups), chunked=self.prefill == "chunked")
        if self.path == "scalar":
            return replace(spec, lanes=1)
        if self.path == "workgroup":
            return spec
        size = self.device.subgroup_size
        if size is not None and spec.row_groups <= size:
            return replace(spec, reduction="subgroup")
        if self.path == "subgroup":
            raise KernelUnsupported(f"subgroup reduction over {spec.row_groups} row groups needs subgroups of at "
                                    f"least that size; {self.device.description} has "
                                    + (f"{size}" if size else "no subgroups feature"))
        return spec

    def shader_code(self, spec: KernelSpec) -> str:
        """The WGSL of a pipeline: the token loop, or the chunked prefill, rendered for ``spec``."""
        # a variant of the token loop reaches the chunked prefill through the blocks they share
        template = (self.chunk_template or template_source(TEMPLATES[True], self.template)) if spec.chunked \
            else self.template
        return render(spec, template, self.device.subgroup_enable)

    def uniform_for(self, dims: Dims, aliased: bool, seed_offset: int) -> CallParams:
        """The uniform of a validated call (``CallParams.for_call``)."""
        return CallParams.for_call(dims, aliased, seed_offset)

    def prepare(
        self,
        query: DeviceTensor,
        key: DeviceTensor,
        value: DeviceTensor,
        past_state: DeviceTensor | None = None,
        decay: DeviceTensor | None = None,
        beta: DeviceTensor | None = None,
        *,
        q_num_heads: int,
        kv_num_heads: int,
        update_rule: str = "gated_delta",
        scale: float = 0.0,
        state_window: int = 0,
        output: DeviceTensor | None = None,
        present_state: DeviceTensor | None = None,
    ) -> BoundCall:
        """Validate a call on device tensors and bind it; nothing runs until ``dispatch``.

        Passing ``present_state=past_state`` (the same tensor) selects the aliased binding: one
        read-write buffer, read at slot ``W-1`` and then overwritten. ``output`` and
        ``present_state`` are allocated when not given. Raises ``ValidationError`` for invalid
        input and ``KernelUnsupported`` for a valid call this device cannot run.
        """
        tensors = {"query": query, "key": key, "value": value, "past_state": past_state,
                   "decay": decay, "beta": beta}
        dims = validate(
            *(None if t is None else stand_in(t) for t in tensors.values()),
            q_num_heads=q_num_heads, kv_num_heads=kv_num_heads, update_rule=update_rule,
            scale=scale, state_window=state_window,
        )
        check_supported(self.device, dims)
        return self.bind(dims, tensors, output, present_state)


_KERNELS: dict[tuple, LinearAttentionKernel] = {}


def get_kernel(implementation: str = "wgpu", adapter: str | int | None = None, template: str | None = None,
               path: str = "auto", max_row_groups: int | None = None, prefill: str = "token",
               chunk_template: str | None = None, specialise: bool | None = None) -> LinearAttentionKernel:
    """The process-wide kernel (and device) of an implementation, adapter choice, WGSL templates, path,
    geometry bound, prefill and specialisation."""
    key = (implementation, adapter, template, path, max_row_groups, prefill, chunk_template, specialise)
    if key not in _KERNELS:
        _KERNELS[key] = LinearAttentionKernel(get_device(implementation, adapter), template=template, path=path,
                                              max_row_groups=max_row_groups, prefill=prefill,
                                              chunk_template=chunk_template, specialise=specialise)
    return _KERNELS[key]


def linear_attention(
    query: np.ndarray,
    key: np.ndarray,
    value: np.ndarray,
    past_state: np.ndarray | None = None,
    decay: np.ndarray | None = None,
    beta: np.ndarray | None = None,
    *,
    q_num_heads: int,
    kv_num_heads: int,
    update_rule: str = "gated_delta",
    scale: float = 0.0,
    state_window: int = 0,
    chunk_size: int | None = None,
    aliased: bool = False,
    implementation: str = "wgpu",
    adapter: str | int | None = None,
    template: str | None = None,
    path: str = "auto",
    max_row_groups: int | None = None,
    prefill: str = "token",
    chunk_template: str | None = None,
    specialise: bool | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The ONNX ``com.microsoft::LinearAttention`` operator on WebGPU, NumPy in and out.

    Same inputs and attributes as ``oracles.linear_attention``; returns ``(output,
    present_state)`` in the inputs' dtype. ``chunk_size`` is the schema's tuning hint: it cannot
    change results, and this kernel ignores it (its chunk is ``CHUNK_SIZE``; ``prefill``, one of
    ``PREFILLS``, says which calls are chunked). ``aliased`` binds past and present state to one
    read-write buffer (ignored without ``past_state``). ``implementation`` is ``"wgpu"``
    (wgpu-native) or ``"dawn"`` (wgpudawn); ``adapter`` picks an adapter by name or number
    (``kernels.device.select_adapter``; default: the best); ``template`` is another WGSL template
    to compile for the token loop (default: the kernel's own), ``chunk_template`` for the chunked prefill;
    ``path`` one of ``KERNEL_PATHS`` (default: the fastest the device allows); ``max_row_groups`` one of
    ``ROW_GROUP_CHOICES`` (the geometry's bound; default: the device's best); ``prefill`` one of
    ``PREFILLS``; ``specialise`` compiles the call's shape into its pipeline (default: on GPUs,
    ``LinearAttentionKernel.specialise``). Raises
    ``ValidationError`` for invalid input, ``KernelUnsupported`` for a valid call
    the device cannot run, ``DeviceUnavailable`` when there is no such implementation/adapter.
    """
    del chunk_size
    arrays = {"query": query, "key": key, "value": value, "past_state": past_state, "decay": decay, "beta": beta}
    dims = validate(query, key, value, past_state, decay, beta, q_num_heads=q_num_heads, kv_num_heads=kv_num_heads,
                    update_rule=update_rule, scale=scale, state_window=state_window)
    kernel = get_kernel(implementation, adapter, template, path, max_row_groups, prefill, chunk_template, specialise)
    check_supported(kernel.device, dims)
    attributes = {"q_num_heads": dims.q_heads, "kv_num_heads": dims.kv_heads, "update_rule": dims.update_rule,
                  "scale": dims.scale, "state_window": dims.state_window}
    return run_cached(kernel, dims, aliased and dims.has_past, arrays, attributes)

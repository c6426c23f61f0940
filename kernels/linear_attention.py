"""LinearAttention on WebGPU: a device-resident API and the NumPy-in/NumPy-out operator on top.

``LinearAttentionKernel`` owns the compiled pipelines of one ``GpuDevice`` (a bounded LRU cache
keyed by ``KernelSpec``, the geometry class; everything else about a call is in its uniform,
``CallParams``). ``prepare`` binds device tensors to a pipeline and uniform and returns a
``BoundCall`` that can be dispatched any number of times without touching the host; ``accept``
performs docs/spec.md §3's select-a-slot-and-resume, by rebinding the accepted slot as the next call's
seed where WebGPU's offset alignment allows it (no copy at all), else by a slot copy on the GPU.
Those device-resident parts are shared with the other op kernels (``kernels.resident``).
``linear_attention`` mirrors the ONNX op exactly like ``oracles.linear_attention``, reusing
device buffers across calls of the same shape.

Every call is validated by ``oracles.validation.validate`` before anything reaches the GPU, so
the kernel and the oracle reject the same inputs with the same messages.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from oracles.validation import Dims, validate

from .device import DeviceTensor, GpuDevice, KernelUnsupported
from .geometry import MAX_D_K
from .options import WIDE_ROW_GROUPS, KernelOptions
from .resident import (
    BoundCall,
    ResidentKernel,
    Selection,
    Workspace,
    WorkspaceCache,
    device_for,
    run_cached,
    shape_only,
    workspaces,
)
from .shader import BINDINGS, MAX_ROW_GROUPS, TEMPLATES, CallParams, KernelSpec, render, template_source

__all__ = [
    "KERNEL_DTYPES", "MAX_D_K", "PARAMS_BYTES", "BoundCall", "LinearAttentionKernel", "Selection", "Workspace",
    "WorkspaceCache", "check_supported", "get_kernel", "linear_attention", "scratch_bytes", "workspaces",
]

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
    device.require_binding(max(int(np.prod(dims.state_shape)), int(np.prod(dims.output_shape)), dims.batch
                               * dims.seq_len * max(dims.q_heads, dims.kv_heads) * dims.d_k) * dims.dtype.itemsize)


class LinearAttentionKernel(ResidentKernel):
    """Compiled LinearAttention pipelines on one device, and the device-side operations around them."""

    BINDINGS = BINDINGS
    LABEL = "linear_attention"

    def __init__(self, options: KernelOptions | None = None, device: GpuDevice | None = None,
                 max_pipelines: int = 1024) -> None:
        """The kernel ``options`` describe (default: ``KernelOptions()``), on ``device`` (default: the process-wide
        device of ``options.implementation`` and ``options.adapter``; one of that implementation if given)."""
        options = options or KernelOptions()
        device = device_for(options.implementation, options.adapter, device)
        # a campaign's units draw head sizes 1-256 in both dtypes: with 64 pipelines the cache thrashed
        # (docs/campaign.md#history)
        super().__init__(device, max_pipelines)
        self.options = options
        """What this kernel was built from: its path, prefill and templates as given."""
        self.max_row_groups = options.max_row_groups or self._row_group_bound(device, options.path)
        """The most invocations sharing one column of the state (``KernelSpec.for_sizes``): ``options``' bound,
        or the device's best."""
        self.specialise = not device.software if options.specialise is None else options.specialise
        """Compile a pipeline per call shape (``KernelSpec.specialised``) rather than per geometry class; by
        default on GPUs, where that is cheap, and not on software adapters, where a compilation takes seconds."""

    @staticmethod
    def _row_group_bound(device: GpuDevice, path: str) -> int:
        """``WIDE_ROW_GROUPS`` where a subgroup reduction over that many row groups is possible, else
        ``MAX_ROW_GROUPS`` (why: docs/benchmark.md#kernel-history)."""
        size = device.subgroup_size
        wide = path in ("auto", "subgroup") and size is not None and size >= WIDE_ROW_GROUPS
        return WIDE_ROW_GROUPS if wide else MAX_ROW_GROUPS

    def spec_for(self, dims: Dims) -> KernelSpec:
        """The pipeline a validated call runs on: its geometry class, with this kernel's path and prefill applied,
        specialised on the call's shape where this kernel specialises."""
        spec = self._geometry(dims)
        return spec.specialised(CallParams.for_call(dims, aliased=False, seed_offset=0)) if self.specialise else spec

    def _geometry(self, dims: Dims) -> KernelSpec:
        path = self.options.path
        spec = replace(KernelSpec.for_dims(dims, self.max_row_groups), chunked=self.options.prefill == "chunked")
        if path == "scalar":
            return replace(spec, lanes=1)
        if path == "workgroup":
            return spec
        size = self.device.subgroup_size
        if size is not None and spec.row_groups <= size:
            return replace(spec, reduction="subgroup")
        if path == "subgroup":
            raise KernelUnsupported(f"subgroup reduction over {spec.row_groups} row groups needs subgroups of at "
                                    f"least that size; {self.device.description} has "
                                    + (f"{size}" if size else "no subgroups feature"))
        return spec

    def shader_code(self, spec: KernelSpec) -> str:
        """The WGSL of a pipeline: the token loop, or the chunked prefill, rendered for ``spec``."""
        # a variant of the token loop reaches the chunked prefill through the blocks they share
        token, chunk = self.options.template, self.options.chunk_template
        template = (chunk or template_source(TEMPLATES[True], token)) if spec.chunked else token
        return render(spec, template, self.device.subgroup_enable)

    def uniform_for(self, dims: Dims, aliased: bool, seed_offset: int) -> CallParams:
        """The uniform of a validated call (``CallParams.for_call``)."""
        return CallParams.for_call(dims, aliased, seed_offset)

    def check_call(self, dims: Dims) -> None:
        check_supported(self.device, dims)

    def attributes(self, dims: Dims) -> dict[str, Any]:
        return {"q_num_heads": dims.q_heads, "kv_num_heads": dims.kv_heads, "update_rule": dims.update_rule,
                "scale": dims.scale, "state_window": dims.state_window}

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

        Binding once and dispatching many times keeps the host out of a decoder's loop: the returned
        call touches no host memory when dispatched.

        Args:
            query, key, value, past_state, decay, beta: device tensors shaped as the op's inputs
                (docs/spec.md §1-2); ``past_state``, ``decay`` and ``beta`` may be None where the
                contract allows it.
            q_num_heads, kv_num_heads, update_rule, scale, state_window: the op's attributes.
            output, present_state: tensors to write into, of the call's output and state shapes and
                the inputs' dtype; allocated when None. ``present_state=past_state`` (the same tensor)
                selects the aliased binding: one read-write buffer, read at slot ``W-1``, then overwritten.

        Returns:
            A ``BoundCall``: ``dispatch()`` runs it, ``encode()`` records it into a command encoder.

        Raises:
            ValidationError: the inputs break a rule of the contract (the oracle's own message).
            KernelUnsupported: a valid call this device cannot run (e.g. float16 without ``shader-f16``).
            ValueError: ``output`` or ``present_state`` has the wrong shape or dtype.
        """
        tensors = {"query": query, "key": key, "value": value, "past_state": past_state,
                   "decay": decay, "beta": beta}
        dims = validate(
            **{name: shape_only(t) for name, t in tensors.items()},
            q_num_heads=q_num_heads, kv_num_heads=kv_num_heads, update_rule=update_rule,
            scale=scale, state_window=state_window, allow_empty_sequence=False,
        )
        check_supported(self.device, dims)
        return self.bind(dims, tensors, output, present_state)


_KERNELS: dict[KernelOptions, LinearAttentionKernel] = {}


def get_kernel(options: KernelOptions | None = None) -> LinearAttentionKernel:
    """The process-wide kernel of ``options`` (default: ``KernelOptions()``), on the process-wide device
    of its implementation and adapter; made on first use."""
    options = options or KernelOptions()
    if options not in _KERNELS:
        _KERNELS[options] = LinearAttentionKernel(options)
    return _KERNELS[options]


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
    options: KernelOptions | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The ONNX ``com.microsoft::LinearAttention`` operator on WebGPU, NumPy in and out.

    The drop-in twin of ``oracles.linear_attention`` (same names, same validation, same messages), so
    a test can hold one against the other; device buffers are reused across calls of one shape.

    Args:
        query, key, value, past_state, decay, beta: the op's inputs as NumPy arrays, float32 or float16
            (docs/spec.md §1-2); ``past_state``, ``decay`` and ``beta`` may be None where the contract allows.
        q_num_heads, kv_num_heads, update_rule, scale, state_window: the op's attributes.
        chunk_size: the schema's tuning hint; it cannot change results, and this kernel ignores it.
        aliased: bind past and present state to one read-write buffer (ignored without ``past_state``).
        options: the kernel that runs the call and its device (``KernelOptions``; default: wgpu-native on the
            best adapter, built as the device runs best).

    Returns:
        ``(output, present_state)`` in the inputs' dtype, shaped as the op's outputs.

    Raises:
        ValidationError: the inputs break a rule of the contract.
        KernelUnsupported: a valid call this device cannot run.
        DeviceUnavailable: no such implementation or adapter here.
    """
    del chunk_size
    arrays = {"query": query, "key": key, "value": value, "past_state": past_state, "decay": decay, "beta": beta}
    dims = validate(**arrays, q_num_heads=q_num_heads, kv_num_heads=kv_num_heads, update_rule=update_rule,
                    scale=scale, state_window=state_window, allow_empty_sequence=False)
    kernel = get_kernel(options)
    check_supported(kernel.device, dims)
    return run_cached(kernel, dims, aliased and dims.has_past, arrays)

"""CausalConvWithState on WebGPU: a device-resident API and the NumPy-in/NumPy-out operator on top.

``CausalConvKernel`` compiles ``kernels/causal_conv.wgsl`` on one ``GpuDevice``: one generic pipeline per
storage type on a software adapter (where each compilation takes seconds), one per call shape on a GPU
(``SHAPE_FIELDS`` written in as constants, ``ConvSpec.specialised``). ``prepare`` binds device tensors and
returns a ``BoundCall`` to dispatch any number of times without the host; ``accept`` selects the slot of an
accepted prefix and resumes from it, rebinding it as the next call's seed where its offset is aligned, else
copying it on the GPU. Those device-resident parts are the LinearAttention kernel's (``kernels.resident``).
``causal_conv`` is the ONNX op with NumPy in and out, reusing device buffers across calls of one shape.

The kernel covers ndim = 1 (what hybrid models run), channels-first and channels-last, any kernel size and
dilation, fused SiLU, with or without bias and past state, ``state_window`` 0..8, float32 and float16.
ndim 2 and 3 are refused (``KernelUnsupported``), as ONNX Runtime's CPU and CUDA kernels refuse them.

Every call is validated by the float64 oracle's rules (``oracles.causal_conv.validate``) before anything
reaches the GPU, so the kernel and the oracle reject the same inputs with the same messages; what is valid but
not run here (``check_supported``) is ``KernelUnsupported`` instead, so a caller can tell "invalid" from "not
here".
"""

from __future__ import annotations

from dataclasses import astuple, dataclass, replace
from typing import Any, ClassVar

import numpy as np

from oracles.causal_conv import ConvDims, validate

from .device import DeviceTensor, GpuDevice, KernelUnsupported
from .options import ConvKernelOptions
from .resident import BoundCall, ResidentKernel, device_for, run_cached, shape_only
from .shader import fill_template, kernel_file

TEMPLATE = "causal_conv.wgsl"
"""The kernel's WGSL template (a file of this package)."""

CONV_BINDINGS = ("input", "weight", "bias", "past_state", "output", "present_state")
"""The storage buffers at bindings 1.. (binding 0 is the uniform), as the WGSL declares them."""

STAND_IN = "input"
"""The input bound in place of one the call does not have (bias, past_state): never read."""

WORKGROUP_SIZE = 64
"""Invocations per workgroup, one per (batch entry, channel) row."""

MAX_WORKGROUPS_PER_DIMENSION = 65535
"""WebGPU's default ``maxComputeWorkgroupsPerDimension``: past it, workgroups continue along y."""

SHAPE_FIELDS = ("channels", "kernel_size", "dilation", "state_len", "channels_last", "activation", "has_bias")
"""The uniform's fields a pipeline specialised on a call's shape takes as constants: what addresses the input,
the weight and the state, and what the arithmetic is. The batch size, the call's length, its window and its
seed stay in the uniform, so a decoder varying them (drafts of several lengths, W) reuses one pipeline."""

SEED_ZERO, SEED_PAST, SEED_PRESENT = 0, 1, 2
"""``params.seed_mode``: no past state, read ``past_state``, read ``present_state`` (aliased binding)."""

ACTIVATION_CODES = {"none": 0, "silu": 1, "swish": 1}
"""``ConvDims.activation`` -> ``params.activation``."""


@dataclass(frozen=True)
class ConvParams:
    """The per-call uniform, field for field the WGSL ``Params`` struct (16 words, 64 bytes)."""

    batch: int
    seq_len: int
    window: int
    seed_offset: int
    """Element offset of the seed slot in the seed binding (0 when the slot is bound on its own)."""
    seed_mode: int
    zeros_known: int
    """1: the present state's leading ``W - T`` slots already hold exact zeros and are not stored again."""
    channels: int
    kernel_size: int
    dilation: int
    state_len: int
    channels_last: int
    activation: int
    has_bias: int

    WORDS: ClassVar[int] = 16

    @classmethod
    def for_call(cls, dims: ConvDims, aliased: bool, seed_offset: int) -> ConvParams:
        """The uniform of a validated call."""
        seed = (SEED_PRESENT if aliased else SEED_PAST) if dims.has_past else SEED_ZERO
        return cls(batch=dims.batch, seq_len=dims.seq_len, window=dims.state_window, seed_offset=seed_offset,
                   seed_mode=seed, zeros_known=0, channels=dims.channels, kernel_size=dims.kernel[-1],
                   dilation=dims.dilation, state_len=dims.state_length, channels_last=int(dims.channels_last),
                   activation=ACTIVATION_CODES[dims.activation], has_bias=int(dims.has_bias))

    @property
    def aliased(self) -> bool:
        """The seed is read from ``present_state``: past and present are one read-write buffer."""
        return self.seed_mode == SEED_PRESENT

    def source(self, binding: str) -> str:
        """The tensor bound at ``binding``: itself, or ``STAND_IN`` for an optional input never read."""
        optional = {"bias": self.has_bias, "past_state": self.seed_mode == SEED_PAST}
        return binding if optional.get(binding, True) else STAND_IN

    def pack(self) -> np.ndarray:
        """The uniform's bytes as ``WORDS`` uint32 (the rest zero padding)."""
        words = np.zeros(self.WORDS, dtype=np.uint32)
        values = astuple(self)
        words[: len(values)] = values
        return words


@dataclass(frozen=True)
class ConvSpec:
    """What a compiled pipeline is specialised on; the key of the pipeline cache."""

    dtype: str
    """``"float32"`` or ``"float16"``: the storage type of every input and output."""
    workgroup_size: int = WORKGROUP_SIZE
    constants: tuple[tuple[str, int], ...] = ()
    """Fields of the uniform compiled in as constants (``specialised``); none: the generic pipeline."""

    def specialised(self, uniform: ConvParams) -> ConvSpec:
        """This pipeline with ``SHAPE_FIELDS`` of ``uniform`` compiled in: one pipeline per call shape."""
        return replace(self, constants=tuple((name, getattr(uniform, name)) for name in SHAPE_FIELDS))

    def workgroups(self, dims: ConvDims) -> tuple[int, int, int]:
        """The dispatch size of a call: enough workgroups for its ``B * C`` rows, along x, then y."""
        groups = max(1, -(-dims.batch * dims.channels // self.workgroup_size))
        x = min(groups, MAX_WORKGROUPS_PER_DIMENSION)
        return x, -(-groups // x), 1


def render_conv(spec: ConvSpec, template: str | None = None) -> str:
    """The WGSL of one pipeline, from ``template`` (default: the kernel's own; another is a variant under test)."""
    store = "f16" if spec.dtype == "float16" else "f32"
    placeholders = {"ENABLE": "enable f16;" if store == "f16" else "", "STORE": store,
                    "WG": str(spec.workgroup_size)}
    return fill_template(template if template is not None else kernel_file(TEMPLATE), placeholders, spec.constants)


def check_supported(device: GpuDevice, dims: ConvDims) -> None:
    """Raise ``KernelUnsupported`` for a valid call this kernel cannot run on ``device``."""
    if dims.ndim != 1:
        raise KernelUnsupported(f"ndim = {dims.ndim}: this kernel (like ONNX Runtime's CPU and CUDA kernels) runs "
                                "ndim = 1")
    if dims.dtype == np.float16:
        device.require("shader-f16", "float16 CausalConvWithState")
    device.require_binding(max(int(np.prod(dims.output_shape)), int(np.prod(dims.state_shape))) * dims.dtype.itemsize)


class CausalConvKernel(ResidentKernel):
    """Compiled CausalConvWithState pipelines on one device, and the device-side operations around them."""

    BINDINGS = CONV_BINDINGS
    LABEL = "causal_conv"

    def __init__(self, options: ConvKernelOptions | None = None, device: GpuDevice | None = None,
                 max_pipelines: int = 256) -> None:
        """The kernel ``options`` describe (default: ``ConvKernelOptions()``), on ``device`` (default: the
        process-wide device of ``options.implementation`` and ``options.adapter``; one of that implementation
        if given)."""
        options = options or ConvKernelOptions()
        device = device_for(options.implementation, options.adapter, device)
        super().__init__(device, max_pipelines)
        self.options = options
        """What this kernel was built from: its template and specialisation as given."""
        self.specialise = not device.software if options.specialise is None else options.specialise
        """Compile a pipeline per call shape rather than one per storage type; by default on GPUs, where that
        is cheap, and not on software adapters, where a compilation takes seconds."""

    def spec_for(self, dims: ConvDims) -> ConvSpec:
        """The pipeline a validated call runs on."""
        spec = ConvSpec(dtype=str(dims.dtype))
        return spec.specialised(ConvParams.for_call(dims, aliased=False, seed_offset=0)) if self.specialise else spec

    def shader_code(self, spec: ConvSpec) -> str:
        return render_conv(spec, self.options.template)

    def uniform_for(self, dims: ConvDims, aliased: bool, seed_offset: int) -> ConvParams:
        return ConvParams.for_call(dims, aliased, seed_offset)

    def check_call(self, dims: ConvDims) -> None:
        check_supported(self.device, dims)

    def attributes(self, dims: ConvDims) -> dict[str, Any]:
        return {"ndim": dims.ndim, "activation": dims.activation, "dilation": dims.dilation,
                "channels_last": int(dims.channels_last), "state_window": dims.state_window}

    def prepare(
        self,
        input: DeviceTensor,
        weight: DeviceTensor,
        bias: DeviceTensor | None = None,
        past_state: DeviceTensor | None = None,
        *,
        ndim: int = 1,
        activation: str = "none",
        dilation: int = 1,
        channels_last: int = 0,
        state_window: int = 0,
        output: DeviceTensor | None = None,
        present_state: DeviceTensor | None = None,
    ) -> BoundCall:
        """Validate a call on device tensors and bind it; nothing runs until ``dispatch``.

        Passing ``present_state=past_state`` (the same tensor) selects the aliased binding: one read-write
        buffer, read at slot ``W-1`` and then overwritten. ``output`` and ``present_state`` are allocated when
        not given. Raises ``ValidationError`` for invalid input and ``KernelUnsupported`` for a valid call this
        device cannot run.
        """
        tensors = {"input": input, "weight": weight, "bias": bias, "past_state": past_state}
        dims = validate(*(shape_only(t) for t in tensors.values()), ndim=ndim, activation=activation,
                        dilation=dilation, channels_last=channels_last, state_window=state_window)
        check_supported(self.device, dims)
        return self.bind(dims, tensors, output, present_state)


_KERNELS: dict[ConvKernelOptions, CausalConvKernel] = {}


def get_kernel(options: ConvKernelOptions | None = None) -> CausalConvKernel:
    """The process-wide kernel of ``options`` (default: ``ConvKernelOptions()``), on the process-wide device of
    its implementation and adapter; made on first use."""
    options = options or ConvKernelOptions()
    if options not in _KERNELS:
        _KERNELS[options] = CausalConvKernel(options)
    return _KERNELS[options]


def causal_conv(
    input: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None = None,
    past_state: np.ndarray | None = None,
    *,
    ndim: int = 1,
    activation: str = "none",
    dilation: int = 1,
    channels_last: int = 0,
    state_window: int = 0,
    aliased: bool = False,
    options: ConvKernelOptions | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The ONNX ``com.microsoft::CausalConvWithState`` operator on WebGPU, NumPy in and out.

    Returns ``(output, present_state)`` in the inputs' dtype. ``aliased`` binds past and present state to
    one read-write buffer (ignored without ``past_state``). ``options`` is the kernel that runs the call and
    its device (``ConvKernelOptions``; default: wgpu-native on the best adapter, built as the device runs best).
    Raises ``ValidationError`` for invalid input, ``KernelUnsupported`` for a valid call the device cannot run,
    ``DeviceUnavailable`` when there is no such implementation/adapter.
    """
    arrays = {"input": input, "weight": weight, "bias": bias, "past_state": past_state}
    dims = validate(input, weight, bias, past_state, ndim=ndim, activation=activation, dilation=dilation,
                    channels_last=channels_last, state_window=state_window)
    kernel = get_kernel(options)
    check_supported(kernel.device, dims)
    return run_cached(kernel, dims, aliased and dims.has_past, arrays)

"""The suite's own WGSL kernel as two backends: wgpu-native (naga) and Dawn (Tint).

Both run the same WGSL and the same Python (``kernels``); only the WebGPU implementation under
them differs, so a disagreement between them is a compiler or runtime difference. Both offer the
device-resident chain (``run_chain``): one prepared call per call length re-dispatched over a chain's
calls, all on one pair of state buffers, each resuming from the previous one's accepted slot by the
kernel's own select-and-resume.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from fuzz.backends.base import Backend, Capabilities, ChainCall, Rejected, Unavailable, Unsupported
from fuzz.backends.device_choice import DeviceChoice
from fuzz.implementation import Implementation
from fuzz.model.case import Case
from fuzz.model.chain import AcceptMode, Chain
from kernels.device import (
    DeviceTensor,
    DeviceUnavailable,
    GpuDevice,
    KernelUnsupported,
    describe_adapters,
    get_device,
    load_implementation,
)
from kernels.linear_attention import (
    BoundCall,
    LinearAttentionKernel,
    Selection,
    Workspace,
    check_supported,
    get_kernel,
    linear_attention,
    workspaces,
)
from kernels.options import WIDE_ROW_GROUPS, KernelOptions
from oracles.prefix import SEQUENCE_INPUTS
from oracles.validation import ValidationError


def run_device_chain(kernel: LinearAttentionKernel, case: Case, chain: Chain) -> list[ChainCall]:
    """The calls of a chain case on the GPU, the state never passing through the host.

    The past state is uploaded once; every call of the chain, whatever its length, reads and writes
    the same two state buffers (one when the case is aliased), through a call prepared once per call
    length, so a present state is written in turn by calls of ``T >= W`` and of ``T < W`` (whose
    leading zero slots the kernel stores only where it does not know them to be there already). Each
    call uploads only its tokens into its length's inputs and is dispatched as ``kernel.accept`` left
    the previous one: rebound to the accepted slot, or after a GPU copy into the seed. Results are
    downloaded after each call for the caller to check; nothing is uploaded back.
    """
    device = kernel.device
    cases = [chain.call(case, index) for index in range(chain.calls)]
    for call_case in cases:
        check_supported(device, call_case.dims())  # before anything is allocated
    dims = cases[0].dims()
    past = device.upload(cases[0].inputs["past_state"], "past_state")
    present = past if case.aliased else device.tensor(dims.state_shape, dims.dtype, "present_state")
    by_length: dict[int, Workspace] = {}
    calls, seeded_by, previous = [], "past_state", None
    try:
        for index, call_case in enumerate(cases):
            workspace = by_length.get(call_case.seq_len)
            if workspace is None:
                workspace = by_length[call_case.seq_len] = _bind_length(kernel, call_case, past, present)
            else:
                _upload_tokens(device, workspace.inputs, call_case)
            call = workspace.call if previous is None else _bound_like(workspace.call, previous)
            accepted = chain.accepted[index] if index < len(chain.accepted) else None
            (output, present_state), selection = _dispatch_and_accept(kernel, call, accepted, chain.mode)
            calls.append(ChainCall(output, present_state, seeded_by))
            if selection is not None:
                previous, seeded_by = selection.call, selection.path
    finally:
        for workspace in by_length.values():
            workspace.release()  # the shared present state too (a release is idempotent)
        present.release()
        past.release()
    return calls


def _bind_length(kernel: LinearAttentionKernel, call: Case, past: DeviceTensor, present: DeviceTensor) -> Workspace:
    """The tokens of a chain's call uploaded and bound to the chain's state buffers: the workspace of its length."""
    dims = call.dims()
    inputs = {name: kernel.device.upload(x, name) for name, x in call.inputs.items() if name in SEQUENCE_INPUTS}
    bound = kernel.prepare(**inputs, past_state=past, present_state=present, q_num_heads=dims.q_heads,
                           kv_num_heads=dims.kv_heads, update_rule=dims.update_rule, scale=dims.scale,
                           state_window=dims.state_window)
    return Workspace(inputs, bound)


def _bound_like(call: BoundCall, like: BoundCall) -> BoundCall:
    """``call`` reading its seed where ``like`` does and writing ``like``'s present state: ``call`` itself, or
    the same call rebound (``accept`` left ``like`` rebound to a slot; ``call`` may be of another length)."""
    if like.seed is call.seed and like.seed_slot == call.seed_slot and like.present_state is call.present_state:
        return call
    if like.seed is None:
        raise ValueError("a chain's calls resume from a past state: the previous call has none")
    return call.with_seed(like.seed, like.seed_slot, like.present_state)


def _upload_tokens(device: GpuDevice, inputs: dict[str, DeviceTensor], call: Case) -> None:
    """Write a later call's token inputs into the bound tensors (the state stays where ``accept`` left it)."""
    for name, x in call.inputs.items():
        if name in SEQUENCE_INPUTS:
            device.upload(x, name, into=inputs[name])


def _dispatch_and_accept(kernel: LinearAttentionKernel, call: BoundCall, accepted: int | None,
                         mode: AcceptMode) -> tuple[list[np.ndarray], Selection | None]:
    """Run ``call``, download its results, then resume after ``accepted`` of its tokens (None: the
    chain ends here). Accepting 0 on an aliased binding restores the seed saved before the call."""
    # the aliased binding reads its seed from present_state, which the call overwrites
    saved = kernel.save_seed(call.present_state) if accepted == 0 and call.aliased else None
    try:
        call.dispatch()
        results = kernel.device.download_all([call.output, call.present_state])
        selection = None if accepted is None else kernel.accept(call, accepted, saved, mode=mode)
    finally:
        if saved is not None:
            saved.release()
    return results, selection


def chosen_adapter(implementation: str, label: str) -> tuple[list[str], int | None]:
    """The adapters of a WebGPU implementation (``"wgpu"`` or ``"dawn"``) in words, numbered by position,
    and the number of the one the command line chose (``fuzz.backends.device_choice``; None: the
    default). ``DeviceUnavailable`` when the implementation is missing, ``NoSuchDevice`` for a bad choice."""
    adapters = describe_adapters(load_implementation(implementation))
    return adapters, DeviceChoice.from_environment().pick(adapters, f"{label} adapters")


class _WgslKernelBackend(Backend):
    """Runs a case through ``kernels.linear_attention`` on one WebGPU implementation."""

    webgpu: str
    """The WebGPU implementation the kernel runs on: ``"wgpu"`` (wgpu-native) or ``"dawn"`` (not ``implementation``,
    which every backend has: what is under test and its version, the key of known issues)."""
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
    software adapter; None: the kernel's default (on a GPU always: there the default is the fastest)."""
    specialise: bool | None = None
    """Pipelines specialised on each call's shape (``LinearAttentionKernel.specialise``); None: the kernel's
    default (on a GPU, where that is what runs, specialised; on a software adapter generic)."""

    def __init__(self, adapter: str | int | None = None) -> None:
        """On ``adapter`` (a name or number, ``kernels.device.select_adapter``), or by default on the
        adapter the command line chose (``fuzz.backends.device_choice``)."""
        try:
            self.adapters, chosen = chosen_adapter(self.webgpu, self.name)
            self.adapter = adapter if adapter is not None else chosen
            software = get_device(self.webgpu, self.adapter).software
            self.options = KernelOptions(
                self.webgpu, self.adapter, self.template, self.chunk_template,
                path=self.software_path if software else "auto",
                max_row_groups=self.software_row_groups if software else None,
                prefill=self.prefill, specialise=self.specialise)
            """The kernel this backend runs: the class's choices, those for a software adapter where it has one."""
            self.kernel: LinearAttentionKernel = get_kernel(self.options)
        except DeviceUnavailable as err:
            raise Unavailable(f"{self.name}: {err}") from err

    def capabilities(self) -> Capabilities:
        device = self.kernel.device
        dtypes = ("float32", "float16") if "shader-f16" in device.features else ("float32",)
        notes: tuple[str, ...] = () if "shader-f16" in device.features else (
            "adapter lacks shader-f16: float16 is unsupported",)
        options = self.options
        if options.path != "auto":
            notes += (f"kernel path {options.path} (a software adapter: see software_path)",)
        if options.max_row_groups is not None:
            notes += (f"at most {options.max_row_groups} row groups per column (a software adapter: see "
                      "software_row_groups)",)
        if options.prefill != "token":
            notes += (f"{options.prefill} prefill (kernels/chunked.wgsl) for every call",)
        if self.kernel.specialise:
            notes += ("pipelines specialised on each call's sizes and layouts",)
        return Capabilities(
            dtypes=dtypes,
            window="native",
            aliasing=True,
            device=device.description,
            versions={device.module.__name__: device.version, "numpy": np.__version__},
            notes=notes,
            implementation=Implementation(device.module.__name__, device.version),
            devices=tuple(self.adapters),
        )

    @property
    def pipelines_compiled(self) -> int:
        return self.kernel.compilations

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        with self._outcomes():
            return linear_attention(**case.kwargs(), aliased=case.aliased, options=self.options)

    def run_chain(self, case: Case, chain: Chain) -> list[ChainCall]:
        with self._outcomes():
            return run_device_chain(self.kernel, case, chain)

    @contextmanager
    def _outcomes(self) -> Iterator[None]:
        """The kernel's errors as the suite's outcomes: invalid input is ``Rejected``, a valid call
        this device cannot run ``Unsupported``."""
        try:
            yield
        except ValidationError as err:
            raise Rejected(self.name, str(err)) from err
        except KernelUnsupported as err:
            raise Unsupported(self.name, str(err)) from err

    def close(self) -> None:
        workspaces(self.kernel).clear()


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
    """The WGSL kernel on Dawn with the geometry a GPU with subgroups of 32 compiles: up to 32 row groups
    per column, so heads of ``d_k > 64`` take the staged checkpoint stores (``KernelSpec.staged_stores``),
    the path an H200 runs at ``d_k = 128``. On a GPU this is ``wgpu-dawn``; on lavapipe (subgroups of 4, or 8
    at full SIMD width) the default geometry stops at 16 row groups and never stages, so without this backend
    a campaign there would never run the production path of real head sizes."""

    name = "wgpu-wide"
    software_row_groups = WIDE_ROW_GROUPS


class WgpuSpecialisedBackend(WgpuNativeBackend):
    """The WGSL kernel on wgpu-native with a pipeline specialised on each call's sizes and layouts
    (``kernels.shader.SPECIALISED_FIELDS`` written in as constants): the form a GPU runs by default. On a GPU
    this is ``wgpu``; on lavapipe, where the kernel keeps the generic pipelines (a compilation per call shape
    costs seconds there), without this backend a campaign would never run the form GPUs run."""

    name = "wgpu-specialised"
    specialise = True

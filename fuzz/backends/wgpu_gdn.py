"""The suite's own GatedDeltaNet and GatedDeltaNetStateReplay kernels as backends, on wgpu-native and on Dawn.

Both ops run through their NumPy APIs (``kernels.gated_delta_net``, ``kernels.state_replay``) and return every
output (``run_outputs``); ``resume`` is the device-resident select-and-resume of this design: a verify call, then
each request's accepted tokens replayed from the capsule on the device, only the resumed state read back.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fuzz.backends.base import Backend, Capabilities, Unavailable, Unsupported
from fuzz.backends.kernel_backend import chosen_adapter, kernel_outcomes
from fuzz.implementation import Implementation
from fuzz.model.case import Case
from fuzz.model.ops import GATED_DELTA_NET, GATED_DELTA_NET_STATE_REPLAY
from kernels.device import DeviceTensor, DeviceUnavailable, GpuDevice, get_device
from kernels.gated_delta_net import gated_delta_net, get_gdn_kernel, upload_inputs
from kernels.state_replay import state_replay


class _GdnKernelBackend(Backend):
    """Runs GatedDeltaNet and its replay through the suite's kernels on one WebGPU implementation."""

    webgpu: str
    """``"wgpu"`` (wgpu-native) or ``"dawn"``."""

    def __init__(self, adapter: str | int | None = None) -> None:
        try:
            self.adapters, chosen = chosen_adapter(self.webgpu, self.name)
            self.adapter = adapter if adapter is not None else chosen
            self.device: GpuDevice = get_device(self.webgpu, self.adapter)
        except DeviceUnavailable as err:
            raise Unavailable(f"{self.name}: {err}") from err

    def capabilities(self) -> Capabilities:
        f16 = "shader-f16" in self.device.features
        return Capabilities(
            dtypes=("float32", "float16") if f16 else ("float32",), window="none", aliasing=True,
            device=self.device.description,
            versions={self.device.module.__name__: self.device.version, "numpy": np.__version__},
            notes=("GatedDeltaNet: float16 q/k/v/output where the adapter has shader-f16; the replay is float32",),
            implementation=Implementation(self.device.module.__name__, self.device.version),
            devices=tuple(self.adapters), ops=(GATED_DELTA_NET.name, GATED_DELTA_NET_STATE_REPLAY.name))

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        raise Unsupported(self.name, f"{case.op.name}'s outputs are {', '.join(case.op.outputs)}: run_outputs")

    def run_outputs(self, case: Case) -> tuple[np.ndarray, ...]:
        with kernel_outcomes(self.name):
            if case.op is GATED_DELTA_NET:
                return gated_delta_net(**case.kwargs(), aliased=case.aliased, implementation=self.webgpu,
                                       adapter=self.adapter)
            if case.op is GATED_DELTA_NET_STATE_REPLAY:
                return (state_replay(**case.kwargs(), implementation=self.webgpu, adapter=self.adapter),)
        raise Unsupported(self.name, f"runs GatedDeltaNet and its replay only, not {case.op.name}")

    def resume(self, calls: Sequence[Case], accepted: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """Each call run on the device, then each request's state after its accepted tokens rebuilt there by
        replay (``GatedDeltaNetKernel.accept``) and bound as the next call's initial state; the resumed states are
        read back after the chain, only to be checked."""
        kernel = get_gdn_kernel(self.device)
        owned: dict[int, DeviceTensor] = {}
        resumed: list[DeviceTensor] = []
        with kernel_outcomes(self.name):
            try:
                for index, (case, kept) in enumerate(zip(calls, accepted, strict=True)):
                    arrays: dict[str, np.ndarray | None] = {n: x for n, x in case.inputs.items()
                                                            if not (index and n == "initial_state")}
                    inputs = upload_inputs(self.device, arrays)
                    if resumed:
                        inputs["initial_state"] = resumed[-1]
                    call = kernel.prepare(**inputs, **case.attrs)
                    owned.update((id(t), t) for t in call.tensors.values())
                    into = self.device.tensor(call.dims.state_shape, np.float32, f"resumed {index}")
                    resumed.append(into)
                    try:
                        call.dispatch()
                        kernel.accept(call, kept, into)
                    finally:
                        call.release()
                return [self.device.download(state) for state in resumed]
            finally:
                for tensor in {**owned, **{id(t): t for t in resumed}}.values():
                    tensor.release()


class WgpuGdnBackend(_GdnKernelBackend):
    """The GatedDeltaNet kernels on wgpu-native (``import wgpu``; naga compiles the shaders)."""

    name = "wgpu-gdn"
    webgpu = "wgpu"


class WgpuGdnDawnBackend(_GdnKernelBackend):
    """The GatedDeltaNet kernels on Dawn (``import wgpudawn``; Tint compiles the shaders, as in ORT and browsers)."""

    name = "wgpu-gdn-dawn"
    webgpu = "dawn"

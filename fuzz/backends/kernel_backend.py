"""What the backends of the suite's own WGSL kernels share: the adapter choice, the capabilities, the outcomes.

Each op kernel (``kernels.linear_attention``, ``kernels.causal_conv``) is a backend on wgpu-native (Naga) and on
Dawn (Tint). Both run the same WGSL and the same Python, so a disagreement between them is a compiler or runtime
difference. A ``KernelBackend`` makes the kernel its subclass describes on the adapter the command line chose,
turns the kernel's errors into the suite's outcomes, and runs the device-resident chain
(``fuzz.backends.device_chain``).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

import numpy as np

from fuzz.backends.base import Backend, Capabilities, ChainCall, Rejected, Unavailable, Unsupported
from fuzz.backends.device_chain import run_device_chain
from fuzz.backends.device_choice import DeviceChoice
from fuzz.implementation import Implementation
from fuzz.model.case import Case
from fuzz.model.chain import Chain
from fuzz.model.ops import Op
from kernels.device import (
    DeviceUnavailable,
    GpuDevice,
    KernelUnsupported,
    describe_adapters,
    get_device,
    load_implementation,
)
from kernels.resident import ResidentKernel, workspaces
from oracles.validation import ValidationError


def chosen_adapter(implementation: str, label: str) -> tuple[list[str], int | None]:
    """The adapters of a WebGPU implementation (``"wgpu"`` or ``"dawn"``) in words, numbered by position,
    and the number of the one the command line chose (``fuzz.backends.device_choice``; None: the
    default). ``DeviceUnavailable`` when the implementation is missing, ``NoSuchDevice`` for a bad choice."""
    adapters = describe_adapters(load_implementation(implementation))
    return adapters, DeviceChoice.from_environment().pick(adapters, f"{label} adapters")


GRANTED_LIMITS = ("max-compute-invocations-per-workgroup", "max-compute-workgroup-storage-size",
                  "max-storage-buffer-binding-size")
"""The limits a platform's notes report: those the kernels' workgroups and bindings come closest to."""


def grants(device: GpuDevice) -> tuple[str, ...]:
    """What a device granted, as notes: the features the kernels use, the limits they may reach, the subgroup size
    (for a platform whose grants differ from lavapipe's: SwiftShader, a browser)."""
    limits = ", ".join(f"{name} {device.limits[name]}" for name in GRANTED_LIMITS)
    return (f"features granted: {', '.join(sorted(device.features)) or 'none'}", f"limits: {limits}",
            f"subgroups of {device.subgroup_size or 'none'}")


@contextmanager
def kernel_outcomes(backend: str) -> Iterator[None]:
    """A kernel's errors as the suite's outcomes: invalid input is ``Rejected``, a valid call this device cannot
    run ``Unsupported`` (``backend`` names who said so)."""
    try:
        yield
    except ValidationError as err:
        raise Rejected(backend, str(err)) from err
    except KernelUnsupported as err:
        raise Unsupported(backend, str(err)) from err


class KernelBackend(Backend):
    """One op kernel on one WebGPU implementation; subclasses say which op and how the kernel is built."""

    webgpu: str
    """The WebGPU implementation the kernel runs on: ``"wgpu"`` (wgpu-native) or ``"dawn"`` (not ``implementation``,
    which every backend has: what is under test and its version, the key of known issues)."""
    op: Op
    """The op the kernel runs."""

    def __init__(self, adapter: str | int | None = None) -> None:
        """On ``adapter`` (a name or number, ``kernels.device.select_adapter``), or by default on the
        adapter the command line chose (``fuzz.backends.device_choice``)."""
        try:
            self.adapters, chosen = self.choose_adapter()
            self.adapter = adapter if adapter is not None else chosen
            self.kernel: ResidentKernel = self.make_kernel(get_device(self.webgpu, self.adapter).software)
        except DeviceUnavailable as err:
            raise Unavailable(f"{self.name}: {err}") from err

    def choose_adapter(self) -> tuple[list[str], str | int | None]:
        """The adapters it could run on, in words, and its choice among them (``chosen_adapter``: the command
        line's); a backend bound to one platform overrides it."""
        return chosen_adapter(self.webgpu, self.name)

    @abstractmethod
    def make_kernel(self, software: bool) -> ResidentKernel:
        """The kernel this backend runs, on ``self.webgpu`` and ``self.adapter`` (``software``: the adapter is a
        software one, where a backend may build the kernel otherwise)."""

    def kernel_notes(self) -> tuple[str, ...]:
        """What the capabilities say about how this backend's kernel is built."""
        return ()

    def capabilities(self) -> Capabilities:
        device = self.kernel.device
        f16 = "shader-f16" in device.features
        notes = () if f16 else ("adapter lacks shader-f16: float16 is unsupported",)
        return Capabilities(
            dtypes=("float32", "float16") if f16 else ("float32",),
            window="native",
            aliasing=True,
            device=device.description,
            versions={device.module.__name__: device.version, "numpy": np.__version__},
            notes=notes + self.kernel_notes(),
            implementation=Implementation(device.module.__name__, device.version),
            devices=tuple(self.adapters),
            ops=(self.op.name,),
        )

    def run(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        if case.op is not self.op:
            raise Unsupported(self.name, f"runs {self.op.name} only, not {case.op.name}")
        with self._outcomes():
            return self.call(case)

    @abstractmethod
    def call(self, case: Case) -> tuple[np.ndarray, np.ndarray]:
        """One case through the kernel's NumPy API."""

    def run_chain(self, case: Case, chain: Chain) -> list[ChainCall]:
        if case.op is not self.op:
            raise Unsupported(self.name, f"runs {self.op.name} only, not {case.op.name}")
        with self._outcomes():
            return run_device_chain(self.kernel, case, chain)

    def _outcomes(self) -> AbstractContextManager[None]:
        return kernel_outcomes(self.name)

    def resident_kernel(self) -> ResidentKernel:
        return self.kernel

    @property
    def pipelines_compiled(self) -> int:
        return self.kernel.compilations

    def close(self) -> None:
        workspaces(self.kernel).clear()

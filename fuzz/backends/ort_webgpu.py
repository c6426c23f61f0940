"""ONNX Runtime's WebGPU EP as a backend, from a plugin library or the built-in EP.

Where the EP comes from, first match wins:

1. a plugin library path given as ``library=`` or in ``$LAFUZZ_WEBGPU_EP_LIBRARY`` (an
   engineer's local build of the EP, the main customer of this suite);
2. the ``onnxruntime-ep-webgpu`` plugin package;
3. the EP built into the ``onnxruntime-webgpu`` package, when that is the installed onnxruntime.

Software adapters (lavapipe) are allowed unless ``ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER`` says
otherwise. The plugin's devices are numbered hardware GPUs first; the command line's choice
(``fuzz.backends.device_choice``) picks one, and by default the first. The plugin's version is
read from the library itself (its ``ep_metadata``): it is the version known issues are keyed by.
"""

from __future__ import annotations

import os
from typing import Any

from fuzz.backends.base import Unavailable
from fuzz.backends.device_choice import LIBRARY_ENV, DeviceChoice
from fuzz.backends.ort_session import InProcessOrtBackend, describe_hardware
from fuzz.implementation import Implementation

PLUGIN = "onnxruntime-ep-webgpu"
"""The implementation name of every WebGPU plugin library, the package's or a local build."""
BUILT_IN = "onnxruntime-webgpu"
"""The implementation name of the EP built into the ``onnxruntime-webgpu`` package."""

SOFTWARE_ADAPTER_ENV = "ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER"

_registered: dict[str, str] = {}
"""Plugin library real path -> registration name: ORT registers a library once per process."""


def register_library(ort: Any, path: str) -> None:
    """Register the plugin EP library at ``path`` with ORT, once per process."""
    real = os.path.realpath(path)
    if real in _registered:
        return
    if not os.path.isfile(real):
        raise Unavailable(f"ort-webgpu: plugin library {path} does not exist")
    name = f"lafuzz-webgpu-{len(_registered)}"
    try:
        ort.register_execution_provider_library(name, real)
    except Exception as err:
        raise Unavailable(f"ort-webgpu: cannot register plugin library {path}: {err}") from err
    _registered[real] = name


class OrtWebGpuBackend(InProcessOrtBackend):
    """The WebGPU EP with the CPU fallback disabled and state bound as ``"webgpu"`` OrtValues."""

    name = "ort-webgpu"
    provider = "WebGpuExecutionProvider"
    value_device = "webgpu"
    unsupported_messages = ("requires head_dim_k <= 256",)

    def __init__(self, *, library: str | None = None, cache_size: int | None = None) -> None:
        self.library = library or os.environ.get(LIBRARY_ENV) or None
        self._ep_devices: list[Any] = []
        self._offered: list[Any] = []
        self._source = ""
        self._version = ""
        super().__init__(cache_size=cache_size)

    def _load(self) -> None:
        os.environ.setdefault(SOFTWARE_ADAPTER_ENV, "1")
        path = self.library
        if path is None:
            try:
                import onnxruntime_ep_webgpu
            except ImportError:
                if self.provider in self.ort.get_available_providers():
                    DeviceChoice.from_environment().pick((), f"{self.name} (the built-in EP chooses its own device)")
                    self._source = "built-in EP"
                    return
                raise Unavailable(
                    "ort-webgpu: neither onnxruntime-ep-webgpu nor onnxruntime-webgpu is installed, "
                    f"and ${LIBRARY_ENV} is not set"
                ) from None
            path = onnxruntime_ep_webgpu.get_library_path()
        register_library(self.ort, path)
        real = os.path.realpath(path)
        devices = [
            d for d in self.ort.get_ep_devices()
            if d.ep_name == self.provider
            and os.path.realpath(d.ep_metadata.get("library_path", real)) == real
        ]
        if not devices:
            raise Unavailable(
                f"ort-webgpu: plugin {path} offers no device "
                f"({SOFTWARE_ADAPTER_ENV}={os.environ.get(SOFTWARE_ADAPTER_ENV)!r}; "
                "a CPU-only machine needs 1 and a Vulkan driver such as lavapipe)"
            )
        gpu = self.ort.OrtHardwareDeviceType.GPU
        self._offered = sorted(devices, key=lambda d: d.device.type != gpu)
        chosen = DeviceChoice.from_environment().pick(self._devices(), f"{self.name} devices")
        self._ep_devices = [self._offered[chosen or 0]]
        self._version = self._ep_devices[0].ep_metadata.get("version", "unknown")
        self._source = f"plugin {self._version} from {real}"

    def _session_cache_size(self) -> int:
        """Sessions kept per backend. They hold their buffers on the device until dropped, so few on a GPU,
        where GPU memory ran out with 256 per worker; many on a software adapter, where an evicted session
        means its shaders compiled again (docs/campaign.md#throughput)."""
        software = not self._ep_devices or self._ep_devices[0].device.type.name == "CPU"
        return 256 if software else 32

    def _providers(self, options: Any) -> list | None:
        if not self._ep_devices:
            return [self.provider]
        options.add_provider_for_devices(self._ep_devices, {})
        return None

    def _device(self) -> str:
        if not self._ep_devices:
            return f"WebGPU adapter chosen by the {self._source}"
        hw = self._ep_devices[0].device
        software = " - a software adapter (no GPU here)" if hw.type.name == "CPU" else ""
        return f"WebGPU on a {describe_hardware(hw)}{software}"

    def _devices(self) -> tuple[str, ...]:
        return tuple(describe_hardware(d.device) for d in self._offered)

    def _versions(self) -> dict[str, str]:
        return {**super()._versions(), "webgpu-ep": self._source}

    def _implementation(self) -> Implementation:
        if not self._ep_devices:
            return Implementation(BUILT_IN, self.ort.__version__)
        return Implementation(PLUGIN, self._version)

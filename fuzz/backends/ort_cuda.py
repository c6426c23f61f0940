"""ONNX Runtime's CUDA EP as a backend (``onnxruntime-gpu``): the one EP that implements ``W > 0``.

Its window results are a second reference beside the oracle. On a machine without the package or
without a CUDA device it is ``Unavailable``, with the reason. Its GPUs are the CUDA EP's entries of
``get_ep_devices()``, taken to be in CUDA device order; where this ORT lists none, a chosen
``--device`` is passed on as the ``device_id`` unchecked (ORT then refuses a GPU that does not exist).
"""

from __future__ import annotations

from typing import Any

from fuzz.backends.base import Unavailable
from fuzz.backends.device_choice import DeviceChoice
from fuzz.backends.ort_session import InProcessOrtBackend, describe_hardware


class OrtCudaBackend(InProcessOrtBackend):
    """The CUDA EP on one device, state bound as ``"cuda"`` OrtValues, CPU fallback disabled."""

    name = "ort-cuda"
    provider = "CUDAExecutionProvider"
    value_device = "cuda"

    def __init__(self, *, device_id: int | None = None, cache_size: int | None = None) -> None:
        """On GPU ``device_id``, or by default on the one the command line chose (else GPU 0)."""
        self.device_id = device_id
        self._listed: tuple[str, ...] = ()
        super().__init__(cache_size=cache_size)

    def _load(self) -> None:
        available = self.ort.get_available_providers()
        if self.provider not in available:
            raise Unavailable(
                f"{self.name}: this onnxruntime has no {self.provider} (install onnxruntime-gpu); "
                f"it has {', '.join(available)}"
            )
        devices = self.ort.get_ep_devices()
        self._listed = tuple(describe_hardware(d.device) for d in devices if d.ep_name == self.provider)
        if self.device_id is None:
            choice = DeviceChoice.from_environment()
            self.device_id = choice.pick(self._listed, f"{self.name} GPUs") if self._listed else choice.index
        self.device_id = self.device_id or 0

    def _session_cache_size(self) -> int:
        """Sessions kept per backend: few, since each holds its own memory arena and cuBLAS handle on the GPU
        until it is dropped, and 256 per worker exhausted a GPU's memory (docs/campaign.md#throughput)."""
        return 16

    def _providers(self, options: Any) -> list:
        return [(self.provider, {"device_id": self.device_id, "arena_extend_strategy": "kSameAsRequested"})]

    def _device(self) -> str:
        return f"CUDA device {self.device_id}"

    def _devices(self) -> tuple[str, ...]:
        return self._listed

"""ONNX Runtime's CUDA EP as a backend (``onnxruntime-gpu``): the one EP that implements ``W > 0``.

Its window results are a second reference beside the oracle. On a machine without the package or
without a CUDA device it is ``Unavailable``, with the reason.
"""

from __future__ import annotations

from typing import Any

from fuzz.backends.base import Unavailable
from fuzz.backends.ort_session import OrtBackend


class OrtCudaBackend(OrtBackend):
    """The CUDA EP on one device, state bound as ``"cuda"`` OrtValues, CPU fallback disabled."""

    name = "ort-cuda"
    provider = "CUDAExecutionProvider"
    value_device = "cuda"

    def __init__(self, *, device_id: int = 0, cache_size: int = 16) -> None:
        # each session holds its own memory arena and cuBLAS handle on the GPU, kept until it is dropped:
        # four campaign workers with 256 sessions each filled the H200's 141 GB in 35 s
        self.device_id = device_id
        super().__init__(cache_size=cache_size)

    def _load(self) -> None:
        available = self.ort.get_available_providers()
        if self.provider not in available:
            raise Unavailable(
                f"{self.name}: this onnxruntime has no {self.provider} (install onnxruntime-gpu); "
                f"it has {', '.join(available)}"
            )

    def _providers(self, options: Any) -> list:
        return [(self.provider, {"device_id": self.device_id, "arena_extend_strategy": "kSameAsRequested"})]

    def _device(self) -> str:
        return f"CUDA device {self.device_id}"

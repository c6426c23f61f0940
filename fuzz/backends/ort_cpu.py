"""ONNX Runtime's CPU EP as a backend: ``W = 0`` natively, ``W > 0`` through prefix runs.

Its validation is the suite's reference for bad input (docs/spec.md §6), so its messages matter as much
as its numbers.
"""

from __future__ import annotations

import platform
from typing import Any

from fuzz.backends.ort_session import InProcessOrtBackend


class OrtCpuBackend(InProcessOrtBackend):
    """The CPU EP alone in the session (it is the fallback, so there is no fallback to disable)."""

    name = "ort-cpu"
    provider = "CPUExecutionProvider"
    value_device = "cpu"
    fallback_can_be_disabled = False

    def _providers(self, options: Any) -> list:
        return [self.provider]

    def _device(self) -> str:
        return f"host CPU ({platform.machine()}, {platform.processor() or 'unknown processor'})"

"""The WebGPU EP built into an onnxruntime of another Python environment (``onnxruntime-webgpu`` 1.27.0).

That package installs the same ``onnxruntime`` module as the suite's own onnxruntime, so it lives in a
virtual environment of its own (``scripts/setup.sh`` makes ``.venv-ort-webgpu-1.27`` from
``envs/ort-webgpu-1.27.txt``; ``$LAFUZZ_ORT_WEBGPU_PYTHON`` names another interpreter). Its interpreter runs
``fuzz/backends/ort_worker.py``, which needs only numpy and onnxruntime. A schema without ``state_window``
is found from the load error of the window probe (``ort_session.SCHEMA_WITHOUT_WINDOW``), not from the
version: ``W > 0`` is then served in prefix mode and ``lafuzz backends`` says so.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fuzz.backends import ort_worker
from fuzz.backends.base import Unavailable
from fuzz.backends.ort_remote import RemoteOrtBackend
from fuzz.implementation import Implementation

PYTHON_ENV = "LAFUZZ_ORT_WEBGPU_PYTHON"
DEFAULT_PYTHON = Path(__file__).resolve().parents[2] / ".venv-ort-webgpu-1.27" / "bin" / "python"
PACKAGE = "onnxruntime-webgpu"


class OrtWebGpuBuiltinBackend(RemoteOrtBackend):
    """The built-in WebGPU EP of ``onnxruntime-webgpu``, in a worker run by that environment's interpreter."""

    name = "ort-webgpu-builtin"
    provider = "WebGpuExecutionProvider"

    def _command(self) -> tuple[list[str], Path | None]:
        python = Path(os.environ.get(PYTHON_ENV) or DEFAULT_PYTHON)
        if not python.exists():
            raise Unavailable(f"{self.name}: no interpreter at {python} (bash scripts/setup.sh makes that "
                              f"environment; or set ${PYTHON_ENV})")
        return [str(python), "-I", ort_worker.__file__, "--ep", self.provider], None

    def _describe(self, info: dict[str, Any]) -> None:
        if not info.get("available"):
            raise Unavailable(f"{self.name}: onnxruntime {info.get('version')} of {info.get('executable')} has no "
                              f"{self.provider} (it has {', '.join(info.get('providers', []))})")
        self.info = info

    def _device(self) -> str:
        devices = self.info.get("devices") or []
        return f"WebGPU on a {devices[0]}" if devices else "WebGPU (the built-in EP picks its adapter)"

    def _versions(self) -> dict[str, str]:
        return {"onnxruntime": f"{self.info['version']} ({PACKAGE}, Python {self.info['python']})"}

    def _implementation(self) -> Implementation:
        return Implementation(PACKAGE, self.info["version"])

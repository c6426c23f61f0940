"""The WebGPU EP built into an onnxruntime of another Python environment (``onnxruntime-webgpu`` 1.27.0).

That package installs the same ``onnxruntime`` module as the suite's own onnxruntime, so it lives in a
virtual environment of its own: ``lafuzz setup`` makes ``.venv-ort-webgpu-1.27`` from ``REQUIREMENTS`` (package
data) in one of ``fuzz.data_dir.homes()``, the first that has it is used; ``$LAFUZZ_ORT_WEBGPU_PYTHON`` names
another interpreter. Its interpreter runs
``fuzz/backends/ort_worker.py``, which needs only numpy and onnxruntime. A schema without ``state_window``
is found from the load error of the window probe (``ort_session.SCHEMA_WITHOUT_WINDOW``), not from the
version: ``W > 0`` is then served in prefix mode and ``lafuzz backends`` says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fuzz import data_dir
from fuzz.backends import ort_worker
from fuzz.backends.base import Unavailable
from fuzz.backends.ort_remote import RemoteOrtBackend
from fuzz.implementation import Implementation

PYTHON_ENV = "LAFUZZ_ORT_WEBGPU_PYTHON"
VENV = ".venv-ort-webgpu-1.27"
"""The environment's folder in each of ``data_dir.homes()``."""
REQUIREMENTS = Path(__file__).resolve().parent / "ort-webgpu-1.27.txt"
"""The pinned packages of that environment."""
PACKAGE = "onnxruntime-webgpu"


def interpreter(name: str) -> Path:
    """``$LAFUZZ_ORT_WEBGPU_PYTHON``, else the environment's interpreter in the first home that has one;
    ``Unavailable`` saying where it looked and how to make it."""
    places = data_dir.places(PYTHON_ENV, f"{VENV}/bin/python")
    for python in places:
        if python.exists():
            return python
    raise Unavailable(f"{name}: no interpreter at {' or '.join(map(str, places))} (lafuzz setup makes that "
                      f"environment; or set ${PYTHON_ENV})")


class OrtWebGpuBuiltinBackend(RemoteOrtBackend):
    """The built-in WebGPU EP of ``onnxruntime-webgpu``, in a worker run by that environment's interpreter."""

    name = "ort-webgpu-builtin"
    provider = "WebGpuExecutionProvider"

    def _command(self) -> tuple[list[str], Path | None]:
        return [str(interpreter(self.name)), "-I", ort_worker.__file__, "--ep", self.provider], None

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

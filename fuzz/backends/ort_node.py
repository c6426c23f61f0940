"""onnxruntime-node's WebGPU EP as a backend: a Node worker (``ortjs/node-worker.mjs``) holds the sessions.

The npm package bundles a WebGPU EP (Dawn) on Linux x64 and picks its own adapter. The worker disables the
CPU fallback, so a node the EP cannot take fails to load instead of running on the CPU. Node and the pinned
packages of ``ortjs/`` (``npm ci``) come from ``scripts/setup.sh``; ``$LAFUZZ_NODE`` names another Node and
``$LAFUZZ_ORTJS`` another copy of that folder.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from fuzz.backends.base import Unavailable
from fuzz.backends.ort_remote import RemoteOrtBackend
from fuzz.implementation import Implementation

ORTJS = Path(__file__).resolve().parents[2] / "ortjs"
"""The JavaScript side of the Node and browser backends, with its package.json and package-lock.json."""


def ortjs_folder() -> Path:
    return Path(os.environ.get("LAFUZZ_ORTJS") or ORTJS)


def node_command(name: str, script: str, package: str) -> list[str]:
    """``[node, ortjs/script]``, or ``Unavailable`` naming what is missing (Node, or the npm ``package``)."""
    node = os.environ.get("LAFUZZ_NODE") or shutil.which("node")
    if node is None:
        raise Unavailable(f"{name}: Node.js not found (bash scripts/setup.sh installs it; or set $LAFUZZ_NODE)")
    folder = ortjs_folder()
    if not (folder / "node_modules" / package / "package.json").is_file():
        raise Unavailable(f"{name}: npm package {package} is not installed in {folder} "
                          "(bash scripts/setup.sh, or: cd ortjs && npm ci)")
    return [node, str(folder / script)]


class OrtNodeBackend(RemoteOrtBackend):
    """onnxruntime-node on its WebGPU EP, in a Node worker."""

    name = "ort-node"
    provider = "WebGpuExecutionProvider"

    def _command(self) -> tuple[list[str], Path | None]:
        return node_command(self.name, "node-worker.mjs", "onnxruntime-node"), ortjs_folder()

    def _describe(self, info: dict[str, Any]) -> None:
        if not info.get("webgpu"):
            raise Unavailable(f"{self.name}: onnxruntime-node {info.get('version')} has no WebGPU EP on this "
                              f"platform (it has {', '.join(info.get('backends', []))})")
        self.info = info

    def _device(self) -> str:
        return "WebGPU through the Dawn inside onnxruntime-node (the EP picks its adapter)"

    def _versions(self) -> dict[str, str]:
        return {"onnxruntime-node": self.info["version"], "node": self.info["node"]}

    def _implementation(self) -> Implementation:
        return Implementation("onnxruntime-node", self.info["version"])

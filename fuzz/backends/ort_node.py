"""onnxruntime-node's WebGPU EP as a backend: a Node worker (``ortjs/node-worker.mjs``) holds the sessions.

The npm package bundles a WebGPU EP (Dawn) on Linux x64 and picks its own adapter. The worker disables the
CPU fallback, so a node the EP cannot take fails to load instead of running on the CPU. The worker scripts ship
with the package (``RUNNER``); their pinned npm packages are installed apart, by ``lafuzz setup``, in an
``ortjs/`` folder of one of ``fuzz.data_dir.homes()`` (``npm ci`` there), and the script is told which
(``--packages``). ``$LAFUZZ_NODE`` names another Node and ``$LAFUZZ_ORTJS`` another such folder.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from fuzz import data_dir
from fuzz.backends.base import Unavailable
from fuzz.backends.ort_remote import RemoteOrtBackend
from fuzz.implementation import Implementation

RUNNER = Path(__file__).resolve().parent / "ortjs"
"""The JavaScript side of the Node and browser backends: the worker scripts, the page, package.json and
package-lock.json (package data; never a node_modules)."""
NPM_FOLDER = "ortjs"
"""The folder, in each of ``data_dir.homes()``, where ``lafuzz setup`` installs the runner's npm packages."""
ORTJS_ENV = "LAFUZZ_ORTJS"


def npm_folder(name: str, *packages: str) -> Path:
    """The folder whose ``node_modules`` holds the npm ``packages``: ``$LAFUZZ_ORTJS``, else the first home that
    has them; ``Unavailable`` saying where it looked and how to install them."""
    places = data_dir.places(ORTJS_ENV, NPM_FOLDER)
    for folder in places:
        if all((folder / "node_modules" / package / "package.json").is_file() for package in packages):
            return folder
    raise Unavailable(f"{name}: npm package {' and '.join(packages)} not installed in "
                      f"{' or '.join(map(str, places))} (lafuzz setup installs it)")


def node_command(name: str, script: str, *packages: str) -> list[str]:
    """``[node, script, --packages, folder]``: a script of ``RUNNER`` run with its npm ``packages``, or
    ``Unavailable`` naming what is missing (Node, or a package)."""
    node = os.environ.get("LAFUZZ_NODE") or shutil.which("node")
    if node is None:
        raise Unavailable(f"{name}: Node.js not found (lafuzz setup says how to install it; or set $LAFUZZ_NODE)")
    return [node, str(RUNNER / script), "--packages", str(npm_folder(name, *packages))]


class OrtNodeBackend(RemoteOrtBackend):
    """onnxruntime-node on its WebGPU EP, in a Node worker."""

    name = "ort-node"
    provider = "WebGpuExecutionProvider"

    def _command(self) -> tuple[list[str], Path | None]:
        return node_command(self.name, "node-worker.mjs", "onnxruntime-node"), None

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

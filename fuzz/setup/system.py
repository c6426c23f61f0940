"""The system packages the other builds need, which ``lafuzz setup`` checks but cannot install (root installs
them): each found here is described, each missing one is named with the Debian command that installs it."""

from __future__ import annotations

import ctypes.util
import glob
import importlib.util
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from fuzz.backends.chromium import chromium_path

NODE_MAJOR = 18
"""The oldest Node.js the JS runner supports (puppeteer-core 24's floor; Debian 12 ships 18)."""
MESA_MAJOR = 25
"""The oldest Mesa whose lavapipe Dawn accepts (Debian 12's 22.3 is refused; 25.x is in bookworm-backports)."""
LAVAPIPE_ICDS = ("/usr/share/vulkan/icd.d/lvp_icd*.json", "/etc/vulkan/icd.d/lvp_icd*.json")


@dataclass(frozen=True)
class SystemPackage:
    """One system package: ``found()`` describes what is there, or is None when it is missing or too old."""

    what: str
    needed_for: str
    install: str
    found: Callable[[], str | None]


def _output(command: list[str]) -> str | None:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def node() -> str | None:
    """``Node.js vX and npm`` when both are on PATH (``$LAFUZZ_NODE`` for node) and Node is recent enough."""
    program, npm = os.environ.get("LAFUZZ_NODE") or shutil.which("node"), shutil.which("npm")
    version = _output([program, "--version"]) if program and npm else None
    major = version.lstrip("v").split(".")[0] if version else ""
    return f"Node.js {version} and npm" if major.isdigit() and int(major) >= NODE_MAJOR else None


def chromium() -> str | None:
    found = chromium_path()
    return f"Chromium ({found})" if found else None


def vulkan_loader() -> str | None:
    found = ctypes.util.find_library("vulkan")
    return f"the Vulkan loader ({found})" if found else None


def lavapipe() -> str | None:
    """Mesa's lavapipe when its driver file is there and, where dpkg can say, Mesa is recent enough."""
    if not any(glob.glob(pattern) for pattern in LAVAPIPE_ICDS):
        return None
    version = _output(["dpkg-query", "-W", "-f=${Version}", "mesa-vulkan-drivers"]) if shutil.which("dpkg-query") \
        else None
    if version is None:
        return "Mesa's lavapipe"
    major = version.split(":")[-1].split(".")[0]
    return f"Mesa's lavapipe ({version})" if major.isdigit() and int(major) >= MESA_MAJOR else None


def venv() -> str | None:
    """Python's ``venv`` with ``ensurepip`` (Debian keeps it apart, in python3-venv)."""
    return "Python's venv with ensurepip" if importlib.util.find_spec("ensurepip") else None


NODE = SystemPackage(f"Node.js >= {NODE_MAJOR} with npm", "ort-node, ort-web, wgpu-browser and their npm packages",
                     "sudo apt-get install nodejs npm", node)
PYTHON_VENV = SystemPackage("python3-venv", "the ort-webgpu-builtin environment", "sudo apt-get install python3-venv",
                            venv)
PACKAGES = (
    NODE,
    SystemPackage("Chromium", "ort-web, wgpu-browser and SwiftShader's Vulkan (wgpu-swiftshader)",
                  "sudo apt-get install chromium", chromium),
    SystemPackage("the Vulkan loader", "every WebGPU backend", "sudo apt-get install libvulkan1", vulkan_loader),
    SystemPackage(f"Mesa's lavapipe >= {MESA_MAJOR} (software Vulkan)",
                  "the WebGPU backends where no GPU's Vulkan driver works",
                  "sudo apt-get install mesa-vulkan-drivers (Debian 12: -t bookworm-backports, with that suite "
                  "added to apt's sources)",
                  lavapipe),
    PYTHON_VENV,
)
"""In the order ``lafuzz setup`` reports them."""

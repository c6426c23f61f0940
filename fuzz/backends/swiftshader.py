"""Where SwiftShader's Vulkan driver is, and the environment of a process whose Vulkan loader sees it alone.

SwiftShader is the CPU Vulkan implementation Chromium ships for WebGPU where there is no GPU; Debian's
``chromium`` package installs it as an ICD manifest (``DEBIAN_ICD``) beside the browser, outside the loader's
search path. ``$LAFUZZ_SWIFTSHADER_ICD`` names another manifest. A manifest counts as found only when it
parses and the library it names exists: a stale path is a clear ``Unavailable``, not a loader that silently
enumerates nothing.

The loader reads its driver list once, when a process creates its Vulkan instance, and wgpu-py keeps one
instance per process: a process that already runs on lavapipe cannot add SwiftShader later, and one that lists
both takes SwiftShader as its default adapter and numbers the devices differently. So the SwiftShader backends
run in a worker process of their own (``driver_environment``), and the other backends' choice is untouched.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

ICD_ENV = "LAFUZZ_SWIFTSHADER_ICD"
"""A SwiftShader ICD manifest to use instead of Debian's."""

DEBIAN_ICD = Path("/usr/lib/chromium/vk_swiftshader_icd.json")
"""Where Debian's ``chromium`` package installs SwiftShader's manifest."""

ADAPTER = "SwiftShader"
"""Text every SwiftShader adapter's name contains (``SwiftShader Device (Subzero)``)."""


class DriverMissing(RuntimeError):
    """No usable SwiftShader ICD manifest here; the message says where it looked and why each failed."""


def check_manifest(manifest: Path) -> None:
    """``DriverMissing`` unless the manifest parses and the driver library it names exists (relative to the
    manifest's folder where the path is relative, as the loader reads it; a bare file name is the system's to find)."""
    try:
        described = json.loads(manifest.read_text())
        named = str(described["ICD"]["library_path"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise DriverMissing(f"{manifest}: not a readable ICD manifest ({type(err).__name__}: {err})") from err
    library = Path(named)
    if "/" not in named:  # a bare name: the loader leaves it to the system's library search
        return
    resolved = library if library.is_absolute() else manifest.parent / library
    if not resolved.is_file():
        raise DriverMissing(f"{manifest} names {named}, which is not at {resolved}")


def find_manifest() -> Path:
    """The SwiftShader ICD manifest to use: ``$LAFUZZ_SWIFTSHADER_ICD`` if set, else Debian's."""
    given = os.environ.get(ICD_ENV)
    manifest = Path(given) if given else DEBIAN_ICD
    if not manifest.is_file():
        where = f"${ICD_ENV} = {given}" if given else f"{DEBIAN_ICD} (Debian's chromium package; or set ${ICD_ENV})"
        raise DriverMissing(f"no SwiftShader Vulkan ICD manifest at {where}")
    check_manifest(manifest)
    return manifest


def driver_environment(manifest: Path) -> dict[str, str]:
    """Variables that make a new process's Vulkan loader load this driver and no other (``VK_DRIVER_FILES``, and
    ``VK_ICD_FILENAMES``, its name before loader 1.3.207; ``VK_ADD_DRIVER_FILES`` emptied so no other is added)."""
    path = str(manifest.resolve())
    return {"VK_DRIVER_FILES": path, "VK_ICD_FILENAMES": path, "VK_ADD_DRIVER_FILES": ""}

"""The process environment every WebGPU stack here needs, set before any of them loads.

One function, used by the command line, the benchmark and the tests:

- ``XDG_RUNTIME_DIR`` must name a writable directory, or the Vulkan loader warns on every start;
- ``ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1`` lets ORT's WebGPU EP plugin use a software adapter
  (lavapipe) on a machine without a GPU; a hardware adapter is still preferred where there is one.

Values already set by the caller are kept. Child processes (campaign workers, crash-isolated
backends) inherit them.
"""

from __future__ import annotations

import os


def prepare() -> None:
    """Set the variables above where they are unset, and create the runtime directory."""
    runtime = os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/xdg-runtime-{os.getuid()}")
    os.makedirs(runtime, exist_ok=True)
    os.environ.setdefault("ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER", "1")

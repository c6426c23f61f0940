"""The process environment every WebGPU stack here needs, set before any of them loads.

One function, used by the command line, the benchmark and the tests:

- ``XDG_RUNTIME_DIR`` must name a writable directory, or the Vulkan loader warns on every start;
- ``ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1`` lets ORT's WebGPU EP plugin use a software adapter
  (lavapipe) on a machine without a GPU; a hardware adapter is still preferred where there is one;
- ``LP_NATIVE_VECTOR_WIDTH=128``: Mesa's software adapter (llvmpipe, under lavapipe) compiles each shader
  for 4-lane SIMD instead of the host's widest (8 lanes with AVX2). LLVM then compiles the kernel's
  pipelines faster (the first run on a machine is mostly compiling), and the calls themselves cost the
  same. Its subgroups hold 4 invocations instead of 8 (measured: docs/campaign.md, "The first run"). It
  touches no GPU driver; ``LP_NATIVE_VECTOR_WIDTH=256`` restores the wide build;
- ``MESA_SHADER_CACHE_DIR`` names the project's shader cache (``fuzz.compile_cache``): compiled pipelines
  persist there between runs and are shared by every process of a run, and a CI cache can keep it.

Values already set by the caller are kept. Child processes (campaign workers, crash-isolated
backends) inherit them.

Native libraries write to file descriptor 2 directly (Dawn warns about its limits once per device), where
they would land between the progress lines.
``native_output_to`` sends descriptor 2 to a log file, for a while or for a worker's whole life.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from fuzz import compile_cache

SOFTWARE_VECTOR_ENV = "LP_NATIVE_VECTOR_WIDTH"
SOFTWARE_VECTOR_BITS = "128"
"""The SIMD width, in bits, llvmpipe compiles for (its smallest): the cheapest compilations."""


def prepare() -> None:
    """Set the variables above where they are unset, and create the runtime directory."""
    runtime = os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/xdg-runtime-{os.getuid()}")
    os.makedirs(runtime, exist_ok=True)
    os.environ.setdefault("ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER", "1")
    os.environ.setdefault(SOFTWARE_VECTOR_ENV, SOFTWARE_VECTOR_BITS)
    compile_cache.configure(os.environ)


def send_native_output(log: Path) -> None:
    """From now on, this process's file descriptor 2 (and its children's) appends to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    with open(log, "ab") as target:
        os.dup2(target.fileno(), 2)


@contextlib.contextmanager
def native_output_to(log: Path) -> Iterator[None]:
    """While the block runs, file descriptor 2 appends to ``log``; then it is restored."""
    saved = os.dup(2)
    try:
        send_native_output(log)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)

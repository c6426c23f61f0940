"""Where each backend lives: registry names and ``module:Class`` specs, resolved to classes lazily.

Modules are imported only when a backend is asked for, so a machine without, say, ORT's CUDA EP
lists that backend as unavailable instead of failing to import the suite.
"""

from __future__ import annotations

import importlib

from fuzz.backends.base import Backend, Unavailable

REGISTRY: dict[str, str] = {
    "oracle": "fuzz.backends.oracle:OracleBackend",
    "ort-cpu": "fuzz.backends.ort_cpu:OrtCpuBackend",
    "ort-webgpu": "fuzz.backends.ort_webgpu:OrtWebGpuBackend",
    "ort-cuda": "fuzz.backends.ort_cuda:OrtCudaBackend",
    "wgpu": "fuzz.backends.wgpu_kernel:WgpuNativeBackend", "wgpu-dawn": "fuzz.backends.wgpu_kernel:WgpuDawnBackend",
    "wgpu-chunked": "fuzz.backends.wgpu_kernel:WgpuChunkedBackend",
    "wgpu-wide": "fuzz.backends.wgpu_kernel:WgpuWideBackend",
    "wgpu-specialised": "fuzz.backends.wgpu_kernel:WgpuSpecialisedBackend",
}
"""Backend name -> ``module:class``. Modules are imported only when the backend is created."""


def backend_class(spec: str) -> type[Backend]:
    """The class behind a registry name or ``module:Class``; ``KeyError`` for an unknown name,
    ``Unavailable`` when its module cannot be imported here."""
    if ":" in spec:
        target = spec
    else:
        try:
            target = REGISTRY[spec]
        except KeyError:
            raise KeyError(f"unknown backend {spec!r}; known: {', '.join(REGISTRY)} (or module:Class)") from None
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise Unavailable(f"{spec}: cannot import {module_name}: {err}") from err
    try:
        return getattr(module, class_name)
    except AttributeError:
        raise KeyError(f"backend {spec!r}: {module_name} has no {class_name}") from None

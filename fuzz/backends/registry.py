"""Where each backend lives: registry names and ``module:Class`` specs, resolved to classes lazily.

Modules are imported only when a backend is asked for, so a machine without, say, ORT's CUDA EP
lists that backend as unavailable instead of failing to import the suite.

A name read from data (a corpus entry, a summary, an example database) is never imported: it is looked up
among the backends the command line created, or else must be a registry name (``check_recorded``;
``fuzz.corpus.replay.recorded_backends``). ``module:Class`` imports code, so it is taken from the command
line or the pytest options alone, and the class it names must be a ``Backend`` subclass before anything
is created. Summaries and published findings name backends only for people: nothing is created from them.
"""

from __future__ import annotations

import importlib

from fuzz.backends.base import Backend, Unavailable

REGISTRY: dict[str, str] = {
    "oracle": "fuzz.backends.oracle:OracleBackend",
    "ort-cpu": "fuzz.backends.ort_cpu:OrtCpuBackend",
    "ort-webgpu": "fuzz.backends.ort_webgpu:OrtWebGpuBackend",
    "ort-cuda": "fuzz.backends.ort_cuda:OrtCudaBackend",
    "ort-node": "fuzz.backends.ort_node:OrtNodeBackend",
    "ort-web": "fuzz.backends.ort_web:OrtWebBackend",
    "ort-webgpu-builtin": "fuzz.backends.ort_webgpu_builtin:OrtWebGpuBuiltinBackend",
    "onnx-reference": "fuzz.backends.onnx_reference:OnnxReferenceBackend",
    "wgpu": "fuzz.backends.wgpu_kernel:WgpuNativeBackend", "wgpu-dawn": "fuzz.backends.wgpu_kernel:WgpuDawnBackend",
    "wgpu-chunked": "fuzz.backends.wgpu_kernel:WgpuChunkedBackend",
    "wgpu-wide": "fuzz.backends.wgpu_kernel:WgpuWideBackend",
    "wgpu-specialised": "fuzz.backends.wgpu_kernel:WgpuSpecialisedBackend",
    "wgpu-conv": "fuzz.backends.wgpu_conv:WgpuConvBackend",
    "wgpu-conv-dawn": "fuzz.backends.wgpu_conv:WgpuConvDawnBackend",
    "wgpu-swiftshader": "fuzz.backends.wgpu_swiftshader:WgpuSwiftShaderBackend",
    "wgpu-conv-swiftshader": "fuzz.backends.wgpu_swiftshader:WgpuConvSwiftShaderBackend",
    "wgpu-browser": "fuzz.backends.wgpu_browser:WgpuBrowserBackend",
    "wgpu-conv-browser": "fuzz.backends.wgpu_browser:WgpuConvBrowserBackend",
    "wgpu-gdn": "fuzz.backends.wgpu_gdn:WgpuGdnBackend", "wgpu-gdn-dawn": "fuzz.backends.wgpu_gdn:WgpuGdnDawnBackend",
}
"""Backend name -> ``module:class``. Modules are imported only when the backend is created."""

WORKER_BUILDS = ("ort-node", "ort-web", "ort-webgpu-builtin")
"""The other WebGPU builds of ONNX Runtime, each run in a worker process of its own (``fuzz.backends.ort_remote``):
Node, a browser tab, another Python."""


class UnknownRecordedBackend(KeyError):
    """A backend name read from data that is not a registry name: refused before any import."""


def check_recorded(name: str, source: str) -> str:
    """``name`` if it is a registry name; else ``UnknownRecordedBackend`` naming ``source``, importing nothing."""
    if name not in REGISTRY:
        raise UnknownRecordedBackend(
            f"{source} names backend {name!r}, which is not a registry name ({', '.join(REGISTRY)}); "
            "refused without importing anything (a module:Class backend is taken from the command line only)")
    return name


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
    cls = getattr(module, class_name, None)
    if cls is None:
        raise KeyError(f"backend {spec!r}: {module_name} has no {class_name}")
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise KeyError(f"backend {spec!r}: {module_name}.{class_name} is not a fuzz.backends.Backend subclass")
    return cls

"""ONNX Runtime's WebGPU EP at W = 0, timed beside the kernel so the kernel reads as a ratio.

ORT's EP runs on its own Dawn device, which our timestamp queries cannot reach, so both sides are
timed the same way on the host: every input and output is a device-resident ``"webgpu"``
OrtValue bound once through IOBinding; a step is one ``run_with_iobinding``, and the fence is a
readback of the output (``OrtValue.numpy()``, which waits for ORT's queue). Two wall clocks:
``wall-fenced`` (one run, then the fence) and ``wall-pipelined`` (runs back to back, one fence).
The session comes from the suite's ORT WebGPU backend, which disables the CPU fallback and checks
that the node really runs on the WebGPU EP.
"""

from __future__ import annotations

import numpy as np

from .protocol import Protocol, Timing, wall_timings
from .workload import Shape, attributes, host_inputs


class OrtUnavailable(RuntimeError):
    """The ORT WebGPU EP cannot run here; the message says why."""


class OrtSide:
    """The ORT WebGPU EP backend, loaded once; ``timings`` measures one W = 0 configuration."""

    def __init__(self) -> None:
        try:
            from fuzz.backends import Unavailable
            from fuzz.backends.ort_webgpu import OrtWebGpuBackend
        except ImportError as err:
            raise OrtUnavailable(f"cannot import the ORT WebGPU backend: {err}") from err
        try:
            self.backend = OrtWebGpuBackend()
        except Unavailable as err:
            raise OrtUnavailable(str(err)) from err
        capabilities = self.backend.capabilities()
        self.device = capabilities.device
        self.versions = dict(capabilities.versions)
        self.dtypes = capabilities.dtypes

    def timings(self, shape: Shape, seq_len: int, dtype: str, protocol: Protocol) -> dict[str, Timing]:
        """Both wall clocks of a W = 0 call over ``seq_len`` tokens with the kernel's inputs."""
        from fuzz.backends import BackendError
        from fuzz.model.case import Case

        if dtype not in self.dtypes:
            raise OrtUnavailable(f"the ORT WebGPU EP here takes {', '.join(self.dtypes)}, not {dtype}")
        arrays = host_inputs(shape, seq_len, 0, dtype)
        try:
            session = self.backend.session(Case(inputs=arrays, attrs=attributes(shape, 0)))
        except BackendError as err:
            raise OrtUnavailable(f"no ORT WebGPU session for {shape.label} T={seq_len} {dtype}: {err}") from err
        ort = self.backend.ort
        binding = session.io_binding()
        inputs = {name: ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(a), "webgpu", 0)
                  for name, a in arrays.items()}
        for name, value in inputs.items():
            binding.bind_ortvalue_input(name, value)
        output = ort.OrtValue.ortvalue_from_shape_and_type((shape.batch, seq_len, shape.q_heads * shape.d_v),
                                                           np.dtype(dtype), "webgpu", 0)
        present = ort.OrtValue.ortvalue_from_shape_and_type(shape.slot_shape(), np.dtype(dtype), "webgpu", 0)
        binding.bind_ortvalue_output("output", output)
        binding.bind_ortvalue_output("present_state", present)

        def step() -> None:
            session.run_with_iobinding(binding)

        return wall_timings(protocol, step, output.numpy)

    def close(self) -> None:
        self.backend.close()

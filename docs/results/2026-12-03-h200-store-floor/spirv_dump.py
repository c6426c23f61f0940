"""Writes the SPIR-V that naga (wgpu-native) and Tint (Dawn) make of the kernel's H200 pipeline, for reading.

``MESA_SPIRV_DUMP_PATH=DIR python docs/results/2026-12-03-h200-store-floor/spirv_dump.py [TEMPLATE]`` on a machine
with lavapipe: renders the pipeline the H200 runs at fp16 ``B=1, H=32, d_k=d_v=128`` (32 row groups of 4 rows,
16 columns as vec4, subgroup reduction, staged stores, specialised on the shape), compiles it on each
implementation and lets Mesa write the SPIR-V it receives into DIR (``spirv-dis`` reads it). The SPIR-V is
what each WGSL compiler hands to the driver; NVIDIA's own compiler, which makes the machine code, cannot be
read on this path.
"""

import sys
from pathlib import Path

from fuzz import environment
from kernels.device import GpuDevice
from kernels.shader import CallParams, KernelSpec, render

environment.prepare()
template = Path(sys.argv[1]).read_text() if len(sys.argv) > 1 else None
spec = KernelSpec("float16", rows_per_thread=4, row_groups=32, columns=16, lanes=4, reduction="subgroup")
uniform = CallParams(batch=1, seq_len=8, scale=0.0, seed_offset=0, window=8, d_k=128, d_v=128, q_heads=32,
                     kv_heads=32, key_heads=32, decay_mode=1, beta_mode=1, seed_mode=1)
spec = spec.specialised(uniform)
for implementation in ("wgpu", "dawn"):
    device = GpuDevice(implementation)
    code = render(spec, template, device.subgroup_enable)
    Path(f"{implementation}.wgsl").write_text(code)
    module = device.device.create_shader_module(code=code)
    device.device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
    print(implementation, "compiled", flush=True)

"""Session tool: what a pass costs on GPU timestamps with nothing (or almost nothing) in it."""
import numpy as np
from kernels.device import GpuDevice

dev = GpuDevice("wgpu")
d = dev.device
import wgpu
buf = d.create_buffer(size=4096, usage=wgpu.BufferUsage.STORAGE)
shaders = {
    "empty dispatch (1 workgroup, no memory access)": "@compute @workgroup_size(1) fn main() {}",
    "one store (1 workgroup)": "@group(0) @binding(0) var<storage, read_write> b: array<u32>;\n"
                               "@compute @workgroup_size(1) fn main() { b[0] = b[1] + 1u; }",
    "one load+store (256 workgroups x 128)": "@group(0) @binding(0) var<storage, read_write> b: array<u32>;\n"
                               "@compute @workgroup_size(128) fn main(@builtin(local_invocation_index) i: u32) { b[i] = b[i + 512u] + 1u; }",
}
N = 400
for name, code in shaders.items():
    module = d.create_shader_module(code=code)
    pipe = d.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
    bg = None
    if "b[" in code:
        bg = d.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[{"binding": 0, "resource": {"buffer": buf}}])
    for rep in range(3):
        qs = d.create_query_set(type="timestamp", count=2 * N)
        res = d.create_buffer(size=16 * N, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
        out = d.create_buffer(size=16 * N, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        enc = d.create_command_encoder()
        for i in range(N):
            p = enc.begin_compute_pass(timestamp_writes={"query_set": qs, "beginning_of_pass_write_index": 2 * i,
                                                         "end_of_pass_write_index": 2 * i + 1})
            p.set_pipeline(pipe)
            if bg is not None:
                p.set_bind_group(0, bg)
            p.dispatch_workgroups(256 if "256" in name else 1)
            p.end()
        enc.resolve_query_set(qs, 0, 2 * N, res, 0)
        enc.copy_buffer_to_buffer(res, 0, out, 0, 16 * N)
        d.queue.submit([enc.finish()])
        out.map_sync(wgpu.MapMode.READ)
        s = np.frombuffer(out.read_mapped(), dtype=np.uint64).astype(np.int64)
        out.unmap()
        dt = (s[1::2] - s[0::2]) / 1000
        print(f"{name}: p50 {np.median(dt[20:]):.2f} us, p5 {np.percentile(dt[20:], 5):.2f}, p95 {np.percentile(dt[20:], 95):.2f}", flush=True)

"""A throwaway probe, tidied after the run: what a pass costs on GPU timestamps with nothing, or almost nothing, in it.

Times each shader's pass the way ``kernels.timing`` times the kernel (a beginning and an end timestamp
per pass, passes back to back in one command buffer), three times 400 passes, and prints the p50.
Run from the repository root: ``python docs/results/2026-12-01-h200-specialised-pipelines/variants/floor.py``.
"""

import numpy as np
import wgpu

from kernels.device import GpuDevice

PASSES = 400
STORAGE = "@group(0) @binding(0) var<storage, read_write> b: array<u32>;\n"
SHADERS = {
    "empty dispatch (1 workgroup, no memory access)": ("@compute @workgroup_size(1) fn main() {}", 1),
    "one store (1 workgroup)": (STORAGE + "@compute @workgroup_size(1) fn main() { b[0] = b[1] + 1u; }", 1),
    "one load+store (256 workgroups x 128)": (
        STORAGE + "@compute @workgroup_size(128) fn main(@builtin(local_invocation_index) i: u32) "
                  "{ b[i] = b[i + 512u] + 1u; }", 256),
}


def pass_times_us(device: wgpu.GPUDevice, pipeline: wgpu.GPUComputePipeline, group: object,
                  workgroups: int) -> np.ndarray:
    """End minus beginning of ``PASSES`` timestamped passes of one dispatch each, in microseconds."""
    queries = device.create_query_set(type="timestamp", count=2 * PASSES)
    resolved = device.create_buffer(size=16 * PASSES, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
    readback = device.create_buffer(size=16 * PASSES, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
    encoder = device.create_command_encoder()
    for i in range(PASSES):
        stamps = {"query_set": queries, "beginning_of_pass_write_index": 2 * i, "end_of_pass_write_index": 2 * i + 1}
        compute = encoder.begin_compute_pass(timestamp_writes=stamps)
        compute.set_pipeline(pipeline)
        if group is not None:
            compute.set_bind_group(0, group)
        compute.dispatch_workgroups(workgroups)
        compute.end()
    encoder.resolve_query_set(queries, 0, 2 * PASSES, resolved, 0)
    encoder.copy_buffer_to_buffer(resolved, 0, readback, 0, 16 * PASSES)
    device.queue.submit([encoder.finish()])
    readback.map_sync(wgpu.MapMode.READ)
    stamps = np.frombuffer(readback.read_mapped(), dtype=np.uint64).astype(np.int64)
    readback.unmap()
    return (stamps[1::2] - stamps[0::2]) / 1000


def main() -> None:
    device = GpuDevice("wgpu").device
    buffer = device.create_buffer(size=4096, usage=wgpu.BufferUsage.STORAGE)
    for name, (code, workgroups) in SHADERS.items():
        module = device.create_shader_module(code=code)
        pipeline = device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
        group = device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=[
            {"binding": 0, "resource": {"buffer": buffer}}]) if "b[" in code else None
        for _ in range(3):
            times = pass_times_us(device, pipeline, group, workgroups)[20:]
            print(f"{name}: p50 {np.median(times):.2f} us, p5 {np.percentile(times, 5):.2f}, "
                  f"p95 {np.percentile(times, 95):.2f}", flush=True)


if __name__ == "__main__":
    main()

"""What the window's stores wait on: store-only kernels with the kernel's geometry against the plain store kernel.

``python docs/results/2026-12-03-h200-store-floor/probe_stores.py [--dawn]`` (from the repository root) prints one
line per probe. Every probe is a pipeline with a uniform ``n`` (slots to store) timed at ``n = 0``, ``1`` and ``8``
in interleaved repetitions, each the p50 of ``PASSES`` back-to-back passes; a slot's cost is
``(t(8) - t(1)) / 7``, the same difference the window's ``W = 8`` and ``W = 0`` calls make at ``T = 8``.

- ``plain``: the benchmark's plain store kernel (``fuzz.bench.store_floor``) at several sizes (up to 256 MiB, past
  the L2 cache), marginal over its empty dispatch.
- ``slot``: the kernel's workgroups (``ROWG = 32`` row groups of ``RPT = 4`` rows by ``COLS`` vector columns,
  one workgroup per tile of columns, head and batch entry) storing ``n`` slots of a ``128 x 128`` head with no
  arithmetic, in the kernel's forms: ``staged`` (stage, barrier, copy, barrier per slot), ``copy`` (the staged
  form's store addresses and order from registers: no stage, no barrier), ``direct`` (each invocation its own
  rows), ``ring`` (every slot staged first, one barrier, then all of them stored). ``B`` multiplies the
  workgroups in flight; ``cols`` is the tile's width in columns.

On wgpu-native the clock is GPU timestamps; ``--dawn`` times both implementations the same way, by the wall
clock of ``PASSES`` passes in one command buffer and a fence (Dawn quantizes its timestamps), with
``vec2<u32>``/``vec4<u32>`` elements (Dawn offers no ``shader-f16`` on the H200).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from fuzz.bench.store_floor import PlainStore
from kernels.device import GpuDevice
from kernels.timing import pass_times_ns

PASSES = 300
REPETITIONS = 5
DK = DV = 128
HEADS = 32
ROWG, RPT = 32, 4
ELEMENTS = {"f16": ("vec4<f16>", 8), "f32": ("vec4<f32>", 16), "u32x2": ("vec2<u32>", 8), "u32x4": ("vec4<u32>", 16)}


@dataclass(frozen=True)
class SlotProbe:
    form: str
    elem: str
    batch: int = 1
    cols: int = 16

    @property
    def label(self) -> str:
        return f"slot {self.form} {self.elem} B={self.batch} cols={self.cols}"

    @property
    def vec_cols(self) -> int:
        """Invocations across the tile (each owns 4 columns)."""
        return self.cols // 4

    @property
    def slot_bytes(self) -> int:
        return self.batch * HEADS * DK * DV * ELEMENTS[self.elem][1] // 4

    def source(self) -> str:
        elem = ELEMENTS[self.elem][0]
        scalar = {"f16": "f16", "f32": "f32"}.get(self.elem, "u32")

        def each_row(line: str) -> str:
            """``line`` once per row of an invocation, ``{k}`` its index: the kernel writes these loops out too."""
            return "\n".join(line.format(k=k) for k in range(RPT))

        def copy(source: str) -> str:
            return each_row("            {{ let e = lindex + {k}u * ROWG * COLS; let i = e / COLS; "
                            "out[tile + i * DV + e % COLS] = " + source + "; }}")

        stage_at = "q * TILE + " if self.form == "ring" else ""
        stage_write = each_row("            stage[" + stage_at + "(row0 + {k}u) * COLS + lid.y + lid.x] = s[{k}];")
        body = {
            "staged": f"""            let tile = j * slot + base;
{stage_write}
            workgroupBarrier();
{copy("stage[e + i / RPT]")}
            workgroupBarrier();""",
            "copy": f"""            let tile = j * slot + base;
{copy("s[{k}]")}""",
            "direct": each_row("            out[j * slot + head + (row0 + {k}u) * DV] = s[{k}];"),
        }
        if self.form == "ring":
            loop = f"""        for (var q = 0u; q < p.n; q++) {{
{stage_write}
        }}
        workgroupBarrier();
        for (var j = 0u; j < p.n; j++) {{
            let tile = j * slot + base;
{copy("stage[j * TILE + e + i / RPT]")}
        }}"""
        else:
            loop = f"""        for (var j = 0u; j < p.n; j++) {{
{body[self.form]}
{each_row("            s[{k}] = s[{k}] + " + elem + "(" + scalar + "(1));")}
        }}"""
        ring = 8 if self.form == "ring" else 1
        init = each_row("    s[{k}] = " + elem + "(" + scalar + "(lindex + {k}u));")
        return f"""{'enable f16;' if self.elem == 'f16' else ''}
struct P {{ n: u32 }}
const ROWG: u32 = {ROWG}u;
const RPT: u32 = {RPT}u;
const COLS: u32 = {self.vec_cols}u;
const DV: u32 = {DV // 4}u;
const TILE: u32 = ROWG * RPT * COLS + ROWG;
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read_write> out: array<{elem}>;
var<workgroup> stage: array<{elem}, {ring}u * TILE>;
@compute @workgroup_size(ROWG, COLS)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) lindex: u32, @builtin(num_workgroups) groups: vec3<u32>) {{
    let slot = groups.z * {HEADS}u * {DK}u * DV;
    let base = (wg.z * {HEADS}u + wg.y) * {DK}u * DV + wg.x * COLS;
    let head = base + lid.y;
    let row0 = lid.x * RPT;
    var s: array<{elem}, RPT>;
{init}
{loop}
}}
"""

    def workgroups(self) -> tuple[int, int, int]:
        return DV // self.cols, HEADS, self.batch


class Bound:
    """A probe's pipeline, buffer and one uniform per slot count."""

    def __init__(self, device: GpuDevice, source: str, workgroups: tuple[int, int, int], out_bytes: int,
                 counts: tuple[int, ...]) -> None:
        gpu = device.device
        self.device, self.workgroups = device, workgroups
        module = gpu.create_shader_module(code=source)
        self.pipeline = gpu.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
        self.out = device.tensor((out_bytes // 4,), np.uint32, "probe-out")
        usage = device.module.BufferUsage.UNIFORM
        self.groups = {}
        self.uniforms = []
        for n in counts:
            uniform = device.upload(np.array([n, 0, 0, 0], np.uint32), "n", into=device.tensor((4,), np.uint32, "n",
                                                                                              usage))
            self.uniforms.append(uniform)
            self.groups[n] = gpu.create_bind_group(layout=self.pipeline.get_bind_group_layout(0), entries=[
                {"binding": 0, "resource": {"buffer": uniform.buffer, "offset": 0, "size": 16}},
                {"binding": 1, "resource": {"buffer": self.out.buffer, "offset": 0, "size": self.out.size}}])

    def encode(self, n: int, encoder: Any, stamps: Any = None) -> None:
        compute = encoder.begin_compute_pass(timestamp_writes=stamps)
        compute.set_pipeline(self.pipeline)
        compute.set_bind_group(0, self.groups[n])
        compute.dispatch_workgroups(*self.workgroups)
        compute.end()

    def release(self) -> None:
        for tensor in (self.out, *self.uniforms):
            tensor.release()


def timestamp_p50_us(device: GpuDevice, encode: Callable[[Any, Any], None]) -> float:
    def record(encoder: Any, query_set: Any, i: int) -> None:
        encode(encoder, {"query_set": query_set, "beginning_of_pass_write_index": 2 * i,
                         "end_of_pass_write_index": 2 * i + 1})

    return float(np.median(pass_times_ns(device, PASSES, record))) / 1e3


def fenced_batch_us(device: GpuDevice, encode: Callable[[Any, Any], None], fence: Any) -> float:
    """Wall time of PASSES passes in one command buffer, submitted and waited for, per pass."""
    encoder = device.device.create_command_encoder()
    for _ in range(PASSES):
        encode(encoder, None)
    buffer = encoder.finish()
    start = time.perf_counter_ns()
    device.queue.submit([buffer])
    device.download(fence)
    return (time.perf_counter_ns() - start) / PASSES / 1e3


def measure(device: GpuDevice, probes: dict[str, tuple[Bound, tuple[int, ...]]], clock: str,
            seed: int = 0) -> dict[tuple[str, int], list[float]]:
    """Every (probe, n) REPETITIONS times, in a fresh random order each repetition."""
    jobs = [(name, n) for name, (_, counts) in probes.items() for n in counts]
    found: dict[tuple[str, int], list[float]] = {job: [] for job in jobs}
    rng = np.random.default_rng(seed)
    for _ in range(REPETITIONS + 1):  # the first repetition warms up and is discarded
        for index in rng.permutation(len(jobs)):
            name, n = jobs[index]
            bound = probes[name][0]

            def encode(encoder: Any, stamps: Any, bound: Bound = bound, n: int = n) -> None:
                bound.encode(n, encoder, stamps)

            if clock == "timestamps":
                value = timestamp_p50_us(device, encode)
            else:
                value = fenced_batch_us(device, encode, bound.uniforms[0])
            found[name, n].append(value)
    return {job: values[1:] for job, values in found.items()}


def slot_probes(elems: dict[str, str]) -> list[SlotProbe]:
    """``elems``: the element of fp16 and fp32 on this implementation."""
    f16, f32 = elems["fp16"], elems["fp32"]
    return [
        SlotProbe("staged", f16), SlotProbe("staged", f32),
        SlotProbe("staged", f16, batch=2), SlotProbe("staged", f16, batch=4), SlotProbe("staged", f32, batch=4),
        SlotProbe("copy", f16), SlotProbe("copy", f32), SlotProbe("copy", f16, batch=4),
        SlotProbe("direct", f16), SlotProbe("direct", f32),
        SlotProbe("staged", f16, cols=32), SlotProbe("copy", f16, cols=32),
        SlotProbe("ring", f16),
    ]


def plain_probes(device: GpuDevice) -> dict[str, PlainStore]:
    sizes = {"1MiB": 2**20, "7MiB": 7 * 2**20, "14MiB": 14 * 2**20, "64MiB": 64 * 2**20, "256MiB": 256 * 2**20}
    return {f"plain {name}": PlainStore(device, n) for name, n in sizes.items()}


def run(implementation: str, clock: str, elems: dict[str, str]) -> None:
    device = GpuDevice(implementation)
    print(f"== {implementation} ({device.description}); clock: {clock}; p50 of {PASSES} passes, median and range "
          f"over {REPETITIONS} repetitions", flush=True)
    probes: dict[str, tuple[Bound, tuple[int, ...]]] = {}
    sizes: dict[str, int] = {}
    for probe in slot_probes(elems):
        try:
            bound = Bound(device, probe.source(), probe.workgroups(), 8 * probe.slot_bytes, (0, 1, 8))
        except Exception as err:
            print(f"{probe.label}: not built: {str(err).splitlines()[0][:200]}", flush=True)
            continue
        probes[probe.label] = (bound, (0, 1, 8))
        sizes[probe.label] = probe.slot_bytes
    plains = plain_probes(device)
    for name, store in plains.items():
        probes[name] = (_PlainAsBound(store), (0, 1))
        sizes[name] = store.nbytes
    found = measure(device, probes, clock)
    for name in probes:
        t = {n: float(np.median(found[name, n])) for n in probes[name][1]}
        spread = {n: (min(found[name, n]), max(found[name, n])) for n in probes[name][1]}
        cells = ", ".join(f"t({n}) {t[n]:.2f} [{spread[n][0]:.2f}, {spread[n][1]:.2f}]" for n in t)
        if name.startswith("plain"):
            marginal = t[1] - t[0]
            print(f"{name}: {cells} us; stores {sizes[name] / 2**20:.0f} MiB in {marginal:.2f} us: "
                  f"{sizes[name] / marginal / 1e3:.0f} GB/s", flush=True)
        else:
            per_slot = (t[8] - t[1]) / 7
            print(f"{name}: {cells} us; per slot {per_slot:.3f} us ({sizes[name] / 2**20:.2f} MiB): "
                  f"{sizes[name] / per_slot / 1e3:.0f} GB/s; 7 slots {7 * per_slot:.2f} us", flush=True)
    for bound, _ in probes.values():
        bound.release()


class _PlainAsBound:
    """The bench's plain store kernel under the probes' interface: n = 1 stores, n = 0 is the empty dispatch."""

    def __init__(self, store: PlainStore) -> None:
        self.store = store
        self.uniforms = [store.counts["store-empty"]]

    def encode(self, n: int, encoder: Any, stamps: Any = None) -> None:
        self.store.encode("store" if n else "store-empty", encoder, stamps)

    def release(self) -> None:
        self.store.release()


def kernel_window(implementation: str, dtypes: tuple[str, ...]) -> None:
    """The kernel itself at T = 8, W = 0 and W = 8 (reference shape), timed by fenced batches like the probes:
    how much the window costs on this implementation's compiler."""
    from fuzz.bench.workload import REFERENCE_SHAPE, Workload
    from kernels.linear_attention import LinearAttentionKernel

    kernel = LinearAttentionKernel(GpuDevice(implementation))
    for dtype in dtypes:
        try:
            work = {w: Workload(kernel, REFERENCE_SHAPE, 8, w, dtype) for w in (0, 8)}
        except Exception as err:
            print(f"kernel {implementation} {dtype}: not run: {str(err).splitlines()[0][:200]}", flush=True)
            continue
        found: dict[int, list[float]] = {0: [], 8: []}
        for repetition in range(REPETITIONS + 1):
            for w in (0, 8) if repetition % 2 else (8, 0):
                call = work[w].call
                value = fenced_batch_us(kernel.device, lambda encoder, _, call=call: call.encode(encoder), call.params)
                if repetition:
                    found[w].append(value)
        t = {w: float(np.median(v)) for w, v in found.items()}
        print(f"kernel {implementation} {dtype} T=8 ({kernel.spec_for(work[8].call.dims).reduction} reduction): "
              f"W=0 {t[0]:.2f} us, W=8 {t[8]:.2f} us per pass (fenced batches of {PASSES}); the window "
              f"{t[8] - t[0]:.2f} us", flush=True)
        for item in work.values():
            item.release()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dawn", action="store_true", help="also Dawn, both timed by fenced batches")
    args = parser.parse_args()
    run("wgpu", "timestamps", {"fp16": "f16", "fp32": "f32"})
    if args.dawn:
        for implementation in ("wgpu", "dawn"):
            run(implementation, "fenced", {"fp16": "u32x2", "fp32": "u32x4"})
            kernel_window(implementation, ("float16", "float32"))


if __name__ == "__main__":
    main()

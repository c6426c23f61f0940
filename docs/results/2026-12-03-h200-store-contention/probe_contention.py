"""What the window's stores contend with: store-only kernels with the token loop's kinds of work beside them.

``python docs/results/2026-12-03-h200-store-contention/probe_contention.py [--passes N]`` (from the repository
root, on wgpu-native; needs ``shader-f16``) prints one line per probe. Every probe has the kernel's geometry (256
workgroups of ``ROWG = 32`` row groups of ``RPT = 4`` rows by 4 vector columns, an fp16 state of 32 heads of
``128 x 128``) and runs ``n`` iterations; an iteration does one kind of *work*, then one kind of *store*:

- work ``none``; ``fma`` (32 dependent ``vec4`` multiply-adds an invocation, in registers); ``shuffle`` (the
  kernel's two column totals a token: a butterfly of ``subgroupShuffleXor`` over the 32 row groups, ``vec4``,
  feeding the state); ``token`` (the kernel's token: 8 fp16 loads of key and query rows, then ``shuffle``'s
  totals and its multiply-adds).
- store ``none``; ``staged`` (the kernel's: stage, barrier, 4 copy passes, barrier); ``copy`` (the 4 copy
  passes' addresses from registers, no stage, no barrier); ``stage`` (the stage and its two barriers, no store).

An iteration's cost is ``(t(8) - t(1)) / 7`` (the difference the window's ``W = 8`` and ``W = 0`` calls make at
``T = 8``). What a store form adds beside a work is ``cost(work, store) - cost(work, none)``: if the stores ran
beside the work, it would fall below the store form's cost alone. The timing and probe plumbing are
``probe_stores.py``'s (``../2026-12-03-h200-store-floor/``).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np

from kernels.device import GpuDevice

_FLOOR = Path(__file__).resolve().parent.parent / "2026-12-03-h200-store-floor" / "probe_stores.py"
_spec = importlib.util.spec_from_file_location("probe_stores", _FLOOR)
assert _spec is not None and _spec.loader is not None
probes = importlib.util.module_from_spec(_spec)
sys.modules["probe_stores"] = probes
_spec.loader.exec_module(probes)

ROWG, RPT, COLS, HEADS, DK = 32, 4, 4, 32, 128
DV = 32
"""``d_v = 128`` in ``vec4`` units."""
WORKS = ("none", "fma", "shuffle", "token")
STORES = ("none", "stage", "copy", "staged")
SLOT_BYTES = HEADS * DK * DV * 8


def each_row(line: str) -> str:
    """``line`` once per row of an invocation, ``{k}`` its index (the kernel writes these loops out too)."""
    return "\n".join(line.format(k=k) for k in range(RPT))


def butterfly(name: str) -> str:
    return "\n".join(f"        {name} = {name} + subgroupShuffleXor({name}, {1 << i}u);" for i in range(5))


def work_source(work: str) -> str:
    if work == "none":
        return each_row("        s[{k}] = s[{k}] + vec4<f32>(1.0);")
    if work == "fma":
        return "\n".join(each_row("        s[{k}] = fma(s[{k}], vec4<f32>(0.999), vec4<f32>(0.001));")
                         for _ in range(8))
    loads, key, query = "", "0.01", "0.02"
    if work == "token":
        loads = each_row("        let key{k} = f32(inputs[(j * 32u + wg.y) * 256u + row0 + {k}u]);\n"
                         "        let query{k} = f32(inputs[(j * 32u + wg.y) * 256u + 128u + row0 + {k}u]);")
        key, query = "key{k}", "query{k}"
    return f"""{loads}
        var rp = vec4<f32>();
{each_row("        rp = rp + s[{k}] * " + key + ";")}
{butterfly("rp")}
        let u = vec4<f32>(0.5) - rp;
{each_row("        s[{k}] = s[{k}] + " + key + " * u;")}
        var op = vec4<f32>();
{each_row("        op = op + s[{k}] * " + query + ";")}
{butterfly("op")}
        s[0] = s[0] + op * 1e-6;"""


def store_source(store: str) -> str:
    stage_write = each_row("        stage[(row0 + {k}u) * COLS + lid.y + lid.x] = vec4<f16>(s[{k}]);")

    def copy(source: str) -> str:
        return each_row("        {{ let e = lindex + {k}u * ROWG * COLS; let i = e / COLS; "
                        "out[j * slot + base + i * DV + e % COLS] = " + source + "; }}")

    return {
        "none": "",
        "stage": f"{stage_write}\n        workgroupBarrier();\n"
                 f"{each_row('        s[{k}] = s[{k}] + vec4<f32>(stage[lindex + {k}u * ROWG * COLS]) * 1e-6;')}\n"
                 "        workgroupBarrier();",
        "copy": copy("vec4<f16>(s[{k}])"),
        "staged": f"{stage_write}\n        workgroupBarrier();\n{copy('stage[e + i / RPT]')}\n"
                  "        workgroupBarrier();",
    }[store]


def source(work: str, store: str, subgroup_enable: str = "") -> str:
    return f"""enable f16;
{subgroup_enable}
struct P {{ n: u32 }}
const ROWG: u32 = {ROWG}u;
const RPT: u32 = {RPT}u;
const COLS: u32 = {COLS}u;
const DV: u32 = {DV}u;
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<f16>>;
@group(0) @binding(2) var<storage, read> inputs: array<f16>;
var<workgroup> stage: array<vec4<f16>, ROWG * RPT * COLS + ROWG>;
@compute @workgroup_size(ROWG, COLS)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) lindex: u32, @builtin(num_workgroups) groups: vec3<u32>) {{
    let slot = groups.z * {HEADS}u * {DK}u * DV;
    let base = (wg.z * {HEADS}u + wg.y) * {DK}u * DV + wg.x * COLS;
    let row0 = lid.x * RPT;
    var s: array<vec4<f32>, RPT>;
{each_row("    s[{k}] = vec4<f32>(f32(lindex + {k}u) * 1e-3);")}
    for (var j = 0u; j < p.n; j++) {{
{work_source(work)}
{store_source(store)}
    }}
    let sink = s[0] + s[1] + s[2] + s[3];
    // the inputs are bound in every probe, read only by token: kept in the layout by a read that never runs
    if (sink.x == 1234.5) {{ out[lindex] = vec4<f16>(sink) + vec4<f16>(inputs[lindex]); }}
}}
"""


class WithInputs(probes.Bound):
    """A probe's pipeline with a third binding: the fp16 token inputs ``token`` loads."""

    def __init__(self, device: GpuDevice, code: str) -> None:
        gpu = device.device
        self.device, self.workgroups = device, (DV // COLS, HEADS, 1)
        module = gpu.create_shader_module(code=code)
        self.pipeline = gpu.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
        self.out = device.tensor((8 * SLOT_BYTES // 4,), np.uint32, "probe-out")
        self.inputs = device.upload(np.full(8 * 32 * 256, 0x2000, np.uint16), "inputs")
        usage = device.module.BufferUsage.UNIFORM
        self.groups, self.uniforms = {}, []
        for n in (0, 1, 8):
            uniform = device.upload(np.array([n, 0, 0, 0], np.uint32), "n",
                                    into=device.tensor((4,), np.uint32, "n", usage))
            self.uniforms.append(uniform)
            self.groups[n] = gpu.create_bind_group(layout=self.pipeline.get_bind_group_layout(0), entries=[
                {"binding": 0, "resource": {"buffer": uniform.buffer, "offset": 0, "size": 16}},
                {"binding": 1, "resource": {"buffer": self.out.buffer, "offset": 0, "size": self.out.size}},
                {"binding": 2, "resource": {"buffer": self.inputs.buffer, "offset": 0, "size": self.inputs.size}}])

    def release(self) -> None:
        super().release()
        self.inputs.release()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--passes", type=int, default=probes.PASSES)
    parser.add_argument("--repetitions", type=int, default=probes.REPETITIONS)
    parser.add_argument("--print-source", metavar="WORK,STORE", help="print one probe's WGSL and stop")
    args = parser.parse_args()
    if args.print_source:
        print(source(*args.print_source.split(",")))
        return
    probes.PASSES, probes.REPETITIONS = args.passes, args.repetitions
    device = GpuDevice("wgpu")
    print(f"== wgpu ({device.description}); GPU timestamps; p50 of {probes.PASSES} passes, median and range over "
          f"{probes.REPETITIONS} repetitions; an iteration's cost (t(8) - t(1)) / 7", flush=True)
    built: dict[str, tuple[probes.Bound, tuple[int, ...]]] = {}
    for work in WORKS:
        for store in STORES:
            try:
                built[f"{work}+{store}"] = (WithInputs(device, source(work, store, device.subgroup_enable)), (0, 1, 8))
            except Exception as err:
                print(f"{work}+{store}: not built: {str(err).splitlines()[0][:300]}", flush=True)
    found = probes.measure(device, built, "timestamps")
    per_iter: dict[str, np.ndarray] = {}
    for name in built:
        t = {n: float(np.median(found[name, n])) for n in (0, 1, 8)}
        per_iter[name] = (np.array(found[name, 8]) - np.array(found[name, 1])) / 7
        low, mid, high = np.percentile(per_iter[name], [25, 50, 75])
        print(f"{name}: t(0) {t[0]:.2f}, t(1) {t[1]:.2f}, t(8) {t[8]:.2f} us; an iteration {mid:.3f} us "
              f"[{low:.3f}, {high:.3f}]", flush=True)
    print("== what each store form adds to an iteration beside each work: the median over repetitions of "
          "cost(work + store) - cost(work), [quartiles] (us; a slot is 1 MiB)")
    print("work     " + "".join(f"{store:>24}" for store in STORES[1:]))
    for work in WORKS:
        if f"{work}+none" not in per_iter:
            continue
        cells = []
        for store in STORES[1:]:
            if f"{work}+{store}" not in per_iter:
                cells.append(f"{'-':>24}")
                continue
            added = per_iter[f"{work}+{store}"] - per_iter[f"{work}+none"]
            low, mid, high = np.percentile(added, [25, 50, 75])
            cells.append(f"{mid:8.3f} [{low:6.3f}, {high:6.3f}]")
        print(f"{work:<9}{''.join(cells)}  (work alone {np.median(per_iter[f'{work}+none']):.3f})")
    for bound, _ in built.values():
        bound.release()


if __name__ == "__main__":
    main()

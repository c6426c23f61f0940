"""Whether a slot's stores wait in the warp that issues them: the same bytes from 1, 2, 4 or 8 warps a workgroup.

``python docs/results/2026-12-03-h200-store-warp/probe_warps.py`` (from the repository root, on wgpu-native) prints
one line per probe. Every probe has the kernel's 256 workgroups (8 tiles x 32 heads) and stores ``n`` slots of
``TILE_BYTES`` a workgroup (4 KiB: a 1 MiB fp16 slot; 8 KiB: a 2 MiB fp32 slot), 16 bytes a lane, from registers,
with no barrier and no other work. ``warps`` warps of 32 lanes share a tile's store instructions, so each issues
``TILE_BYTES / 512 / warps`` of them a slot. Addresses are ``rows`` (the kernel's staged copy: a tile of 16 fp16
columns or 8 vec4 fp32 columns by 128 rows, rows 256 or 512 bytes apart) or ``flat`` (the tile's bytes contiguous).
A slot's cost is ``(t(8) - t(1)) / 7``, as in ``probe_stores.py`` (``../2026-12-03-h200-store-floor/``), whose
timing this uses. If the cost follows the instructions each warp issues, it falls as the warps rise. The bench's
plain store kernel (the floor) storing 7 and 14 MiB, the bytes of 7 slots, runs in the same repetitions.
"""

from __future__ import annotations

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

HEADS, TILES, ROWS, LANES = 32, 8, 128, 32
WARPS = (1, 2, 4, 8)


def source(tile_bytes: int, warps: int, addressing: str) -> str:
    per_warp = tile_bytes // 16 // LANES // warps
    row_vecs = tile_bytes // 16 // ROWS
    stores = []
    for k in range(per_warp):
        stores.append(f"        {{ let e = lindex + {k}u * {warps * LANES}u; out[slot_base + " + (
            f"(e / {row_vecs}u) * {row_vecs * TILES}u + wg.x * {row_vecs}u + e % {row_vecs}u"
            if addressing == "rows" else f"wg.x * {tile_bytes // 16}u + e") + f"] = v + vec4<u32>({k}u); }}")
    body = "\n".join(stores)
    return f"""struct P {{ n: u32 }}
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<u32>>;
@compute @workgroup_size({LANES}, {warps})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lindex: u32) {{
    var v = vec4<u32>(lindex);
    for (var j = 0u; j < p.n; j++) {{
        let slot_base = (j * {HEADS}u + wg.y) * {tile_bytes * TILES // 16}u;
{body}
        v = v + vec4<u32>(1u);
    }}
}}
"""


def main() -> None:
    device = GpuDevice("wgpu")
    print(f"== wgpu ({device.description}); GPU timestamps; p50 of {probes.PASSES} passes, median [quartiles] over "
          f"{probes.REPETITIONS} repetitions; a slot's cost (t(8) - t(1)) / 7", flush=True)
    built: dict[str, tuple[probes.Bound, tuple[int, ...]]] = {}
    for tile_bytes in (4096, 8192):
        for addressing in ("rows", "flat"):
            for warps in WARPS:
                name = f"{tile_bytes // 1024} KiB {addressing} warps={warps} stores/warp={tile_bytes // 512 // warps}"
                built[name] = (probes.Bound(device, source(tile_bytes, warps, addressing), (TILES, HEADS, 1),
                                            8 * HEADS * TILES * tile_bytes, (0, 1, 8)), (0, 1, 8))
    plains = {f"plain {mib} MiB": probes._PlainAsBound(probes.PlainStore(device, mib * 2**20)) for mib in (7, 14)}
    for name, plain in plains.items():
        built[name] = (plain, (0, 1))
    found = probes.measure(device, built, "timestamps")
    for name in plains:
        marginal = float(np.median(np.array(found[name, 1]) - np.array(found[name, 0])))
        print(f"{name} (the bench's floor kernel): t(0) {np.median(found[name, 0]):.2f}, t(1) "
              f"{np.median(found[name, 1]):.2f} us; the stores add {marginal:.3f} us", flush=True)
    for name in built:
        if name in plains:
            continue
        per_slot = (np.array(found[name, 8]) - np.array(found[name, 1])) / 7
        low, mid, high = np.percentile(per_slot, [25, 50, 75])
        t1 = float(np.median(found[name, 1]))
        print(f"{name}: t(1) {t1:.2f} us; a slot {mid:.3f} us [{low:.3f}, {high:.3f}]; 7 slots {7 * mid:.2f} us",
              flush=True)
    for bound, _ in built.values():
        bound.release()


if __name__ == "__main__":
    probes.REPETITIONS = 15
    main()

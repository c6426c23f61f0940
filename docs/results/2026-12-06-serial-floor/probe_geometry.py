"""What the serial floor waits on: the same seven slots stored one after another from other workgroup geometries.

``python docs/results/2026-12-06-serial-floor/probe_geometry.py`` (from the repository root, on wgpu-native
with GPU timestamps) prints one line per geometry. Each geometry is a ``fuzz.bench.store_floor.SlotLayout`` of the
reference slot (``B=1, H=32, d_k=d_v=128``: rows of 256 bytes in fp16, 512 in fp32) timed with the bench's own
``SerialStore``: seven slots are ``t(8 slots) - t(1 slot)``, as in the bench. It varies

- the tile: the vectors of a row each workgroup stores (the kernel's is 2 in fp16, 4 in fp32), with the
  workgroups along ``d_v`` that it leaves;
- the row blocks: the rows of a head split over ``R`` workgroups (laid out as a batch of ``R``: the same bytes,
  ``R`` times the workgroups, each storing ``1 / R`` of the tile), for the kernel's tile and for whole rows (a
  workgroup owning rows rather than columns: 8 row blocks of whole rows are as many workgroups as the kernel has);
- the invocations per workgroup.

The bench's plain store kernel storing the same bytes at once runs in the same rounds. Rounds interleave every
series in a random order; each round keeps a series' median of ``SAMPLES`` passes, and a cost is the median over
rounds of the per-round difference, with its quartiles.
"""

from __future__ import annotations

import random

import numpy as np

from fuzz.bench.store_floor import EMPTY, SERIAL, STORE, PlainStore, SerialStore, SlotLayout
from kernels.device import GpuDevice

ROUNDS, SAMPLES = 15, 100
HEADS, ROWS = 32, 128
SLOTS = 7


def layouts(row_vectors: int, kernel_tile: int) -> dict[str, SlotLayout]:
    found = {}
    for tile in sorted({kernel_tile // 2, kernel_tile, 2 * kernel_tile, 4 * kernel_tile, row_vectors} - {0}):
        for invocations in (64, 128, 256):
            found[f"tile {tile:2d} vec, 1 row block, {invocations:3d} inv"] = SlotLayout(
                (row_vectors // tile, HEADS, 1), invocations, ROWS, tile, row_vectors)
    for tile in (kernel_tile, row_vectors):
        for blocks in (2, 4, 8):
            found[f"tile {tile:2d} vec, {blocks} row blocks, 128 inv"] = SlotLayout(
                (row_vectors // tile, HEADS, blocks), 128, ROWS // blocks, tile, row_vectors)
    return found


def cost(rounds: dict[object, list[float]], high: object, low: object) -> tuple[float, float, float]:
    """The median over rounds of ``high - low`` and its quartiles, in us."""
    diff = np.array(rounds[high]) - np.array(rounds[low])
    q1, mid, q3 = np.percentile(diff, [25, 50, 75])
    return mid / 1e3, q1 / 1e3, q3 / 1e3


def main() -> None:
    device = GpuDevice("wgpu")
    rng = random.Random(0)
    print(f"== {device.description}; GPU timestamps; {ROUNDS} rounds of {SAMPLES} passes; cost of {SLOTS} slots "
          "= t(8) - t(1), median [quartiles] over rounds", flush=True)
    for dtype, row_vectors, kernel_tile in (("float16", 16, 2), ("float32", 32, 4)):
        slot_bytes = HEADS * ROWS * row_vectors * 16
        plain = PlainStore(device, SLOTS * slot_bytes)
        stores = {name: SerialStore(device, layout, (1, 1 + SLOTS))
                  for name, layout in layouts(row_vectors, kernel_tile).items()}
        samplers = dict(plain.series(True))
        for store in stores.values():
            samplers.update(store.series(True))
        names = list(samplers)
        for name in names:
            samplers[name](SAMPLES)
        rounds: dict[object, list[float]] = {name: [] for name in names}
        for _ in range(ROUNDS):
            rng.shuffle(names)
            for name in names:
                rounds[name].append(float(np.median(samplers[name](SAMPLES))))

        floor = cost(rounds, (STORE, plain.nbytes), (EMPTY, plain.nbytes))
        print(f"{dtype}: plain store kernel, {SLOTS * slot_bytes / 2**20:.0f} MiB at once: {floor[0]:.2f} us "
              f"[{floor[1]:.2f}, {floor[2]:.2f}]", flush=True)
        for name, store in stores.items():
            layout = store.layout
            groups = int(np.prod(layout.workgroups))
            mid, q1, q3 = cost(rounds, (SERIAL, layout, 1 + SLOTS), (SERIAL, layout, 1))
            one = float(np.median(rounds[SERIAL, layout, 1])) / 1e3
            print(f"{dtype}: {name} ({groups:4d} workgroups, {layout.tile_vectors * 16:3d} B of each "
                  f"{layout.row_vectors * 16} B row): t(1) {one:.2f} us; {SLOTS} slots {mid:.2f} us [{q1:.2f}, "
                  f"{q3:.2f}] = {mid / floor[0]:.2f}x the plain kernel", flush=True)
        plain.release()
        for store in stores.values():
            store.release()


if __name__ == "__main__":
    main()

"""Writes the kernel's template with the readout gathered whole, as the retrieval is (a comparison variant).

``python docs/results/2026-12-03-h200-reduce-scatter/gather_readout_variant.py OUT.wgsl``. The kernel's
subgroup reduction of vector columns is a reduce-scatter. For the readout, row groups 0..3 each store the one
component they hold, so no gather is needed. This variant gathers the vector back, 3 more shuffles, and row
group 0 stores it, as before the reduce-scatter. Measured beside the kernel, it tells the readout's saving apart
from the reduce-scatter's.
"""

import sys
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parents[3] / "kernels" / "linear_attention.wgsl"

SCATTERED = """    if (TREE >= LANES) {
        let held = column_scatter(part, g);
        if (live && g < LANES) { output[at][g] = STORE(params.scale * held.x); }
    } else {
        store_whole(column_total(part, bank, c, g), g, at, live);
    }
"""
GATHERED = "    store_whole(column_total(part, bank, c, g), g, at, live);\n"


def gather_readout_variant(source: str) -> str:
    """``source`` (the kernel's template) with the vector subgroup readout stored whole by row group 0."""
    if source.count(SCATTERED) != 1:
        raise ValueError("the template's vector subgroup readout is not the one this variant replaces")
    return source.replace(SCATTERED, GATHERED)


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(gather_readout_variant(TEMPLATE.read_text()))

"""Writes the kernel's template with checkpoints staged in a ring of workgroup-memory tiles (a store-form probe).

``python docs/results/2026-12-03-h200-store-floor/ring_variant.py RING OUT.wgsl``: the token loop writes each
stored checkpoint into tile ``j % RING`` of the stage (no barrier), and only when the ring is full or the call's
last token is done does the workgroup pass one barrier and store every staged tile, then a second barrier
before the ring is reused. With ``RING >= W`` all of a call's checkpoints leave at its end, in one burst of
independent stores, instead of one stage-barrier-copy-barrier sequence in each token's critical path.
Needs ``RING`` tiles of workgroup memory (fp16 at d_k = d_v = 128: 4,352 bytes each).
"""

import sys
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parents[3] / "kernels" / "linear_attention.wgsl"

DECLARATION = "var<workgroup> stage: array<SVEC, ROWG * RPT * COLS + ROWG>;\n"
RING_DECLARATION = """// one tile, padded as above, and the ring of RING of them
const TILE: u32 = ROWG * RPT * COLS + ROWG;
const RING: u32 = {ring}u;
var<workgroup> stage: array<SVEC, RING * TILE>;
"""

STORE_START = "        if (t + slots >= seq_len) {\n            // The workgroup's tile of the slot goes out"
STORE_END = "        // [[/staged]]\n        cur = next;"
RING_STORE = """        if (t + slots >= seq_len) {
            // checkpoint j goes to tile j % RING of the ring; the ring is stored when full or after the last token
            let j = t + slots - seq_len;
            let p = j % RING;
            for (var k = 0u; k < RPT; k++) { stage[p * TILE + (row0 + k) * COLS + lid.y + lid.x] = SVEC(s[k]); }
            if (p == RING - 1u || t + 1u == seq_len) {
                workgroupBarrier();
                // the ring holds checkpoints j - p .. j, less the leading zero slots of a call shorter than W
                let first = max(j - p, select(0u, slots - seq_len, slots > seq_len));
                for (var q = first - (j - p); q <= p; q++) {
                    let tile = (j - p + q) * slot_elems + (b * HKV + h) * DK * DV + wg.x * COLS;
                    for (var k = 0u; k < RPT; k++) {
                        let e = lindex + k * ROWG * COLS;
                        let i = e / COLS;
                        if (i < DK && wg.x * COLS + e % COLS < DV) {
                            present_state[tile + i * DV + e % COLS] = stage[q * TILE + e + i / RPT];
                        }
                    }
                }
                workgroupBarrier();
            }
        }
"""


def ring_variant(source: str, ring: int) -> str:
    """``source`` (the kernel's template) with its staged checkpoint stores in the ring form."""
    if source.count(DECLARATION) != 1 or source.count(STORE_START) != 1:
        raise ValueError("the template's staged stores are not the form this variant patches")
    source = source.replace(DECLARATION, RING_DECLARATION.format(ring=ring))
    start = source.index(STORE_START)
    end = source.index(STORE_END, start)
    return source[:start] + RING_STORE + source[end:]


if __name__ == "__main__":
    Path(sys.argv[2]).write_text(ring_variant(TEMPLATE.read_text(), int(sys.argv[1])))

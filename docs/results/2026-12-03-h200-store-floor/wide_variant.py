"""Writes the kernel's template with 16-byte checkpoint stores for fp16 (a store-form candidate, not yet measured).

``python docs/results/2026-12-03-h200-store-floor/wide_variant.py OUT.wgsl``. The store-only probes here showed a
slot's cost follows the number of warp store instructions, not the bytes: fp16's 8-byte stores (one ``vec4<f16>``
an invocation) move half what fp32's or the floor's 16-byte stores move in the same time. This variant views
``present_state`` as ``array<vec4<u32>>`` and copies each staged checkpoint two ``vec4<f16>`` at a time (half the
store instructions), packed with ``pack2x16float`` (exact: the values are f16 already; naga takes no ``bitcast``
between ``vec4<f16>`` and ``vec2<u32>``); the seed read of the aliased binding and the leading zero slots go
through the same view.

Only for fp16 pipelines with vector columns and staged stores, ``d_v % 8 == 0`` (the benchmark's reference shape
at fp16 on a GPU): the direct stores and the chunked prefill, which share the binding, are not adapted.
"""

import sys
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parents[3] / "kernels" / "linear_attention.wgsl"

EDITS = [
    ("@group(0) @binding(8) var<storage, read_write> present_state: array<SVEC>;",
     """// fp16 state pairs: two adjacent vec4<f16> columns as one 16-byte vector
@group(0) @binding(8) var<storage, read_write> present_state: array<vec4<u32>>;

// element e (in vec4<f16> units) of the present state, as f32 (exact: every f16 is an f32)
fn present_at(e: u32) -> VEC {
    let pair = present_state[e / 2u];
    let half = select(pair.xy, pair.zw, (e & 1u) == 1u);
    return VEC(unpack2x16float(half.x), unpack2x16float(half.y));
}

// a vec4<f16> as two u32 (exact: its values are f16 already)
fn packed(v: SVEC) -> vec2<u32> {
    let f = vec4<f32>(v);
    return vec2<u32>(pack2x16float(f.xy), pack2x16float(f.zw));
}"""),
    ("""        let zeros = (W - seq_len) * slot_elems;
        let stride = groups.x * groups.y * groups.z * ROWG * COLS;
        for (var e = ((wg.z * groups.y + wg.y) * groups.x + wg.x) * ROWG * COLS + lindex; e < zeros; e += stride) {
            present_state[e] = SVEC();
        }""",
     """        let zeros = (W - seq_len) * slot_elems / 2u;
        let stride = groups.x * groups.y * groups.z * ROWG * COLS;
        for (var e = ((wg.z * groups.y + wg.y) * groups.x + wg.x) * ROWG * COLS + lindex; e < zeros; e += stride) {
            present_state[e] = vec4<u32>();
        }"""),
    ("s[k] = VEC(present_state[seed + i * DV]);", "s[k] = present_at(seed + i * DV);"),
    ("""            for (var k = 0u; k < RPT; k++) {
                let e = lindex + k * ROWG * COLS;
                let i = e / COLS;
                if (i < DK && wg.x * COLS + e % COLS < DV) { """
     """present_state[tile + i * DV + e % COLS] = stage[e + i / RPT]; }
            }""",
     """            // RPT / 2 passes, each invocation storing a pair of adjacent elements of one row
            for (var k = 0u; k < RPT; k++) {
                if (k < RPT / 2u) {
                    let e = lindex + k * ROWG * COLS;
                    let i = e / (COLS / 2u);
                    let c = 2u * (e % (COLS / 2u));
                    if (i < DK && wg.x * COLS + c < DV) {
                        let at = i * COLS + c + i / RPT;
                        let pair = vec4<u32>(packed(stage[at]), packed(stage[at + 1u]));
                        present_state[(tile + i * DV + c) / 2u] = pair;
                    }
                }
            }"""),
]


def wide_variant(source: str) -> str:
    """``source`` (the kernel's template) with 16-byte fp16 checkpoint stores."""
    for old, new in EDITS:
        if source.count(old) != 1:
            raise ValueError(f"the template does not hold the form this variant patches: {old[:60]!r}")
        source = source.replace(old, new)
    return source


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(wide_variant(TEMPLATE.read_text()))

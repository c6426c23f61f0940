"""Writes the kernel's template with each staged checkpoint copied out one token later (a store-form candidate).

``python docs/results/2026-12-03-h200-store-contention/deferred_variant.py OUT.wgsl``. The probes of this folder
showed the copy's stores run beside register arithmetic but queue behind shuffles and loads, and that the kernel
issues them right after the stage's barrier, where the next thing the workgroup does is the next token's loads
and reductions. Here a token stages its checkpoint (barrier, stage, barrier) and the next token copies it out
right after issuing its input loads, ahead of its decay and retrieval arithmetic; the last checkpoint is copied
after the loop. Same stores, same bits, same barriers per stored token; only where the copy sits changes.
"""

import sys
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parents[3] / "kernels" / "linear_attention.wgsl"

COPY_START = "            // RPT passes of the whole workgroup over the tile"
COPY_END = "            // [[/paired]]\n"


def deferred_variant(source: str) -> str:
    """``source`` (the kernel's template) with each staged checkpoint copied out during the next token."""
    start, end = source.index(COPY_START), source.index(COPY_END) + len(COPY_END)
    copy = source[start:end]
    stage_open = source.rindex("        // [[staged]]\n        if (t + slots >= seq_len) {", 0, start)
    stage_close = source.index("        // [[/staged]]\n", end)
    staged = """        // [[staged]]
        if (t + slots >= seq_len) {
            // the previous checkpoint's copy (earlier in this token) is done before the stage is written again
            workgroupBarrier();
            for (var k = 0u; k < RPT; k++) { stage[(row0 + k) * COLS + lid.y + lid.x] = SVEC(s[k]); }
            workgroupBarrier();
            pending = 1u;
            pending_tile = (t + slots - seq_len) * slot_elems + (b * HKV + h) * DK * DV + wg.x * COLS;
        }
"""
    source = source[:stage_open] + staged + source[stage_close:]
    copy_here = f"""        // [[staged]]
        if (pending == 1u) {{
            let tile = pending_tile;
{copy}        }}
        // [[/staged]]
"""
    edits = [
        ("    if (params.seed_mode == SEED_PRESENT) { storageBarrier(); }\n",
         "    if (params.seed_mode == SEED_PRESENT) { storageBarrier(); }\n"
         "    // a checkpoint staged and not yet copied out, and where it goes\n"
         "    var pending = 0u;\n    var pending_tile = 0u;\n"),
        ("        let next = token_inputs(first + min(t + 1u, seq_len - 1u), h, kh, qh0, row0, vcol);\n",
         "        let next = token_inputs(first + min(t + 1u, seq_len - 1u), h, kh, qh0, row0, vcol);\n" + copy_here),
        ("        cur = next;\n    }\n}", "        cur = next;\n    }\n" + copy_here.replace("\n        ", "\n    ")
         .replace("        // [[staged]]", "    // [[staged]]", 1) + "}"),
    ]
    for old, new in edits:
        if source.count(old) != 1:
            raise ValueError(f"the template does not hold the form this variant patches: {old[:60]!r}")
        source = source.replace(old, new)
    return source


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(deferred_variant(TEMPLATE.read_text()))

"""Writes the kernel's template with a store warp: one more warp per workgroup that only copies checkpoints out.

``python docs/results/2026-12-03-h200-store-warp/store_warp_variant.py OUT.wgsl [--double] [--idle] [--warps N]``.

The store-contention probes showed that the staged stores cost the workgroup the chain stage, barrier, copy,
barrier, and that nothing the token does runs beside that chain: the warps that compute the next token are the
ones issuing the copy. Here the workgroup has ``COLS + STORE_WARPS`` warps (at ``ROWG`` = 32 row groups, one warp
is one ``lid.y``). The first ``COLS`` stage their rows of a checkpoint and go on to the next token; the others,
``lid.y >= COLS``, hold no state and copy the staged tile out (the same coalesced addresses, shared among their
lanes) while the compute warps go on.

- single stage (default): per stored token, a barrier before the stage is written (the store warp's previous
  copy is done) and one after (the tile is staged); the copy runs between that and the next stored token.
- ``--double``: two stages used alternately, one barrier per stored token.
- ``--idle``: the store warp skips the token's arithmetic (its loads, shuffles and updates sit in a branch on
  ``lid.y``, uniform within each warp). Without it, it computes the token on a column's inputs like the tail
  invocations and discards it, which keeps every workgroup barrier and shuffle in uniform control flow (needed
  by the workgroup reduction, which lavapipe runs). Valid only with the subgroup reduction.
"""

import argparse
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parents[3] / "kernels" / "linear_attention.wgsl"

STAGED_OPEN = "        // [[staged]]\n        if (t + slots >= seq_len) {\n"
STAGED_CLOSE = "        // [[/staged]]\n        cur = next;\n"


def staged_block(double: bool) -> str:
    """The loop's staged section: the compute warps stage, the store warps copy."""
    buffer = "(j & 1u) * STAGE_ELEMS" if double else "0u"
    before = "" if double else (
        "            // the store warps' copy of the previous checkpoint is done before the stage is written again\n"
        "            workgroupBarrier();\n")
    return f"""        // [[staged]]
        if (t + slots >= seq_len) {{
            let j = t + slots - seq_len;
            let buf = {buffer};
{before}            if (lid.y < COLS) {{
                for (var k = 0u; k < RPT; k++) {{ stage[buf + (row0 + k) * COLS + lid.y + lid.x] = SVEC(s[k]); }}
            }}
            workgroupBarrier();
            if (lid.y >= COLS) {{
                let tile = j * slot_elems + (b * HKV + h) * DK * DV + wg.x * COLS;
                // this store lane's index among the STORE_WARPS * ROWG of them
                let sl = lindex - ROWG * COLS;
                // [[single]]
                for (var k = 0u; k < RPT; k++) {{
                    for (var m = 0u; m < COLS / STORE_WARPS; m++) {{
                        let e = sl + (k * (COLS / STORE_WARPS) + m) * ROWG * STORE_WARPS;
                        let i = e / COLS;
                        if (i < DK && wg.x * COLS + e % COLS < DV) {{
                            present_state[tile + i * DV + e % COLS] = stage[buf + e + i / RPT];
                        }}
                    }}
                }}
                // [[/single]]
                // [[paired]]
                for (var k = 0u; k < RPT; k++) {{
                    if (k < RPT / 2u) {{
                        for (var m = 0u; m < COLS / STORE_WARPS; m++) {{
                            let e = sl + (k * (COLS / STORE_WARPS) + m) * ROWG * STORE_WARPS;
                            let i = e / (COLS / 2u);
                            let c = 2u * (e % (COLS / 2u));
                            if (i < DK && wg.x * COLS + c < DV) {{
                                let at = buf + i * COLS + c + i / RPT;
                                present_state[(tile + i * DV + c) / 2u] =
                                    vec4<u32>(packed(stage[at]), packed(stage[at + 1u]));
                            }}
                        }}
                    }}
                }}
                // [[/paired]]
            }}
        }}
"""


def replace_once(source: str, old: str, new: str) -> str:
    if source.count(old) != 1:
        raise ValueError(f"the template does not hold the form this variant patches: {old[:70]!r}")
    return source.replace(old, new)


def store_warp_variant(source: str, double: bool, idle: bool, warps: str) -> str:
    """``source`` (the kernel's template) with a store warp (see the module's docstring)."""
    start = source.index(STAGED_OPEN)
    end = source.index(STAGED_CLOSE, start)
    source = source[:start] + staged_block(double) + "        // [[/staged]]\n" + (
        "" if idle else "        cur = next;\n") + source[end + len(STAGED_CLOSE):]
    stages = 2 if double else 1
    for old, new in [
        ("var<workgroup> stage: array<SVEC, ROWG * RPT * COLS + ROWG>;",
         "const STAGE_ELEMS: u32 = ROWG * RPT * COLS + ROWG;\n"
         f"// warps (lid.y >= COLS) that only copy checkpoints out; COLS is a multiple of it\n"
         f"const STORE_WARPS: u32 = {warps};\n"
         f"var<workgroup> stage: array<SVEC, {stages}u * STAGE_ELEMS>;"),
        ("var<workgroup> partials: array<VEC, 2u * ROWG * COLS>;",
         "var<workgroup> partials: array<VEC, 2u * ROWG * (COLS + STORE_WARPS)>;"),
        ("@compute @workgroup_size(ROWG, COLS)", "@compute @workgroup_size(ROWG, COLS + STORE_WARPS)"),
        ("    let live = col < DV;", "    let live = col < DV && lid.y < COLS;"),
        ("        let stride = groups.x * groups.y * groups.z * ROWG * COLS;",
         "        let stride = groups.x * groups.y * groups.z * ROWG * (COLS + STORE_WARPS);"),
        ("groups.x + wg.x) * ROWG * COLS + lindex;", "groups.x + wg.x) * ROWG * (COLS + STORE_WARPS) + lindex;"),
    ]:
        source = replace_once(source, old, new)
    if idle:
        source = replace_once(source, "    for (var t = 0u; t < seq_len; t++) {\n        let bt = first + t;\n",
                              "    for (var t = 0u; t < seq_len; t++) {\n        if (lid.y < COLS) {\n"
                              "        let bt = first + t;\n")
        source = replace_once(source, "        // slot j holds the state after",
                              "        cur = next;\n        }\n        // slot j holds the state after")
    return source


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--double", action="store_true")
    parser.add_argument("--idle", action="store_true")
    parser.add_argument("--warps", default="1u", help="store warps: a WGSL constant expression (1u, 2u, COLS)")
    args = parser.parse_args()
    args.out.write_text(store_warp_variant(TEMPLATE.read_text(), args.double, args.idle, args.warps))

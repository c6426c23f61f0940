// Declarations shared by the kernel's templates (kernels/linear_attention.wgsl, the token loop, and
// kernels/chunked.wgsl, the chunked prefill), rendered into both at their PRELUDE placeholder: the
// storage and math types, the workgroup geometry, the per-call uniform, the bindings, the fixed-order
// reduction over d_k (`column_total`), and the two steps every template takes first (clearing the
// leading zero slots, reading the seed).
{{ENABLE}}
alias STORE = {{STORE}};
// LANES adjacent columns: VEC is their f32 math type, SVEC their stored type (scalars, or 4-vectors)
alias VEC = {{VEC}};
alias SVEC = {{SVEC}};

const LANES: u32 = {{LANES}}u;
const COLS: u32 = {{COLS}}u;
const ROWG: u32 = {{ROWG}}u;
const RPT: u32 = {{RPT}}u;
// the reduction tree spans every row group of a column
const TREE: u32 = ROWG;

// params.decay_mode: the rule does not decay, one gate per head (B, T, H_kv), one per row (B, T, H_kv*d_k)
const DECAY_NONE: u32 = 0u;
const DECAY_HEAD: u32 = 1u;
const DECAY_ROW: u32 = 2u;
// params.beta_mode: the rule has no delta update, one beta per head (B, T, H_kv), one shared (B, T, 1)
const BETA_NONE: u32 = 0u;
const BETA_SHARED: u32 = 2u;
// params.seed_mode: no past state (the state starts at zero), read `past_state`, read `present_state` (aliased)
const SEED_ZERO: u32 = 0u;
const SEED_PRESENT: u32 = 2u;

struct Params {
    batch: u32,
    seq_len: u32,
    scale: f32,
    seed_offset: u32,
    window: u32,
    d_k: u32,
    d_v: u32,
    q_heads: u32,
    kv_heads: u32,
    key_heads: u32,
    decay_mode: u32,
    beta_mode: u32,
    seed_mode: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

// Inputs a call does not have (decay, beta, past_state) are bound to `value` and never read.
// value, the state and the output are read and written LANES columns at a time.
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> query: array<STORE>;
@group(0) @binding(2) var<storage, read> key: array<STORE>;
@group(0) @binding(3) var<storage, read> value: array<SVEC>;
@group(0) @binding(4) var<storage, read> decay: array<STORE>;
@group(0) @binding(5) var<storage, read> beta: array<STORE>;
@group(0) @binding(6) var<storage, read> past_state: array<SVEC>;
@group(0) @binding(7) var<storage, read_write> output: array<SVEC>;
@group(0) @binding(8) var<storage, read_write> present_state: array<SVEC>;

// [[workgroup]]
// Two banks of partial sums, used alternately, so one barrier per reduction suffices: a bank is
// rewritten only after the barrier of the other bank, which every reader of it has passed.
var<workgroup> partials: array<VEC, 2u * ROWG * COLS>;

// The sum over row groups of `part` for column c, in a fixed pairwise tree order.
fn column_total(part: VEC, bank: u32, c: u32, g: u32) -> VEC {
    let base = (bank * COLS + c) * ROWG;
    partials[base + g] = part;
    workgroupBarrier();
    var v: array<VEC, ROWG>;
    for (var j = 0u; j < ROWG; j++) { v[j] = partials[base + j]; }
    for (var stride = 1u; stride < TREE; stride *= 2u) {
        for (var j = 0u; j + stride < ROWG; j += 2u * stride) { v[j] = v[j] + v[j + stride]; }
    }
    return v[0];
}
// [[/workgroup]]
// [[subgroup]]
// The sum over row groups of `part` for this column: a butterfly over the ROWG consecutive lanes
// (the same tree as the workgroup path; `bank`, `c` and `g` are that path's and unused here).
fn column_total(part: VEC, bank: u32, c: u32, g: u32) -> VEC {
    var v = part;
    for (var stride = 1u; stride < TREE; stride *= 2u) { v = v + subgroupShuffleXor(v, stride); }
    return v;
}
// [[/subgroup]]

// The leading W - T slots represent no token of this call: exact zeros. They are one contiguous
// range that holds no seed (the seed is slot W-1), so every invocation of the dispatch clears
// consecutive elements of it, coalesced, first thing: the stores overlap the work on the tokens.
fn clear_leading_slots(wg: vec3<u32>, groups: vec3<u32>, lindex: u32) {
    if (params.window > params.seq_len) {
        let zeros = (params.window - params.seq_len) * params.batch * params.kv_heads * params.d_k * (params.d_v / LANES);
        let stride = groups.x * groups.y * groups.z * ROWG * COLS;
        for (var e = ((wg.z * groups.y + wg.y) * groups.x + wg.x) * ROWG * COLS + lindex; e < zeros; e += stride) {
            present_state[e] = SVEC();
        }
    }
}

// Rows row0 .. row0+RPT-1 of this invocation's columns of the seed (zeros without a past state, and
// for rows past d_k or columns past d_v): exactly the elements it will store, read before any store.
fn read_seed(head_base: u32, row0: u32, live: bool) -> array<VEC, RPT> {
    var s: array<VEC, RPT>;
    let DV = params.d_v / LANES;
    if (live && params.seed_mode != SEED_ZERO) {
        let seed = params.seed_offset / LANES + head_base;
        if (params.seed_mode == SEED_PRESENT) {
            for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < params.d_k) { s[k] = VEC(present_state[seed + i * DV]); } }
        } else {
            for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < params.d_k) { s[k] = VEC(past_state[seed + i * DV]); } }
        }
    }
    return s;
}

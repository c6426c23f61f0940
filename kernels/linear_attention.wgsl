// LinearAttention (com.microsoft) with state_window checkpoints: one call, tokens in order.
//
// Template: kernels/shader.py fills in the storage type, the columns each invocation owns
// (LANES: 4 adjacent columns of d_v as one vector where d_v % 4 == 0, else 1), the reduction over
// d_k (one of the sections marked [[workgroup]] and [[subgroup]] is kept) and the workgroup
// geometry (COLS, ROWG, RPT) before compilation; those are all a pipeline is specialised on.
// Everything else about a call (sizes, heads, rule, decay and beta layouts, window, where the seed
// comes from) arrives in the uniform `params`, so one pipeline serves every call of one geometry.
// A pipeline specialised on a call (kernels/shader.py, SPECIALISED_FIELDS: the sizes, heads and layouts)
// has those fields written in as constants wherever `params.NAME` reads them, so the loads they address
// need not wait for the uniform; the template reads them only that way.
// Branches on `params` are uniform: every invocation of a dispatch takes the same way.
//
// One workgroup per (tile of COLS x LANES columns of d_v, kv head, batch), of ROWG x COLS
// invocations. Invocation (g, c) owns rows g*RPT .. g*RPT+RPT-1 of LANES adjacent columns of the
// d_k x d_v state, in private memory (array `s` of VEC) for the whole call, and moves them with one
// LANES-wide access per row; rows at or past d_k (the last group's tail, or whole groups when
// ROWG*RPT exceeds d_k) are never read or stored and stay zero. A reduction over d_k (delta
// retrieval r = S^T k, readout o = S^T q) is a partial sum per invocation, then `column_total`,
// which adds the ROWG partials of a column in one fixed pairwise tree order, so every invocation
// of the column holds the same bits and the result does not depend on scheduling:
// - [[workgroup]]: partials go to workgroup memory, one barrier, and every invocation adds them up;
// - [[subgroup]]: subgroupShuffleXor over the row groups, no barrier and no workgroup memory. The
//   ROWG row groups of a column are consecutive invocations (x is the row group), so they share a
//   subgroup wherever the subgroup size is at least ROWG (the host checks), and lane g's partner at
//   step `stride` is row group g ^ stride. [[scalar]] columns take a butterfly: each step adds the
//   partner's value; lane 0 forms exactly the workgroup path's tree, and every other lane the same
//   sums with the operands swapped, which IEEE addition makes identical. [[vector]] columns take the
//   butterfly's sums as a reduce-scatter (each lane adds and exchanges only the components it keeps,
//   until it holds one component of the total), then gather the vector back: fewer shuffles, which
//   issue through the same memory-instruction path as the checkpoint stores on a GPU
//   (docs/benchmark.md#window-store-cost). Every path gives the same bits.
// Each reduction's `store_readout` stores the readout o = scale * S^T q: row group 0 stores the total
// (`store_whole`), or, after a reduce-scatter over 4 or more row groups, row groups 0..3 each store
// the component they hold, with no gather.
// Every loop over an invocation's rows (`for (var k = 0u; k < RPT; k++)`) is written out by
// kernels/shader.py (`unroll_rows`), so the private arrays it indexes stay in registers.
// Math is f32; STORE is the storage type (f32 or f16), so fp16 values are rounded exactly once, when
// stored.
//
// Invocations past the last column (the tail tile) compute on the last column's inputs, never read
// the state, and what they stage is never stored: they exist only to keep every barrier and shuffle
// in uniform control flow.
//
// The blocks marked <<prelude>> (declarations) and <<tile>> (the first statements of main: what an
// invocation covers, the leading zero slots, the seed) are shared with the chunked prefill
// (kernels/chunked.wgsl), which kernels/shader.py renders with them at its PRELUDE and TILE placeholders.
//
// Checkpoint stores are [[direct]] (each invocation stores its own rows) or, where a column has more
// row groups than MAX_ROW_GROUPS of kernels/shader.py (a warp's lanes would each store a different row),
// [[staged]] through workgroup memory so that consecutive invocations store consecutive columns.
// `present_state` is seen as its state elements ([[single]]) or, for staged fp16 vector columns with an even
// count of them (`KernelSpec.paired_stores`), as [[paired]] adjacent elements, one 16-byte vector each: a staged
// checkpoint then takes half the store instructions, and a slot costs about the same per store instruction
// whatever it carries (docs/benchmark.md#window-store-cost). Sections nest: [[paired]] lies within [[staged]],
// [[scalar]] and [[vector]] (the column width) within [[subgroup]].
//
// The state is read once, from the seed (slot W-1 of the past state, the 4-D state when W = 0,
// or one slot bound on its own), before any store to it, and each workgroup reads exactly the
// elements of it that it later writes (each invocation exactly its own, with direct stores; the
// leading zero slots, cleared by all invocations, lie before slot W-1); nothing else of the past
// state is ever read. That is what makes the aliased binding (past and present are one read_write
// buffer) safe: with staged stores, a storage barrier completes the workgroup's reads before its
// first checkpoint store, which may write another invocation's elements.
// <<prelude>>
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
    zeros_known: u32,
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
// [[single]]
// One element of `present_state`, and the state elements (SVEC) it holds
alias PRESENT = SVEC;
const PER_PRESENT: u32 = 1u;
@group(0) @binding(8) var<storage, read_write> present_state: array<PRESENT>;

// state element e of the present state, as f32 math
fn present_at(e: u32) -> VEC {
    return VEC(present_state[e]);
}
// [[/single]]
// [[paired]]
alias PRESENT = vec4<u32>;
const PER_PRESENT: u32 = 2u;
@group(0) @binding(8) var<storage, read_write> present_state: array<PRESENT>;

// state element e (a vec4<f16>) of the present state, as f32 math: exact, every f16 is an f32
fn present_at(e: u32) -> VEC {
    let pair = present_state[e / 2u];
    let half = select(pair.xy, pair.zw, (e & 1u) == 1u);
    return VEC(unpack2x16float(half.x), unpack2x16float(half.y));
}

// a vec4<f16> as two u32 of packed halves: exact, its values are f16 already (naga takes no bitcast of vec4<f16>)
fn packed(v: SVEC) -> vec2<u32> {
    let f = vec4<f32>(v);
    return vec2<u32>(pack2x16float(f.xy), pack2x16float(f.zw));
}
// [[/paired]]

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

// The readout (see store_whole), by row group 0, which holds the column total whole.
fn store_readout(part: VEC, bank: u32, c: u32, g: u32, at: u32, live: bool) {
    store_whole(column_total(part, bank, c, g), g, at, live);
}
// [[/workgroup]]
// [[subgroup]]
// [[scalar]]
// The sum over row groups of `part` for this column: a butterfly over the ROWG consecutive lanes
// (the same tree as the workgroup path; `bank`, `c` and `g` are that path's and unused here).
fn column_total(part: VEC, bank: u32, c: u32, g: u32) -> VEC {
    var v = part;
    for (var stride = 1u; stride < TREE; stride *= 2u) { v = v + subgroupShuffleXor(v, stride); }
    return v;
}

// The readout (see store_whole), by row group 0, which holds the column total whole.
fn store_readout(part: VEC, bank: u32, c: u32, g: u32, at: u32, live: bool) {
    store_whole(column_total(part, bank, c, g), g, at, live);
}
// [[/scalar]]
// [[vector]]
// The butterfly's sums with fewer shuffles: a reduce-scatter. Each level adds the partner's value
// (lane g ^ stride) only of the components this lane keeps, and sends only those the partner keeps:
// - stride 1: even lanes keep components 0 and 2, odd lanes 1 and 3 (one vec2 shuffle);
// - stride 2: lanes with bit 1 of g clear keep the first of their two, the others the second (one f32);
// - strides 4 .. TREE/2: one f32 each.
// Every kept value is the butterfly's at that lane and level (own + partner's sum over the same rows),
// so lane g ends with component g % 4 of exactly the butterfly's total, the same bits, after 6 f32
// shuffles at TREE = 32 where the butterfly takes 20. The result's component c is the total's wherever
// c = g modulo min(TREE, 4): all four at TREE = 1; 0 and 2 (even g) or 1 and 3 (odd g) at TREE = 2; at
// TREE >= 4 component g % 4 of the total, in every position.
fn column_scatter(part: VEC, g: u32) -> VEC {
    if (TREE == 1u) { return part; }
    let odd = (g & 1u) == 1u;
    let pair = select(part.xz, part.yw, odd) + subgroupShuffleXor(select(part.yw, part.xz, odd), 1u);
    if (TREE == 2u) { return pair.xxyy; }
    let high = (g & 2u) == 2u;
    var own = select(pair.x, pair.y, high) + subgroupShuffleXor(select(pair.y, pair.x, high), 2u);
    for (var stride = 4u; stride < TREE; stride *= 2u) { own = own + subgroupShuffleXor(own, stride); }
    return VEC(own);
}

// The sum over row groups of `part` for this column, whole in every lane: the reduce-scatter, then
// each lane gathers the components it lacks from the lanes holding them (`bank` and `c` unused).
fn column_total(part: VEC, bank: u32, c: u32, g: u32) -> VEC {
    let held = column_scatter(part, g);
    if (TREE == 1u) { return held; }
    let odd = (g & 1u) == 1u;
    if (TREE == 2u) {
        let other = subgroupShuffleXor(select(held.xz, held.yw, odd), 1u);
        return select(vec4(held.x, other.x, held.z, other.y), vec4(other.x, held.y, other.y, held.w), odd);
    }
    // from lane g ^ i comes component (g ^ i) % 4: ordered by i, then put in place by g's two low bits
    let got = vec4(held.x, subgroupShuffleXor(held.x, 1u), subgroupShuffleXor(held.x, 2u),
                   subgroupShuffleXor(held.x, 3u));
    let swapped = select(got, got.yxwz, odd);
    return select(swapped, swapped.zwxy, (g & 2u) == 2u);
}

// The readout, scale times the column total of `part`, stored at output element `at`. Where TREE >= 4,
// row groups 0..3 each store the component they hold after the reduce-scatter, so the readout needs no
// gather; below, row group 0 stores the whole total.
fn store_readout(part: VEC, bank: u32, c: u32, g: u32, at: u32, live: bool) {
    if (TREE >= LANES) {
        let held = column_scatter(part, g);
        if (live && g < LANES) { output[at][g] = STORE(params.scale * held.x); }
    } else {
        store_whole(column_total(part, bank, c, g), g, at, live);
    }
}
// [[/vector]]
// [[/subgroup]]

// A readout stored whole: row group 0 stores scale times the column total `o` at output element `at`
// (where the column is `live`). `store_readout`, of each reduction, stores a column's readout.
fn store_whole(o: VEC, g: u32, at: u32, live: bool) {
    if (live && g == 0u) { output[at] = SVEC(params.scale * o); }
}
// <</prelude>>

// [[staged]]
// A checkpoint's tile staged at once: every row of every row group (ROWG * RPT >= d_k rows) by COLS
// columns, row i at i * COLS + i / RPT. The element of padding after each row group's rows spreads the
// invocations of a warp (one per row group, RPT * COLS elements apart) over the memory banks: without
// it they all hit the same banks, and the window's stores cost more (docs/benchmark.md#window-store-cost).
// kernels/shader.py (`KernelSpec.workgroup_bytes`) keeps it, with the workgroup reduction's partial sums,
// within WebGPU's default 16 KiB of workgroup memory.
var<workgroup> stage: array<SVEC, ROWG * RPT * COLS + ROWG>;
// [[/staged]]

// What token bt (b * T + t) brings to kv head h: its gates, raw (exp is taken where they are used, so
// that loading them never waits), key rows, value columns, beta and the rows of query head qh. Rows at
// or past d_k stay zero, as do the gates and beta a call does not have.
struct Token {
    gate: f32,
    gates: array<f32, RPT>,
    key: array<f32, RPT>,
    query: array<f32, RPT>,
    value: VEC,
    beta: f32,
}

fn token_inputs(bt: u32, h: u32, kh: u32, qh: u32, row0: u32, vcol: u32) -> Token {
    let DK = params.d_k;
    let HKV = params.kv_heads;
    var x: Token;
    if (params.decay_mode == DECAY_HEAD) {
        x.gate = f32(decay[bt * HKV + h]);
    } else if (params.decay_mode == DECAY_ROW) {
        let gates = (bt * HKV + h) * DK;
        for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < DK) { x.gates[k] = f32(decay[gates + i]); } }
    }
    let kbase = (bt * params.key_heads + kh) * DK;
    let qbase = (bt * params.q_heads + qh) * DK;
    for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < DK) { x.key[k] = f32(key[kbase + i]); x.query[k] = f32(query[qbase + i]); } }
    x.value = VEC(value[(bt * HKV + h) * (params.d_v / LANES) + vcol]);
    if (params.beta_mode != BETA_NONE) {
        x.beta = f32(beta[select(bt * HKV + h, bt, params.beta_mode == BETA_SHARED)]);
    }
    return x;
}

@compute @workgroup_size(ROWG, COLS)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) lindex: u32, @builtin(num_workgroups) groups: vec3<u32>) {
    // <<tile>>
    let DK = params.d_k;
    // columns of d_v in units of LANES
    let DV = params.d_v / LANES;
    let HQ = params.q_heads;
    let HKV = params.kv_heads;
    let W = params.window;
    let seq_len = params.seq_len;
    let col = wg.x * COLS + lid.y;
    let live = col < DV;
    let vcol = min(col, DV - 1u);
    let row0 = lid.x * RPT;
    let h = wg.y;
    let b = wg.z;
    let slot_elems = params.batch * HKV * DK * DV;
    // element (i, col) of this head's state in one slot: head_base + i * DV
    let head_base = (b * HKV + h) * DK * DV + col;
    // kv head h reads key head h / (HKV / NK)
    let kh = h / (HKV / params.key_heads);
    // standard GQA: kv head h serves query heads h*G .. h*G+G-1, each its own output head;
    // inverse GQA: kv head h is read by query head h / (HKV / HQ) and writes output head h
    let standard = HQ >= HKV;
    let group = select(1u, HQ / HKV, standard);
    let kv_per_q = max(HKV / HQ, 1u);
    let out_heads = max(HQ, HKV);
    var bank = 0u;

    // The leading W - T slots represent no token of this call: exact zeros. They are one contiguous
    // range that holds no seed (the seed is slot W-1), so every invocation of the dispatch clears
    // consecutive elements of it, coalesced, first thing: the stores overlap the work on the tokens.
    if (W > seq_len) {
        // params.zeros_known = 1: the host knows the buffer already holds these zeros (the last thing that
        // wrote it was a dispatch that left at least as many leading zero slots), so they are not stored again
        if (params.zeros_known == 0u) {
        let zeros = (W - seq_len) * slot_elems / PER_PRESENT;
        let stride = groups.x * groups.y * groups.z * ROWG * COLS;
        for (var e = ((wg.z * groups.y + wg.y) * groups.x + wg.x) * ROWG * COLS + lindex; e < zeros; e += stride) {
            present_state[e] = PRESENT();
        }
        }
    }

    var s: array<VEC, RPT>;
    if (live && params.seed_mode != SEED_ZERO) {
        let seed = params.seed_offset / LANES + head_base;
        if (params.seed_mode == SEED_PRESENT) {
            for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < DK) { s[k] = present_at(seed + i * DV); } }
        } else {
            for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < DK) { s[k] = VEC(past_state[seed + i * DV]); } }
        }
    }
    // <</tile>>
    // [[staged]]
    // Staged checkpoint stores write elements other invocations of the workgroup read as the aliased
    // seed: every read of it is complete before any store
    if (params.seed_mode == SEED_PRESENT) { storageBarrier(); }
    // [[/staged]]
    // Token t+1's inputs are loaded while token t is processed (the last token loads its own again,
    // so no branch): their memory latency overlaps token t's reductions and checkpoint stores, where
    // loading each input just before its use waited on memory three times a token.
    let qh0 = select(h / kv_per_q, h * group, standard);
    // this batch entry's tokens are bt = first + t
    let first = b * seq_len;
    var cur = token_inputs(first, h, kh, qh0, row0, vcol);
    for (var t = 0u; t < seq_len; t++) {
        let bt = first + t;
        let next = token_inputs(first + min(t + 1u, seq_len - 1u), h, kh, qh0, row0, vcol);
        if (params.decay_mode == DECAY_HEAD) {
            let gate = exp(cur.gate);
            for (var k = 0u; k < RPT; k++) { s[k] = gate * s[k]; }
        } else if (params.decay_mode == DECAY_ROW) {
            for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < DK) { s[k] = exp(cur.gates[k]) * s[k]; } }
        }
        if (params.beta_mode == BETA_NONE) {
            for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < DK) { s[k] = s[k] + cur.key[k] * cur.value; } }
        } else {
            var rp = VEC();
            for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < DK) { rp = rp + s[k] * cur.key[k]; } }
            let r = column_total(rp, bank, lid.y, lid.x);
            bank ^= 1u;
            let u = cur.beta * (cur.value - r);
            for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < DK) { s[k] = s[k] + cur.key[k] * u; } }
        }
        for (var g = 0u; g < group; g++) {
            let qh = select(h / kv_per_q, h * group + g, standard);
            let oh = select(h, qh, standard);
            // the first query head's rows came with the token; further heads of a group are loaded here
            var qr = cur.query;
            if (g > 0u) {
                let qbase = (bt * HQ + qh) * DK;
                for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < DK) { qr[k] = f32(query[qbase + i]); } }
            }
            var op = VEC();
            for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < DK) { op = op + s[k] * qr[k]; } }
            store_readout(op, bank, lid.y, lid.x, (bt * out_heads + oh) * DV + col, live);
            bank ^= 1u;
        }
        // slot j holds the state after T - W + j + 1 tokens: token t (0-based) goes to j = t + W - T;
        // W = 0 stores the one 4-D state after the last token the same way, as "slot 0 of 1"
        let slots = max(W, 1u);
        // [[direct]]
        if (live && t + slots >= seq_len) {
            let slot = (t + slots - seq_len) * slot_elems + head_base;
            for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < DK) { present_state[slot + i * DV] = SVEC(s[k]); } }
        }
        // [[/direct]]
        // [[staged]]
        if (t + slots >= seq_len) {
            // The workgroup's tile of the slot goes out through workgroup memory, so that consecutive
            // invocations store consecutive columns of one row (the tile's whole width) rather than each
            // its own columns down RPT rows.
            let tile = (t + slots - seq_len) * slot_elems + (b * HKV + h) * DK * DV + wg.x * COLS;
            for (var k = 0u; k < RPT; k++) { stage[(row0 + k) * COLS + lid.y + lid.x] = SVEC(s[k]); }
            workgroupBarrier();
            // RPT passes of the whole workgroup over the tile: a loop over RPT, so written out like the
            // loops over rows (a loop over elements was slower on a GPU: docs/benchmark.md#window-store-cost)
            // [[single]]
            for (var k = 0u; k < RPT; k++) {
                let e = lindex + k * ROWG * COLS;
                let i = e / COLS;
                if (i < DK && wg.x * COLS + e % COLS < DV) { present_state[tile + i * DV + e % COLS] = stage[e + i / RPT]; }
            }
            // [[/single]]
            // [[paired]]
            // RPT / 2 passes, each invocation storing two adjacent elements of one row (COLS and DV are even)
            for (var k = 0u; k < RPT; k++) {
                if (k < RPT / 2u) {
                    let e = lindex + k * ROWG * COLS;
                    let i = e / (COLS / 2u);
                    let c = 2u * (e % (COLS / 2u));
                    if (i < DK && wg.x * COLS + c < DV) {
                        let at = i * COLS + c + i / RPT;
                        present_state[(tile + i * DV + c) / 2u] = vec4<u32>(packed(stage[at]), packed(stage[at + 1u]));
                    }
                }
            }
            // [[/paired]]
            workgroupBarrier();
        }
        // [[/staged]]
        cur = next;
    }
}

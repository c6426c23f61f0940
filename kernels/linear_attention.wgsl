// LinearAttention (com.microsoft) with state_window checkpoints: one call, tokens in order.
//
// Template: kernels/shader.py replaces every {{NAME}} before compilation, so each pipeline is
// specialised to one (dtype, d_k, d_v, heads, rule, layouts, W, binding). Batch, sequence
// length, scale and the seed's element offset arrive in a uniform, so one pipeline serves every
// T and B and every way of binding the seed.
//
// One workgroup per (tile of COLS columns of d_v, kv head, batch), of COLS x ROWG invocations.
// Invocation (c, g) owns rows g*RPT .. g*RPT+RPT-1 (fewer in the last group when RPT does not
// divide DK) of one column of the d_k x d_v state, in private memory (array `s`) for the whole
// call. A reduction over d_k (delta retrieval r = S^T k, readout o = S^T q) is a partial sum per
// invocation, then `column_total`: partials go to workgroup memory, one barrier, and every
// invocation of the column adds them up in the same fixed tree order, so all of them hold the
// same bits and the result does not depend on scheduling. Math is f32; STORE is the storage type
// (f32 or f16), so fp16 values are rounded exactly once, when stored.
//
// Invocations past the last column (the tail tile) compute on column DV-1's inputs, never read
// the state and never store: they exist only to keep every barrier in uniform control flow.
//
// The state is read once, from the seed (slot W-1 of the past state, the 4-D state when W = 0,
// or one slot bound on its own), before any store, and each invocation reads exactly the
// elements it later writes; nothing else of the past state is ever read. That is what makes the
// aliased binding (past and present are one read_write buffer) safe without a barrier.
{{ENABLE}}
alias STORE = {{STORE}};

const DK: u32 = {{DK}}u;
const DV: u32 = {{DV}}u;
const HQ: u32 = {{HQ}}u;
const HKV: u32 = {{HKV}}u;
const NK: u32 = {{NK}}u;
const W: u32 = {{W}}u;
const COLS: u32 = {{COLS}}u;
const ROWG: u32 = {{ROWG}}u;
const RPT: u32 = {{RPT}}u;

struct Params {
    batch: u32,
    seq_len: u32,
    scale: f32,
    seed_offset: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
{{BINDINGS}}

// Two banks of partial sums, used alternately, so one barrier per reduction suffices: a bank is
// rewritten only after the barrier of the other bank, which every reader of it has passed.
var<workgroup> partials: array<f32, 2u * ROWG * COLS>;

// The sum over row groups of `part` for column c, in a fixed pairwise tree order.
fn column_total(part: f32, bank: u32, c: u32, g: u32) -> f32 {
    let base = bank * ROWG * COLS + c;
    partials[base + g * COLS] = part;
    workgroupBarrier();
    var v: array<f32, ROWG>;
    for (var j = 0u; j < ROWG; j++) { v[j] = partials[base + j * COLS]; }
    for (var stride = 1u; stride < ROWG; stride *= 2u) {
        for (var j = 0u; j + stride < ROWG; j += 2u * stride) { v[j] = v[j] + v[j + stride]; }
    }
    return v[0];
}

@compute @workgroup_size(COLS, ROWG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let col = wg.x * COLS + lid.x;
    let live = col < DV;
    let vcol = min(col, DV - 1u);
    let row0 = lid.y * RPT;
    let h = wg.y;
    let b = wg.z;
    let seq_len = params.seq_len;
    let slot_elems = params.batch * HKV * DK * DV;
    // element (i, col) of this head's state in one slot: head_base + i * DV
    let head_base = (b * HKV + h) * DK * DV + col;
    // kv head h reads key head h / (HKV / NK)
    let kh = h / (HKV / NK);
    var bank = 0u;

    var s: array<f32, RPT>;
{{SEED}}
    for (var t = 0u; t < seq_len; t++) {
        let bt = b * seq_len + t;
{{DECAY}}
        let kbase = (bt * NK + kh) * DK;
        let v = f32(value[(bt * HKV + h) * DV + vcol]);
{{UPDATE}}
{{READOUT}}
{{WINDOW_STORE}}
    }
{{FINAL_STORE}}
}

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
// call. A reduction over d_k is a partial sum per invocation, then `column_totals`: partials go to
// workgroup memory, one barrier, and every invocation of the column adds them up in the same fixed
// tree order, so all of them hold the same bits and the result does not depend on scheduling.
// Math is f32; STORE is the storage type (f32 or f16), so fp16 values are rounded exactly once,
// when stored.
//
// One reduction per token (per batch of MAX_FUSED readouts when a kv head serves many query
// heads): token t's readout o_t = S_t^T q_t and token t+1's delta retrieval both reduce the same
// S_t over d_k, so they share it. The retrieval is on the decayed state, D_{t+1} S_t, taken as
// exp(g) * (S_t^T k) for a per-head decay and as S_t^T (exp(g) . k) for per-row decay; token 0's
// retrieval is the same expression on the seed, reduced once before the loop. Every variant
// (any W, either binding, any seed slot) runs this same arithmetic, so they agree bit for bit.
//
// Each token's inputs (key and first query rows, value, decay, beta) are loaded into registers
// one token ahead, at the top of the previous token, so their latency overlaps that token's
// update, readout and barrier instead of sitting on the critical path.
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
const NRED: u32 = {{NRED}}u;

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
var<workgroup> partials: array<f32, 2u * NRED * ROWG * COLS>;

// For each of the NRED partial sums in `part`: its sum over the row groups of column c, in a fixed
// pairwise tree order.
fn column_totals(part: array<f32, NRED>, bank: u32, c: u32, g: u32) -> array<f32, NRED> {
    let base = bank * NRED * ROWG * COLS + c;
    for (var n = 0u; n < NRED; n++) { partials[base + (n * ROWG + g) * COLS] = part[n]; }
    workgroupBarrier();
    var total: array<f32, NRED>;
    for (var n = 0u; n < NRED; n++) {
        var v: array<f32, ROWG>;
        for (var j = 0u; j < ROWG; j++) { v[j] = partials[base + (n * ROWG + j) * COLS]; }
        for (var stride = 1u; stride < ROWG; stride *= 2u) {
            for (var j = 0u; j + stride < ROWG; j += 2u * stride) { v[j] = v[j] + v[j + stride]; }
        }
        total[n] = v[0];
    }
    return total;
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
{{FIRST}}
    for (var t = 0u; t < seq_len; t++) {
        let bt = b * seq_len + t;
        // the next token (the last token reloads itself: in bounds, and its retrieval goes unused)
        let btn = b * seq_len + min(t + 1u, seq_len - 1u);
{{NEXT}}
{{DECAY}}
{{UPDATE}}
{{READOUT}}
{{WINDOW_STORE}}
    }
{{FINAL_STORE}}
}

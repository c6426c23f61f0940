// LinearAttention (com.microsoft) with state_window checkpoints: one call, tokens in order.
//
// Template: kernels/shader.py replaces every {{NAME}} before compilation, so each pipeline is
// specialised to one (dtype, d_k, d_v, heads, rule, layouts, W, binding). Batch, sequence
// length and scale arrive in a uniform, so one pipeline serves every T and B.
//
// One workgroup per (tile of d_v columns, kv head, batch). Each invocation owns one column of
// the d_k x d_v state and keeps it in private memory (array `s`) for the whole call, so every
// reduction over d_k (delta retrieval r = S^T k, readout o = S^T q) is a serial loop inside one
// thread: no barriers, no workgroup memory. Math is f32; STORE is the storage type (f32 or f16),
// so fp16 values are rounded exactly once, when stored.
//
// The state is read once, from slot W-1 of the past state (or the 4-D state when W = 0), before
// any store by the same invocation; nothing else of the past state is ever read. That ordering
// is what makes the aliased binding (past and present are one read_write buffer) safe.
{{ENABLE}}
alias STORE = {{STORE}};

const DK: u32 = {{DK}}u;
const DV: u32 = {{DV}}u;
const HQ: u32 = {{HQ}}u;
const HKV: u32 = {{HKV}}u;
const NK: u32 = {{NK}}u;
const W: u32 = {{W}}u;
const WG: u32 = {{WG}}u;

struct Params {
    batch: u32,
    seq_len: u32,
    scale: f32,
    unused: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
{{BINDINGS}}

@compute @workgroup_size({{WG}})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let col = wg.x * WG + lid.x;
    if (col >= DV) {
        return;
    }
    let h = wg.y;
    let b = wg.z;
    let seq_len = params.seq_len;
    let slot_elems = params.batch * HKV * DK * DV;
    // element (i, col) of this head's state in one slot: head_base + i * DV
    let head_base = (b * HKV + h) * DK * DV + col;
    // kv head h reads key head h / (HKV / NK)
    let kh = h / (HKV / NK);

    var s: array<f32, DK>;
{{SEED}}
    for (var t = 0u; t < seq_len; t++) {
        let bt = b * seq_len + t;
{{DECAY}}
        let kbase = (bt * NK + kh) * DK;
        let v = f32(value[(bt * HKV + h) * DV + col]);
{{UPDATE}}
{{READOUT}}
{{WINDOW_STORE}}
    }
{{FINAL_STORE}}
}

// GatedDeltaNet's token loop with capture (docs/spec.md §8): one invocation per (request, value head, value
// channel), each owning one row S[v, 0..d_k) of its head's V-major state for the whole call, so no invocation
// waits for another. Per token it reads the query and key of its head's query/key head, computes the gates in
// float32 (qwen, sigmoid) and the norms (qk_l2_norm), decays its row, retrieves r = S[v, :] . k, forms
// delta = b (v - r), updates the row and writes its output channel. The first `captured` tokens of the request
// also write the capsule: the delta of each channel, the decay factor (channel 0) and the key, shared out over the
// channels of the first value head of each key head (channel v stores key elements v, v + d_v, ...), so that no
// invocation stores a whole key while the others wait for it.
//
// Template: kernels/gated_delta_net.py fills in the q/k/v/output storage type (STORE), the workgroup size (WG) and
// the row's private extent (DK_MAX, d_k rounded up to a power of two). Everything else is the uniform.
{{ENABLE}}
alias STORE = {{STORE}};

const WG: u32 = {{WG}}u;
const DK_MAX: u32 = {{DK_MAX}}u;
const L2_EPSILON: f32 = 1e-12;

struct Params {
    batch: u32,
    seq_len: u32,          // tokens of every request (uniform packing)
    q_heads: u32,
    v_heads: u32,
    d_k: u32,
    d_v: u32,
    capacity: u32,
    ragged: u32,           // 1: request bounds from cu_seqlens
    q_stride: u32,         // elements per token in the query binding, then its first head's offset
    q_offset: u32,
    k_stride: u32,
    k_offset: u32,
    v_stride: u32,
    v_offset: u32,
    seed_mode: u32,        // 0: zeros, 1: initial_state, 2: final_state (one buffer for both)
    gated: u32,
    delta_rule: u32,
    decay_per_key: u32,
    qwen: u32,
    sigmoid_beta: u32,
    l2_norm: u32,
    capture: u32,          // 1: capture the first capture_count tokens; 0 with capacity > 0: zero the capsule
    scale: f32,
    pad0: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> query: array<STORE>;
@group(0) @binding(2) var<storage, read> key: array<STORE>;
@group(0) @binding(3) var<storage, read> value: array<STORE>;
@group(0) @binding(4) var<storage, read> cu_seqlens: array<i32>;
@group(0) @binding(5) var<storage, read> decay: array<f32>;
@group(0) @binding(6) var<storage, read> beta: array<f32>;
@group(0) @binding(7) var<storage, read> initial_state: array<f32>;
@group(0) @binding(8) var<storage, read> a_log: array<f32>;
@group(0) @binding(9) var<storage, read> dt_bias: array<f32>;
@group(0) @binding(10) var<storage, read> capture_count: array<i32>;
@group(0) @binding(11) var<storage, read_write> output: array<STORE>;
@group(0) @binding(12) var<storage, read_write> final_state: array<f32>;
@group(0) @binding(13) var<storage, read_write> state_update: array<f32>;

fn softplus(x: f32) -> f32 {
    return max(x, 0.0) + log(1.0 + exp(-abs(x)));
}

fn sigmoid(x: f32) -> f32 {
    let e = exp(-abs(x));
    return select(e / (1.0 + e), 1.0 / (1.0 + e), x >= 0.0);
}

// The log-space decay of value head h at decay element `at`: as given, or computed by the qwen gate.
fn log_decay(at: u32, h: u32) -> f32 {
    let raw = decay[at];
    if (params.qwen == 1u) {
        return -exp(a_log[h]) * softplus(raw + dt_bias[h]);
    }
    return raw;
}

// Zero what a request's row of the capsule holds for this invocation: capture is off (state_update_active 0).
fn zero_capsule(row_base: u32, h: u32, kh: u32, v: u32, first_of_key_head: bool) {
    let hv = params.v_heads;
    let key_block = params.capacity * hv;
    let delta_block = key_block + params.capacity * params.q_heads * params.d_k;
    for (var j = 0u; j < params.capacity; j++) {
        state_update[row_base + delta_block + (j * hv + h) * params.d_v + v] = 0.0;
        if (v == 0u) {
            state_update[row_base + j * hv + h] = 0.0;
        }
        if (first_of_key_head) {
            for (var i = v; i < params.d_k; i += params.d_v) {
                state_update[row_base + key_block + (j * params.q_heads + kh) * params.d_k + i] = 0.0;
            }
        }
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let idx = gid.x + gid.y * groups.x * WG;
    let hv = params.v_heads;
    let dk = params.d_k;
    let dv = params.d_v;
    if (idx >= params.batch * hv * dv) {
        return;
    }
    let v = idx % dv;
    let h = (idx / dv) % hv;
    let b = idx / (dv * hv);
    let group = hv / params.q_heads;
    let kh = h / group;
    let first_of_key_head = h % group == 0u;

    var start = b * params.seq_len;
    var len = params.seq_len;
    if (params.ragged == 1u) {
        start = u32(cu_seqlens[b]);
        len = u32(cu_seqlens[b + 1u]) - start;
    }
    var captured = 0u;
    if (params.capture == 1u) {
        let asked = capture_count[b];
        if (asked > 0) {
            captured = min(u32(asked), min(params.capacity, len));
        }
    }
    let row_base = b * params.capacity * (hv + params.q_heads * dk + hv * dv);
    let key_block = params.capacity * hv;
    let delta_block = key_block + params.capacity * params.q_heads * dk;

    let state_row = ((b * hv + h) * dv + v) * dk;
    var row: array<f32, DK_MAX>;
    for (var i = 0u; i < dk; i++) {
        var seed = 0.0;
        if (params.seed_mode == 1u) {
            seed = initial_state[state_row + i];
        } else if (params.seed_mode == 2u) {
            seed = final_state[state_row + i];
        }
        row[i] = seed;
    }

    for (var j = 0u; j < len; j++) {
        let t = start + j;
        let q_at = t * params.q_stride + params.q_offset + kh * dk;
        let k_at = t * params.k_stride + params.k_offset + kh * dk;
        var q_norm = 1.0;
        var k_norm = 1.0;
        if (params.l2_norm == 1u) {
            var qq = 0.0;
            var kk = 0.0;
            for (var i = 0u; i < dk; i++) {
                let qi = f32(query[q_at + i]);
                let ki = f32(key[k_at + i]);
                qq += qi * qi;
                kk += ki * ki;
            }
            q_norm = inverseSqrt(qq + L2_EPSILON);
            k_norm = inverseSqrt(kk + L2_EPSILON);
        }

        var factor = 1.0;
        if (params.gated == 1u && params.decay_per_key == 0u) {
            factor = exp(log_decay(t * hv + h, h));
        }
        var retrieved = 0.0;
        for (var i = 0u; i < dk; i++) {
            var a = factor;
            if (params.gated == 1u && params.decay_per_key == 1u) {
                a = exp(log_decay((t * hv + h) * dk + i, h));
            }
            row[i] *= a;
            retrieved += row[i] * f32(key[k_at + i]) * k_norm;
        }
        var rate = 1.0;
        if (params.delta_rule == 1u) {
            rate = beta[t * hv + h];
            if (params.sigmoid_beta == 1u) {
                rate = sigmoid(rate);
            }
        } else {
            retrieved = 0.0;
        }
        let delta = rate * (f32(value[t * params.v_stride + params.v_offset + h * dv + v]) - retrieved);
        var out = 0.0;
        for (var i = 0u; i < dk; i++) {
            row[i] += delta * f32(key[k_at + i]) * k_norm;
            out += row[i] * f32(query[q_at + i]) * q_norm;
        }
        output[(t * hv + h) * dv + v] = STORE(out * params.scale);

        if (j < captured) {
            state_update[row_base + delta_block + (j * hv + h) * dv + v] = delta;
            if (v == 0u) {
                state_update[row_base + j * hv + h] = factor;
            }
            if (first_of_key_head) {
                for (var i = v; i < dk; i += dv) {
                    state_update[row_base + key_block + (j * params.q_heads + kh) * dk + i] =
                        f32(key[k_at + i]) * k_norm;
                }
            }
        }
    }
    if (params.capacity > 0u && params.capture == 0u) {
        zero_capsule(row_base, h, kh, v, first_of_key_head);
    }
    for (var i = 0u; i < dk; i++) {
        final_state[state_row + i] = row[i];
    }
}

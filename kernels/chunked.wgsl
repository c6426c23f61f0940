// LinearAttention (com.microsoft) with state_window checkpoints: one call, chunked prefill.
//
// The same contract, geometry, uniform and bindings as the token loop (kernels/linear_attention.wgsl,
// whose <<prelude>> and <<tile>> blocks are rendered here at the PRELUDE and TILE placeholders): one workgroup per
// (tile of d_v, kv head, batch), invocation (g, c) owning rows g*RPT .. g*RPT+RPT-1 of LANES adjacent columns of the state in
// private memory, reductions over d_k by `column_total` in one fixed tree order. What differs is how
// the tokens are taken: in chunks of CHUNK, and within a chunk the reductions over d_k of all tokens
// are independent of each other instead of one after the other.
//
// For a chunk of n tokens entering with state S0, with a_t[i] the decay factor of token t in row i
// (exp of the gate; 1 without decay), P_t[i] = a_0[i]..a_t[i] the decay from the chunk's start and
// E[t][j][i] = a_{j+1}[i]..a_t[i] (1 for t = j) the decay between two of its tokens, both running
// products (as the token loop decays: no exp of a difference of sums, no division):
//   pseudo-values  delta rules:  u_t = beta_t (v_t - sum_i P_t[i] k_t[i] S0[i,:] - sum_{j<t} A[t][j] u_j),
//                                A[t][j] = sum_i k_t[i] k_j[i] E[t][j][i]   (forward substitution)
//                  other rules:  u_t = v_t
//   outputs        o_t = scale (sum_i P_t[i] q_t[i] S0[i,:] + sum_{j<=t} B[t][j] u_j),
//                  B[t][j] = sum_i q_t[i] k_j[i] E[t][j][i]   (per query head)
//   states         S_t[i,:] = a_t[i] S_{t-1}[i,:] + k_t[i] u_t   (S_{-1} = S0)
// which is the token loop's recurrence unrolled: u_t is exactly the token loop's beta_t (v_t - r_t)
// (or v_t), since the decayed state before token t is P_t S0 + sum_{j<t} E[t][j] k_j u_j^T. The
// retrievals and readouts against S0 and the entries of A and B are reductions over d_k that do not
// depend on each other; the only serial steps left are the forward substitution (a short sum over u per
// token, in registers) and the state update (one multiply-add per element per token, no reduction).
// The states after every token come out of that update, so the W checkpoints (and the final state)
// are stored where the token loop stores them.
//
// A and B live in workgroup memory (`pairs`, two CHUNK x CHUNK blocks). Their entries are reduced
// like everything else: the invocations of column c take the columns j = c, c + COLS, ... of the
// matrix, walk t upwards from j (so E is one running product per row) and reduce LANES entries at
// once, packed in a VEC; row group 0 writes them. Every loop that reaches a barrier or a shuffle has
// bounds from `params` and constants only, so control flow stays uniform there.
//
// Properties kept from the token loop: the seed is read once, in the <<tile>> block, before any store, each
// invocation storing exactly the elements it read (aliased binding safe); every reduction has one fixed
// order (bit-for-bit reproducible); math is f32 and fp16 values are rounded once, when stored.
{{PRELUDE}}
// tokens per chunk (kernels/shader.py: CHUNK_SIZE)
const CHUNK: u32 = {{CHUNK}}u;
// where the two pair matrices start in `pairs`: A (delta rules), then B (one query head at a time)
const PAIRS_A: u32 = 0u;
const PAIRS_B: u32 = CHUNK * CHUNK;

var<workgroup> pairs: array<f32, 2u * CHUNK * CHUNK>;

// Lane l of a VEC, and a VEC with lane l replaced (scalar columns: the value itself).
// [[vector]]
fn lane(v: VEC, l: u32) -> f32 { return v[l]; }
fn with_lane(v: VEC, l: u32, x: f32) -> VEC { var w = v; w[l] = x; return w; }
// [[/vector]]
// [[scalar]]
fn lane(v: VEC, l: u32) -> f32 { return v; }
fn with_lane(v: VEC, l: u32, x: f32) -> VEC { return x; }
// [[/scalar]]

// The decay factors of token bt (index b * T + t) for kv head h in this invocation's rows (1 without
// decay; rows past d_k are never read).
fn gates(bt: u32, h: u32, row0: u32) -> array<f32, RPT> {
    var a: array<f32, RPT>;
    if (params.decay_mode == DECAY_HEAD) {
        let gate = exp(f32(decay[bt * params.kv_heads + h]));
        for (var k = 0u; k < RPT; k++) { a[k] = gate; }
    } else if (params.decay_mode == DECAY_ROW) {
        let base = (bt * params.kv_heads + h) * params.d_k;
        for (var k = 0u; k < RPT; k++) { let i = row0 + k; a[k] = select(1.0, exp(f32(decay[base + min(i, params.d_k - 1u)])), i < params.d_k); }
    } else {
        for (var k = 0u; k < RPT; k++) { a[k] = 1.0; }
    }
    return a;
}

// Row i of token bt's key (key head kh), or of its query (query head qh) when `from_query`.
fn key_row(bt: u32, kh: u32, i: u32) -> f32 { return f32(key[(bt * params.key_heads + kh) * params.d_k + i]); }
fn query_row(bt: u32, qh: u32, i: u32) -> f32 { return f32(query[(bt * params.q_heads + qh) * params.d_k + i]); }
fn pair_row(from_query: bool, bt: u32, head: u32, i: u32) -> f32 {
    if (from_query) { return query_row(bt, head, i); }
    return key_row(bt, head, i);
}

// This invocation's partial of sum_i P_t[i] x_t[i] S0[i,:] for token bt, x its key (key head `head`) or,
// `from_query`, its query (query head `head`). `sd` holds the seed's rows decayed to the token before
// (P_{t-1} S0); they are decayed by the token's gates and left there. The seed is decayed row by row as
// the token loop decays its state, never through P_t alone: a product of strong decays falls below the
// smallest float (or is flushed to zero on GPUs that flush subnormals) long before P_t S0 does.
fn seed_partial(sd: ptr<function, array<VEC, RPT>>, from_query: bool, bt: u32, head: u32, h: u32,
                row0: u32) -> VEC {
    let a = gates(bt, h, row0);
    var part = VEC();
    for (var k = 0u; k < RPT; k++) {
        (*sd)[k] = a[k] * (*sd)[k];
        let i = row0 + k;
        if (i < params.d_k) { part = part + (*sd)[k] * pair_row(from_query, bt, head, i); }
    }
    return part;
}

// One pair matrix of the chunk of n tokens starting at token c0 into pairs[base ..]: entry (t, j) =
// sum_i x_t[i] k_j[i] E[t][j][i], x the key (A, j < t) or, `from_query`, query head `head` (B, j <= t);
// entries outside that triangle (t, j < n) are zero. Returns the next reduction bank.
fn pair_matrix(base: u32, from_query: bool, head: u32, kh: u32, h: u32, first: u32, n: u32, row0: u32,
               c: u32, g: u32, bank_in: u32) -> u32 {
    var bank = bank_in;
    let skip = select(0u, 1u, !from_query);
    for (var j0 = 0u; j0 < CHUNK; j0 += COLS) {
        let j = j0 + c;
        var kj: array<f32, RPT>;
        var e: array<f32, RPT>;
        for (var k = 0u; k < RPT; k++) {
            let i = row0 + k;
            e[k] = 1.0;
            if (i < params.d_k && j < n) { kj[k] = key_row(first + j, kh, i); }
        }
        for (var t0 = 0u; t0 < CHUNK; t0 += LANES) {
            var part = VEC();
            for (var l = 0u; l < LANES; l++) {
                let t = t0 + l;
                if (t > j && t < n) {
                    let a = gates(first + t, h, row0);
                    for (var k = 0u; k < RPT; k++) { e[k] = e[k] * a[k]; }
                }
                var p = 0.0;
                if (t >= j + skip && t < n && j < n) {
                    for (var k = 0u; k < RPT; k++) {
                        let i = row0 + k;
                        if (i < params.d_k) { p = p + pair_row(from_query, first + t, head, i) * kj[k] * e[k]; }
                    }
                }
                part = with_lane(part, l, p);
            }
            let total = column_total(part, bank, c, g);
            bank ^= 1u;
            if (g == 0u && j < n) {
                for (var l = 0u; l < LANES; l++) {
                    let t = t0 + l;
                    if (t < n) { pairs[base + t * CHUNK + j] = lane(total, l); }
                }
            }
        }
    }
    return bank;
}

@compute @workgroup_size(ROWG, COLS)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) lindex: u32, @builtin(num_workgroups) groups: vec3<u32>) {
{{TILE}}
    let delta = params.beta_mode != BETA_NONE;
    // slot j holds the state after T - W + j + 1 tokens (W = 0: the final state as "slot 0 of 1")
    let slots = max(W, 1u);

    // the chunk's pseudo-values of this invocation's columns
    var u: array<VEC, CHUNK>;
    // the chunk's seed S0 decayed from the chunk's start, per row
    var sd: array<VEC, RPT>;
    for (var c0 = 0u; c0 < seq_len; c0 += CHUNK) {
        let n = min(CHUNK, seq_len - c0);
        let first = b * seq_len + c0;

        // u_t = v_t, less (delta rules) the retrieval from S0; A into pairs[PAIRS_A ..]
        if (delta) {
            bank = pair_matrix(PAIRS_A, false, kh, kh, h, first, n, row0, lid.y, lid.x, bank);
        }
        sd = s;
        for (var t = 0u; t < n; t++) {
            u[t] = VEC(value[((first + t) * HKV + h) * DV + vcol]);
            if (delta) {
                let rp = seed_partial(&sd, false, first + t, kh, h, row0);
                u[t] = u[t] - column_total(rp, bank, lid.y, lid.x);
                bank ^= 1u;
            }
        }
        workgroupBarrier();
        // forward substitution: u_t = beta_t (w_t - sum_{j<t} A[t][j] u_j)
        if (delta) {
            for (var t = 0u; t < n; t++) {
                var w = u[t];
                for (var j = 0u; j < t; j++) { w = w - pairs[PAIRS_A + t * CHUNK + j] * u[j]; }
                let bt = first + t;
                u[t] = f32(beta[select(bt * HKV + h, bt, params.beta_mode == BETA_SHARED)]) * w;
            }
        }

        // outputs, one query head at a time: the readout from S0 plus B u
        for (var gq = 0u; gq < group; gq++) {
            let qh = select(h / kv_per_q, h * group + gq, standard);
            let oh = select(h, qh, standard);
            // the previous head's (or chunk's) reads of B are done before it is rewritten
            workgroupBarrier();
            bank = pair_matrix(PAIRS_B, true, qh, kh, h, first, n, row0, lid.y, lid.x, bank);
            workgroupBarrier();
            sd = s;
            for (var t = 0u; t < n; t++) {
                let op = seed_partial(&sd, true, first + t, qh, h, row0);
                var o = column_total(op, bank, lid.y, lid.x);
                bank ^= 1u;
                for (var j = 0u; j <= t; j++) { o = o + pairs[PAIRS_B + t * CHUNK + j] * u[j]; }
                if (live && lid.x == 0u) {
                    output[((first + t) * out_heads + oh) * DV + col] = SVEC(params.scale * o);
                }
            }
        }

        // the state after each token: decay, then the update with its pseudo-value; checkpoints stored
        for (var t = 0u; t < n; t++) {
            let a = gates(first + t, h, row0);
            for (var k = 0u; k < RPT; k++) {
                let i = row0 + k;
                if (i < DK) { s[k] = a[k] * s[k] + key_row(first + t, kh, i) * u[t]; }
            }
            if (live && c0 + t + slots >= seq_len) {
                let slot = (c0 + t + slots - seq_len) * slot_elems + head_base;
                for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < DK) { present_state[slot + i * DV] = SVEC(s[k]); } }
            }
        }
    }
}

// LinearAttention (com.microsoft) with state_window checkpoints: one call, tokens in order.
//
// Template: kernels/shader.py fills in the storage type, the columns each invocation owns
// (LANES: 4 adjacent columns of d_v as one vector where d_v % 4 == 0, else 1), the reduction over
// d_k (one of the sections marked [[workgroup]] and [[subgroup]] is kept) and the workgroup
// geometry (COLS, ROWG, RPT) before compilation; those are all a pipeline is specialised on.
// Everything else about a call (sizes, heads, rule, decay and beta layouts, window, where the seed
// comes from) arrives in the uniform `params`, so one pipeline serves every call of one geometry.
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
// - [[subgroup]]: a butterfly of subgroupShuffleXor over the row groups, no barrier and no
//   workgroup memory. The ROWG row groups of a column are consecutive invocations (x is the row
//   group), so they share a subgroup wherever the subgroup size is at least ROWG (the host checks).
//   Step `stride` adds the partner's value; lane 0 forms exactly the workgroup path's tree, and
//   every other lane the same sums with the operands swapped, which IEEE addition makes identical:
//   both paths give the same bits.
// Math is f32; STORE is the storage type (f32 or f16), so fp16 values are rounded exactly once, when
// stored.
//
// Invocations past the last column (the tail tile) compute on the last column's inputs, never read
// the state and never store: they exist only to keep every barrier and shuffle in uniform control flow.
//
// The state is read once, from the seed (slot W-1 of the past state, the 4-D state when W = 0,
// or one slot bound on its own), before any store to it, and each invocation reads exactly the
// elements of it that it later writes (the leading zero slots, cleared by all invocations, lie
// before slot W-1); nothing else of the past state is ever read. That is what makes the
// aliased binding (past and present are one read_write buffer) safe without a barrier.
{{PRELUDE}}
@compute @workgroup_size(ROWG, COLS)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) lindex: u32, @builtin(num_workgroups) groups: vec3<u32>) {
{{TILE}}

    clear_leading_slots(wg, groups, lindex);

    var s = read_seed(head_base, row0, live);
    // this token's key rows (zero past d_k), loaded once for the retrieval and the update
    var kr: array<f32, RPT>;
    for (var t = 0u; t < seq_len; t++) {
        let bt = b * seq_len + t;
        if (params.decay_mode == DECAY_HEAD) {
            let gate = exp(f32(decay[bt * HKV + h]));
            for (var k = 0u; k < RPT; k++) { s[k] = gate * s[k]; }
        } else if (params.decay_mode == DECAY_ROW) {
            let gates = (bt * HKV + h) * DK;
            for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < DK) { s[k] = exp(f32(decay[gates + i])) * s[k]; } }
        }
        let kbase = (bt * params.key_heads + kh) * DK;
        for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < DK) { kr[k] = f32(key[kbase + i]); } }
        let v = VEC(value[(bt * HKV + h) * DV + vcol]);
        if (params.beta_mode == BETA_NONE) {
            for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < DK) { s[k] = s[k] + kr[k] * v; } }
        } else {
            var rp = VEC();
            for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < DK) { rp = rp + s[k] * kr[k]; } }
            let r = column_total(rp, bank, lid.y, lid.x);
            bank ^= 1u;
            let u = f32(beta[select(bt * HKV + h, bt, params.beta_mode == BETA_SHARED)]) * (v - r);
            for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < DK) { s[k] = s[k] + kr[k] * u; } }
        }
        for (var g = 0u; g < group; g++) {
            let qh = select(h / kv_per_q, h * group + g, standard);
            let oh = select(h, qh, standard);
            var op = VEC();
            let qbase = (bt * HQ + qh) * DK;
            for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < DK) { op = op + s[k] * f32(query[qbase + i]); } }
            let o = column_total(op, bank, lid.y, lid.x);
            bank ^= 1u;
            if (live && lid.x == 0u) {
                output[(bt * out_heads + oh) * DV + col] = SVEC(params.scale * o);
            }
        }
        // slot j holds the state after T - W + j + 1 tokens: token t (0-based) goes to j = t + W - T;
        // W = 0 stores the one 4-D state after the last token the same way, as "slot 0 of 1"
        let slots = max(W, 1u);
        if (live && t + slots >= seq_len) {
            let slot = (t + slots - seq_len) * slot_elems + head_base;
            for (var k = 0u; k < RPT; k++) { let i = row0 + k; if (i < DK) { present_state[slot + i * DV] = SVEC(s[k]); } }
        }
    }
}

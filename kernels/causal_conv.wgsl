// CausalConvWithState (com.microsoft, ndim = 1) with state_window: a stateful causal depthwise convolution.
//
// Template: kernels/causal_conv.py fills in the storage type (STORE: f32 or f16) and the workgroup size
// (WG) before compilation; those are all a generic pipeline is specialised on. Everything else about a
// call arrives in the uniform `params`. A pipeline specialised on a call's shape (SHAPE_FIELDS of
// kernels/causal_conv.py: channels, kernel size, dilation, state length, layout, activation, bias) has
// those fields written in as constants wherever `params.NAME` reads them; the template reads them only so.
// Branches on `params` are uniform: every invocation of a dispatch takes the same way.
//
// Row (b, c) of the call (batch entry b, channel c) sees one virtual sequence: the S = (k - 1) * dilation
// positions of its seed (slot W-1 of the past state, or the 3-D past state when W = 0; zeros without one),
// then its T tokens. Output position t is act(bias + sum_j w[j] * v[t + j * dilation]) (tap k-1 is token t
// itself), summed in the order of j, in f32; the state after token t is v[t + 1 .. t + S]. A state is
// made of input values, so a stored state holds exactly the bits it read: only outputs are computed, each
// rounded once to STORE when stored.
//
// One invocation per row, of B * C; workgroups run along x and, past the per-dimension limit, y. Every
// read of a row's seed (the seed row, S positions of one channel of one batch entry) and every store to
// it is made by the invocation of that row, and it stores slot W-1 last, position by position in rising
// order, each from a position above it (v[T + s], T >= 1) that it has not stored yet. So the aliased
// binding (past and present are one read_write buffer, the seed its slot W-1) is safe with no barrier:
// no invocation reads what another one writes, and no invocation reads what it already overwrote.
// Slots below W-1 are never read.
//
// The leading W - T slots (W > T) represent no token of this call: exact zeros. They are one contiguous
// range below slot W-1, cleared as a flat range by every invocation of the dispatch (coalesced); a call
// whose host knows the buffer already holds them (params.zeros_known = 1) does not store them again.
{{ENABLE}}
alias STORE = {{STORE}};

const WG: u32 = {{WG}}u;

// params.seed_mode: no past state (the seed is zeros), read `past_state`, read `present_state` (aliased)
const SEED_ZERO: u32 = 0u;
const SEED_PRESENT: u32 = 2u;
// params.activation: none, or silu (= swish)
const ACT_SILU: u32 = 1u;

struct Params {
    batch: u32,
    seq_len: u32,
    window: u32,
    seed_offset: u32,
    seed_mode: u32,
    zeros_known: u32,
    channels: u32,
    kernel_size: u32,
    dilation: u32,
    state_len: u32,
    channels_last: u32,
    activation: u32,
    has_bias: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

// Inputs a call does not have (bias, past_state) are bound to `input` and never read.
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> input: array<STORE>;
@group(0) @binding(2) var<storage, read> weight: array<STORE>;
@group(0) @binding(3) var<storage, read> bias: array<STORE>;
@group(0) @binding(4) var<storage, read> past_state: array<STORE>;
@group(0) @binding(5) var<storage, read_write> output: array<STORE>;
@group(0) @binding(6) var<storage, read_write> present_state: array<STORE>;

// Element (b, position p, channel c) of a tensor with `length` positions per batch entry: (B, C, length)
// channels-first, (B, length, C) channels-last (the trailing channel axes of the input are one axis here).
fn element(b: u32, p: u32, c: u32, length: u32) -> u32 {
    if (params.channels_last != 0u) {
        return (b * length + p) * params.channels + c;
    }
    return (b * params.channels + c) * length + p;
}

// Position i of the virtual sequence of row (b, c): the seed's S positions, then the call's tokens.
fn virtual_at(b: u32, c: u32, i: u32) -> f32 {
    let S = params.state_len;
    if (i >= S) {
        return f32(input[element(b, i - S, c, params.seq_len)]);
    }
    if (params.seed_mode == SEED_ZERO) {
        return 0.0;
    }
    let e = params.seed_offset + element(b, i, c, S);
    if (params.seed_mode == SEED_PRESENT) {
        return f32(present_state[e]);
    }
    return f32(past_state[e]);
}

// x * sigmoid(x), with exp taken of -|x| only, so that it never overflows
fn silu(x: f32) -> f32 {
    let e = exp(-abs(x));
    return x * select(e / (1.0 + e), 1.0 / (1.0 + e), x >= 0.0);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let T = params.seq_len;
    let W = params.window;
    let S = params.state_len;
    let C = params.channels;
    let K = params.kernel_size;
    let invocation = gid.y * groups.x * WG + gid.x;
    let slot_elems = params.batch * C * S;

    if (W > T && params.zeros_known == 0u) {
        let zeros = (W - T) * slot_elems;
        let stride = groups.x * groups.y * WG;
        for (var e = invocation; e < zeros; e += stride) {
            present_state[e] = STORE();
        }
    }
    if (invocation >= params.batch * C) {
        return;
    }
    let b = invocation / C;
    let c = invocation % C;

    var start = 0.0;
    if (params.has_bias != 0u) {
        start = f32(bias[c]);
    }
    for (var t = 0u; t < T; t++) {
        var z = start;
        for (var j = 0u; j < K; j++) {
            z = z + f32(weight[c * K + j]) * virtual_at(b, c, t + j * params.dilation);
        }
        if (params.activation == ACT_SILU) {
            z = silu(z);
        }
        output[element(b, t, c, T)] = STORE(z);
    }

    // Slot j holds the state after token T - W + j: v[T - W + j + 1 ..]. W = 0 stores the one state after
    // the last token the same way, as "slot 0 of 1". Slots before `first` are the leading zeros.
    let slots = max(W, 1u);
    let first = slots - min(T, slots);
    for (var j = first; j < slots; j++) {
        let slot = j * slot_elems;
        let after = T + j + 1u - slots;
        for (var s = 0u; s < S; s++) {
            present_state[slot + element(b, s, c, S)] = STORE(virtual_at(b, c, after + s));
        }
    }
}

// The split between a gated DeltaNet layer's two ops: the convolution's output (B, C, T) or (B, T, C) into
// LinearAttention's query, key and value, each (B, T, width), channels [0, QW), [QW, QW + KW), the rest.
//
// Template: kernels/qkv_split.py fills in the storage type (STORE) and the workgroup size (WG). One invocation
// per element of the output, B * T * C of them, along x, then y past the per-dimension limit; each copies one
// value, bits unchanged.
{{ENABLE}}
alias STORE = {{STORE}};

const WG: u32 = {{WG}}u;

struct Params {
    batch: u32,
    seq_len: u32,
    channels: u32,
    channels_last: u32,
    query_width: u32,
    key_width: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> source: array<STORE>;
@group(0) @binding(2) var<storage, read_write> query: array<STORE>;
@group(0) @binding(3) var<storage, read_write> key: array<STORE>;
@group(0) @binding(4) var<storage, read_write> value: array<STORE>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let C = params.channels;
    let T = params.seq_len;
    let e = gid.y * groups.x * WG + gid.x;  // (b * T + t) * C + c
    if (e >= params.batch * T * C) {
        return;
    }
    let c = e % C;
    let bt = e / C;
    var at = e;
    if (params.channels_last == 0u) {
        at = ((bt / T) * C + c) * T + bt % T;
    }
    let x = source[at];
    let qw = params.query_width;
    let kw = params.key_width;
    if (c < qw) {
        query[bt * qw + c] = x;
    } else if (c < qw + kw) {
        key[bt * kw + c - qw] = x;
    } else {
        let vw = C - qw - kw;
        value[bt * vw + c - qw - kw] = x;
    }
}

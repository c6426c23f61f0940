// GatedDeltaNetStateReplay (docs/spec.md §9): one invocation per element (h, v, i) of the V-major destination
// state, which replays the first kept_count capsule entries over the same element of the source state:
// s <- decay[j, h] * s + key[j, kh, i] * delta[j, h, v], with kh = floor(h * H_k / H_v).
//
// The three backings are bound whole and addressed by the descriptor's element offsets (a view may start at any
// element; a binding offset would need 256-byte alignment). The source and the capsule may be one buffer (both
// read-only); the destination may not be either.
//
// Template: kernels/state_replay.py fills in the workgroup size (WG).
const WG: u32 = {{WG}}u;

struct Params {
    source_offset: u32,
    destination_offset: u32,
    decay_offset: u32,
    key_offset: u32,
    delta_offset: u32,
    v_heads: u32,
    d_v: u32,
    d_k: u32,
    k_heads: u32,
    capacity: u32,
    kept_count: u32,
    pad0: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> source: array<f32>;
@group(0) @binding(2) var<storage, read> capsule: array<f32>;
@group(0) @binding(3) var<storage, read_write> destination: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let e = gid.x + gid.y * groups.x * WG;
    if (e >= params.v_heads * params.d_v * params.d_k) {
        return;
    }
    let i = e % params.d_k;
    let v = (e / params.d_k) % params.d_v;
    let h = e / (params.d_k * params.d_v);
    let kh = h * params.k_heads / params.v_heads;
    var s = source[params.source_offset + e];
    for (var j = 0u; j < params.kept_count; j++) {
        let factor = capsule[params.decay_offset + j * params.v_heads + h];
        let k = capsule[params.key_offset + (j * params.k_heads + kh) * params.d_k + i];
        let d = capsule[params.delta_offset + (j * params.v_heads + h) * params.d_v + v];
        s = factor * s + k * d;
    }
    destination[params.destination_offset + e] = s;
}

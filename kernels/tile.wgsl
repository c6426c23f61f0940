// The first statements of both templates' `main` (kernels/linear_attention.wgsl, kernels/chunked.wgsl),
// rendered at their TILE placeholder: what this invocation's workgroup and position in it cover (sizes,
// the tile of columns, the rows, the kv head, key head and query heads, the batch entry), and the bank of
// the first reduction.
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

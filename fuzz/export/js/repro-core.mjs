// What repro.mjs (onnxruntime-node) and repro.html (onnxruntime-web) share, and what repro.py does alike:
// reading the ONNX test data, and the verdict on what the runtime did. Exit status: 1 while the defect is
// there, 0 once it is fixed, 2 when this runtime cannot check it (it cannot load or place the model).

export const EXIT_FIXED = 0, EXIT_DEFECT = 1, EXIT_CANNOT_CHECK = 2;

// Load errors meaning this runtime's schema for the node differs, or no kernel of the EP takes it.
const CANNOT_CHECK = ['Unrecognized attribute', 'No Op registered for', 'is not a registered function/op',
  'No opset import for domain', 'Unsupported model IR version', 'Could not find an implementation',
  'NOT_IMPLEMENTED', 'fallback to CPU EP has been explicitly disabled', 'is not set',
  'requires f16 but the device does not support it', 'no available backend found'];
const ARRAYS = { 1: Float32Array, 6: Int32Array, 7: BigInt64Array, 10: Uint16Array, 11: Float64Array };
const TYPES = { 1: 'float32', 6: 'int32', 7: 'int64', 10: 'float16', 11: 'float64' };

function varint(bytes, at) {
  let value = 0, scale = 1;
  for (;;) {
    const byte = bytes[at++];
    value += (byte & 0x7f) * scale;
    scale *= 128;
    if (byte < 0x80) return [value, at];
  }
}

// A TensorProto with raw_data, as onnx.numpy_helper writes it: fields 1 dims, 2 data_type, 8 name, 9 raw_data.
export function readTensor(bytes) {
  let at = 0, dims = [], type = 0, name = '', raw = new Uint8Array(0);
  while (at < bytes.length) {
    let key;
    [key, at] = varint(bytes, at);
    const field = Math.floor(key / 8), wire = key & 7;
    if (wire === 0) {
      let value;
      [value, at] = varint(bytes, at);
      if (field === 1) dims.push(value);
      if (field === 2) type = value;
    } else if (wire === 2) {
      let size;
      [size, at] = varint(bytes, at);
      const chunk = bytes.subarray(at, at + size);
      at += size;
      if (field === 1) for (let i = 0; i < chunk.length;) { let v; [v, i] = varint(chunk, i); dims.push(v); }
      if (field === 8) name = new TextDecoder().decode(chunk);
      if (field === 9) raw = chunk.slice();
    } else throw new Error(`unexpected protobuf wire type ${wire} (field ${field})`);
  }
  if (!(type in ARRAYS)) throw new Error(`TensorProto data_type ${type} is not supported here`);
  const Type = ARRAYS[type];
  return { name, type: TYPES[type], dims, data: new Type(raw.buffer, raw.byteOffset, raw.byteLength / Type.BYTES_PER_ELEMENT) };
}

function half(bits) {
  const sign = bits & 0x8000 ? -1 : 1, exp = (bits >> 10) & 0x1f, frac = bits & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

export function numbers(type, data) {
  return type === 'float16' && data instanceof Uint16Array ? Array.from(data, half) : Array.from(data);
}

function index(flat, dims) {
  const at = [];
  for (let i = dims.length - 1; i >= 0; i--) { at.unshift(flat % dims[i]); flat = Math.floor(flat / dims[i]); }
  return at;
}

// The largest error/tolerance ratio over the outputs, and the element behind it in words; in the outputs named in
// `unspecified`, a NaN in the reference is an entry the operator leaves open, not compared.
function worstElement(got, expected, tolerance, unspecified) {
  let worst = 0, line = 'every element is exact';
  for (const [name, want] of Object.entries(expected)) {
    const have = got[name];
    if (have.dims.join(',') !== want.dims.join(',')) return [Infinity, `${name}: shape (${have.dims}), expected (${want.dims})`];
    const [atol, rtol] = tolerance[name], a = have.values, b = want.values, open = unspecified.includes(name);
    for (let i = 0; i < b.length; i++) {
      const same = a[i] === b[i] || (Number.isNaN(b[i]) && (open || Number.isNaN(a[i])));
      const error = same ? 0 : (Number.isNaN(a[i] - b[i]) ? Infinity : Math.abs(a[i] - b[i]));
      const ratio = same ? 0 : (Number.isNaN(b[i]) ? Infinity : error / (atol + rtol * Math.abs(b[i])));
      if (ratio > worst) {
        worst = ratio;
        line = `${name}[${index(i, want.dims).join(', ')}]: expected ${b[i]}, got ${a[i]}, |error| ${error.toPrecision(6)}, `
          + `tolerance ${(atol + rtol * Math.abs(b[i])).toPrecision(6)}, ratio ${ratio.toPrecision(4)}`;
      }
    }
  }
  return [worst, line];
}

// The verdict on what the runtime did (`seen`: stage, and one of outputs, error, crash, hung, unavailable).
export function judge(seen, expected, c) {
  const stage = seen.stage || 'onnxruntime', lines = [];
  const out = (status, text) => { lines.push(text); return { status, lines }; };
  if (seen.crash) return out(EXIT_DEFECT, `DEFECT: ${stage} died: ${seen.crash}`);
  if (seen.hung) return out(EXIT_DEFECT, `DEFECT: ${stage} did not finish within ${seen.hung} s`);
  if (seen.unavailable) return out(EXIT_CANNOT_CHECK, `cannot check here: ${seen.unavailable}`);
  if (seen.error !== undefined) {
    const message = String(seen.error).trim();
    if (seen.stage === 'InferenceSession.create' && CANNOT_CHECK.some((p) => message.includes(p))) {
      return out(EXIT_CANNOT_CHECK, `cannot check here: this runtime cannot load or place the model: ${message}`);
    }
    if (c.expectation === 'outputs') return out(EXIT_DEFECT, `DEFECT: ${stage} refused a valid case: ${message}`);
    if (!message) return out(EXIT_DEFECT, `DEFECT: ${stage} refused the case without a message`);
    return out(EXIT_FIXED, `fixed: ${stage} refused the case: ${message}`);
  }
  const shapes = Object.entries(seen.outputs).map(([n, t]) => `${n} (${t.dims})`).join(', ');
  if (c.expectation === 'rejection') {
    return out(EXIT_DEFECT, `DEFECT: the runtime accepted inputs that break a rule of the operator and returned ${shapes}`);
  }
  const [ratio, line] = worstElement(seen.outputs, expected, c.tolerance, c.unspecified || []);
  lines.push(`worst element: ${line}`);
  if (ratio > 1) return out(EXIT_DEFECT, `DEFECT: the runtime returned wrong values (${shapes})`);
  return out(EXIT_FIXED, c.expectation === 'outputs' ? 'fixed: the runtime agrees with the reference within the tolerance'
    : 'fixed: the runtime returned an empty output and passed the past state through');
}

export const SESSION_OPTIONS = { executionProviders: ['webgpu'], extra: { session: { disable_cpu_ep_fallback: '1' } } };

// Create the session and run it once with `ort`, reporting each step to `report(kind, value)`.
export async function runCase(ort, model, inputs, report) {
  report('stage', 'InferenceSession.create');
  const session = await ort.InferenceSession.create(model, SESSION_OPTIONS);
  const feeds = {};
  for (const t of inputs) feeds[t.name] = new ort.Tensor(t.type, t.data, t.dims);
  report('stage', 'session.run');
  const results = await session.run(feeds);
  const outputs = {};
  for (const [name, t] of Object.entries(results)) {
    outputs[name] = { dims: t.dims.map(Number), values: numbers(t.type, t.data) };
  }
  report('outputs', outputs);
}

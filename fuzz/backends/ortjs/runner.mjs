// The requests of lafuzz's ORT worker protocol (fuzz/backends/ort_worker.py describes it), answered with
// an `ort` module: onnxruntime-node in a Node worker, onnxruntime-web in a browser page. Sessions run on
// the WebGPU EP with the CPU fallback disabled, so a node that cannot be placed there fails to load.

const SESSIONS_KEPT = 64; // least recently used sessions are released first; the client re-sends a model

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, float16: Uint16Array,
  int32: Int32Array, int64: BigInt64Array, int8: Int8Array, uint8: Uint8Array, bool: Uint8Array,
};

export const SESSION_OPTIONS = {
  executionProviders: ['webgpu'],
  extra: { session: { disable_cpu_ep_fallback: '1' } },
  logSeverityLevel: 4,
  graphOptimizationLevel: 'all',
};

const GPU_CALL_FAILED = /Failed to execute '\w+' on 'GPU/;

function message(err) {
  return String(err && err.message ? err.message : err).trim();
}

function tensor(ort, item, blob) {
  const Type = ARRAYS[item.dtype];
  if (!Type) throw new Error(`no typed array for dtype ${item.dtype}`);
  const copy = new Uint8Array(blob); // a copy: aligned, and owned by the tensor
  const data = new Type(copy.buffer, copy.byteOffset, copy.byteLength / Type.BYTES_PER_ELEMENT);
  return new ort.Tensor(item.dtype, data, item.shape);
}

function bytesOf(t) {
  const d = t.data;
  return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
}

export function makeRunner(ort, info) {
  const sessions = new Map();

  async function load(id, model) {
    const session = await ort.InferenceSession.create(model, SESSION_OPTIONS);
    sessions.set(id, session);
    while (sessions.size > SESSIONS_KEPT) {
      const [oldest, dropped] = sessions.entries().next().value;
      sessions.delete(oldest);
      await dropped.release();
    }
  }

  // A session whose run was refused is released and forgotten; the client loads its model again. ORT Web 1.30.0
  // leaves a session locked when an exception escapes its executor (a CausalConvWithState kernel of size 0 fails
  // allocating present_state): its next run blocks the page's thread for good, while other sessions still run.
  async function forget(id) {
    const session = sessions.get(id);
    if (!session) return;
    sessions.delete(id);
    try {
      await session.release();
    } catch {
      // a session that cannot be released is dropped all the same
    }
  }

  async function run(header, blobs) {
    const session = sessions.get(header.model);
    if (!session) return [{ ok: false, missing: true }, []];
    sessions.delete(header.model);
    sessions.set(header.model, session);
    const feeds = {};
    header.inputs.forEach((item, i) => { feeds[item.name] = tensor(ort, item, blobs[i]); });
    const results = await session.run(feeds, header.outputs);
    const items = [], out = [];
    for (const name of header.outputs) {
      const t = results[name];
      items.push({ name, dtype: t.type, shape: t.dims.map(Number) });
      out.push(bytesOf(t));
    }
    return [{ ok: true, outputs: items }, out];
  }

  // One request -> [reply header, reply blobs]; an ORT error is a reply, never a throw.
  return async function handle(header, blobs) {
    if (header.op === 'hello') return [{ ok: true, info }, []];
    try {
      if (header.op === 'load') {
        await load(header.model, blobs[0]);
        return [{ ok: true }, []];
      }
      if (header.op === 'run') return await run(header, blobs);
      return [{ ok: false, error: `unknown request ${header.op}` }, []];
    } catch (err) {
      // A trap (division by zero, out-of-bounds access) is the wasm build's SIGFPE or SIGSEGV: the instance
      // is left unusable (the next session hangs), so it is a crash, and the client starts a fresh page.
      const trapped = typeof WebAssembly !== 'undefined' && err instanceof WebAssembly.RuntimeError;
      if (trapped) return [{ ok: false, crashed: `wasm trap (${message(err)})` }, []];
      // A WebGPU call that threw in the middle of a run (ORT Web 1.30.0 refusing T = 0 in createBindGroup) leaves
      // ORT's WebGPU backend unusable too: the next run never settles. Also a crash, answered at once.
      if (header.op === 'run' && GPU_CALL_FAILED.test(message(err))) {
        return [{ ok: false, crashed: `refused, leaving the WebGPU backend unusable (${message(err)})` }, []];
      }
      if (header.op === 'run') await forget(header.model);
      return [{ ok: false, error: message(err) }, []];
    }
  };
}

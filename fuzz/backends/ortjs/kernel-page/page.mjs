// The page of lafuzz's wgpu-browser backends: replays plans of WebGPU calls recorded in Python
// (fuzz/backends/webgpu_plan.py) on this browser's WebGPU. Requests arrive through window.lafuzzHandle:
//   {op: 'device', features, limits}  request the device (once per page);
//   {op: 'plan', commands, read}      run the commands in order; then, if `read` names a buffer, map it
//                                     and answer its bytes. Blobs are the data of the `write` commands.
// Objects live in `objects` by the ids Python gave them, across plans, until a `destroy`. Errors of a
// plan (validation, out of memory, internal) are caught in error scopes and answered {ok: false, error}.
import { fromBase64, toBase64 } from '/base64.mjs';

function limitsOf(limits) {
  const found = {};
  for (const name in limits) if (typeof limits[name] === 'number') found[name] = limits[name];
  return found;
}

function describe(adapter) {
  if (!navigator.gpu) return { webgpu: false, why: 'navigator.gpu is missing (WebGPU is off)' };
  if (!adapter) return { webgpu: false, why: 'navigator.gpu.requestAdapter() found no adapter' };
  const a = adapter.info;
  return { webgpu: true, adapter: { vendor: a.vendor, architecture: a.architecture, device: a.device,
    description: a.description, fallback: a.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false,
    subgroupMinSize: a.subgroupMinSize, subgroupMaxSize: a.subgroupMaxSize },
  features: [...adapter.features].sort(), limits: limitsOf(adapter.limits), userAgent: navigator.userAgent };
}

const adapter = navigator.gpu ? await navigator.gpu.requestAdapter() : null;
const info = describe(adapter);
let device = null;
let lost = null;
const objects = new Map();
const get = (id) => {
  if (!objects.has(id)) throw new Error(`plan names object ${id}, which this page does not hold`);
  return objects.get(id);
};

const STEPS = {
  buffer: (c) => device.createBuffer({ size: c.size, usage: c.usage, label: c.label }),
  write: (c, blobs) => device.queue.writeBuffer(get(c.buffer), c.offset, blobs[c.blob]),
  shader: (c) => device.createShaderModule({ code: c.code, label: c.label }),
  pipeline: (c) => device.createComputePipeline({ layout: 'auto', compute: { module: get(c.module),
    entryPoint: c.entry } }),
  layout: (c) => get(c.pipeline).getBindGroupLayout(c.index),
  group: (c) => device.createBindGroup({ layout: get(c.layout), entries: c.entries.map((e) => ({
    binding: e.binding, resource: { buffer: get(e.buffer), offset: e.offset, size: e.size } })) }),
  encoder: () => device.createCommandEncoder(),
  pass: (c) => get(c.encoder).beginComputePass(),
  setPipeline: (c) => { get(c.compute).setPipeline(get(c.pipeline)); },
  setGroup: (c) => { get(c.compute).setBindGroup(c.index, get(c.group)); },
  dispatch: (c) => { get(c.compute).dispatchWorkgroups(c.x, c.y, c.z); },
  end: (c) => { get(c.compute).end(); },
  copy: (c) => { get(c.encoder).copyBufferToBuffer(get(c.source), c.sourceOffset, get(c.destination),
    c.destinationOffset, c.size); },
  finish: (c) => get(c.encoder).finish(),
  submit: (c) => { device.queue.submit(c.buffers.map(get)); },
  destroy: (c) => { const o = objects.get(c.object); if (o && o.destroy) o.destroy(); objects.delete(c.object); },
};

async function openDevice(header) {
  if (device) throw new Error('the page already holds a device');
  device = await adapter.requestDevice({ requiredFeatures: header.features, requiredLimits: header.limits });
  device.lost.then((why) => { lost = `the WebGPU device was lost (${why.reason}): ${why.message}`; });
  return [{ ok: true, features: [...device.features].sort(), limits: limitsOf(device.limits) }, []];
}

async function runPlan(header, blobs) {
  if (lost) return [{ ok: false, lost }, []];
  const scopes = ['validation', 'out-of-memory', 'internal'];
  scopes.forEach((s) => device.pushErrorScope(s));
  let thrown = null;
  for (const command of header.commands) {
    try {
      const made = STEPS[command.k](command, blobs);
      if (command.id !== undefined) objects.set(command.id, made);
    } catch (err) {
      thrown = thrown || `${command.k}: ${err.message}`;
    }
  }
  const errors = [];
  for (let i = 0; i < scopes.length; i++) {
    const error = await device.popErrorScope();
    if (error) errors.push(error.message);
  }
  if (thrown || errors.length) return [{ ok: false, error: [thrown, ...errors].filter(Boolean).join(' | ') }, []];
  if (header.read === null || header.read === undefined) return [{ ok: true }, []];
  const staging = get(header.read);
  await staging.mapAsync(GPUMapMode.READ);
  const bytes = new Uint8Array(staging.getMappedRange().slice(0));
  staging.unmap();
  if (lost) return [{ ok: false, lost }, []];
  return [{ ok: true }, [bytes]];
}

window.lafuzzHandle = async (header, encoded) => {
  const blobs = encoded.map(fromBase64);
  try {
    const [reply, out] = header.op === 'device' ? await openDevice(header) : await runPlan(header, blobs);
    return [reply, out.map(toBase64)];
  } catch (err) {
    return [{ ok: false, error: `${header.op}: ${err.message}` }, []];
  }
};
window.lafuzzInfo = info;

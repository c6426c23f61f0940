// The page of lafuzz's ort-web backend: ORT Web's WebGPU build answering the ORT worker protocol
// (requests arrive through window.lafuzzHandle, blobs as base64).
import * as ort from '/ort/ort.webgpu.min.mjs';
import { makeRunner } from '/runner.mjs';

ort.env.wasm.wasmPaths = '/ort/';
ort.env.wasm.numThreads = 1;
ort.env.logLevel = 'fatal';

function fromBase64(text) {
  const raw = atob(text);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  return bytes;
}

function toBase64(bytes) {
  let raw = '';
  for (let i = 0; i < bytes.length; i += 0x8000) raw += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(raw);
}

async function describe() {
  const info = { runtime: 'onnxruntime-web', version: ort.env.versions.web, build: 'dist/ort.webgpu.min.mjs' };
  if (!navigator.gpu) return { ...info, webgpu: false, why: 'navigator.gpu is missing (WebGPU is off)' };
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) return { ...info, webgpu: false, why: 'navigator.gpu.requestAdapter() found no adapter' };
  const a = adapter.info;
  const fallback = a.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false;
  return { ...info, webgpu: true, adapter: { vendor: a.vendor, architecture: a.architecture, device: a.device,
    description: a.description, fallback } };
}

const info = await describe();
const handle = makeRunner(ort, info);
window.lafuzzHandle = async (header, blobs) => {
  const [reply, out] = await handle(header, blobs.map(fromBase64));
  return [reply, out.map(toBase64)];
};
window.lafuzzInfo = info;

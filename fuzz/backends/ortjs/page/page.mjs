// The page of lafuzz's ort-web backend: ORT Web's WebGPU build answering the ORT worker protocol
// (requests arrive through window.lafuzzHandle, blobs as base64).
import * as ort from '/ort/ort.webgpu.min.mjs';
import { fromBase64, toBase64 } from '/base64.mjs';
import { makeRunner } from '/runner.mjs';

ort.env.wasm.wasmPaths = '/ort/';
ort.env.wasm.numThreads = 1;
ort.env.logLevel = 'fatal';

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

// lafuzz's ort-node backend: onnxruntime-node's WebGPU EP answering the ORT worker protocol.
import { makeRunner } from './runner.mjs';
import { npmPackages, replyFd, send, serveRequests } from './wire.mjs';

const ort = npmPackages(process.argv).require('onnxruntime-node');
ort.env.logLevel = 'fatal';

const backends = ort.listSupportedBackends();
const info = {
  runtime: 'onnxruntime-node', version: ort.env.versions.node, node: process.version,
  webgpu: backends.some((b) => b.name === 'webgpu'), backends: backends.map((b) => b.name),
};
const handle = makeRunner(ort, info);
const fd = replyFd(process.argv);
await serveRequests(async (header, blobs) => send(fd, ...(await handle(header, blobs))));

// ORT Web 1.30.0 without the suite: a CausalConvWithState session whose run refused a kernel of size 0 blocks the
// page at its next run; a released one does not. Run from the repository root: node <this folder>/session-lock.mjs
// (uses ortjs/node_modules and Debian's chromium, or $LAFUZZ_CHROMIUM). conv.onnx is the suite's W = 0 conv model
// (float32, bias, activation silu), whose input shapes are free.
import fs from 'node:fs'; import http from 'node:http'; import os from 'node:os'; import path from 'node:path';
import { createRequire } from 'node:module'; import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const ortjs = path.resolve(here, '../../../ortjs');
const puppeteer = createRequire(path.join(ortjs, 'package.json'))('puppeteer-core');
const dist = path.join(ortjs, 'node_modules/onnxruntime-web/dist');
const PAGE = `<!doctype html><script type="module">
import * as ort from '/ort/ort.webgpu.min.mjs';
ort.env.wasm.wasmPaths = '/ort/'; ort.env.wasm.numThreads = 1; ort.env.logLevel = 'fatal';
const options = { executionProviders: ['webgpu'], extra: { session: { disable_cpu_ep_fallback: '1' } } };
const t = (shape) => new ort.Tensor('float32', new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(0.5), shape);
const feeds = (taps) => ({ input: t([1, 4, 3]), weight: t([4, 1, taps]), bias: t([4]) });
window.create = () => ort.InferenceSession.create('/conv.onnx', options);
window.run = async (session, taps) => {
  try { await session.run(feeds(taps)); return 'ran'; } catch (e) { return 'refused: ' + String(e.message).trim().slice(-70); }
};
window.ready = true;</script>`;
const headers = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };
const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://127.0.0.1').pathname;
  const file = url === '/conv.onnx' ? path.join(here, 'conv.onnx') : path.join(dist, path.basename(url));
  if (url === '/') { res.writeHead(200, { ...headers, 'Content-Type': 'text/html' }); res.end(PAGE); return; }
  if (!fs.existsSync(file)) { res.writeHead(404); res.end(); return; }
  const type = file.endsWith('.wasm') ? 'application/wasm' : file.endsWith('.mjs') ? 'text/javascript' : 'application/octet-stream';
  res.writeHead(200, { ...headers, 'Content-Type': type });
  fs.createReadStream(file).pipe(res);
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'session-lock-'));
const browser = await puppeteer.launch({ executablePath: process.env.LAFUZZ_CHROMIUM || '/usr/bin/chromium',
  headless: true, pipe: true, userDataDir: profile,
  args: ['--enable-unsafe-webgpu', '--disable-quic', '--no-first-run', ...(process.getuid() === 0 ? ['--no-sandbox'] : [])] });
const page = await browser.newPage();
await page.goto(`http://127.0.0.1:${server.address().port}/`);
await page.waitForFunction(() => window.ready === true);

async function step(label, body, waitMs = 8000) {
  const started = Date.now();
  const answer = await Promise.race([page.evaluate(body).catch((e) => `threw: ${e.message}`),
    new Promise((resolve) => setTimeout(() => resolve(`no answer within ${waitMs / 1000} s`), waitMs))]);
  console.log(`${label.padEnd(46)} ${((Date.now() - started) / 1000).toFixed(2)} s  ${answer}`);
}
await step('create sessions a, b, c', async () => {
  for (const name of ['a', 'b', 'c']) window[name] = await window.create(); // one at a time, as ORT Web asks
  return 'created';
});
await step('a: kernel of 4 taps', () => window.run(window.a, 4));
await step('a: kernel of size 0', () => window.run(window.a, 0));
await step('b: kernel of 4 taps (another session)', () => window.run(window.b, 4));
await step('c: kernel of size 0, c released', async () => { const r = await window.run(window.c, 0); await window.c.release(); return r; });
await step('d (new, same model): kernel of 4 taps', async () => window.run(await window.create(), 4));
await step('a: kernel of 4 taps (the refused session)', () => window.run(window.a, 4));
await step('1 + 1', () => 1 + 1, 3000);
await browser.close();
server.close();
fs.rmSync(profile, { recursive: true, force: true });

// Serves this folder on 127.0.0.1 with the cross-origin isolation headers ORT Web's wasm build wants, and prints
// the address of repro.html. Node only, no package.  Usage: node serve.mjs [--port N]
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const TYPES = { '.html': 'text/html', '.mjs': 'text/javascript', '.json': 'application/json',
  '.wasm': 'application/wasm' };
const at = process.argv.indexOf('--port');
const server = http.createServer((req, res) => {
  const file = path.join(here, path.normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)));
  if (!file.startsWith(here) || !fs.existsSync(file) || fs.statSync(file).isDirectory()) {
    res.writeHead(404);
    res.end();
    return;
  }
  res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream',
    'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' });
  fs.createReadStream(file).pipe(res);
});
server.listen(at > 0 ? Number(process.argv[at + 1]) : 0, '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${server.address().port}/repro.html`);
});

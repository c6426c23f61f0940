// lafuzz's browser backends: a page in headless Chromium, driven by puppeteer-core, answering the worker
// protocol. --page names the page's folder: page/ (the default) is the ort-web backend's, ORT Web's WebGPU
// build answering the ORT worker protocol; kernel-page/ replays the suite's own WGSL kernels' WebGPU calls.
// The page is served here on 127.0.0.1 with the cross-origin isolation headers ORT Web's threads need. A
// crashed tab or browser is answered {crashed}; the client then kills this process and the browser
// (process_groups) and starts a fresh pair. Never downloads a browser: --chromium names one.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { npmPackages, replyFd, send, serveRequests } from './wire.mjs';

const { modules, require } = npmPackages(process.argv);
const puppeteer = require('puppeteer-core');
const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.join(modules, 'onnxruntime-web', 'dist');
const versionOf = (name) => JSON.parse(fs.readFileSync(path.join(modules, name, 'package.json'))).version;
const argv = process.argv;
const chromium = argv.includes('--chromium') ? argv[argv.indexOf('--chromium') + 1] : '/usr/bin/chromium';
const pageFolder = argv.includes('--page') ? argv[argv.indexOf('--page') + 1] : 'page';

// Chromium's own connections fail on a closed network, many at a time: these keep it quiet.
const QUIET = ['--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--disable-default-apps', '--disable-extensions'];
const TYPES = { '.html': 'text/html', '.mjs': 'text/javascript', '.wasm': 'application/wasm' };
const FILES = { '/': path.join(here, pageFolder, 'index.html'), '/page.mjs': path.join(here, pageFolder, 'page.mjs'),
  '/runner.mjs': path.join(here, 'runner.mjs'), '/base64.mjs': path.join(here, 'base64.mjs') };

function serveFile(req, res) {
  const url = new URL(req.url, 'http://127.0.0.1').pathname;
  const name = url.startsWith('/ort/') ? path.basename(url) : null;
  const file = name ? path.join(dist, name) : FILES[url];
  if (!file || !fs.existsSync(file)) { res.writeHead(404); res.end(); return; }
  res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream',
    'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' });
  fs.createReadStream(file).pipe(res);
}

if (!fs.existsSync(FILES['/'])) throw new Error(`no page at ${FILES['/']} (--page ${pageFolder})`);
const server = http.createServer(serveFile);
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'lafuzz-chromium-'));
const args = ['--enable-unsafe-webgpu', ...QUIET];
if (process.getuid && process.getuid() === 0) args.push('--no-sandbox');
const browser = await puppeteer.launch({ executablePath: chromium, headless: true, pipe: true, args,
  userDataDir: profile, handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false });
const page = await browser.newPage();
let crashed = null;
const gone = new Promise((resolve) => {
  page.on('error', (err) => { crashed = `the browser tab crashed (${err.message})`; resolve(); });
  browser.on('disconnected', () => { crashed = crashed || 'the browser went away'; resolve(); });
});
await page.goto(`http://127.0.0.1:${server.address().port}/`);
await page.waitForFunction(() => window.lafuzzInfo !== undefined, { timeout: 60000 });
const info = { ...(await page.evaluate(() => window.lafuzzInfo)), chromium: await browser.version(),
  puppeteer: versionOf('puppeteer-core'), node: process.version,
  process_groups: [browser.process().pid], scratch: [profile] };

// A local page (a campaign's report) looked at in this same browser: a screenshot at the given width, and every
// table (or cell) wider than the page or than its own box.
async function inspect(file, width) {
  const tab = await browser.newPage();
  try {
    await tab.setViewport({ width, height: 900 });
    await tab.goto(`file://${file}`, { waitUntil: 'load' });
    const overflowing = await tab.evaluate(() => {
      const page = document.documentElement.clientWidth;
      return [...document.querySelectorAll('table')].flatMap((table, index) => {
        const box = table.getBoundingClientRect();
        const cells = [...table.querySelectorAll('td, th')].filter((c) => c.scrollWidth > c.clientWidth + 1);
        const wide = box.right > page + 0.5 || table.scrollWidth > table.clientWidth + 1;
        return wide || cells.length ? [{ index, right: box.right, page, cells: cells.length,
          text: table.innerText.slice(0, 80) }] : [];
      });
    });
    const pageWidth = await tab.evaluate(() => document.documentElement.scrollWidth);
    const png = await tab.screenshot({ fullPage: true });
    return [{ ok: true, overflowing, pageWidth, viewport: width }, [png]];
  } finally {
    await tab.close();
  }
}

// An exported ORT Web repro page (its repro.html, served by its serve.mjs) run in this same browser: its verdict.
async function openRepro(url) {
  const tab = await browser.newPage();
  try {
    await tab.goto(url);
    await tab.waitForFunction(() => window.reproStatus !== undefined, { timeout: 120000 });
    return [{ ok: true, status: await tab.evaluate(() => window.reproStatus),
      text: await tab.evaluate(() => document.getElementById('verdict').textContent) }, []];
  } finally {
    await tab.close();
  }
}

const fd = replyFd(argv);
await serveRequests(async (header, blobs) => {
  if (header.op === 'hello') return send(fd, { ok: true, info }, []);
  if (header.op === 'inspect') return send(fd, ...(await inspect(header.path, header.width)));
  if (header.op === 'repro') return send(fd, ...(await openRepro(header.url)));
  const asked = page.evaluate((h, b) => window.lafuzzHandle(h, b), header, blobs.map((b) => b.toString('base64')));
  try {
    const [reply, out] = await Promise.race([asked, gone.then(() => { throw new Error(crashed); })]);
    send(fd, reply, out.map((text) => Buffer.from(text, 'base64')));
  } catch (err) {
    send(fd, { ok: false, crashed: crashed || `the page failed: ${err.message}` }, []);
  }
});
await browser.close();
server.close();
fs.rmSync(profile, { recursive: true, force: true });

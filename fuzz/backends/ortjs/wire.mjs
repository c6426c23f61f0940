// The message framing of lafuzz's ORT worker protocol on a Node process: requests on stdin, replies on
// the file descriptor given as --reply-fd (native code that prints on stdout cannot corrupt them).
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export function replyFd(argv) {
  const at = argv.indexOf('--reply-fd');
  if (at < 0) throw new Error('usage: --reply-fd N');
  return Number(argv[at + 1]);
}

// The folder whose node_modules holds the npm packages, given as --packages: `lafuzz setup` installs them apart
// from these scripts (in a checkout's ortjs/, or the per-user data directory). `require` loads from there.
export function npmPackages(argv) {
  const at = argv.indexOf('--packages');
  if (at < 0) throw new Error('usage: --packages DIR');
  const folder = path.resolve(argv[at + 1]);
  return { modules: path.join(folder, 'node_modules'), require: createRequire(path.join(folder, 'package.json')) };
}

export function encode(header, blobs = []) {
  const text = Buffer.from(JSON.stringify({ ...header, blobs: blobs.map((b) => b.byteLength) }));
  const size = Buffer.alloc(4);
  size.writeUInt32LE(text.length);
  return Buffer.concat([size, text, ...blobs.map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength))]);
}

export function send(fd, header, blobs) {
  const bytes = encode(header, blobs);
  for (let done = 0; done < bytes.length;) done += fs.writeSync(fd, bytes, done);
}

// Calls `serve(header, blobs)` for each request in order, one at a time; resolves when stdin ends.
export async function serveRequests(serve) {
  let pending = Buffer.alloc(0);
  for await (const chunk of process.stdin) {
    pending = Buffer.concat([pending, chunk]);
    for (;;) {
      if (pending.length < 4) break;
      const size = pending.readUInt32LE(0);
      if (pending.length < 4 + size) break;
      const header = JSON.parse(pending.subarray(4, 4 + size).toString());
      const total = 4 + size + header.blobs.reduce((a, b) => a + b, 0);
      if (pending.length < total) break;
      let at = 4 + size;
      const blobs = header.blobs.map((n) => { const b = pending.subarray(at, at + n); at += n; return b; });
      delete header.blobs;
      pending = pending.subarray(total);
      await serve(header, blobs);
    }
  }
}

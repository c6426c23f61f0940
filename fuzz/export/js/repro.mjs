// Reproduce the defect of case.json on onnxruntime-node's WebGPU EP (CPU fallback disabled): the same verdicts
// and exit statuses as repro.py (1 the defect is there, 0 fixed, 2 cannot check here). Needs only the npm package
// onnxruntime-node (npm install onnxruntime-node --ignore-scripts). The session runs in a child process, so a
// crash or a hang is reported with its signal, not suffered.  Usage: node repro.mjs [--timeout SECONDS]
import { fork } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { EXIT_CANNOT_CHECK, judge, readTensor, numbers, runCase } from './repro-core.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const caseInfo = JSON.parse(fs.readFileSync(path.join(here, 'case.json')));
const data = path.join(here, 'test_data_set_0');
const tensors = (prefix) => fs.readdirSync(data).filter((f) => f.startsWith(prefix)).sort()
  .map((f) => readTensor(new Uint8Array(fs.readFileSync(path.join(data, f)))));

if (process.argv.includes('--child')) {
  const report = (kind, value) => process.send([kind, value]);
  let ort;
  try {
    ort = createRequire(path.join(here, 'repro.mjs'))('onnxruntime-node');
  } catch (err) {
    report('unavailable', `onnxruntime-node is not installed here (npm install onnxruntime-node): ${err.message}`);
    process.exit(0);
  }
  ort.env.logLevel = 'fatal';
  report('environment', `onnxruntime-node ${ort.env.versions.node}, WebGPU EP, Node ${process.version}`);
  let inputs;
  try {
    inputs = tensors('input_');
  } catch (err) {  // never the runtime's refusal: this script cannot read its own data
    report('unavailable', `cannot read test_data_set_0: ${err.message}`);
    process.exit(0);
  }
  try {
    await runCase(ort, fs.readFileSync(path.join(here, 'model.onnx')), inputs, report);
  } catch (err) {
    report('error', String(err.message || err));
  }
  process.disconnect();
} else {
  const at = process.argv.indexOf('--timeout');
  const timeout = at > 0 ? Number(process.argv[at + 1]) : 120;
  console.log(`case: ${caseInfo.case}`);
  console.log(`expectation: ${caseInfo.expectation} on onnxruntime-node's WebGPU EP`);
  const seen = {};
  const child = fork(fileURLToPath(import.meta.url), ['--child'], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  child.on('message', ([kind, value]) => { seen[kind] = value; });
  const timer = setTimeout(() => { seen.hung = timeout; child.kill('SIGKILL'); }, timeout * 1000);
  const [code, signal] = await new Promise((resolve) => child.on('exit', (c, s) => resolve([c, s])));
  clearTimeout(timer);
  if (signal && !seen.hung) seen.crash = signal;
  else if (code && !seen.hung) seen.crash = `exit code ${code}`;
  if (seen.environment) console.log(`environment: ${seen.environment}`);
  if (!seen.crash && !seen.hung && !seen.unavailable && seen.error === undefined && !seen.outputs) {
    seen.unavailable = `the child ended during ${seen.stage} without a result`;
  }
  const expected = Object.fromEntries(tensors('output_').map((t) => [t.name, { dims: t.dims, values: numbers(t.type, t.data) }]));
  const verdict = judge(seen, expected, caseInfo);
  verdict.lines.forEach((line) => console.log(line));
  process.exit(verdict.status ?? EXIT_CANNOT_CHECK);
}

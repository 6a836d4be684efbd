// One measurement, in a fresh process so that its memory figures are its own:
//   node bench/node_session.mjs FORM PATH [graphOptimizationLevel]
// FORM: onnx (ORT opens PATH itself), archive (createSession: ORT-node maps the archive),
// archive-bytes (the archive read into memory, then createSession: externalData views).
// Prints {"ms": time to a session, "anonMiB": RssAnon growth, "hwmMiB": peak RSS growth}.
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

import { createSession } from '../dist/node.js';

const require = createRequire(import.meta.url);
const ort = require('onnxruntime-node');
const [form, path, level = 'all'] = process.argv.slice(2);
const options = { graphOptimizationLevel: level, intraOpNumThreads: 1 };

function status(key) {
  return Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
}

const anon0 = status('RssAnon');
const hwm0 = status('VmHWM');
const t0 = performance.now();
let session;
if (form === 'onnx') session = await ort.InferenceSession.create(path, options);
else if (form === 'archive') session = await createSession(ort, path, options);
else session = await createSession(ort, new Uint8Array(await readFile(path)), options);
const ms = performance.now() - t0;
const result = { ms, anonMiB: status('RssAnon') - anon0, hwmMiB: status('VmHWM') - hwm0 };
await session.release();
process.stdout.write(`${JSON.stringify(result)}\n`);

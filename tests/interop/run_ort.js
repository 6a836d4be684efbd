#!/usr/bin/env node
// Runs an ONNX model in ONNX Runtime (CPU, the onnxruntime-node package installed next to this
// file by scripts/install-deps.sh) for tests/archive_ort_test.cpp.
//
//   node run_ort.js MODEL INPUTS.json OUT_DIR
//
// INPUTS.json: {"runs": [{"<input name>": {"type": "float32", "dims": [1, 3, 12, 12],
// "file": "x.bin"}, ...}, ...]}; each file holds the raw little-endian elements and is relative
// to the folder of INPUTS.json. Types: float32, float64, int32, int64, uint8, int8, bool.
//
// For run r and output o (in the session's output order) it writes the raw output bytes to
// OUT_DIR/run<r>_<o>.bin, then prints one JSON object on stdout:
//   {"outputs": [{"run": r, "name": ..., "type": ..., "dims": [...], "file": ..., "bytes": n}],
//    "mappings": [{"file": ..., "offset": n, "size": n, "rss": n}],
//    "anon_kib_before": n, "anon_kib_after": n}
// "mappings" lists the memory mappings of files in MODEL's folder (but not MODEL itself) while
// the session is alive, from /proc/self/smaps: it shows whether ONNX Runtime mapped the external
// data in place or read it into its own memory. anon_kib_* is RssAnon of /proc/self/status
// before the session is created and after the runs. The session uses one thread, so that the
// outputs are reproducible bit for bit.
'use strict';

const fs = require('fs');
const path = require('path');

const kTypes = {
  float32: Float32Array,
  float64: Float64Array,
  int32: Int32Array,
  int64: BigInt64Array,
  uint8: Uint8Array,
  int8: Int8Array,
  bool: Uint8Array,
};

function fail(message) {
  process.stderr.write(`run_ort.js: ${message}\n`);
  process.exit(2);
}

function rssAnonKib() {
  const match = /RssAnon:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return match ? Number(match[1]) : -1;
}

// Mappings of the files in `folder` other than `exclude`, with their file offset, size and
// resident bytes.
function mappingsIn(folder, exclude) {
  const out = [];
  let current = null;
  for (const line of fs.readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ ([0-9a-f]+) \S+ \d+\s+(.*)$/.exec(line);
    if (head) {
      current = null;
      const file = head[4];
      if (file.startsWith('/') && path.dirname(file) === folder && file !== exclude) {
        current = {
          file: path.basename(file),
          offset: parseInt(head[3], 16),
          size: parseInt(head[2], 16) - parseInt(head[1], 16),
          rss: 0,
        };
        out.push(current);
      }
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && current) current.rss = Number(rss[1]) * 1024;
  }
  return out;
}

function loadInput(spec, base) {
  const Type = kTypes[spec.type];
  if (!Type) fail(`unknown input type ${spec.type}`);
  const bytes = fs.readFileSync(path.resolve(base, spec.file));
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);  // A fresh, aligned ArrayBuffer.
  return {type: spec.type, data: new Type(copy.buffer), dims: spec.dims};
}

async function main() {
  const [modelArg, inputsArg, outArg] = process.argv.slice(2);
  if (!outArg) fail('usage: node run_ort.js MODEL INPUTS.json OUT_DIR');
  const ort = require('onnxruntime-node');
  const model = fs.realpathSync(modelArg);
  const spec = JSON.parse(fs.readFileSync(inputsArg, 'utf8'));
  const base = path.dirname(path.resolve(inputsArg));
  fs.mkdirSync(outArg, {recursive: true});

  const anonBefore = rssAnonKib();
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
  });
  const result = {outputs: [], mappings: mappingsIn(path.dirname(model), model)};
  for (let r = 0; r < spec.runs.length; ++r) {
    const feeds = {};
    for (const [name, input] of Object.entries(spec.runs[r])) {
      const {type, data, dims} = loadInput(input, base);
      feeds[name] = new ort.Tensor(type, data, dims);
    }
    const outputs = await session.run(feeds);
    session.outputNames.forEach((name, o) => {
      const tensor = outputs[name];
      const data = tensor.data;
      const file = path.join(outArg, `run${r}_${o}.bin`);
      fs.writeFileSync(file, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      result.outputs.push({
        run: r, name, type: tensor.type, dims: tensor.dims, file, bytes: data.byteLength,
      });
    });
  }
  result.anon_kib_before = anonBefore;
  result.anon_kib_after = rssAnonKib();
  await session.release();
  process.stdout.write(JSON.stringify(result) + '\n');
}

main().catch((e) => fail(e && e.stack ? e.stack : String(e)));

// Runs in Chromium (served at /test/page.mjs): ORT-web (wasm) and this package's browser build,
// both as the page's own ES modules.
const ort = await import('/ort/ort.wasm.min.mjs');
ort.env.wasm.wasmPaths = '/ort/';
ort.env.wasm.numThreads = 1;
const onnxzip = await import('/dist/index.js');

function tensor(spec) {
  const types = { float32: Float32Array, int64: BigInt64Array, bool: Uint8Array };
  const data = spec.type === 'int64' ? BigInt64Array.from(spec.data.map(BigInt)) : types[spec.type].from(spec.data);
  return new ort.Tensor(spec.type, data, spec.dims);
}

/**
 * Creates a session from `source` ({url} for createSession over ranges, {onnx} for the .onnx
 * model fetched whole), runs `runs` (name -> {type, data, dims}; `stateful` feeds stateN back as
 * state) and returns every output as [name, values].
 */
export async function run(source, runs, stateful) {
  const session =
    source.url !== undefined
      ? await onnxzip.createSession(ort, source.url, { intraOpNumThreads: 1 })
      : await ort.InferenceSession.create(new Uint8Array(await (await fetch(source.onnx)).arrayBuffer()), { intraOpNumThreads: 1 });
  const out = [];
  let state = new ort.Tensor('float32', new Float32Array(256), [2, 1, 128]);
  for (const specs of runs) {
    const feeds = Object.fromEntries(Object.entries(specs).map(([k, v]) => [k, tensor(v)]));
    const result = await session.run(stateful ? { ...feeds, state } : feeds);
    if (stateful) state = result.stateN;
    for (const name of session.outputNames) out.push([name, Array.from(result[name].data)]);
  }
  await session.release();
  return out;
}

/** What openArchive and getTensor give for `url`, and verify's verdict. */
export async function inspect(url, tensorName) {
  const archive = await onnxzip.openArchive(url);
  const data = await archive.getTensor(tensorName);
  const report = await archive.verify();
  return { tensors: archive.tensors.length, first: Array.from(data.slice(0, 4)), length: data.length, ok: report.ok };
}

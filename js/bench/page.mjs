// Runs in Chromium for the bench (served at /bench/page.mjs).
const ort = await import('/ort/ort.wasm.min.mjs');
ort.env.wasm.wasmPaths = '/ort/';
ort.env.wasm.numThreads = 1;
const onnxzip = await import('/dist/index.js');

/**
 * Creates a session in one form and returns the time it took and its outputs for one input: the
 * bench's model (`big`, 2048 wide), or its small twin for the warm-up (`warm`, 256 wide).
 */
export async function create(form, model = 'big', width = 2048) {
  const t0 = performance.now();
  const session =
    form === 'sidecar'
      ? await ort.InferenceSession.create(`/bench/${model}.onnx`, { externalData: [{ path: `${model}.onnx_data`, data: `/bench/${model}.onnx_data` }] })
      : await onnxzip.createSession(ort, `/bench/${model}.onnxz`);
  const ms = performance.now() - t0;
  const x = new ort.Tensor('float32', Float32Array.from({ length: width }, (_, i) => Math.sin(i)), [1, width]);
  const y = (await session.run({ x })).y.data;
  await session.release();
  return { ms, y: Array.from(y.slice(0, 8)) };
}

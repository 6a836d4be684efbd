// createSession runs real models from .onnxz in ONNX Runtime with the outputs of the same model
// loaded from .onnx: ORT-node by every route (the archive file mapped by ORT, externalData from a
// file, bytes, a Blob, a URL), ORT-web (wasm) in Node from bytes, a Blob and a URL.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { after, before, describe, it } from 'node:test';

import { createSession, openArchive, ortModelFor } from '../../dist/node.js';
import { fixture, repo } from '../support/fixtures.mjs';
import { RangeServer } from '../support/range_server.mjs';

const require = createRequire(import.meta.url);
const ortNode = require('onnxruntime-node');
const ortWeb = await import('onnxruntime-web');
ortWeb.env.wasm.numThreads = 1;

const sileroOnnx = `${repo}/build/models/js/silero_vad_v5.onnx`;

// Each model: where its .onnx is, and runs of inputs (in a fixed order, seeded values).
const models = {
  mlp: {
    onnx: () => fixture('mlp.onnx'),
    runs: (ort) => [{ x: new ort.Tensor('float32', Float32Array.from({ length: 256 }, (_, i) => Math.sin(i)), [1, 256]) }],
  },
  sites: {
    onnx: () => fixture('sites.onnx'),
    runs: (ort) =>
      [1, 0].map((c) => ({
        x: new ort.Tensor('float32', Float32Array.from({ length: 256 }, (_, i) => i / 256), [16, 16]),
        c: new ort.Tensor('bool', Uint8Array.from([c]), []),
      })),
  },
  // Silero VAD v5: 512-sample chunks of 16 kHz audio (a chirp), the state carried from run to run.
  silero: {
    onnx: () => sileroOnnx,
    stateful: true,
    runs: (ort) =>
      [0, 1, 2].map((k) => ({
        input: new ort.Tensor('float32', Float32Array.from({ length: 512 }, (_, i) => 0.5 * Math.sin(((k * 512 + i) ** 2) / 40000)), [1, 512]),
        sr: new ort.Tensor('int64', BigInt64Array.from([16000n]), []),
      })),
  },
};

// sites.onnxz (9.5 KiB) is all in the tail read; mlp (1.0 MiB) and silero (2.2 MiB) are not.
const urlRequests = { mlp: 2, sites: 1, silero: 2 };

const sessionOptions = { intraOpNumThreads: 1, interOpNumThreads: 1, executionProviders: ['cpu'] };

async function outputsOf(ort, session, model) {
  const out = [];
  let state = new ort.Tensor('float32', new Float32Array(2 * 128), [2, 1, 128]);
  for (const feeds of model.runs(ort)) {
    const result = await session.run(model.stateful ? { ...feeds, state } : feeds);
    if (model.stateful) state = result.stateN;
    for (const name of session.outputNames) out.push([name, Array.from(result[name].data)]);
  }
  await session.release();
  return out;
}

let server;
before(async () => {
  server = await RangeServer.start(Object.fromEntries(Object.keys(models).map((m) => [`/${m}.onnxz`, readFileSync(fixture(`${m}.onnxz`))])));
});
after(async () => server.stop());

const sources = {
  'file (ORT maps the archive)': (m) => [fixture(`${m}.onnxz`), {}],
  'file, externalData': (m) => [fixture(`${m}.onnxz`), { route: 'externalData' }],
  bytes: (m) => [new Uint8Array(readFileSync(fixture(`${m}.onnxz`))), {}],
  Blob: (m) => [new Blob([readFileSync(fixture(`${m}.onnxz`))]), {}],
  URL: (m) => [server.url(`/${m}.onnxz`), {}],
};

for (const [flavor, ort] of [['node', ortNode], ['web', ortWeb]]) {
  describe(`ORT-${flavor}: outputs equal to the .onnx model's`, () => {
    for (const [name, model] of Object.entries(models)) {
      for (const [kind, make] of Object.entries(sources)) {
        if (flavor === 'web' && kind.startsWith('file')) continue; // ORT-web takes no paths.
        it(`${name} from ${kind}`, async () => {
          const reference = await outputsOf(ort, await ort.InferenceSession.create(flavor === 'node' ? model.onnx() : readFileSync(model.onnx()), sessionOptions), model);
          const [source, options] = make(name);
          server.clearLog();
          const got = await outputsOf(ort, await createSession(ort, source, sessionOptions, options), model);
          assert.deepEqual(got, reference);
          if (kind === 'URL') {
            // The tail (1 MiB), then one request for the entries outside it, kept external or inlined.
            assert.equal(server.log.length, urlRequests[name], JSON.stringify(server.log));
          }
        });
      }
    }
  });
}

describe('what createSession hands ORT', () => {
  it('Silero from bytes: every tensor is in an If subgraph, so every one is inlined', async () => {
    const archive = await openArchive(fixture('silero.onnxz'));
    const prepared = await ortModelFor(archive, 'node', 'externalData');
    assert.equal(prepared.externalData.length, 0);
    assert.equal(prepared.inlined.length, archive.tensors.filter((t) => !t.inline).length);
    assert.ok(prepared.inlined.some((t) => /tensor 'stft\.forward_basis_buffer' at graph\/node\[\d+\]\/(then|else)_branch\//.test(t)));
    assert.ok(prepared.model.byteLength > archive.modelBytes.byteLength + 2_000_000);
    await archive.close();
  });

  it('mlp from bytes: the model unchanged, each entry a view of the bytes', async () => {
    const bytes = new Uint8Array(readFileSync(fixture('mlp.onnxz')));
    const archive = await openArchive(bytes);
    const prepared = await ortModelFor(archive, 'web', 'externalData');
    assert.equal(prepared.model, archive.modelBytes);
    assert.deepEqual(prepared.externalData.map((f) => f.path), ['W1', 'b1', 'W2', 'b2']);
    for (const f of prepared.externalData) {
      assert.equal(f.data.buffer, bytes.buffer);
      assert.equal(f.data.byteOffset, archive.entry(f.path).dataOffset);
    }
  });

  it('mlp from a Blob for ORT-web: lazy Blob slices, nothing read', async () => {
    const archive = await openArchive(new Blob([readFileSync(fixture('mlp.onnxz'))]));
    const before = archive.source.stats.bytes;
    const prepared = await ortModelFor(archive, 'web', 'externalData');
    assert.ok(prepared.externalData.every((f) => f.data instanceof Blob));
    assert.equal(archive.source.stats.bytes, before);
  });

  it('the file route: locations rewritten to the archive and its offsets, and ORT maps the archive', async () => {
    const path = fixture('mlp.onnxz');
    const archive = await openArchive(path);
    const prepared = await ortModelFor(archive, 'node', 'auto');
    assert.equal(prepared.extraSessionConfig.model_external_initializers_file_folder_path, `${repo}/build/js-fixtures`);
    const text = Buffer.from(prepared.model).toString('latin1');
    for (const e of archive.entries.filter((e) => e.name !== '__MODEL_PROTO')) assert.ok(text.includes(String(e.dataOffset)), e.name);
    assert.ok(text.includes('mlp.onnxz'));
    const session = await createSession(ortNode, path, { ...sessionOptions, graphOptimizationLevel: 'basic' });
    const mapped = readFileSync('/proc/self/smaps', 'utf8').split('\n').filter((l) => l.endsWith('/mlp.onnxz'));
    assert.ok(mapped.length > 0, 'ORT did not map the archive');
    await session.release();
    await archive.close();
  });
});

describe('createSession over a URL moves no byte twice', () => {
  // The requests of one createSession: the open, then at most one for every entry ORT gets
  // (kept external or inlined), none of them overlapping another (README "Over HTTP").
  const cases = [
    ['mlp', {}],
    ['silero', {}],
    ['sites', {}],
    // The least tail, and some tensors inlined for ORT beside the external ones: their entries
    // were once read with a request of their own, and the tail's bytes again.
    ['mlp', { tailSize: 65_633, inlineBelow: 4096 }],
    ['silero', { tailSize: 65_633 }],
  ];
  for (const [name, options] of cases) {
    it(`${name}, ${JSON.stringify(options)}: the open plus one request, each byte once`, async () => {
      const size = readFileSync(fixture(`${name}.onnxz`)).length;
      server.clearLog();
      await (await openArchive(server.url(`/${name}.onnxz`), options)).close();
      const opens = server.log.length;
      server.clearLog();
      const session = await createSession(ortNode, server.url(`/${name}.onnxz`), sessionOptions, options);
      await session.release();
      const spans = server.log.map((r) => {
        const suffix = /^bytes=-(\d+)$/.exec(r.range);
        if (suffix !== null) return [Math.max(0, size - Number(suffix[1])), size];
        const [, from, to] = /^bytes=(\d+)-(\d+)$/.exec(r.range).map(Number);
        return [from, to + 1];
      });
      assert.ok(server.log.length <= opens + 1, JSON.stringify(server.log));
      const moved = server.log.reduce((n, r) => n + r.bytes, 0);
      assert.ok(moved <= size, `${moved} bytes moved for a ${size}-byte archive: ${JSON.stringify(server.log)}`);
      const sorted = [...spans].sort((a, b) => a[0] - b[0]);
      for (let i = 1; i < sorted.length; ++i) assert.ok(sorted[i][0] >= sorted[i - 1][1], `overlapping requests: ${JSON.stringify(spans)}`);
    });
  }
});

describe('createSession refuses what is not ONNX Runtime', () => {
  it('no ORT module: invalid_argument, not a TypeError', async () => {
    for (const ort of [undefined, null, {}, 'onnxruntime-node']) {
      await assert.rejects(createSession(ort, fixture('mlp.onnxz')), (e) => {
        assert.equal(e.name, 'OnnxzipError', String(e));
        assert.equal(e.code, 'invalid_argument');
        assert.match(e.message, /createSession takes the ONNX Runtime module first/);
        return true;
      });
    }
  });

  it('no source: invalid_argument', async () => {
    await assert.rejects(createSession(ortNode, undefined), (e) => e.name === 'OnnxzipError' && e.code === 'invalid_argument' && /no archive given/.test(e.message));
  });
});

// Which tensor sites ONNX Runtime resolves from in-memory `externalData`, found by trying each:
// for every external tensor of sites.onnxz (initializers and Constants of the main graph and of
// If subgraphs, a function's Constant, an empty initializer), a model in which that tensor alone
// refers to its entry (every other one inline) goes to ORT-node and ORT-web (wasm, in Node) with
// that entry as externalData. What resolves is pinned below (the table it prints is the one in
// js/README.md), so a release of ORT that resolves more or less fails here and says where; and
// every site resolvableFromExternalData (src/ort.ts) keeps external -- what createSession keeps
// external -- must resolve. (It keeps function tensors inline for ORT-web too: ORT inlines a
// function into the graph that calls it, which may be a subgraph.)
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';

import { openArchive } from '../../dist/node.js';
import { inlineTensors, resolvableFromExternalData } from '../../dist/ort.js';
import { fixture } from '../support/fixtures.mjs';

const require = createRequire(import.meta.url);
const ortNode = require('onnxruntime-node');
const ortWeb = await import('onnxruntime-web');
ortWeb.env.wasm.numThreads = 1;

function feeds(ort) {
  return {
    x: new ort.Tensor('float32', new Float32Array(256).map((_, i) => i / 256), [16, 16]),
    c: new ort.Tensor('bool', Uint8Array.from([1]), []),
  };
}

async function run(ort, model, externalData) {
  const session = await ort.InferenceSession.create(model, { externalData, intraOpNumThreads: 1 });
  const out = (await session.run(feeds(ort))).y.data;
  await session.release();
  return out;
}

const resolvedSites = {
  node: ['graph/node[0]/value', 'graph/initializer[0]'],
  web: ['graph/node[0]/value', 'graph/initializer[0]', 'graph/initializer[1]', 'functions[0]/node[0]/value'],
};

describe('what ONNX Runtime 1.30 resolves from in-memory externalData', () => {
  for (const [flavor, ort] of [['node', ortNode], ['web', ortWeb]]) {
    it(`ORT-${flavor}: the sites it resolves, and every one createSession keeps external`, async () => {
      const archive = await openArchive(fixture('sites.onnxz'));
      const inlined = async (tensors) => inlineTensors(archive, tensors, await archive.readEntries(tensors.map((t) => t.entry)));
      const reference = await run(ort, await inlined(archive.resolved), []);
      const table = [];
      const mismatches = [];
      for (const t of archive.resolved) {
        const others = archive.resolved.filter((o) => o !== t);
        const model = await inlined(others);
        const [data] = await archive.readEntries([t.entry]);
        let outcome;
        try {
          const out = await run(ort, model, [{ path: t.entry.name, data }]);
          outcome = out.every((v, i) => v === reference[i]) ? 'resolved' : 'WRONG OUTPUT';
        } catch (e) {
          outcome = `refused: ${String(e.message).split('\n')[0].replace(/^.*ERROR_MESSAGE: /, '').slice(0, 90)}`;
        }
        const kept = resolvableFromExternalData(t.record, flavor, t.entry.size);
        table.push(`${t.info.site.padEnd(46)} ${String(t.entry.size).padStart(5)} B  ${outcome}${kept ? '' : ' (createSession: inline)'}`);
        if (kept) assert.equal(outcome, 'resolved', `${t.info.site} is kept external but ORT-${flavor} does not resolve it`);
        mismatches.push(...((outcome === "resolved") === resolvedSites[flavor].includes(t.info.site) ? [] : [`${t.info.site}: ${outcome}`]));
      }
      console.log(`ORT-${flavor} ${ort.env.versions.node ?? ort.env.versions.web}:\n  ${table.join('\n  ')}`);
      assert.deepEqual(mismatches, []);
      await archive.close();
    });
  }
});

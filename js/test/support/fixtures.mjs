// The archives the tests read (test/fixtures/make_fixtures.py), written once into
// build/js-fixtures/ with the onnxzip tool of the C++ build and the Silero model that
// scripts/fetch-models.mjs caches; written again when the script changes.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const fixturesDir = join(repo, 'build', 'js-fixtures');
export const conformanceDir = join(repo, 'spec', 'conformance');
const script = join(repo, 'js', 'test', 'fixtures', 'make_fixtures.py');
const cli = process.env.ONNXZIP_CLI ?? join(repo, 'build', 'src', 'cli', 'onnxzip');
const silero = join(repo, 'build', 'models', 'js', 'silero_vad_v5.onnx');

let ready = false;

/** The path of fixture `name` (e.g. "mlp.onnxz"), after making the fixtures if needed. */
export function fixture(name) {
  if (!ready) {
    const stamp = join(fixturesDir, 'stamp');
    const hash = createHash('sha256').update(readFileSync(script)).digest('hex');
    if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== hash) {
      if (!existsSync(cli)) throw new Error(`${cli} is missing: build it (ninja -C build onnxzip_cli) or set ONNXZIP_CLI`);
      if (!existsSync(silero)) throw new Error(`${silero} is missing: run node js/scripts/fetch-models.mjs (scripts/install-deps.sh does)`);
      execFileSync('/usr/bin/python3', [script, '--cli', cli, '--out', fixturesDir, '--silero', silero], { stdio: 'inherit' });
      writeFileSync(stamp, hash);
    }
    ready = true;
  }
  return join(fixturesDir, name);
}

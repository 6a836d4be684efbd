// An S3 store for the s3:// tests: tests/support/s3_server.py (moto's server with signature
// checking on, behind its counting and fault-injecting proxy) on 127.0.0.1, started and stopped
// by the test. It runs in a Python that has moto 5 and boto3 (pyenv's, not /usr/bin/python3), as
// the C++ and Python suites find it.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

import { repo } from './fixtures.mjs';

let motoPython;

/** The Python with moto and boto3, or undefined. */
function findMotoPython() {
  if (motoPython !== undefined) return motoPython || undefined;
  const candidates = [process.env.ONNXZIP_MOTO_PYTHON, join(homedir(), '.pyenv', 'shims', 'python3'), '/root/.pyenv/shims/python3', 'python3'];
  motoPython = '';
  for (const candidate of candidates) {
    if (candidate === undefined || candidate === '') continue;
    try {
      execFileSync(candidate, ['-c', 'import moto.server, boto3'], { stdio: 'ignore', timeout: 60_000 });
      motoPython = candidate;
      break;
    } catch {
      // Not this one.
    }
  }
  return motoPython || undefined;
}

/** Why the store cannot run here (a one-line reason for a skip), or undefined. */
export function s3StoreMissing() {
  return findMotoPython() === undefined ? 'no Python with moto 5 and boto3 (ONNXZIP_MOTO_PYTHON)' : undefined;
}

export class S3Store {
  /** The proxy's URL, the endpoint to give S3Options.endpointUrl. */
  endpoint = '';
  accessKeyId = '';
  secretAccessKey = '';
  #process;
  #folder;

  /** moto with bucket `bucket` holding `uploads` ({ key: local path }). */
  static async start(bucket, uploads) {
    const store = new S3Store();
    store.#folder = mkdtempSync(join(tmpdir(), 'onnxzip-s3-'));
    const state = join(store.#folder, 'state.json');
    const log = openSync(join(store.#folder, 'server.log'), 'w');
    const args = [join(repo, 'tests', 'support', 's3_server.py'), state, bucket, ...Object.entries(uploads).map(([key, path]) => `${key}=${path}`)];
    store.#process = spawn(findMotoPython(), args, { stdio: ['ignore', log, log] });
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline && store.#process.exitCode === null) {
      if (existsSync(state) && readFileSync(state, 'utf8').endsWith('\n')) {
        const s = JSON.parse(readFileSync(state, 'utf8'));
        Object.assign(store, { endpoint: s.endpoint, accessKeyId: s.access_key_id, secretAccessKey: s.secret_access_key });
        return store;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const why = readFileSync(join(store.#folder, 'server.log'), 'utf8');
    await store.stop();
    throw new Error(`the S3 server did not start: ${why}`);
  }

  /** S3Options for this store, with `changes` over them. */
  options(changes = {}) {
    return { endpointUrl: this.endpoint, region: 'us-east-1', credentials: { accessKeyId: this.accessKeyId, secretAccessKey: this.secretAccessKey }, ...changes };
  }

  async #control(method, path) {
    const answer = await fetch(`${this.endpoint}${path}`, { method });
    if (!answer.ok) throw new Error(`${method} ${path}: HTTP ${answer.status}`);
    return answer.json();
  }

  /** The requests the store answered since the last reset. */
  async requests() {
    return (await this.#control('GET', '/__proxy/stats')).requests;
  }

  /** Forgets the requests counted and any pending fault. */
  async reset() {
    await this.#control('POST', '/__proxy/reset');
  }

  /** The next `count` requests of operation `op` get fault `kind` (s3_server.py lists them). */
  async fault(kind, count = 1, op = 'get') {
    await this.#control('POST', `/__proxy/fault?kind=${kind}&count=${count}&op=${op}`);
  }

  /** Uploads the local file `path` as `key` (boto3). */
  async put(key, path) {
    await this.#control('POST', `/__proxy/put?key=${encodeURIComponent(key)}&path=${encodeURIComponent(path)}`);
  }

  async stop() {
    if (this.#process !== undefined && this.#process.exitCode === null) {
      const exited = new Promise((resolve) => this.#process.once('exit', resolve));
      this.#process.kill();
      await exited;
    }
    rmSync(this.#folder, { recursive: true, force: true });
  }
}

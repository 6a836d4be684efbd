// s3://bucket/key read from moto's S3 server (signature checking on) behind the counting proxy of
// tests/support/s3_server.py: archives uploaded by boto3 open, load and verify as the local files
// do (some conformance vectors among them, with their manifest verdicts); a wrong secret, a
// missing key, a wrong region and an object replaced mid-read give the codes and words of the C++
// library, never a key. Skipped where no Python has moto and boto3.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { inspect } from 'node:util';

import { createSession, OnnxzipError, openArchive, verify } from '../../dist/node.js';
import { fixture, repo } from '../support/fixtures.mjs';
import { S3Store, s3StoreMissing } from '../support/s3_store.mjs';

const skip = s3StoreMissing();
const conformance = join(repo, 'spec', 'conformance');
const manifest = JSON.parse(readFileSync(join(conformance, 'manifest.json'), 'utf8'));
// A few vectors of each verdict: open ok and verify ok, warning, error; open refused.
const vectors = ['valid_sites', 'valid_signed', 'warn_9_3_9_gap', 'reject_12_5_payload_changed', 'reject_12_5_entry_not_listed']
  .map((name) => manifest.vectors.find((v) => v.file === `vectors/${name}.onnxz`))
  .concat(manifest.vectors.filter((v) => v.open !== 'ok').slice(0, 3));
const kTail = 65_633; // The least tail: the tensors of mlp.onnxz (1 MiB) are read after the open.

const bytesOf = (t) => Buffer.from(t.buffer, t.byteOffset, t.byteLength);

/** Every tensor's bytes, in order. */
async function tensorBytes(source, options) {
  const archive = await openArchive(source, options);
  try {
    return (await archive.getTensors(archive.tensors)).map(bytesOf);
  } finally {
    await archive.close();
  }
}

/** What opening and reading every tensor gives: 'ok' or the error code (as conformance.test.mjs). */
async function openVerdict(source, options) {
  try {
    await tensorBytes(source, options);
    return { verdict: 'ok', message: '' };
  } catch (e) {
    if (!(e instanceof OnnxzipError)) throw e;
    return { verdict: e.code, message: e.message };
  }
}

function verifyVerdict(report) {
  if (report.findings.length === 0) return 'ok';
  return report.findings.some((f) => f.severity === 'error') ? 'error' : 'warning';
}

const describeFindings = (report) => report.findings.map((f) => `${f.severity} ${f.kind} [${f.entry}] ${f.tensor}: ${f.message}`).join('\n');

/** The error `promise` rejects with (an OnnxzipError). */
async function failure(promise) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof OnnxzipError, String(e));
    return e;
  }
  assert.fail('no error');
}

describe('s3:// from an S3 store', { skip }, () => {
  let store;
  let mlp;
  before(async () => {
    mlp = fixture('mlp.onnxz');
    const uploads = { 'dir/mlp.onnxz': mlp, 'dir one/a b.onnxz': mlp };
    for (const v of vectors) uploads[v.file] = join(conformance, v.file);
    store = await S3Store.start('models', uploads);
  });
  after(async () => store?.stop());

  it('opens an archive with one signed request and reads tensors equal to the local ones', async () => {
    await store.reset();
    const archive = await openArchive('s3://models/dir/mlp.onnxz', { s3: store.options(), tailBytes: kTail });
    try {
      assert.equal(await store.requests(), 1);
      assert.equal(archive.sourceName, 's3://models/dir/mlp.onnxz');
      const local = await tensorBytes(mlp);
      const remote = await archive.getTensors(archive.tensors);
      assert.ok(local.length >= 2);
      remote.forEach((t, i) => assert.deepEqual(bytesOf(t), local[i]));
      assert.ok((await store.requests()) >= 2);
      assert.ok(!inspect(archive, { depth: 20, showHidden: true }).includes(store.secretAccessKey));
    } finally {
      await archive.close();
    }
  });

  // moto's own signature check refuses keys with '+', '~' or non-ASCII letters (boto3's too):
  // s3_sigv4.test.mjs holds the signatures of such keys to botocore instead.
  it('takes a key with spaces, and an s3: URL object', async () => {
    const local = await tensorBytes(mlp);
    assert.deepEqual(await tensorBytes('s3://models/dir one/a b.onnxz', { s3: store.options() }), local);
    assert.deepEqual(await tensorBytes(new URL('s3://models/dir one/a b.onnxz'), { s3: store.options() }), local);
  });

  it('verifies an archive in the store', async () => {
    const report = await verify('s3://models/dir/mlp.onnxz', { s3: store.options() });
    assert.equal(report.ok, true, describeFindings(report));
  });

  for (const v of vectors) {
    it(`gives the manifest's verdicts for ${v.file}: ${v.description}`, async () => {
      const url = `s3://models/${v.file}`;
      const opened = await openVerdict(url, { s3: store.options() });
      assert.equal(opened.verdict, v.open, opened.message);
      if (v.open !== 'ok') return;
      const report = await verify(url, { s3: store.options() });
      assert.equal(verifyVerdict(report), v.verify, describeFindings(report));
      if (v.key === undefined) return;
      const keyed = await verify(url, { s3: store.options(), publicKey: readFileSync(join(conformance, v.key), 'utf8') });
      assert.equal(verifyVerdict(keyed), v.verify_key, describeFindings(keyed));
    });
  }

  it('finds the keys, region and endpoint in the AWS variables and a profile in the files', async () => {
    const local = await tensorBytes(mlp);
    const saved = { ...process.env };
    const folder = mkdtempSync(join(tmpdir(), 'onnxzip-aws-'));
    try {
      Object.assign(process.env, {
        AWS_ACCESS_KEY_ID: store.accessKeyId,
        AWS_SECRET_ACCESS_KEY: store.secretAccessKey,
        AWS_ENDPOINT_URL_S3: store.endpoint,
        AWS_REGION: 'us-east-1',
        AWS_CONFIG_FILE: join(folder, 'config'),
        AWS_SHARED_CREDENTIALS_FILE: join(folder, 'credentials'),
      });
      assert.deepEqual(await tensorBytes('s3://models/dir/mlp.onnxz'), local);
      writeFileSync(join(folder, 'credentials'), `[store]\naws_access_key_id = ${store.accessKeyId}\naws_secret_access_key = ${store.secretAccessKey}\n`);
      writeFileSync(join(folder, 'config'), `[profile store]\nregion = us-east-1\nendpoint_url = ${store.endpoint}\n`);
      process.env.AWS_SECRET_ACCESS_KEY = 'not-the-secret';
      delete process.env.AWS_ENDPOINT_URL_S3;
      assert.deepEqual(await tensorBytes('s3://models/dir/mlp.onnxz', { s3: { profile: 'store' } }), local);
    } finally {
      for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
      Object.assign(process.env, saved);
    }
  });

  it('runs the archive in ONNX Runtime as the local file runs', async () => {
    const ort = createRequire(import.meta.url)('onnxruntime-node');
    const input = { x: new ort.Tensor('float32', Float32Array.from({ length: 256 }, (_, i) => Math.sin(i)), [1, 256]) };
    const outputs = [];
    for (const [source, options] of [[mlp, {}], ['s3://models/dir/mlp.onnxz', { s3: store.options() }]]) {
      const session = await createSession(ort, source, {}, options);
      try {
        const result = await session.run(input);
        outputs.push(Object.values(result).map((t) => Array.from(t.data)));
      } finally {
        await session.release();
      }
    }
    assert.deepEqual(outputs[1], outputs[0]);
  });

  it('says a wrong secret is refused, naming the object and never the secret', async () => {
    const secret = 'wrong-secret-4567';
    const options = store.options({ credentials: { accessKeyId: store.accessKeyId, secretAccessKey: secret } });
    const e = await failure(openArchive('s3://models/dir/mlp.onnxz', { s3: options }));
    assert.equal(e.code, 'io');
    assert.equal(e.source, 's3://models/dir/mlp.onnxz');
    assert.match(e.message, /^s3:\/\/models\/dir\/mlp\.onnxz: reading failed: HTTP 403 SignatureDoesNotMatch .*AWS_SECRET_ACCESS_KEY/);
    for (const text of [e.message, e.stack ?? '', inspect(e, { depth: 10, showHidden: true }), JSON.stringify(e)]) {
      assert.ok(!text.includes(secret), text);
      assert.ok(!text.includes(store.secretAccessKey), text);
    }
  });

  it('says a missing key is not found', async () => {
    const e = await failure(openArchive('s3://models/absent.onnxz', { s3: store.options() }));
    assert.equal(e.code, 'not_found');
    assert.equal(e.message, `s3://models/absent.onnxz: reading failed: HTTP 404 NoSuchKey ("The specified key does not exist."); bucket 'models' has no object 'absent.onnxz'`);
  });

  it('says which region a bucket is in when the store redirects', async () => {
    await store.reset();
    await store.fault('region');
    const e = await failure(openArchive('s3://models/dir/mlp.onnxz', { s3: store.options() }));
    assert.equal(e.code, 'io');
    assert.match(e.message, /HTTP 301 PermanentRedirect .*AWS_REGION=eu-west-3/);
  });

  it('retries a store that asks to slow down', async () => {
    await store.reset();
    await store.fault('slowdown', 2);
    const local = await tensorBytes(mlp);
    assert.deepEqual(await tensorBytes('s3://models/dir/mlp.onnxz', { s3: store.options(), retryDelayMs: 1 }), local);
    assert.ok((await store.requests()) >= 4);
  });

  it('gives changed for an object replaced between the open and a read', async () => {
    const key = 'dir/replaced.onnxz';
    await store.put(key, mlp);
    const archive = await openArchive(`s3://models/${key}`, { s3: store.options(), tailBytes: kTail });
    try {
      await store.reset();
      await store.fault('overwrite');
      const e = await failure(archive.getTensors(archive.tensors));
      assert.equal(e.code, 'changed');
      assert.equal(e.source, `s3://models/${key}`);
      assert.match(e.message, /changed while it was read: its ETag is no longer "[0-9a-f-]+" \(HTTP 412 for bytes=\d+-\d+\)/);
    } finally {
      await archive.close();
    }
  });
});

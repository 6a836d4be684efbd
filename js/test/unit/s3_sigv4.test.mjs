// The SigV4 signer of s3:// sources, held byte for byte to botocore's S3SigV4Auth: the golden
// cases the C++ signer is held to (tests/data/s3/sigv4_golden.json), more cases signed by botocore
// now (Debian's python3-botocore; skipped without it), and the headers an s3:// source really
// sends, re-signed by botocore.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { inspect } from 'node:util';

import { openS3Source } from '../../dist/s3.js';
import { sign } from '../../dist/s3_sigv4.js';
import { repo } from '../support/fixtures.mjs';
import { RangeServer } from '../support/range_server.mjs';

const golden = JSON.parse(readFileSync(join(repo, 'tests', 'data', 's3', 'sigv4_golden.json'), 'utf8'));
const keys = { accessKeyId: golden.access_key_id, secretAccessKey: golden.secret_access_key };

/** Why botocore cannot sign here, or undefined when it can. */
function botocoreMissing() {
  try {
    execFileSync('/usr/bin/python3', ['-c', 'import botocore'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return 'no python3-botocore in /usr/bin/python3';
  }
}

/** botocore's results for `cases` (tests/s3_sigv4_golden.py's case format, its key pair). */
function botocoreSigns(cases) {
  const out = execFileSync('/usr/bin/python3', [join(repo, 'js', 'test', 'support', 'sigv4_botocore.py')], { input: JSON.stringify(cases) });
  return JSON.parse(out.toString('utf8'));
}

/** What this signer gives for a case of that format. */
function signCase(c) {
  const [, ...rest] = c.path.split('/');
  const payload = c.unsigned_payload ? 'UNSIGNED-PAYLOAD' : createHash('sha256').update(c.body).digest('hex');
  const encodedPath = `/${rest.map((part) => [...new TextEncoder().encode(part)].map((b) => (/[A-Za-z0-9\-_.~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('')).join('/')}`;
  const signed = sign(
    { method: c.method, host: c.host, encodedPath, query: c.query, headers: c.headers, payloadSha256: payload },
    { ...keys, sessionToken: c.token },
    c.region,
    new Date(`${c.time}Z`),
  );
  return { encodedPath, signed };
}

function assertSameAsBotocore(c, botocore) {
  const { encodedPath, signed } = signCase(c);
  assert.equal(encodedPath, botocore.encoded_path);
  assert.equal(signed.canonicalRequest, botocore.canonical_request);
  assert.equal(signed.stringToSign, botocore.string_to_sign);
  assert.equal(signed.signature, botocore.signature);
  const added = Object.fromEntries(signed.headers.map(([name, value]) => [name.toLowerCase(), value]));
  for (const [name, value] of Object.entries(botocore.added_headers)) assert.equal(added[name.toLowerCase()], value, name);
  assert.equal(Object.keys(added).length, Object.keys(botocore.added_headers).length);
}

describe('SigV4 signing', () => {
  for (const { input, botocore } of golden.cases) {
    it(`golden case ${input.name} (tests/data/s3/sigv4_golden.json) signs as botocore did`, () => assertSameAsBotocore(input, botocore));
  }

  const more = [
    { name: 'range_get_session_token', method: 'GET', scheme: 'http', host: '127.0.0.1:9000', path: '/models/dir/model.onnxz', query: [], headers: [['Range', 'bytes=1048576-2097151']], body: '', unsigned_payload: false, token: 'FwoGZXIvYXdzEXAMPLE//+token==', region: 'us-east-1', time: '2026-11-27T16:00:00' },
    { name: 'key_spaces_unicode_plus', method: 'GET', scheme: 'https', host: 'bucket.s3.eu-west-3.amazonaws.com', path: '/dir one/mod\u00e8l \u4e2d+v2 %41~.onnxz', query: [], headers: [['Range', 'bytes=-65633'], ['If-Match', '"9b2cf535f27731c974343645a3985328"']], body: '', unsigned_payload: false, token: '', region: 'eu-west-3', time: '2026-02-28T23:59:59' },
    { name: 'path_style_dotted_bucket_emoji', method: 'GET', scheme: 'https', host: 's3.ap-south-1.amazonaws.com', path: '/my.bucket/\ud83d\ude00/a&b=c;d.onnxz', query: [], headers: [], body: '', unsigned_payload: false, token: 'tok', region: 'ap-south-1', time: '2026-12-31T23:59:59' },
  ];
  const missing = botocoreMissing();
  it('more cases (ranges, a session token, keys with spaces, unicode and +) sign as botocore signs them now', { skip: missing }, () => {
    const results = botocoreSigns(more);
    more.forEach((c, i) => assertSameAsBotocore(c, results[i]));
  });

  it('refuses empty keys and header values with a line break, without showing the value', () => {
    const request = { method: 'GET', host: 'h', encodedPath: '/k', payloadSha256: 'UNSIGNED-PAYLOAD' };
    assert.throws(() => sign(request, { accessKeyId: '', secretAccessKey: 's' }, 'us-east-1', new Date()), { code: 'invalid_argument' });
    assert.throws(
      () => sign({ ...request, headers: [['x-amz-meta', 'secret-value\r\nX: y']] }, keys, 'us-east-1', new Date()),
      (e) => e.code === 'invalid_argument' && !e.message.includes('secret-value'),
    );
  });
});

describe('the requests an s3:// source sends', () => {
  const key = 'dir one/mod\u00e8l+v2.onnxz';
  const bytes = Buffer.alloc(300_000, 7);
  let server;
  before(async () => {
    server = await RangeServer.start({ [`/models/${encodeURIComponent(key).replace(/%2F/g, '/')}`]: bytes });
  });
  after(async () => server.stop());

  it('sign the GETs as botocore does, pin the ETag and keep the secret out of inspect', { skip: botocoreMissing() }, async () => {
    const sent = [];
    const fetch = (url, init) => {
      sent.push({ url, headers: new Headers(init.headers) });
      return globalThis.fetch(url, init);
    };
    const endpoint = server.url('/').replace(/\/$/, '');
    const source = openS3Source(`s3://models/${key}`, { fetch, headers: { Authorization: 'Bearer caller' } }, { endpointUrl: endpoint, region: 'eu-central-1', credentials: { ...keys, sessionToken: 'session/tok+en=' } });
    assert.equal(source.name, `s3://models/${key}`);
    const tail = await source.readTail(1000);
    assert.equal(tail.size, bytes.length);
    assert.deepEqual(Buffer.from(await source.read(5, 10)), bytes.subarray(5, 15));
    assert.equal(sent.length, 2);
    assert.equal(sent[0].headers.get('if-match'), null);
    assert.equal(sent[1].headers.get('if-match'), sent[1].headers.get('if-range'));
    assert.match(sent[1].headers.get('if-match'), /^"/);
    const host = new URL(endpoint).host;
    const cases = sent.map((s) => ({
      method: 'GET', scheme: 'http', host, path: decodeURIComponent(new URL(s.url).pathname), query: [], headers: [], body: '', unsigned_payload: false,
      token: 'session/tok+en=', region: 'eu-central-1',
      time: s.headers.get('x-amz-date').replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, '$1-$2-$3T$4:$5:$6'),
    }));
    const results = botocoreSigns(cases);
    sent.forEach((s, i) => {
      assert.equal(s.headers.get('authorization'), results[i].added_headers.Authorization);
      assert.equal(s.headers.get('x-amz-security-token'), 'session/tok+en=');
      assert.equal(s.headers.get('x-amz-content-sha256'), results[i].added_headers['X-Amz-Content-SHA256']);
    });
    assert.ok(!inspect(source, { depth: 10, showHidden: true }).includes(keys.secretAccessKey));
    assert.ok(!JSON.stringify(source).includes(keys.secretAccessKey));
  });
});

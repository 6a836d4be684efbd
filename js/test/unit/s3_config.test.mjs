// s3:// configuration and refusals as the C++ library resolves and words them
// (tests/s3_config_test.cpp, tests/s3_error_test.cpp): the same precedence of options, AWS_*
// variables and ~/.aws files, the same addressing, the same messages, never a key. This file loads
// no Node entry point: the package's browser face must refuse s3:// URLs.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inspect } from 'node:util';

import { OnnxzipError, openArchive } from '../../dist/index.js';
import { openS3Source } from '../../dist/s3.js';
import { parseS3Url, resolveConfig, s3Target, S3Config } from '../../dist/s3_config.js';
import { storeRefusal } from '../../dist/s3_error.js';

/** A world of variables and files: HOME=/home/u, the two AWS files as given. */
function world(variables = {}, files = {}) {
  const env = (name) => ({ HOME: '/home/u', ...variables })[name];
  const readFile = (path) => files[path];
  return { env, readFile, resolve: (options = {}) => resolveConfig(options, env, readFile) };
}
const kCredentials = '/home/u/.aws/credentials';
const kConfig = '/home/u/.aws/config';
const keysOf = (config) => config.credentials();

describe('s3:// URLs', () => {
  it('give the bucket and the key as written', () => {
    assert.deepEqual(parseS3Url('s3://models/dir/a b+ü.onnxz'), { bucket: 'models', key: 'dir/a b+ü.onnxz', name: 's3://models/dir/a b+ü.onnxz' });
    assert.equal(parseS3Url('S3://m/k').name, 's3://m/k');
  });
  for (const url of ['s3://', 's3:///k', 's3://models', 's3://models/', 's3://bad bucket/k', 'http://models/k']) {
    it(`refuses ${url}`, () => assert.throws(() => parseS3Url(url), (e) => e.code === 'invalid_argument' && e.source === url));
  }
  it('are refused by the browser face, which points at a presigned https URL', async () => {
    for (const source of ['s3://models/m.onnxz', new URL('s3://models/m.onnxz')]) {
      await assert.rejects(openArchive(source), (e) => e instanceof OnnxzipError && e.code === 'invalid_argument' && /needs Node\.js/.test(e.message) && /presigned https/.test(e.message));
    }
  });
});

describe('s3 configuration', () => {
  it('takes the keys from the environment, with a session token', () => {
    const { resolve } = world({ AWS_ACCESS_KEY_ID: 'A', AWS_SECRET_ACCESS_KEY: 'S', AWS_SESSION_TOKEN: 'T' });
    const config = resolve();
    assert.deepEqual(keysOf(config), { accessKeyId: 'A', secretAccessKey: 'S', sessionToken: 'T' });
    assert.equal(config.region, 'us-east-1');
    assert.equal(config.endpoint, '');
  });

  it('lets explicit credentials win over everything', () => {
    const { resolve } = world({ AWS_ACCESS_KEY_ID: 'A', AWS_SECRET_ACCESS_KEY: 'S' }, { [kCredentials]: '[default]\naws_access_key_id = F\naws_secret_access_key = G\n' });
    assert.deepEqual(keysOf(resolve({ credentials: { accessKeyId: 'X', secretAccessKey: 'Y' } })), { accessKeyId: 'X', secretAccessKey: 'Y' });
  });

  it('reads the profile from the credentials file, then the config file', () => {
    const files = {
      [kCredentials]: '# keys\n[default]\naws_access_key_id = D1\naws_secret_access_key = D2\n[work]\r\nAWS_Access_Key_ID=W1\r\naws_secret_access_key: W2\r\n',
      [kConfig]: '[profile cfg]\naws_access_key_id = C1\naws_secret_access_key = C2\naws_security_token = C3\nregion = eu-north-1\ns3 =\n  addressing_style = path\n  region = nested\n',
    };
    assert.deepEqual(keysOf(world({}, files).resolve()), { accessKeyId: 'D1', secretAccessKey: 'D2', sessionToken: '' });
    assert.deepEqual(keysOf(world({ AWS_PROFILE: 'work' }, files).resolve()), { accessKeyId: 'W1', secretAccessKey: 'W2', sessionToken: '' });
    const cfg = world({}, files).resolve({ profile: 'cfg' });
    assert.deepEqual(keysOf(cfg), { accessKeyId: 'C1', secretAccessKey: 'C2', sessionToken: 'C3' });
    assert.equal(cfg.region, 'eu-north-1');
  });

  it('takes the environment keys over AWS_PROFILE but not over an explicit profile', () => {
    const files = { [kCredentials]: '[p]\naws_access_key_id = P1\naws_secret_access_key = P2\n' };
    const variables = { AWS_ACCESS_KEY_ID: 'E1', AWS_SECRET_ACCESS_KEY: 'E2', AWS_PROFILE: 'p' };
    assert.equal(keysOf(world(variables, files).resolve()).accessKeyId, 'E1');
    assert.equal(keysOf(world(variables, files).resolve({ profile: 'p' })).accessKeyId, 'P1');
  });

  it('finds the files where AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE say', () => {
    const files = { '/home/u/keys': '[default]\naws_access_key_id = K1\naws_secret_access_key = K2\n', '/etc/aws': '[default]\nregion = sa-east-1\n' };
    const config = world({ AWS_SHARED_CREDENTIALS_FILE: '~/keys', AWS_CONFIG_FILE: '/etc/aws' }, files).resolve();
    assert.equal(keysOf(config).accessKeyId, 'K1');
    assert.equal(config.region, 'sa-east-1');
  });

  it('finds the region and the endpoint in the order C++ does', () => {
    const variables = { AWS_ACCESS_KEY_ID: 'A', AWS_SECRET_ACCESS_KEY: 'S' };
    const files = { [kConfig]: '[default]\nregion = eu-west-1\nendpoint_url = https://profile.example\n' };
    let config = world(variables, files).resolve();
    assert.deepEqual([config.region, config.endpoint], ['eu-west-1', 'https://profile.example']);
    Object.assign(variables, { AWS_DEFAULT_REGION: 'eu-west-2', AWS_ENDPOINT_URL: 'http://generic.example:8080' });
    config = world(variables, files).resolve();
    assert.deepEqual([config.region, config.endpoint], ['eu-west-2', 'http://generic.example:8080']);
    Object.assign(variables, { AWS_REGION: 'eu-west-3', AWS_ENDPOINT_URL_S3: 'HTTP://S3.Example:9000/' });
    config = world(variables, files).resolve();
    assert.deepEqual([config.region, config.endpoint], ['eu-west-3', 'http://s3.example:9000']);
    config = world(variables, files).resolve({ region: 'auto', endpointUrl: 'https://acct.r2.cloudflarestorage.com' });
    assert.deepEqual([config.region, config.endpoint], ['auto', 'https://acct.r2.cloudflarestorage.com']);
  });

  it('says where it looked for missing credentials, without a key', () => {
    const { resolve } = world({}, { [kCredentials]: '[default]\naws_access_key_id = AKIDHALF\n' });
    assert.throws(resolve, (e) => e.code === 'not_found' && e.message.includes('AWS_ACCESS_KEY_ID') && e.message.includes('.aws/credentials') && !e.message.includes('AKIDHALF'));
  });

  it('refuses an unknown explicit profile, bad endpoints and bad regions', () => {
    const { resolve } = world({ AWS_ACCESS_KEY_ID: 'A', AWS_SECRET_ACCESS_KEY: 'S' });
    assert.throws(() => resolve({ profile: 'nope' }), { code: 'invalid_argument' });
    for (const endpointUrl of ['ftp://h', 'http://', 'http://h/path', 'http://user:pw@h', 'h:9000', 'http://h?x=1']) {
      assert.throws(() => resolve({ endpointUrl }), (e) => e.code === 'invalid_argument' && !e.message.includes('pw'), endpointUrl);
    }
    assert.throws(() => resolve({ region: 'us-east-1.evil.com/' }), { code: 'invalid_argument' });
  });

  it('names the object in a configuration error of an open', () => {
    assert.throws(
      () => openS3Source('s3://models/k', {}, {}, () => undefined, () => undefined),
      (e) => e.code === 'not_found' && e.source === 's3://models/k' && e.message.startsWith('s3://models/k: no S3 credentials'),
    );
  });

  it('never shows the keys in inspect, JSON or a string', () => {
    const config = new S3Config({ accessKeyId: 'AKIDSHOWN', secretAccessKey: 'SECRET123', sessionToken: 'TOKEN456' }, 'us-east-1', '');
    for (const text of [inspect(config, { showHidden: true, depth: 5 }), JSON.stringify(config), String(config)]) {
      for (const key of ['AKIDSHOWN', 'SECRET123', 'TOKEN456']) assert.ok(!text.includes(key), `${key} in ${text}`);
    }
  });
});

describe('s3 addressing', () => {
  const config = (endpoint) => new S3Config({ accessKeyId: 'A', secretAccessKey: 'S' }, 'eu-west-3', endpoint);
  it('is virtual-hosted on AWS, path-style for dotted buckets and other stores', () => {
    assert.deepEqual(s3Target(config(''), parseS3Url('s3://models/dir/a b.onnxz')), { url: 'https://models.s3.eu-west-3.amazonaws.com/dir/a%20b.onnxz', host: 'models.s3.eu-west-3.amazonaws.com', encodedPath: '/dir/a%20b.onnxz' });
    assert.deepEqual(s3Target(config(''), parseS3Url('s3://my.models/k')), { url: 'https://s3.eu-west-3.amazonaws.com/my.models/k', host: 's3.eu-west-3.amazonaws.com', encodedPath: '/my.models/k' });
    assert.deepEqual(s3Target(config('http://127.0.0.1:9000'), parseS3Url('s3://models/k+1')), { url: 'http://127.0.0.1:9000/models/k%2B1', host: '127.0.0.1:9000', encodedPath: '/models/k%2B1' });
    assert.equal(s3Target(config('https://store.example:443'), parseS3Url('s3://m/k')).host, 'store.example');
    assert.equal(s3Target(config('http://store.example:80'), parseS3Url('s3://m/k')).host, 'store.example');
  });
});

describe('s3 refusals', () => {
  const object = parseS3Url('s3://models/dir/net.onnxz');
  const body = (code, message, extra = '') => `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message>${extra}<RequestId>R1</RequestId></Error>`;
  const cases = [
    [403, 'SignatureDoesNotMatch', 'io', false, 'AWS_SECRET_ACCESS_KEY'],
    [403, 'InvalidAccessKeyId', 'io', false, 'AWS_ACCESS_KEY_ID'],
    [403, 'AccessDenied', 'io', false, "bucket 'models'"],
    [404, 'NoSuchKey', 'not_found', false, "has no object 'dir/net.onnxz'"],
    [404, 'NoSuchBucket', 'not_found', false, "there is no bucket 'models'"],
    [503, 'SlowDown', 'io', true, 'slow down'],
    [500, 'InternalError', 'io', true, ''],
    [412, 'PreconditionFailed', 'io', false, 'changed meanwhile'],
  ];
  for (const [status, code, errorCode, retryable, advice] of cases) {
    it(`say what the store said and what to do: ${status} ${code}`, () => {
      const refusal = storeRefusal(status, body(code, 'Words of the store.'), object, '', 'reading');
      assert.equal(refusal.error.code, errorCode);
      assert.equal(refusal.retryable, retryable);
      assert.equal(refusal.error.source, 's3://models/dir/net.onnxz');
      assert.ok(refusal.error.problem.startsWith(`reading failed: HTTP ${status} ${code} ("Words of the store.")`), refusal.error.problem);
      assert.ok(refusal.error.problem.includes(advice), refusal.error.problem);
    });
  }

  it('name the region of a permanent redirect', () => {
    assert.match(storeRefusal(301, body('PermanentRedirect', 'Use the endpoint.', '<Region>eu-west-3</Region>'), object, '', 'reading').error.message, /AWS_REGION=eu-west-3/);
    assert.match(storeRefusal(301, '', object, 'ap-south-1', 'reading').error.message, /PermanentRedirect.*AWS_REGION=ap-south-1/);
  });

  it('repeat no other field of the answer', () => {
    const echo = body('SignatureDoesNotMatch', 'The request signature we calculated does not match.', '<AWSAccessKeyId>AKIDSECRETISH</AWSAccessKeyId><StringToSign>AWS4-HMAC-SHA256 x</StringToSign><SignatureProvided>abcdef0123</SignatureProvided>');
    const message = storeRefusal(403, echo, object, '', 'reading').error.message;
    for (const hidden of ['AKIDSECRETISH', 'AWS4-HMAC-SHA256', 'abcdef0123', 'R1']) assert.ok(!message.includes(hidden), hidden);
  });

  it('fall back to the status for bodies that are not the store XML', () => {
    assert.equal(storeRefusal(404, '', object, '', 'reading').error.code, 'not_found');
    const proxy = storeRefusal(502, '<html>Bad gateway</html>', object, '', 'reading');
    assert.equal(proxy.retryable, true);
    assert.equal(proxy.error.problem, 'reading failed: HTTP 502');
    const long = storeRefusal(400, body('InvalidArgument', `${'w'.repeat(500)}\x1b[31m`), object, '', 'reading').error.problem;
    assert.ok(long.length < 320, long);
    assert.ok(!long.includes('\x1b'));
  });
});

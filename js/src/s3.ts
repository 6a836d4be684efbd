// An object in a bucket read as a ByteSource (Node): s3://bucket/key opened like an http(s) URL
// (HttpSource: one suffix GET brings the size, the ETag and the tail; later reads are ranged GETs
// pinned to that ETag with If-Match), every request signed with SigV4 at the time it is sent, and
// a refusal reported as the store's error naming s3://bucket/key, as the C++ library does
// (src/io/s3_source.cpp).

import { readFileSync, statSync } from 'node:fs';

import { OnnxzipError } from './errors.js';
import { HttpSource, type HttpOptions } from './http.js';
import type { SourceOptions } from './open_source.js';
import { parseS3Url, resolveConfig, s3Target, type Environment, type FileReader } from './s3_config.js';
import { storeRefusal } from './s3_error.js';
import type { S3Options } from './s3_options.js';
import { kEmptyPayloadSha256, sign } from './s3_sigv4.js';

// A config or credentials file larger than this is refused rather than read.
const kMaxIniSize = 1 << 20;

const processEnvironment: Environment = (name) => process.env[name];

const readAwsFile: FileReader = (path, what) => {
  let size: number;
  try {
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat === undefined) return undefined;
    size = stat.size;
  } catch (e) {
    throw new OnnxzipError('io', { source: path }, `cannot read the AWS ${what} file: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  if (size > kMaxIniSize) throw new OnnxzipError('limit_exceeded', { source: path }, `the AWS ${what} file is larger than 1 MiB`);
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new OnnxzipError('io', { source: path }, `cannot read the AWS ${what} file: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
};

/**
 * Opens `url` ("s3://bucket/key") with the settings of s3_config.ts. `http` tunes the reads as for
 * any URL, but its headers are not sent (a caller's Authorization would fight the signature).
 * Errors: parseS3Url's and resolveConfig's, named s3://bucket/key, and HttpSource's.
 */
export function openS3Source(url: string, http: HttpOptions = {}, options: S3Options = {}, environment: Environment = processEnvironment, readFile: FileReader = readAwsFile): HttpSource {
  const location = parseS3Url(url);
  let config;
  try {
    config = resolveConfig(options, environment, readFile);
  } catch (e) {
    throw e instanceof OnnxzipError ? e.withPlace({ source: location.name }) : e;
  }
  const where = s3Target(config, location);
  // Nor is the options' s3 record kept: a source shown by inspect must not show the keys.
  const { headers: _headers, s3: _s3, ...reading } = http as SourceOptions;
  return new HttpSource(new URL(where.url), reading, {
    name: location.name,
    sign(headers) {
      const signed = sign({ method: 'GET', host: where.host, encodedPath: where.encodedPath, payloadSha256: kEmptyPayloadSha256 }, config.credentials(), config.region, new Date());
      for (const [name, value] of signed.headers) headers.set(name, value);
    },
    refusal: (status, body) => storeRefusal(status, body, location, '', 'reading'),
  });
}

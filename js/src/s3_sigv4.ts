// AWS Signature Version 4 for S3 requests (the "Authorization" header form), as the C++ signer
// (src/io/s3_sigv4.cpp) computes it; test/s3/sigv4.test.mjs holds both to botocore's S3SigV4Auth.
// Node only (node:crypto): a browser would need the secret key in the page.
//
// The signer sees the secret key and the session token; nothing it returns that a message could
// show holds either (the headers go on the wire only).

import { createHash, createHmac } from 'node:crypto';

import { OnnxzipError } from './errors.js';
import type { S3Credentials } from './s3_options.js';
import { uriEncode } from './s3_path.js';

export { encodePath, uriEncode } from './s3_path.js';

const kAlgorithm = 'AWS4-HMAC-SHA256';
const kService = 's3';

/** The x-amz-content-sha256 of a request without a body (a GET): SHA-256 of no bytes. */
export const kEmptyPayloadSha256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** One query parameter or header, as given (not encoded). */
export type NameValue = readonly [name: string, value: string];

/** A request to sign. `encodedPath` is the path as sent (encodePath). */
export interface SigV4Request {
  readonly method: string;
  /** The Host header: host, with ":port" unless the scheme's default. */
  readonly host: string;
  readonly encodedPath: string;
  /** Unencoded, any order (the signer sorts). */
  readonly query?: readonly NameValue[];
  /** To sign besides host and the x-amz-* headers the signer adds. */
  readonly headers?: readonly NameValue[];
  /** Lower-case hex, or 'UNSIGNED-PAYLOAD'. */
  readonly payloadSha256: string;
}

/** The headers to send (x-amz-date, x-amz-content-sha256, x-amz-security-token, Authorization), and the texts signed, for tests. */
export interface SignedHeaders {
  readonly headers: NameValue[];
  readonly canonicalRequest: string;
  readonly stringToSign: string;
  readonly signature: string;
}

// Sorted by bytes, as the C++ signer's std::sort of std::string (not by UTF-16 code units).
function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** The query as sent and signed: encoded pairs sorted by name then value, joined by '&'. */
export function canonicalQuery(query: readonly NameValue[]): string {
  return query
    .map(([name, value]) => [uriEncode(name, false), uriEncode(value, false)] as const)
    .sort((a, b) => byteOrder(a[0], b[0]) || byteOrder(a[1], b[1]))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
}

/** "YYYYMMDDTHHMMSSZ" in UTC. */
export function amzDate(time: Date): string {
  return time.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

// SigV4's Trimall: no blanks at either end, each run of blanks inside one space.
function trimAll(value: string): string {
  return value.replace(/[ \t]+/g, ' ').replace(/^ | $/g, '');
}

function hasLineBreak(text: string): boolean {
  return /[\r\n]/.test(text);
}

/** Every signed header, lower-cased and sorted by name (stable); a repeated one's values joined by ','. */
function canonicalHeaders(request: SigV4Request, added: readonly NameValue[]): { lines: string; signedNames: string } {
  const headers: [string, string][] = [['host', trimAll(request.host)]];
  for (const [name, value] of [...(request.headers ?? []), ...added]) {
    // The value is not shown: it may be a credential.
    if (hasLineBreak(name) || hasLineBreak(value)) throw new OnnxzipError('invalid_argument', {}, `the request header '${name}' has a line break`);
    headers.push([trimAll(name).toLowerCase(), trimAll(value)]);
  }
  headers.sort((a, b) => byteOrder(a[0], b[0]));
  const lines: string[] = [];
  const names: string[] = [];
  headers.forEach(([name, value], i) => {
    if (i > 0 && headers[i - 1]![0] === name) lines[lines.length - 1] += `,${value}`;
    else {
      lines.push(`${name}:${value}`);
      names.push(name);
    }
  });
  return { lines: lines.join('\n'), signedNames: names.join(';') };
}

function hmac(key: Buffer | string, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

/**
 * Signs `request` for `region` and the s3 service at `time`. invalid_argument for an empty access
 * key or secret, or a header name or value with a line break.
 */
export function sign(request: SigV4Request, credentials: S3Credentials, region: string, time: Date): SignedHeaders {
  if (credentials.accessKeyId === '' || credentials.secretAccessKey === '') {
    throw new OnnxzipError('invalid_argument', {}, 'S3 credentials need an access key and a secret key');
  }
  const dateTime = amzDate(time);
  const date = dateTime.slice(0, 8);
  const headers: NameValue[] = [
    ['x-amz-date', dateTime],
    ['x-amz-content-sha256', request.payloadSha256],
  ];
  if ((credentials.sessionToken ?? '') !== '') headers.push(['x-amz-security-token', credentials.sessionToken!]);
  const canonical = canonicalHeaders(request, headers);
  const canonicalRequest = [request.method, request.encodedPath, canonicalQuery(request.query ?? []), canonical.lines, '', canonical.signedNames, request.payloadSha256].join('\n');
  const scope = `${date}/${region}/${kService}/aws4_request`;
  const stringToSign = [kAlgorithm, dateTime, scope, sha256Hex(canonicalRequest)].join('\n');
  // HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), "s3"), "aws4_request").
  const key = hmac(hmac(hmac(hmac(`AWS4${credentials.secretAccessKey}`, date), region), kService), 'aws4_request');
  const signature = createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
  headers.push(['Authorization', `${kAlgorithm} Credential=${credentials.accessKeyId}/${scope}, SignedHeaders=${canonical.signedNames}, Signature=${signature}`]);
  return { headers, canonicalRequest, stringToSign, signature };
}

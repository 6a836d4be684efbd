// What an object store's refusal means, and what to do about it: an HTTP status and the <Error>
// XML body it came with, made into an OnnxzipError naming the object (s3://bucket/key), worded as
// the C++ library words it (src/io/s3_error.cpp).

import { OnnxzipError } from './errors.js';
import type { S3Location } from './s3_config.js';

// The store's own words are shown, but not at any length.
const kMaxQuotedMessage = 200;

function printable(text: string, limit: number): string {
  let out = '';
  for (const c of text) {
    if (out.length >= limit) return `${out}...`;
    const code = c.codePointAt(0)!;
    if (code >= 0x20 && code !== 0x7f) out += c;
  }
  return out;
}

const kXmlEntities: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/** The text of the root <Error>'s child `field` ("" when the body is not such XML). */
function errorField(body: string, field: string): string {
  if (!/^\s*(<\?xml[^>]*\?>\s*)?<Error>/.test(body)) return '';
  const m = new RegExp(`<${field}>([^<]*)</${field}>`).exec(body);
  if (m === null) return '';
  return m[1]!.replace(/&(amp|lt|gt|quot|apos);/g, (_, name: string) => kXmlEntities[name]!);
}

/** What to do about a store's error Code; "" when there is nothing to say beyond the code. */
function advice(code: string, location: S3Location, region: string): string {
  switch (code) {
    case 'SignatureDoesNotMatch':
      return "check the secret key (AWS_SECRET_ACCESS_KEY or the profile's aws_secret_access_key) and the region, and that the clock is right";
    case 'InvalidAccessKeyId':
      return "the store does not know this access key id: check AWS_ACCESS_KEY_ID or the profile's aws_access_key_id, and the endpoint (AWS_ENDPOINT_URL)";
    case 'AccessDenied':
    case 'AllAccessDisabled':
      return `these credentials may not do this: check the bucket's policy and the user's permissions for bucket '${location.bucket}'`;
    case 'ExpiredToken':
    case 'TokenRefreshRequired':
    case 'InvalidToken':
      return 'the session token has expired or is not valid: get new credentials';
    case 'RequestTimeTooSkewed':
      return 'the clock of this machine is wrong: set it right';
    case 'NoSuchKey':
      return `bucket '${location.bucket}' has no object '${location.key}'`;
    case 'NoSuchBucket':
      return `there is no bucket '${location.bucket}'`;
    case 'PermanentRedirect':
    case 'AuthorizationHeaderMalformed':
    case 'IllegalLocationConstraintException':
      return region === '' ? 'the bucket is in another region: set AWS_REGION to it' : `the bucket is in region ${region}: set AWS_REGION=${region}`;
    case 'SlowDown':
    case 'ServiceUnavailable':
      return 'the store asks to slow down';
    case 'PreconditionFailed':
    case 'ConditionalRequestConflict':
      return 'the object changed meanwhile (or exists, for a write that must not replace it)';
    default:
      return '';
  }
}

const kCodeOfStatus: Record<number, string> = { 301: 'PermanentRedirect', 403: 'AccessDenied', 404: 'NoSuchKey', 412: 'PreconditionFailed', 503: 'SlowDown' };

/**
 * The error for an answer with `status` (not 2xx) and `body` (the store's XML, maybe empty or a
 * proxy's page) to a request for `location`, and whether the same request may succeed later. The
 * message quotes the store's Code and Message and never another field: a SignatureDoesNotMatch
 * body echoes the access key id and the string to sign.
 */
export function storeRefusal(status: number, body: string, location: S3Location, bucketRegion: string, doing: string): { error: OnnxzipError; retryable: boolean } {
  let code = printable(errorField(body, 'Code'), 64);
  const message = printable(errorField(body, 'Message'), kMaxQuotedMessage);
  let region = bucketRegion === '' ? printable(errorField(body, 'Region'), 64) : bucketRegion;
  // A HEAD has no body; a 404 may be a missing bucket too.
  if (code === '') code = kCodeOfStatus[status] ?? '';
  if (!/^[A-Za-z0-9-]*$/.test(region)) region = '';
  let problem = `${doing} failed: HTTP ${status}`;
  if (code !== '') problem += ` ${code}`;
  if (message !== '') problem += ` ("${message}")`;
  const whatToDo = advice(code, location, region);
  if (whatToDo !== '') problem += `; ${whatToDo}`;
  const retryable = status >= 500 || status === 429 || status === 408 || code === 'SlowDown';
  return { error: new OnnxzipError(status === 404 ? 'not_found' : 'io', { source: location.name }, problem), retryable };
}

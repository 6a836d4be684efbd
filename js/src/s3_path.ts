// How S3 and SigV4 percent-encode a key, a bucket and query values (no Node import).

function unreserved(byte: number): boolean {
  return (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x30 && byte <= 0x39) || byte === 0x2d || byte === 0x5f || byte === 0x2e || byte === 0x7e;
}

/**
 * `text` (as UTF-8) percent-encoded as S3 wants a key in a path and SigV4 a query name or value:
 * every byte but A-Z a-z 0-9 - _ . ~ (and '/' when `keepSlash`) as %XX, upper-case hex.
 */
export function uriEncode(text: string, keepSlash: boolean): string {
  let out = '';
  for (const byte of new TextEncoder().encode(text)) {
    if (unreserved(byte) || (keepSlash && byte === 0x2f)) out += String.fromCharCode(byte);
    else out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** A key's path, "/" + uriEncode(key, true); with a bucket (path-style) "/bucket/key". */
export function encodePath(bucket: string, key: string): string {
  return `/${bucket === '' ? '' : `${uriEncode(bucket, false)}/`}${uriEncode(key, true)}`;
}


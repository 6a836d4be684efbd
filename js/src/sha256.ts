// SHA-256 for the digests of spec §12. In browsers, WebCrypto (crypto.subtle.digest), which is
// one-shot: an entry's bytes are gathered into one buffer of its size, so checking an entry costs
// its size in memory (Chromium copies the input once more while it hashes). The Node entry point
// registers node:crypto's streaming hash, which holds no entry whole; this module imports nothing
// of Node, so the browser bundle stays free of it.

import { OnnxzipError, type ErrorPlace } from './errors.js';

export interface Sha256 {
  update(piece: Uint8Array): void;
  digest(): Promise<Uint8Array>;
}

/** A hasher for `size` bytes. */
export type Sha256Factory = (size: number, place: ErrorPlace) => Sha256;

let streaming: Sha256Factory | undefined;

/** @internal Registered by the Node entry point. */
export function registerSha256(factory: Sha256Factory): void {
  streaming = factory;
}

function subtleCrypto(place: ErrorPlace): SubtleCrypto {
  const subtle = (globalThis as { crypto?: { subtle?: SubtleCrypto } }).crypto?.subtle;
  if (subtle === undefined) {
    throw new OnnxzipError('unsupported', place, 'checking the SHA-256 digests needs WebCrypto (crypto.subtle), which browsers give secure contexts only (https, localhost)');
  }
  return subtle;
}

export function createSha256(size: number, place: ErrorPlace): Sha256 {
  if (streaming !== undefined) return streaming(size, place);
  const subtle = subtleCrypto(place);
  let all: Uint8Array;
  try {
    all = new Uint8Array(size);
  } catch (e) {
    throw new OnnxzipError('limit_exceeded', place, `cannot allocate the ${size} bytes WebCrypto hashes at once: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  let at = 0;
  return {
    update(piece) {
      all.set(piece.subarray(0, Math.min(piece.byteLength, size - at)), at);
      at = Math.min(size, at + piece.byteLength);
    },
    async digest() {
      const d = new Uint8Array(await subtle.digest('SHA-256', bufferSource(all.subarray(0, at))));
      all = new Uint8Array(0);
      return d;
    },
  };
}

/** The SHA-256 of bytes already in memory (no copy with WebCrypto). */
export async function sha256Of(bytes: Uint8Array, place: ErrorPlace): Promise<Uint8Array> {
  if (streaming !== undefined) {
    const h = streaming(bytes.byteLength, place);
    h.update(bytes);
    return h.digest();
  }
  return new Uint8Array(await subtleCrypto(place).digest('SHA-256', bufferSource(bytes)));
}

/** @internal WebCrypto; unsupported where there is none. */
export function webCrypto(place: ErrorPlace): SubtleCrypto {
  return subtleCrypto(place);
}

/** WebCrypto's types take ArrayBuffer-backed views only; this package makes no other kind. */
export function bufferSource(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  return bytes as Uint8Array<ArrayBuffer>;
}

export function toHex(bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes) out += b.toString(16).padStart(2, '0');
  return out;
}

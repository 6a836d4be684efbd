// Checked arithmetic on untrusted numbers, and little-endian reads.
//
// Every offset, length and count that comes from the archive goes through one of these before it
// is used to index, slice or allocate: checkedRange for "does [offset, offset + length) lie within
// [0, limit)", checkedAdd for sums, toSafeOffset for 64-bit values. JavaScript numbers address
// bytes exactly up to 2^53 - 1 (Number.MAX_SAFE_INTEGER, 8 PiB); a zip64 value beyond that is
// refused as `unsupported` rather than silently rounded.

import { OnnxzipError, type ErrorPlace } from './errors.js';

export const kMaxSafe = Number.MAX_SAFE_INTEGER;

/** A place, built only when an error is thrown (callers pass a closure). */
export type LazyPlace = () => ErrorPlace;

function isCount(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}

/**
 * The end of [offset, offset + length) after checking that both are non-negative safe integers and
 * that the range lies within [0, limit]. Else OnnxzipError(corrupt) saying `what` runs past `limitWhat`.
 */
export function checkedRange(
  offset: number,
  length: number,
  limit: number,
  what: string,
  limitWhat: string,
  place: LazyPlace,
): number {
  if (!isCount(offset) || !isCount(length) || !isCount(limit) || offset > limit || length > limit - offset) {
    throw new OnnxzipError(
      'corrupt',
      place(),
      `${what} (offset ${offset}, ${length} bytes) runs past ${limitWhat} (${limit} bytes)`,
      { offset },
    );
  }
  return offset + length;
}

/** a + b for non-negative safe integers, or OnnxzipError(unsupported) past 2^53 - 1. */
export function checkedAdd(a: number, b: number, what: string, place: LazyPlace): number {
  const sum = a + b;
  if (!isCount(a) || !isCount(b) || !Number.isSafeInteger(sum)) {
    throw new OnnxzipError('unsupported', place(), `${what} lies past 2^53 - 1, which JavaScript cannot address`);
  }
  return sum;
}

/** A 64-bit value as a number, or OnnxzipError(unsupported) when it is past 2^53 - 1. */
export function toSafeOffset(value: bigint, what: string, place: LazyPlace, offset?: number): number {
  if (value > BigInt(kMaxSafe)) {
    throw new OnnxzipError(
      'unsupported',
      place(),
      `${what} is ${value}, past 2^53 - 1, which JavaScript cannot address`,
      { offset },
    );
  }
  return Number(value);
}

/**
 * Little-endian reads of a window of the source: `bytes` holds the source's bytes from `base`
 * (a file offset) on. Positions are file offsets; a read outside the window is a bug in the caller's
 * checks, so it throws a RangeError (DataView's) rather than reading garbage.
 */
export class ByteWindow {
  readonly bytes: Uint8Array;
  readonly base: number;
  private readonly view: DataView;

  constructor(bytes: Uint8Array, base: number) {
    this.bytes = bytes;
    this.base = base;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  get end(): number {
    return this.base + this.bytes.byteLength;
  }

  contains(offset: number, length: number): boolean {
    return offset >= this.base && length >= 0 && offset + length <= this.end;
  }

  u16(at: number): number {
    return this.view.getUint16(at - this.base, true);
  }

  u32(at: number): number {
    return this.view.getUint32(at - this.base, true);
  }

  u64(at: number): bigint {
    return this.view.getBigUint64(at - this.base, true);
  }

  /** A view (no copy) of [at, at + length). */
  slice(at: number, length: number): Uint8Array {
    const from = at - this.base;
    if (from < 0 || length < 0 || from + length > this.bytes.byteLength) {
      throw new RangeError(`window [${this.base}, ${this.end}) does not hold [${at}, ${at + length})`);
    }
    return this.bytes.subarray(from, from + length);
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: false });
const utf8Strict = new TextDecoder('utf-8', { fatal: true });

/** The bytes as text (invalid sequences become U+FFFD). */
export function decodeText(bytes: Uint8Array): string {
  return utf8.decode(bytes);
}

/** Whether the bytes are valid UTF-8. */
export function isValidUtf8(bytes: Uint8Array): boolean {
  try {
    utf8Strict.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; ++i) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Frees the memory of a buffer this package allocated and will not read again, now rather than
 * when the collector next runs (views of it then read as empty): ArrayBuffer.prototype.transfer
 * where the platform has it (Chromium 114, Node 22), else nothing. A dead tail read left to the
 * collector was still counted at the heap's peak, when ONNX Runtime holds all the weights.
 */
export function releaseBuffer(buffer: ArrayBufferLike): void {
  const transfer = (buffer as { transfer?: (length: number) => ArrayBuffer }).transfer;
  if (typeof transfer !== 'function') return;
  try {
    transfer.call(buffer, 0);
  } catch {
    // Not detachable (a WebAssembly memory's buffer): the collector frees it.
  }
}

/** Concatenation of `parts` into one new buffer. */
export function concat(parts: readonly Uint8Array[]): Uint8Array {
  let total = 0;
  for (const p of parts) total += p.byteLength;
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

// Where the archive's bytes come from. A ByteSource reads byte ranges of one archive: from memory
// (views, no copy), a Blob or File (slices), a file in Node (file handle reads, file.ts) or a URL
// (HTTP range requests, http.ts). The archive reader sees only this interface.

import { OnnxzipError } from './errors.js';

export interface ByteRange {
  readonly offset: number;
  readonly length: number;
  /**
   * Place the bytes so that the returned view's byteOffset is congruent to `offset` modulo 64: a
   * payload aligned in the file is then aligned in memory, and a typed array can view it.
   */
  readonly phase?: boolean;
  /**
   * Bytes the buffer holds after the range, unread, for the caller to fill (with bytes it has
   * already): the view returned is the range's, its buffer reaches `room` bytes further.
   */
  readonly room?: number;
}

/**
 * A new buffer for `range`, placed as ByteRange.phase asks, with its room after it; limit_exceeded
 * when there is no memory for it.
 */
export function allocateFor(range: ByteRange, source = ''): Uint8Array {
  const pad = range.phase === true ? range.offset % 64 : 0;
  try {
    return new Uint8Array(new ArrayBuffer(range.length + (range.room ?? 0) + pad), pad, range.length);
  } catch (e) {
    if (!(e instanceof RangeError)) throw e;
    throw new OnnxzipError('limit_exceeded', { source }, `cannot allocate ${range.length} bytes for offset ${range.offset}: ${e.message}`, { offset: range.offset, cause: e });
  }
}

/**
 * `view` (a read of `range`) widened by the range's room: in the same buffer when a source kept
 * the room, else copied into a new one that has it.
 */
export function withRoom(view: Uint8Array, range: ByteRange): Uint8Array {
  const length = range.length + (range.room ?? 0);
  if (view.byteOffset + length <= view.buffer.byteLength) return new Uint8Array(view.buffer, view.byteOffset, length);
  const widened = allocateFor({ ...range, length, room: 0 });
  widened.set(view);
  return widened;
}

/** What a source has read so far. */
export interface ReadStats {
  /** Reads issued: HTTP requests for a URL, read calls for a file or Blob. */
  readonly requests: number;
  readonly bytes: number;
}

export type SourceKind = 'memory' | 'blob' | 'file' | 'url';

export interface TailRead {
  /** The size of the source in bytes. */
  readonly size: number;
  /** The last min(size, length) bytes. */
  readonly bytes: Uint8Array;
}

export interface ByteSource {
  readonly kind: SourceKind;
  /** Names the source in messages: a path, a URL without its query, "<memory>", "<blob>". */
  readonly name: string;
  /** The last `length` bytes (the whole source when it is smaller), and the source's size. */
  readTail(length: number): Promise<TailRead>;
  /** Exactly the bytes [offset, offset + length): a view for memory sources, else a new buffer. */
  read(offset: number, length: number): Promise<Uint8Array>;
  /**
   * Several ranges, in ascending offset order and disjoint, each returned as its own buffer. A URL
   * source fetches each run of ranges no farther apart than its merge gap with one request.
   */
  readRanges(ranges: readonly ByteRange[]): Promise<Uint8Array[]>;
  /**
   * Passes [offset, offset + length) to `consume` in order, in pieces of bounded size, waiting for
   * the promise it returns before the next one; a piece is valid only until then (the buffer may
   * be reused).
   */
  stream(offset: number, length: number, consume: StreamConsumer): Promise<void>;
  /** The range as a lazy Blob (Blob and File sources only). */
  blobSlice?(offset: number, length: number): Blob;
  /** The file's real folder and name (Node file sources only), for ONNX Runtime's file route. */
  readonly fileLocation?: { readonly folder: string; readonly name: string };
  readonly stats: ReadStats;
  /** Whether the file was written since it was opened (Node file sources only). */
  changedSinceOpen?(): Promise<boolean>;
  close(): Promise<void>;
}

export type StreamConsumer = (piece: Uint8Array) => void | Promise<void>;

export const kStreamPiece = 1 << 20;

export class MemorySource implements ByteSource {
  readonly kind = 'memory';
  readonly name = '<memory>';
  readonly stats: ReadStats = { requests: 0, bytes: 0 };
  constructor(private readonly bytes: Uint8Array) {}

  async readTail(length: number): Promise<TailRead> {
    const n = Math.min(length, this.bytes.byteLength);
    return { size: this.bytes.byteLength, bytes: this.bytes.subarray(this.bytes.byteLength - n) };
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    return this.view(offset, length);
  }

  async readRanges(ranges: readonly ByteRange[]): Promise<Uint8Array[]> {
    return ranges.map((r) => this.view(r.offset, r.length));
  }

  async stream(offset: number, length: number, consume: StreamConsumer): Promise<void> {
    const whole = this.view(offset, length);
    for (let at = 0; at < length; at += kStreamPiece) await consume(whole.subarray(at, Math.min(length, at + kStreamPiece)));
  }

  async close(): Promise<void> {}

  private view(offset: number, length: number): Uint8Array {
    if (offset < 0 || length < 0 || offset + length > this.bytes.byteLength) {
      throw new OnnxzipError('corrupt', { source: this.name }, `read of ${length} bytes at offset ${offset} past the end (${this.bytes.byteLength} bytes)`, { offset });
    }
    return this.bytes.subarray(offset, offset + length);
  }
}

export class BlobSource implements ByteSource {
  readonly kind = 'blob';
  readonly name: string;
  stats: ReadStats = { requests: 0, bytes: 0 };
  constructor(private readonly blob: Blob) {
    this.name = typeof File !== 'undefined' && blob instanceof File && blob.name !== '' ? blob.name : '<blob>';
  }

  async readTail(length: number): Promise<TailRead> {
    const n = Math.min(length, this.blob.size);
    return { size: this.blob.size, bytes: await this.read(this.blob.size - n, n) };
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    if (offset < 0 || length < 0 || offset + length > this.blob.size) {
      throw new OnnxzipError('corrupt', { source: this.name }, `read of ${length} bytes at offset ${offset} past the end (${this.blob.size} bytes)`, { offset });
    }
    this.stats = { requests: this.stats.requests + 1, bytes: this.stats.bytes + length };
    try {
      return new Uint8Array(await this.blob.slice(offset, offset + length).arrayBuffer());
    } catch (e) {
      throw new OnnxzipError('io', { source: this.name }, `reading ${length} bytes at offset ${offset}: ${String(e)}`, { offset, cause: e });
    }
  }

  async readRanges(ranges: readonly ByteRange[]): Promise<Uint8Array[]> {
    return Promise.all(ranges.map((r) => this.read(r.offset, r.length)));
  }

  async stream(offset: number, length: number, consume: StreamConsumer): Promise<void> {
    for (let at = 0; at < length; at += kStreamPiece) {
      await consume(await this.read(offset + at, Math.min(kStreamPiece, length - at)));
    }
  }

  blobSlice(offset: number, length: number): Blob {
    return this.blob.slice(offset, offset + length);
  }

  async close(): Promise<void> {}
}

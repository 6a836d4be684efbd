// Files in Node: read through one file handle (positioned reads), never whole.

import type { BigIntStats } from 'node:fs';
import { open, realpath, type FileHandle } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

import { OnnxzipError, type ErrorPlace } from './errors.js';
import { allocateFor, kStreamPiece, type ByteRange, type ByteSource, type ReadStats, type StreamConsumer, type TailRead } from './source.js';

export class FileSource implements ByteSource {
  readonly kind = 'file';
  stats: ReadStats = { requests: 0, bytes: 0 };
  private readonly place: ErrorPlace;

  private constructor(
    readonly name: string,
    /** The real path (symbolic links resolved). */
    readonly filePath: string,
    private readonly handle: FileHandle,
    private readonly size: number,
    /** What identifies this version of the file: size, mtime and ctime in ns, at open. */
    private readonly version: string,
  ) {
    this.place = { source: name };
  }

  static async open(path: string | URL): Promise<FileSource> {
    const name = typeof path === 'string' ? path : fileURLToPath(path);
    let handle: FileHandle;
    try {
      handle = await open(name, 'r');
    } catch (e) {
      const code = (e as { code?: string }).code;
      throw new OnnxzipError(code === 'ENOENT' ? 'not_found' : 'io', { source: name }, `cannot open: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    }
    try {
      const stat = await handle.stat({ bigint: true });
      if (!stat.isFile()) throw new OnnxzipError('io', { source: name }, 'not a regular file');
      return new FileSource(name, await realpath(name), handle, Number(stat.size), versionOf(stat));
    } catch (e) {
      await handle.close();
      throw e;
    }
  }

  /**
   * Whether the file was written since it was opened (an in-place edit, spec §9.6): Node has no
   * flock, so a reader cannot keep an editor out while it reads, and checks afterwards instead.
   */
  async changedSinceOpen(): Promise<boolean> {
    return versionOf(await this.handle.stat({ bigint: true })) !== this.version;
  }

  get fileLocation(): { folder: string; name: string } {
    return { folder: dirname(this.filePath), name: basename(this.filePath) };
  }

  async readTail(length: number): Promise<TailRead> {
    const n = Math.min(length, this.size);
    return { size: this.size, bytes: await this.read(this.size - n, n) };
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    const out = allocateFor({ offset, length }, this.name);
    await this.fill(out, offset);
    return out;
  }

  async readRanges(ranges: readonly ByteRange[]): Promise<Uint8Array[]> {
    const out: Uint8Array[] = [];
    for (const r of ranges) {
      const buffer = allocateFor(r, this.name);
      await this.fill(buffer, r.offset);
      out.push(buffer);
    }
    return out;
  }

  async stream(offset: number, length: number, consume: StreamConsumer): Promise<void> {
    const buffer = new Uint8Array(Math.min(kStreamPiece, length));
    for (let at = 0; at < length; at += buffer.byteLength) {
      const piece = buffer.subarray(0, Math.min(buffer.byteLength, length - at));
      await this.fill(piece, offset + at);
      await consume(piece);
    }
  }

  async close(): Promise<void> {
    await this.handle.close();
  }

  private async fill(into: Uint8Array, offset: number): Promise<void> {
    if (offset < 0 || offset + into.byteLength > this.size) {
      throw new OnnxzipError('corrupt', this.place, `read of ${into.byteLength} bytes at offset ${offset} past the end of the file (${this.size} bytes)`, { offset });
    }
    this.stats = { requests: this.stats.requests + 1, bytes: this.stats.bytes + into.byteLength };
    let done = 0;
    while (done < into.byteLength) {
      let n: number;
      try {
        ({ bytesRead: n } = await this.handle.read(into, done, into.byteLength - done, offset + done));
      } catch (e) {
        throw new OnnxzipError('io', this.place, `reading ${into.byteLength} bytes at offset ${offset}: ${e instanceof Error ? e.message : String(e)}`, { offset, cause: e });
      }
      if (n === 0) {
        throw new OnnxzipError('changed', this.place, `the file changed (it shrank below ${offset + done + 1} bytes) while it was read`, { offset: offset + done });
      }
      done += n;
    }
  }
}

function versionOf(stat: BigIntStats): string {
  return `${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}`;
}

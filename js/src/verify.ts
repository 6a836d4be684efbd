// verify(): the whole archive read once, in order, in bounded memory.
//
// One pass over the entries' bytes (for a URL, one request) feeds each entry's data to the checks
// of its entry: the CRC-32 now, and the SHA-256 of __DIGESTS when spec v1.1 defines it (issue 24:
// an EntryCheck beside the CRC-32's, whose expected values come from that entry). A local header
// not read yet (URL sources) is checked on the way. Problems are findings, never exceptions: a
// verify report names every one.

import type { Archive } from './archive.js';
import { ByteWindow } from './bytes.js';
import { crc32 } from './crc32.js';
import { OnnxzipError } from './errors.js';
import type { Finding } from './findings.js';
import { checkDescriptor, checkLocalHeader, layoutFindings, type ZipEntry } from './zip.js';

export interface VerifyOptions {
  /** Check the CRC-32 of every entry (reads the whole archive). Default true. */
  readonly checkCrc?: boolean;
}

export interface VerifyReport {
  readonly findings: readonly Finding[];
  /** The archive conforms to the spec: no finding of either severity (spec §9.5). */
  readonly ok: boolean;
  /** openArchive accepts it and every CRC-32 is right: no finding of severity error. */
  readonly loadable: boolean;
}

/** A check fed with one entry's uncompressed data, in order. */
interface EntryCheck {
  update(piece: Uint8Array): void;
  /** A finding when the data is wrong. */
  finish(): Finding | undefined;
}

function crcCheck(e: ZipEntry): EntryCheck {
  let crc = 0;
  return {
    update(piece) {
      crc = crc32(piece, crc);
    },
    finish() {
      if (crc === e.crc32) return undefined;
      return errorFinding('crc32', e, `CRC-32 mismatch: the data has 0x${hex(crc)}, the archive records 0x${hex(e.crc32)}`, e.local?.dataOffset ?? e.localHeaderOffset);
    },
  };
}

function hex(v: number): string {
  return v.toString(16).padStart(8, '0');
}

function errorFinding(kind: string, e: ZipEntry, message: string, offset: number): Finding {
  return { severity: 'error', kind, entry: e.name, tensor: '', offset, message };
}

function fromError(e: ZipEntry, error: unknown): Finding {
  const message = error instanceof OnnxzipError ? error.problem : String(error);
  const offset = error instanceof OnnxzipError ? error.offset ?? e.localHeaderOffset : e.localHeaderOffset;
  return errorFinding(error instanceof OnnxzipError ? error.code : 'error', e, message, offset);
}

type Phase = 'header' | 'data' | 'descriptor' | 'skip';

/** Feeds the bytes of [first local header, central directory) to each entry's checks, in order. */
class EntryStreamer {
  private index = 0;
  private phase: Phase = 'header';
  private gathered: Uint8Array[] = [];
  private gatheredLength = 0;
  private wanted = 0;
  private checks: EntryCheck[] = [];
  readonly deflated: ZipEntry[] = [];
  readonly findings: Finding[] = [];

  constructor(
    private readonly entries: readonly ZipEntry[],
    private readonly src: { source: string },
    private readonly headerFindings: Finding[],
    private readonly checkCrc: boolean,
  ) {
    this.startEntry();
  }

  /** `piece` holds the bytes from offset `at` on. */
  feed(piece: Uint8Array, at: number): void {
    let p = 0;
    while (p < piece.byteLength && this.index < this.entries.length) {
      const e = this.entries[this.index]!;
      const here = at + p;
      if (here >= e.limit) {
        if (this.phase !== 'skip') this.fail(e, new Error(`the entry's bytes did not end before offset ${e.limit}`));
        ++this.index;
        this.startEntry();
        continue;
      }
      const room = Math.min(piece.byteLength - p, e.limit - here);
      switch (this.phase) {
        case 'header':
          p += this.header(e, piece.subarray(p, p + room), here);
          break;
        case 'data': {
          const local = e.local!;
          const n = Math.min(room, local.dataEnd - here);
          const part = piece.subarray(p, p + n);
          for (const c of this.checks) c.update(part);
          p += n;
          if (here + n >= local.dataEnd) this.endData(e);
          break;
        }
        case 'descriptor':
          p += this.descriptor(e, piece.subarray(p, p + room));
          break;
        default:
          p += room;
      }
    }
  }

  private startEntry(): void {
    const e = this.entries[this.index];
    this.phase = 'header';
    this.gathered = [];
    this.gatheredLength = 0;
    this.checks = [];
    this.wanted = e === undefined ? 0 : 30 + e.nameBytes.byteLength + 1024;
  }

  /** Takes header bytes from `part` (at offset `here`); returns how many it used. */
  private header(e: ZipEntry, part: Uint8Array, here: number): number {
    if (e.local !== undefined) {
      // Checked at open: skip to the data.
      const n = Math.min(part.byteLength, e.local.dataOffset - here);
      if (here + n >= e.local.dataOffset) this.beginData(e);
      return n;
    }
    const n = Math.min(part.byteLength, this.wanted - this.gatheredLength);
    this.gathered.push(part.slice(0, n));
    this.gatheredLength += n;
    try {
      const w = new ByteWindow(join(this.gathered), e.localHeaderOffset);
      this.gathered = [w.bytes];
      const need = checkLocalHeader(w, e, this.src, this.headerFindings);
      if (need === undefined) {
        // Bytes past the header that came along belong to the data: give them back.
        const used = n - (e.localHeaderOffset + this.gatheredLength - e.local!.dataOffset);
        this.beginData(e);
        return used;
      }
      this.wanted = need;
    } catch (error) {
      this.fail(e, error);
    }
    return n;
  }

  private beginData(e: ZipEntry): void {
    this.phase = 'data';
    this.checks = this.checkCrc && e.isStored ? [crcCheck(e)] : [];
    if (this.checkCrc && !e.isStored) this.deflated.push(e);
    if (e.compressedSize === 0) this.endData(e);
  }

  private endData(e: ZipEntry): void {
    for (const c of this.checks) {
      const f = c.finish();
      if (f !== undefined) this.findings.push(f);
    }
    this.checks = [];
    this.phase = e.local!.descriptorPending ? 'descriptor' : 'skip';
    this.gathered = [];
    this.gatheredLength = 0;
    this.wanted = 4;
  }

  private descriptor(e: ZipEntry, part: Uint8Array): number {
    const n = Math.min(part.byteLength, this.wanted - this.gatheredLength);
    this.gathered.push(part.slice(0, n));
    this.gatheredLength += n;
    try {
      const need = checkDescriptor(new ByteWindow(join(this.gathered), e.local!.dataEnd), e, this.src);
      if (need === undefined) this.phase = 'skip';
      else this.wanted = need;
    } catch (error) {
      this.fail(e, error);
    }
    return n;
  }

  private fail(e: ZipEntry, error: unknown): void {
    this.findings.push(fromError(e, error));
    this.phase = 'skip';
  }
}

function join(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const all = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.byteLength;
  }
  return all;
}

export async function verifyArchive(archive: Archive, options: VerifyOptions): Promise<VerifyReport> {
  const dir = archive.dir;
  const source = archive.source;
  const entries = dir.entries;
  const checkCrc = options.checkCrc ?? true;
  const findings: Finding[] = [];
  const headerFindings: Finding[] = [];
  if (entries.length > 0 && (checkCrc || entries.some((e) => e.local === undefined))) {
    const first = entries[0]!.localHeaderOffset;
    const streamer = new EntryStreamer(entries, { source: source.name }, headerFindings, checkCrc);
    let position = first;
    await source.stream(first, dir.centralOffset - first, (piece) => {
      streamer.feed(piece, position);
      position += piece.byteLength;
    });
    findings.push(...streamer.findings);
    for (const e of streamer.deflated) {
      try {
        await archive.readEntries([e]);
      } catch (error) {
        findings.push(fromError(e, error));
      }
    }
  }
  const all: Finding[] = [...archive.findings, ...headerFindings];
  // For a URL the layout shows only now that every local header has been read.
  if (archive.sourceKind === 'url' && entries.every((e) => e.local !== undefined)) all.push(...layoutFindings(dir));
  all.push(...findings);
  return { findings: all, ok: all.length === 0, loadable: all.every((f) => f.severity !== 'error') };
}

// The .onnxz archive (spec/onnxz-format.md): openArchive reads the ZIP structure and the model,
// applies every must-reject rule of spec §9.2 and §9.4, and gives the model bytes, the entries,
// the tensors and their data.

import { ByteWindow } from './bytes.js';
import { crc32 } from './crc32.js';
import { OnnxzipError, quote, tensorPhrase, type ErrorPlace } from './errors.js';
import { errorFinding, markKind, kindOf, withKind, type Finding } from './findings.js';
import { inlinePayload } from './inline_payload.js';
import { checkInflateLimits, inflateRaw, type InflateLimits } from './inflate.js';
import { kModelEntryName } from './names.js';
import { walkModel, type TensorRecord } from './onnx.js';
import { openSource, type ArchiveSource, type SourceOptions } from './open_source.js';
import { entryFindings, resolveReferences, tensorLabel, type ListedTensor, type ResolvedTensor } from './references.js';
import { allocateFor, withRoom, type ByteRange, type ByteSource, type SourceKind } from './source.js';
import type { TensorInfo } from './tensor_info.js';
import { tensorView, type TensorData } from './typed.js';
import { verifyArchive, type VerifyOptions, type VerifyReport } from './verify.js';
import { checkDescriptor, checkLocalHeader, layoutFindings, localHeaderGuess, readDirectory, type ZipDirectory, type ZipEntry } from './zip.js';

export type { TensorInfo } from './tensor_info.js';
export type { ResolvedTensor } from './references.js';
export { tensorLabel } from './references.js';

export interface OpenOptions extends SourceOptions {
  /**
   * Bytes read from the end of the source first (at least 65,633: the end record with the longest
   * comment and the zip64 records). When the model, the central directory and the end records fit
   * in them, opening takes this one read; else one more. Default 1 MiB.
   */
  readonly tailSize?: number;
  /** More central directory records than this: limit_exceeded. Default 10,000,000. */
  readonly maxEntries?: number;
  /** A central directory larger than this: limit_exceeded (it is read whole at open). Default 1 GiB. */
  readonly maxDirectoryBytes?: number;
  /** A __MODEL_PROTO larger than this: limit_exceeded. Default 2 GiB - 1 (protobuf's limit). */
  readonly maxModelBytes?: number;
  /** Deflated entries (spec §9.3 item 1) that inflate to more than this: limit_exceeded. Default 4 GiB. */
  readonly maxInflatedSize?: number;
  /** Deflated entries over 1 MiB that inflate to more than this many times their size: limit_exceeded. 0: no limit. Default 100. */
  readonly maxCompressionRatio?: number;
  /** Messages nested deeper than this in the model: limit_exceeded. Default 100. */
  readonly maxModelDepth?: number;
}

/** One entry of the archive. */
export interface EntryInfo {
  readonly name: string;
  /** Uncompressed size in bytes. */
  readonly size: number;
  readonly compressedSize: number;
  /** 0 stored, 8 deflated. */
  readonly method: number;
  readonly crc32: number;
  readonly localHeaderOffset: number;
  /**
   * The offset of its first data byte. Known once its local header has been read: at open for
   * memory, Blob and file sources; for a URL, after the first read of the entry (undefined before).
   */
  readonly dataOffset: number | undefined;
}

const kDefaultTailSize = 1 << 20;
/** Payload bytes before the model that the tail read keeps after open. */
const kTailPayloadKept = 64 << 10;
const kDefaultMaxModelBytes = 2 ** 31 - 1;

/**
 * Opens an archive: a file path (Node), a URL or URL string, a Blob or File, an ArrayBuffer or a
 * typed array (viewed, not copied). Reads the end records, the central directory and the model,
 * and checks them as spec §9.2 and §9.4 require: OnnxzipError naming the source, entry, tensor
 * and offset of the first problem.
 */
export async function openArchive(source: ArchiveSource, options: OpenOptions = {}): Promise<Archive> {
  return openWith(source, options, false);
}

/** @internal openArchive; with `keepTail`, the whole tail read stays for the entries read next (createSession). */
export async function openWith(source: ArchiveSource, options: OpenOptions, keepTail: boolean): Promise<Archive> {
  if (source === undefined || source === null) {
    throw new OnnxzipError('invalid_argument', {}, `no archive given (${String(source)}): pass a path, a URL, a Blob or File, an ArrayBuffer or a typed array`);
  }
  // A file edited in place while it is read (spec §9.6) can give a mix of two archives' bytes:
  // read again when the file changed meanwhile, or once more after a short pause when it looked
  // corrupt (an edit within the file system's timestamp granularity leaves no trace in stat).
  for (let attempt = 1; ; ++attempt) {
    const bytes = await openSource(source, options);
    let failure: unknown;
    try {
      const archive = await Archive.read(bytes, options, keepTail);
      if (!(await changedSinceOpen(bytes))) return archive;
      await archive.close();
    } catch (e) {
      failure = e;
      const changed = await changedSinceOpen(bytes).catch(() => false);
      await bytes.close().catch(() => undefined);
      const suspect = bytes.changedSinceOpen !== undefined && attempt === 1 && e instanceof OnnxzipError && e.code === 'corrupt';
      if (!changed && !suspect) throw e;
      if (!changed) await new Promise((resolve) => setTimeout(resolve, kPauseBeforeRereading));
    }
    if (attempt === kOpenAttempts) {
      throw new OnnxzipError('changed', { source: bytes.name }, `the file changed while it was read, at each of ${kOpenAttempts} attempts (an edit in progress?); retrying may succeed`, { cause: failure });
    }
  }
}

const kOpenAttempts = 4;
const kPauseBeforeRereading = 20;

async function changedSinceOpen(source: ByteSource): Promise<boolean> {
  return source.changedSinceOpen === undefined ? false : source.changedSinceOpen();
}

/** What opening read and checked, for the Archive it makes. */
interface Opened {
  readonly dir: ZipDirectory;
  readonly modelBytes: Uint8Array;
  readonly records: readonly TensorRecord[];
  readonly listed: readonly ListedTensor[];
  readonly resolved: readonly ResolvedTensor[];
  readonly findings: readonly Finding[];
  readonly limits: InflateLimits;
  readonly keepsTail: boolean;
}

export class Archive {
  /** The serialized ModelProto (__MODEL_PROTO), as ONNX Runtime takes it. */
  readonly modelBytes: Uint8Array;
  /** Every tensor that holds data, external and inline, in the order the model holds them (spec §7.5). */
  readonly tensors: readonly TensorInfo[];
  /** What the reader accepted but reports (spec §9.3, §9.4 items 4-5, §11). */
  readonly findings: readonly Finding[];
  /** Names the source in messages. */
  readonly sourceName: string;
  readonly sourceKind: SourceKind;

  /** @internal The external tensors, with their entries. */
  readonly resolved: readonly ResolvedTensor[];
  /** @internal */
  readonly dir: ZipDirectory;
  /** @internal */
  readonly source: ByteSource;
  /** @internal */
  readonly records: readonly TensorRecord[];
  /** @internal */
  readonly limits: InflateLimits;
  private readonly listed: readonly ListedTensor[];
  private readonly byInfo: Map<TensorInfo, ListedTensor>;
  /** The whole tail read is kept (createSession): entries read from it are copies, and releaseTail() frees it. */
  private readonly keepsTail: boolean;
  // Built on first use: createSession needs neither.
  private entryInfos: readonly EntryInfo[] | undefined;
  private byTensorName: Map<string, ListedTensor[]> | undefined;
  private closed = false;

  private constructor(source: ByteSource, opened: Opened) {
    this.source = source;
    this.dir = opened.dir;
    this.modelBytes = opened.modelBytes;
    this.records = opened.records;
    this.listed = opened.listed;
    this.resolved = opened.resolved;
    this.findings = opened.findings;
    this.limits = opened.limits;
    this.keepsTail = opened.keepsTail;
    this.sourceName = source.name;
    this.sourceKind = source.kind;
    this.tensors = opened.listed.map((t) => t.info);
    this.byInfo = new Map(opened.listed.map((t) => [t.info, t]));
  }

  /** Every entry, in file order. */
  get entries(): readonly EntryInfo[] {
    this.entryInfos ??= this.dir.entries.map((e) => entryInfo(e));
    return this.entryInfos;
  }

  /** @internal */
  static async read(source: ByteSource, options: OpenOptions, keepTail = false): Promise<Archive> {
    const src: ErrorPlace = { source: source.name };
    const maxModelBytes = options.maxModelBytes ?? kDefaultMaxModelBytes;
    const limits: InflateLimits = {
      maxInflatedSize: options.maxInflatedSize ?? 4 * 2 ** 30,
      maxCompressionRatio: options.maxCompressionRatio ?? 100,
    };
    const dir = await markKind('zip', () =>
      readDirectory(source, options.tailSize ?? kDefaultTailSize, {
        maxEntries: options.maxEntries ?? 10_000_000,
        maxDirectoryBytes: options.maxDirectoryBytes ?? 2 ** 30,
        maxModelBytes,
        notZip: (head) => legacyModelError(head, src),
      }),
    );
    const findings: Finding[] = dir.findings;
    const model = await markKind('layout', () => modelEntry(dir, src, maxModelBytes));
    await markKind('zip', () => readLocalLayout(source, dir, model, findings));
    const keepsTail = keepTail && source.kind !== 'memory';
    if (source.kind !== 'memory' && !keepTail) trimTail(dir, model);
    let modelBytes = await markKind('zip', () => readEntryData(source, dir, model, limits));
    // A view of a kept tail would keep it whole while the model lives: the model gets its own bytes.
    if (keepsTail && modelBytes.buffer === dir.tail.window.bytes.buffer) modelBytes = modelBytes.slice();
    const records = await markKind('model', () => walkModelOf(modelBytes, model, src, options.maxModelDepth ?? 100));
    const { listed, external } = await markKind('reference', () => resolveReferences(records, dir, src, source.kind, findings));
    findings.push(...entryFindings(dir, external));
    return new Archive(source, { dir, modelBytes, records, listed, resolved: external, findings, limits, keepsTail });
  }

  /** The tensor named `name`: undefined when none is; invalid_argument when several are (pass a TensorInfo). */
  tensor(name: string): TensorInfo | undefined {
    return this.tensorNamed(name)?.info;
  }

  /** The entry with exactly this name. */
  entry(name: string): EntryInfo | undefined {
    const e = this.dir.byName.get(name);
    return e === undefined ? undefined : this.entries[e.index];
  }

  /**
   * The data of tensor `tensor` (a name, or one of `tensors`) as a typed array of its data type
   * (see TensorData): a view of the source's bytes when `zeroCopy`, else a new buffer. An
   * external tensor costs one read (for a URL, one request; none when the tail read at open
   * holds it); an inline one is read from the model bytes.
   */
  async getTensor(tensor: string | TensorInfo): Promise<TensorData> {
    const [data] = await this.getTensors([tensor]);
    return data!;
  }

  /**
   * The data of several tensors (by name, or one of `tensors` for a name several share); adjacent
   * entries are read together (for a URL, one request per run of them).
   */
  async getTensors(tensors: readonly (string | TensorInfo)[]): Promise<TensorData[]> {
    this.checkOpen();
    const found = tensors.map((wanted) => this.listedTensor(wanted));
    const external = found.filter((t): t is ResolvedTensor => t.entry !== undefined);
    const bytes = await this.readEntries(external.map((t) => t.entry));
    const byEntry = new Map(external.map((t, i) => [t.entry, bytes[i]!]));
    return found.map((t) => {
      const place: ErrorPlace = { source: this.sourceName, tensor: t.info.name, site: t.info.site };
      const payload = t.entry === undefined ? this.inlineBytes(t, place) : byEntry.get(t.entry)!;
      return tensorView(payload, t.info, place);
    });
  }

  /** The uncompressed bytes of the entry `name` (deflated entries are inflated). */
  async getEntryBytes(name: string): Promise<Uint8Array> {
    this.checkOpen();
    const e = this.dir.byName.get(name);
    if (e === undefined) throw new OnnxzipError('not_found', { source: this.sourceName }, `no entry named ${quote(name)}`);
    const [bytes] = await this.readEntries([e]);
    return bytes!;
  }

  /**
   * Checks the whole archive: the CRC-32 of every entry, every local header, and the findings of
   * spec §9.3. Never throws for the archive's content: each problem is a finding.
   */
  async verify(options: VerifyOptions = {}): Promise<VerifyReport> {
    this.checkOpen();
    return verifyArchive(this, options);
  }

  /** Releases the source (a file handle in Node). Reads after close() fail with bad_state. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.source.close();
  }

  /** @internal Frees a kept tail read now (createSession, once it read every entry it needs). */
  releaseTail(): void {
    if (this.keepsTail) this.dir.tail.release();
  }

  /**
   * @internal Reads the entries' uncompressed bytes, adjacent ones together. Bytes the tail read
   * at open holds are not read again: they are copied, unless `tailViews` (for callers that only
   * read them, such as ORT, which copies them itself) and the tail is not to be released.
   */
  async readEntries(entries: readonly ZipEntry[], tailViews = false): Promise<Uint8Array[]> {
    this.checkOpen();
    const unique = [...new Set(entries)].sort((a, b) => a.localHeaderOffset - b.localHeaderOffset);
    const ranges: ByteRange[] = unique.map((e) =>
      e.local === undefined
        ? { offset: e.localHeaderOffset, length: e.limit - e.localHeaderOffset, phase: true }
        : { offset: e.local.dataOffset, length: e.compressedSize, phase: true },
    );
    const buffers = await this.readSpans(ranges, tailViews && !this.keepsTail);
    const out = new Map<ZipEntry, Uint8Array>();
    for (const [i, e] of unique.entries()) {
      const range = ranges[i]!;
      let raw = buffers[i]!;
      if (e.local === undefined || range.offset === e.localHeaderOffset) {
        const w = new ByteWindow(raw, range.offset);
        await checkEntryFrom(w, e, this.source, this.dir.findings);
        raw = w.slice(e.local!.dataOffset, e.compressedSize);
      }
      out.set(e, e.isStored ? raw : await this.inflate(e, raw));
    }
    return entries.map((e) => out.get(e)!);
  }

  /**
   * The bytes of each range (ascending, disjoint), one buffer each. What the tail read holds is
   * not read again: a range within it is taken from it, and of a range that begins before it and
   * ends in it only the part before is read, into a buffer with room for the rest.
   */
  private async readSpans(ranges: readonly ByteRange[], tailViews: boolean): Promise<Uint8Array[]> {
    const tail = this.dir.tail.window;
    // A memory source's reads are views of the caller's bytes, never to be written into.
    const usesTail = this.source.kind !== 'memory';
    const reads = ranges.map((r): ByteRange | undefined => {
      const end = r.offset + r.length;
      if (!usesTail || end <= tail.base || end > tail.end) return r;
      if (r.offset >= tail.base) return undefined;
      return { ...r, length: tail.base - r.offset, room: end - tail.base };
    });
    const read = await this.source.readRanges(reads.filter((r): r is ByteRange => r !== undefined));
    let next = 0;
    return ranges.map((r, i) => {
      const asked = reads[i];
      if (asked === undefined) {
        if (tailViews) return tail.slice(r.offset, r.length);
        // A buffer of its own, as every read from a source other than memory gives.
        const copy = allocateFor(r, this.sourceName);
        copy.set(tail.slice(r.offset, r.length));
        return copy;
      }
      const got = read[next++]!;
      if (asked.room === undefined) return got;
      const whole = withRoom(got, asked);
      whole.set(tail.slice(tail.base, asked.room), asked.length);
      return whole;
    });
  }

  private async inflate(e: ZipEntry, compressed: Uint8Array): Promise<Uint8Array> {
    const place: ErrorPlace = { source: this.sourceName, entry: e.name };
    checkInflateLimits(e.compressedSize, e.size, this.limits, place);
    return inflateRaw(compressed, e.size, e.crc32, place);
  }

  private inlineBytes(t: ListedTensor, place: ErrorPlace): Uint8Array {
    if (t.problem !== undefined) throw new OnnxzipError('corrupt', place, `its inline payload disagrees with its dims and data type: ${t.problem} (spec §9.4 item 5)`);
    return inlinePayload(this.modelBytes, t.record, t.info.size, (problem) => {
      throw new OnnxzipError('corrupt', place, problem);
    });
  }

  private listedTensor(wanted: string | TensorInfo): ListedTensor {
    if (typeof wanted !== 'string') {
      const t = this.byInfo.get(wanted);
      if (t === undefined) throw new OnnxzipError('not_found', { source: this.sourceName }, `no tensor ${tensorLabel(wanted)} in this archive (a TensorInfo of another archive?)`);
      return t;
    }
    const t = this.tensorNamed(wanted);
    if (t === undefined) throw new OnnxzipError('not_found', { source: this.sourceName }, `no tensor named ${quote(wanted)}`);
    return t;
  }

  private tensorNamed(name: string): ListedTensor | undefined {
    if (this.byTensorName === undefined) {
      this.byTensorName = new Map();
      for (const t of this.listed) {
        const same = this.byTensorName.get(t.info.name);
        if (same === undefined) this.byTensorName.set(t.info.name, [t]);
        else same.push(t);
      }
    }
    const found = this.byTensorName.get(name);
    if (found !== undefined && found.length > 1) {
      throw new OnnxzipError('invalid_argument', { source: this.sourceName }, `${found.length} tensors are named ${quote(name)} (at ${found.map((t) => t.info.site).join(', ')}): pass one of archive.tensors`);
    }
    return found?.[0];
  }

  private checkOpen(): void {
    if (this.closed) throw new OnnxzipError('bad_state', { source: this.sourceName }, 'the archive is closed');
  }
}

// dataOffset follows the entry: for a URL it appears once the entry has been read.
function entryInfo(e: ZipEntry): EntryInfo {
  return {
    name: e.name,
    size: e.size,
    compressedSize: e.compressedSize,
    method: e.method,
    crc32: e.crc32,
    localHeaderOffset: e.localHeaderOffset,
    get dataOffset() {
      return e.local?.dataOffset;
    },
  };
}

// A file that is no ZIP but begins as a serialized ModelProto does (field 1, ir_version, which
// every writer puts first): a legacy .onnx model, which the CLI's extract and view name alike.
function legacyModelError(head: Uint8Array, src: ErrorPlace): OnnxzipError | undefined {
  if (head.byteLength < 2 || head[0] !== 0x08) return undefined;
  return new OnnxzipError('invalid_argument', src, "not an .onnxz archive but a legacy .onnx model: convert it ('onnxzip convert model.onnx model.onnxz', or onnxzip.convert in Python)");
}

// Spec §9.4 item 1: __MODEL_PROTO exists and is last, in file order and in the central directory.
function modelEntry(dir: ZipDirectory, src: ErrorPlace, maxModelBytes: number): ZipEntry {
  const model = dir.byName.get(kModelEntryName);
  if (model === undefined) {
    throw new OnnxzipError('corrupt', src, `no entry named ${kModelEntryName}: a ZIP archive, but not an .onnxz`);
  }
  const modelPlace: ErrorPlace = { ...src, entry: kModelEntryName };
  const lastInFile = dir.entries[dir.entries.length - 1]!;
  if (lastInFile !== model) {
    throw new OnnxzipError('corrupt', modelPlace, `is not the last entry: entry ${quote(lastInFile.name)} has its local header at offset ${lastInFile.localHeaderOffset}, after ${kModelEntryName}'s at ${model.localHeaderOffset} (spec §2.4)`, { offset: lastInFile.localHeaderOffset });
  }
  if (model.centralIndex !== dir.entries.length - 1) {
    throw new OnnxzipError('corrupt', modelPlace, `its central directory record (offset ${model.centralOffset}) is not the last one (spec §2.4)`, { offset: model.centralOffset });
  }
  if (Math.max(model.size, model.compressedSize) > maxModelBytes) {
    throw new OnnxzipError('limit_exceeded', modelPlace, `the model is ${Math.max(model.size, model.compressedSize)} bytes, more than the limit of ${maxModelBytes} (option maxModelBytes)`);
  }
  return model;
}

// Local headers: all of them now for sources that are cheap to read; the model's (from the tail)
// and, for a URL, each entry's when its data is first fetched.
async function readLocalLayout(source: ByteSource, dir: ZipDirectory, model: ZipEntry, findings: Finding[]): Promise<void> {
  if (source.kind === 'url') {
    const w = await dir.tail.ensure(model.localHeaderOffset);
    await checkEntryFrom(w, model, source, findings);
  } else {
    await readLocalHeaders(source, dir, findings);
    findings.push(...layoutFindings(dir));
  }
}

// What the tail holds besides the model is the directory, parsed now, and payload bytes, mostly
// of the last entries: the entries wholly within kTailPayloadKept of the model are kept (small
// tensors there cost no read), not the rest, so that a large entry read later is not held twice.
function trimTail(dir: ZipDirectory, model: ZipEntry): void {
  const modelStart = Math.min(model.localHeaderOffset, dir.centralOffset);
  const keptFrom = dir.entries.find((e) => e.localHeaderOffset >= modelStart - kTailPayloadKept)?.localHeaderOffset ?? modelStart;
  dir.tail.trim(Math.min(keptFrom, modelStart), model.local!.end);
}

function walkModelOf(modelBytes: Uint8Array, model: ZipEntry, src: ErrorPlace, maxDepth: number): readonly TensorRecord[] {
  const modelPlace: ErrorPlace = { ...src, entry: kModelEntryName };
  return walkModel(modelBytes, { maxDepth }, (problem, at) => {
    throw new OnnxzipError('corrupt', modelPlace, `the model does not parse as a ModelProto: ${problem} (byte ${at} of the model)`, {
      offset: model.local === undefined ? undefined : model.local.dataOffset + at,
    });
  }).tensors;
}

/** Checks the local header (and data descriptor) of `e` from `w`, reading more when `w` does not hold them. */
export async function checkEntryFrom(w: ByteWindow, e: ZipEntry, source: ByteSource, findings: Finding[]): Promise<void> {
  const src: ErrorPlace = { source: source.name };
  let window = w;
  for (let rounds = 0; rounds < 4; ++rounds) {
    const need = checkLocalHeader(window, e, src, findings);
    if (need === undefined) break;
    window = new ByteWindow(await source.read(e.localHeaderOffset, Math.min(need, e.limit - e.localHeaderOffset)), e.localHeaderOffset);
  }
  for (let rounds = 0; rounds < 4 && e.local?.descriptorPending === true; ++rounds) {
    const need = checkDescriptor(window, e, src);
    if (need === undefined) break;
    const at = e.local.dataEnd;
    window = new ByteWindow(await source.read(at, Math.min(need, e.limit - at)), at);
  }
}

async function readLocalHeaders(source: ByteSource, dir: ZipDirectory, findings: Finding[]): Promise<void> {
  for (const e of dir.entries) {
    if (e.local !== undefined) continue;
    const tail = dir.tail.window;
    if (tail.contains(e.localHeaderOffset, e.limit - e.localHeaderOffset)) {
      await checkEntryFrom(tail, e, source, findings);
    } else {
      const guess = localHeaderGuess(e);
      await checkEntryFrom(new ByteWindow(await source.read(e.localHeaderOffset, guess), e.localHeaderOffset), e, source, findings);
    }
  }
}

async function readEntryData(source: ByteSource, dir: ZipDirectory, e: ZipEntry, limits: InflateLimits): Promise<Uint8Array> {
  const local = e.local!;
  const w = await dir.tail.ensure(local.dataOffset);
  const raw = w.contains(local.dataOffset, e.compressedSize) ? w.slice(local.dataOffset, e.compressedSize) : await source.read(local.dataOffset, e.compressedSize);
  const place: ErrorPlace = { source: source.name, entry: e.name };
  if (e.isStored) {
    // The model read while the file was edited may be another archive's bytes: its CRC-32 tells.
    const crc = crc32(raw);
    if (crc !== e.crc32) {
      throw withKind('crc', new OnnxzipError('corrupt', place, `CRC-32 mismatch: the data has 0x${crc.toString(16).padStart(8, '0')}, the archive records 0x${e.crc32.toString(16).padStart(8, '0')}`, { offset: local.dataOffset }));
    }
    return raw;
  }
  checkInflateLimits(e.compressedSize, e.size, limits, place);
  return inflateRaw(raw, e.size, e.crc32, place);
}

/**
 * Opens and verifies the archive at `source` (spec §9.5), then closes it. An archive openArchive
 * refuses is a report with that one error finding. Throws what makes a report impossible: a
 * source that cannot be read (not_found for a missing file, io, changed), a wrong argument or
 * option (invalid_argument, e.g. a public key that is no key) and a legacy .onnx model
 * (invalid_argument: convert it first).
 */
export async function verify(source: ArchiveSource, options: OpenOptions & VerifyOptions = {}): Promise<VerifyReport> {
  let archive: Archive;
  try {
    archive = await openArchive(source, options);
  } catch (e) {
    // As the C++ verify: what cannot be read at all (no such file, a folder, a failed request) is
    // an error; what was read and is wrong is a finding.
    if (!(e instanceof OnnxzipError) || e.code === 'not_found' || e.code === 'io' || e.code === 'changed' || e.code === 'invalid_argument') throw e;
    const kind = kindOf(e) ?? 'zip';
    const finding = errorFinding(kind, e.message, { entry: e.entry ?? '', tensor: tensorPhrase(e), offset: e.offset ?? 0 });
    // Nothing vouches for digests or a signature of an archive that does not open.
    const checked = kind === 'zip' ? 'the ZIP structure, which does not read' : `the archive until opening refused it (a ${kind} finding)`;
    return { findings: [finding], ok: false, loadable: false, digests: 'failed', signature: 'failed', signatureKeyId: '', checked };
  }
  try {
    return await archive.verify(options);
  } finally {
    await archive.close();
  }
}

// The .onnxz archive (spec/onnxz-format.md): openArchive reads the ZIP structure and the model,
// applies every must-reject rule of spec §9.2 and §9.4, and gives the model bytes, the entries,
// the tensors and their data.

import { ByteWindow } from './bytes.js';
import { crc32 } from './crc32.js';
import { OnnxzipError, quote, type ErrorPlace } from './errors.js';
import { warning, type Finding } from './findings.js';
import { checkInflateLimits, inflateRaw, type InflateLimits } from './inflate.js';
import { isReservedName, kModelEntryName, payloadNameProblem } from './names.js';
import { DataType, dataTypeName, elementBits, payloadSize, typedFieldNames, walkModel, type TensorRecord } from './onnx.js';
import { openSource, type ArchiveSource, type SourceOptions } from './open_source.js';
import { allocateFor, type ByteRange, type ByteSource, type SourceKind } from './source.js';
import { tensorView, type TensorData } from './typed.js';
import { isIntegrityEntry } from './integrity.js';
import { verifyArchive, type VerifyOptions, type VerifyReport } from './verify.js';
import { checkDescriptor, checkLocalHeader, layoutFindings, localHeaderGuess, readDirectory, type ZipDirectory, type ZipEntry } from './zip.js';

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

/** One external tensor: a TensorProto of the model whose data is an entry (spec §7.2). */
export interface TensorInfo {
  /** TensorProto.name ("" when absent). */
  readonly name: string;
  /** Where it sits in the model: "graph/initializer[3]", "graph/node[5]/then_branch/node[0]/value"... */
  readonly site: string;
  /** TensorProto.data_type (onnx.proto's DataType). */
  readonly dataType: number;
  /** Its name: "FLOAT", "FLOAT16"... */
  readonly dataTypeName: string;
  readonly dims: readonly number[];
  /** The payload entry's name (the tensor's external_data location). */
  readonly entry: string;
  /** Payload size in bytes. */
  readonly size: number;
}

/** An external tensor and the record the walk gave (internal). */
export interface ResolvedTensor {
  readonly info: TensorInfo;
  readonly record: TensorRecord;
  readonly entry: ZipEntry;
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
  // A file edited in place while it is read (spec §9.6) can give a mix of two archives' bytes:
  // read again when the file changed meanwhile, or once more after a short pause when it looked
  // corrupt (an edit within the file system's timestamp granularity leaves no trace in stat).
  for (let attempt = 1; ; ++attempt) {
    const bytes = await openSource(source, options);
    let failure: unknown;
    try {
      const archive = await Archive.read(bytes, options);
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

export class Archive {
  /** The serialized ModelProto (__MODEL_PROTO), as ONNX Runtime takes it. */
  readonly modelBytes: Uint8Array;
  /** Every external tensor, in the order the model holds them. Several may share an entry. */
  readonly tensors: readonly TensorInfo[];
  /** What the reader accepted but reports (spec §9.3, §9.4 items 4-5, §11). */
  readonly findings: readonly Finding[];
  /** Names the source in messages. */
  readonly sourceName: string;
  readonly sourceKind: SourceKind;

  /** @internal */
  readonly resolved: readonly ResolvedTensor[];
  /** @internal */
  readonly dir: ZipDirectory;
  /** @internal */
  readonly source: ByteSource;
  /** @internal */
  readonly records: readonly TensorRecord[];
  /** @internal */
  readonly limits: InflateLimits;
  // Built on first use: createSession needs neither.
  private entryInfos: readonly EntryInfo[] | undefined;
  private byTensorName: Map<string, ResolvedTensor> | undefined;
  private closed = false;

  private constructor(
    source: ByteSource,
    dir: ZipDirectory,
    modelBytes: Uint8Array,
    records: readonly TensorRecord[],
    resolved: readonly ResolvedTensor[],
    findings: readonly Finding[],
    limits: InflateLimits,
  ) {
    this.source = source;
    this.dir = dir;
    this.modelBytes = modelBytes;
    this.records = records;
    this.resolved = resolved;
    this.findings = findings;
    this.limits = limits;
    this.sourceName = source.name;
    this.sourceKind = source.kind;
    this.tensors = resolved.map((t) => t.info);
  }

  /** Every entry, in file order. */
  get entries(): readonly EntryInfo[] {
    this.entryInfos ??= this.dir.entries.map((e) => entryInfo(e));
    return this.entryInfos;
  }

  /** @internal */
  static async read(source: ByteSource, options: OpenOptions): Promise<Archive> {
    const src: ErrorPlace = { source: source.name };
    const maxModelBytes = options.maxModelBytes ?? kDefaultMaxModelBytes;
    const limits: InflateLimits = {
      maxInflatedSize: options.maxInflatedSize ?? 4 * 2 ** 30,
      maxCompressionRatio: options.maxCompressionRatio ?? 100,
    };
    const dir = await readDirectory(source, options.tailSize ?? kDefaultTailSize, {
      maxEntries: options.maxEntries ?? 10_000_000,
      maxDirectoryBytes: options.maxDirectoryBytes ?? 2 ** 30,
      maxModelBytes,
    });
    const findings: Finding[] = dir.findings;

    // Spec §9.4 item 1: __MODEL_PROTO exists and is last, in file order and in the central directory.
    const model = dir.byName.get(kModelEntryName);
    if (model === undefined) {
      throw new OnnxzipError('corrupt', src, `no entry named ${kModelEntryName}: a ZIP archive, but not an .onnxz`);
    }
    const modelPlace: ErrorPlace = { ...src, entry: `entry ${quote(kModelEntryName)}` };
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

    // Local headers: all of them now for sources that are cheap to read; the model's (from the
    // tail) and, for a URL, each entry's when its data is first fetched.
    if (source.kind === 'url') {
      const w = await dir.tail.ensure(model.localHeaderOffset);
      await checkEntryFrom(w, model, source, findings);
    } else {
      await readLocalHeaders(source, dir, findings);
      findings.push(...layoutFindings(dir));
    }

    // What the tail holds besides the model is the directory, parsed now, and payload bytes,
    // mostly of the last entries: the entries wholly within kTailPayloadKept of the model are
    // kept (small tensors there cost no read), not the rest, so that a large entry read later
    // is not held twice, nor a part of one that is read again anyway.
    if (source.kind !== 'memory') {
      const modelStart = Math.min(model.localHeaderOffset, dir.centralOffset);
      const keptFrom = dir.entries.find((e) => e.localHeaderOffset >= modelStart - kTailPayloadKept)?.localHeaderOffset ?? modelStart;
      dir.tail.trim(Math.min(keptFrom, modelStart), model.local!.end);
    }
    const modelBytes = await readEntryData(source, dir, model, limits);
    const modelCrc = model.isStored ? crc32(modelBytes) : model.crc32; // inflateRaw checked a deflated one.
    if (modelCrc !== model.crc32) {
      throw new OnnxzipError('corrupt', modelPlace, `CRC-32 mismatch: the data has 0x${modelCrc.toString(16).padStart(8, '0')}, the archive records 0x${model.crc32.toString(16).padStart(8, '0')}`, { offset: model.local?.dataOffset });
    }
    const records = walkModel(modelBytes, { maxDepth: options.maxModelDepth ?? 100 }, (problem, at) => {
      throw new OnnxzipError('corrupt', modelPlace, `the model does not parse as a ModelProto: ${problem} (byte ${at} of the model)`, {
        offset: model.local === undefined ? undefined : model.local.dataOffset + at,
      });
    }).tensors;
    const resolved = resolveReferences(records, dir, src, findings);
    findings.push(...entryFindings(dir, resolved));
    return new Archive(source, dir, modelBytes, records, resolved, findings, limits);
  }

  /** The external tensor with this TensorProto.name (the first, when several have it). */
  tensor(name: string): TensorInfo | undefined {
    return this.tensorNamed(name)?.info;
  }

  /** The entry with exactly this name. */
  entry(name: string): EntryInfo | undefined {
    const e = this.dir.byName.get(name);
    return e === undefined ? undefined : this.entries[e.index];
  }

  /**
   * The data of the external tensor `name` as a typed array of its data type (see TensorData):
   * a view of the source's bytes when the source is in memory and the offset allows it, else a new
   * buffer. One read (for a URL, one request).
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
    const found = tensors.map((wanted) => {
      const t = typeof wanted === 'string' ? this.tensorNamed(wanted) : this.resolved.find((r) => r.info === wanted);
      if (t === undefined) {
        const what = typeof wanted === 'string' ? quote(wanted) : `${quote(wanted.name)} at ${wanted.site} (not one of this archive's tensors)`;
        throw new OnnxzipError('not_found', { source: this.sourceName }, `no external tensor ${what}`);
      }
      return t;
    });
    const tensorsFound = found;
    const bytes = await this.readEntries(tensorsFound.map((t) => t.entry));
    return tensorsFound.map((t, i) => tensorView(bytes[i]!, t.info, { source: this.sourceName, tensor: tensorLabel(t.info) }));
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

  /**
   * @internal Reads the entries' uncompressed bytes, adjacent ones together. Bytes the tail read
   * at open holds are copied, unless `tailViews` (for callers that only read them, such as ORT,
   * which copies them itself).
   */
  async readEntries(entries: readonly ZipEntry[], tailViews = false): Promise<Uint8Array[]> {
    this.checkOpen();
    const unique = [...new Set(entries)].sort((a, b) => a.localHeaderOffset - b.localHeaderOffset);
    const ranges: ByteRange[] = unique.map((e) =>
      e.local === undefined
        ? { offset: e.localHeaderOffset, length: e.limit - e.localHeaderOffset, phase: true }
        : { offset: e.local.dataOffset, length: e.compressedSize, phase: true },
    );
    // What the tail read at open already holds is not read again.
    const tail = this.dir.tail.window;
    const fromTail = ranges.map((r) => this.source.kind !== 'memory' && tail.contains(r.offset, r.length));
    const read = await this.source.readRanges(ranges.filter((_, i) => !fromTail[i]));
    let next = 0;
    const buffers = ranges.map((r, i) => {
      if (!fromTail[i]) return read[next++]!;
      if (tailViews) return tail.slice(r.offset, r.length);
      // A buffer of its own, as every read from a source other than memory gives.
      const copy = allocateFor(r, this.sourceName);
      copy.set(tail.slice(r.offset, r.length));
      return copy;
    });
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

  private async inflate(e: ZipEntry, compressed: Uint8Array): Promise<Uint8Array> {
    const place: ErrorPlace = { source: this.sourceName, entry: `entry ${quote(e.name)}` };
    checkInflateLimits(e.compressedSize, e.size, this.limits, place);
    return inflateRaw(compressed, e.size, e.crc32, place);
  }

  private tensorNamed(name: string): ResolvedTensor | undefined {
    if (this.byTensorName === undefined) {
      this.byTensorName = new Map();
      for (const t of this.resolved) if (!this.byTensorName.has(t.info.name)) this.byTensorName.set(t.info.name, t);
    }
    return this.byTensorName.get(name);
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

export function tensorLabel(t: { name: string; site: string }): string {
  return `tensor ${quote(t.name)} at ${t.site}`;
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
  if (e.isStored) return raw;
  const place: ErrorPlace = { source: source.name, entry: `entry ${quote(e.name)}` };
  checkInflateLimits(e.compressedSize, e.size, limits, place);
  return inflateRaw(raw, e.size, e.crc32, place);
}

const kDecimal = /^[0-9]+$/;
const kTwoTo64 = 1n << 64n;

// Spec §9.4 item 3 (rejects) and item 4 (findings), for every EXTERNAL tensor; item 5 for the
// others.
function resolveReferences(records: readonly TensorRecord[], dir: ZipDirectory, src: ErrorPlace, findings: Finding[]): ResolvedTensor[] {
  const out: ResolvedTensor[] = [];
  for (const r of records) {
    // Labels and places are built when a finding or an error needs them.
    const label = (): string => tensorLabel({ name: r.name ?? '', site: r.site });
    const place = (): ErrorPlace => ({ ...src, tensor: label() });
    if (r.dataLocation !== 1n) {
      if (r.externalData.length > 0) {
        findings.push(warning('external_data_ignored', 'external_data on a tensor whose data_location is not EXTERNAL: ignored', { tensor: label() }));
      }
      const problem = inlinePayloadProblem(r);
      if (problem !== undefined) findings.push(warning('inline_payload', `an inline tensor whose payload disagrees with its dims and data type: ${problem} (spec §9.4 item 5)`, { tensor: label() }));
      continue;
    }
    const reject = (problem: string): never => {
      throw new OnnxzipError('corrupt', place(), problem);
    };
    const seen = new Map<string, string>();
    for (const { key, value } of r.externalData) {
      if ((key === 'location' || key === 'offset' || key === 'length') && seen.has(key)) {
        reject(`external_data has the key '${key}' more than once`);
      }
      if (!seen.has(key)) seen.set(key, value);
    }
    const location = seen.get('location');
    if (location === undefined) reject('external data without a location');
    for (const key of ['offset', 'length']) {
      const v = seen.get(key);
      if (v !== undefined && (!kDecimal.test(v) || BigInt(v) >= kTwoTo64)) {
        reject(`external_data ${key} ${quote(v)} is not a decimal number below 2^64`);
      }
    }
    const nameProblem = payloadNameProblem(location!);
    if (nameProblem !== undefined) reject(`its location ${quote(location!)} is not a payload entry name: it ${nameProblem} (spec §6.1)`);
    const entry = dir.byName.get(location!);
    if (entry === undefined) reject(`its location ${quote(location!)} names no entry of the archive`);
    const entryPlace = (): ErrorPlace => ({ ...place(), entry: `entry ${quote(location!)}` });
    if (r.rawDataLength !== undefined) reject('an EXTERNAL tensor that also carries raw_data');
    for (const field of r.typedCounts.keys()) reject(`an EXTERNAL tensor that also carries ${typedFieldNames.get(field) ?? field}`);
    if (r.dataType === DataType.STRING || r.dataType === DataType.UNDEFINED) {
      reject(`an EXTERNAL tensor of type ${dataTypeName(r.dataType)} (spec §7.2 item 5)`);
    }
    const bits = elementBits(r.dataType);
    if (bits === undefined) throw new OnnxzipError('unsupported', place(), `data type ${r.dataType} is not one this reader knows`);
    const size = payloadSize(r.dims, bits);
    if (typeof size === 'string') reject(size);
    const e = entry!;
    if (BigInt(e.size) !== size) {
      throw new OnnxzipError('corrupt', entryPlace(), `the entry has ${e.size} bytes, the tensor's dims ${dimsText(r.dims)} of ${dataTypeName(r.dataType)} need ${size} (spec §7.3)`);
    }
    const length = seen.get('length');
    if (length !== undefined && BigInt(length) !== BigInt(e.size)) {
      throw new OnnxzipError('corrupt', entryPlace(), `external_data length ${length} differs from the entry's size ${e.size}`);
    }
    const offset = seen.get('offset');
    if (offset !== undefined && BigInt(offset) !== 0n) {
      throw new OnnxzipError('corrupt', entryPlace(), `external_data offset ${offset} is not 0: a payload starts at its entry's first byte (spec §7.2 item 4)`);
    }
    const keys = r.externalData.map((kv) => kv.key);
    const canonical = keys.length === 2 && keys[0] === 'location' && keys[1] === 'length' && length !== undefined && (length === '0' || !length.startsWith('0'));
    if (!canonical) {
      findings.push(warning('external_data_keys', `external_data keys are [${keys.join(', ')}]${length !== undefined && length.length > 1 && length.startsWith('0') ? ` (length ${quote(length)} has leading zeros)` : ''}, not exactly [location, length] (spec §7.2 items 3-4, §9.4 item 4)`, { tensor: label(), entry: location! }));
    }
    const dims = r.dims.map((d) => {
      if (d > BigInt(Number.MAX_SAFE_INTEGER)) throw new OnnxzipError('unsupported', place(), `dim ${d} is past 2^53 - 1, which JavaScript numbers cannot hold`);
      return Number(d);
    });
    out.push({
      info: { name: r.name ?? '', site: r.site, dataType: r.dataType, dataTypeName: dataTypeName(r.dataType), dims, entry: e.name, size: e.size },
      record: r,
      entry: e,
    });
  }
  return out;
}

function dimsText(dims: readonly bigint[]): string {
  return `[${dims.join(', ')}]`;
}

/** Spec §9.4 item 5; the same rule, in the same order, as the C++ library's payload_problem. */
function inlinePayloadProblem(r: TensorRecord): string | undefined {
  const typed = [...r.typedCounts.keys()];
  const present = (r.rawDataLength !== undefined ? 1 : 0) + typed.length;
  if (present > 1) return `it carries ${[...(r.rawDataLength !== undefined ? ['raw_data'] : []), ...typed.map((f) => typedFieldNames.get(f) ?? String(f))].join(' and ')}`;
  let count = 1n;
  for (const [i, d] of r.dims.entries()) {
    if (d < 0n) return `dims[${i}] is negative (${d})`;
    count *= d;
    if (count >= kTwoTo64) return 'its element count overflows 64 bits';
  }
  if (r.dataType === DataType.STRING) {
    if (r.rawDataLength !== undefined) return 'a STRING tensor with raw_data';
    const strings = BigInt(r.typedCounts.get(6) ?? 0);
    if (typed.length > 0 && typed[0] !== 6) return `a STRING tensor with ${typedFieldNames.get(typed[0]!)}`;
    if (strings !== count && !(strings === 0n && count === 0n)) return `string_data holds ${strings} strings, dims say ${count}`;
    return undefined;
  }
  const bits = elementBits(r.dataType);
  if (bits === undefined) return undefined;
  const size = payloadSize(r.dims, bits);
  if (typeof size === 'string') return size;
  if (r.rawDataLength !== undefined) {
    return BigInt(r.rawDataLength) === size ? undefined : `raw_data holds ${r.rawDataLength} bytes, dims and data type need ${size}`;
  }
  if (typed.length === 0) return count === 0n ? undefined : `no data for ${count} elements`;
  const field = typed[0]!;
  const expected = typedFieldFor(r.dataType);
  if (field !== expected) return `values in ${typedFieldNames.get(field)}, which is not the field of ${dataTypeName(r.dataType)}`;
  const want = r.dataType === DataType.COMPLEX64 || r.dataType === DataType.COMPLEX128 ? 2n * count : bits < 8 ? size : count;
  const have = BigInt(r.typedCounts.get(field) ?? 0);
  return have === want ? undefined : `${typedFieldNames.get(field)} holds ${have} values, dims and data type need ${want}`;
}

/** The typed field onnx.proto assigns to a fixed-size data type. */
function typedFieldFor(dataType: number): number {
  switch (dataType) {
    case DataType.FLOAT:
    case DataType.COMPLEX64:
      return 4;
    case DataType.INT64:
      return 7;
    case DataType.DOUBLE:
    case DataType.COMPLEX128:
      return 10;
    case DataType.UINT32:
    case DataType.UINT64:
      return 11;
    default:
      return 5;
  }
}

// Entries the model does not explain: unknown reserved names (spec §6.2, §11), payload entries
// no tensor refers to (spec §7.2), names that are no payload entry names (spec §6.1).
function entryFindings(dir: ZipDirectory, resolved: readonly ResolvedTensor[]): Finding[] {
  const out: Finding[] = [];
  const referenced = new Set(resolved.map((t) => t.entry));
  for (const e of dir.entries) {
    if (e.name === kModelEntryName) continue;
    if (isIntegrityEntry(e.name)) continue; // Spec §12: known to a version 1.1 reader, checked by verify().
    if (isReservedName(e.name)) {
      out.push(warning('reserved_entry', `an entry with a reserved name this reader does not know (spec §6.2, §11); ignored`, { entry: e.name, offset: e.localHeaderOffset }));
      continue;
    }
    const problem = payloadNameProblem(e.name);
    if (problem !== undefined) out.push(warning('entry_name', `the entry name ${problem} (spec §6.1)`, { entry: e.name, offset: e.localHeaderOffset }));
    if (!referenced.has(e)) out.push(warning('unreferenced_entry', 'no tensor refers to this entry (spec §7.2)', { entry: e.name, offset: e.localHeaderOffset }));
  }
  return out;
}


/**
 * Opens and verifies the archive at `source` (spec §9.5), then closes it. Never throws for the
 * archive's content: an archive openArchive refuses is a report with that one error finding.
 * OnnxzipError(not_found, io) when the source cannot be read.
 */
export async function verify(source: ArchiveSource, options: OpenOptions & VerifyOptions = {}): Promise<VerifyReport> {
  let archive: Archive;
  try {
    archive = await openArchive(source, options);
  } catch (e) {
    // As the C++ verify: what cannot be read at all (no such file, a folder, a failed request) is
    // an error; what was read and is wrong is a finding.
    if (!(e instanceof OnnxzipError) || e.code === 'not_found' || e.code === 'io' || e.code === 'invalid_argument') throw e;
    const finding: Finding = { severity: 'error', kind: e.code, entry: e.entry ?? '', tensor: e.tensor ?? '', offset: e.offset ?? 0, message: e.message };
    return { findings: [finding], ok: false, loadable: false, integrity: { digests: 'failed', signature: 'failed', keyId: '' } };
  }
  try {
    return await archive.verify(options);
  } finally {
    await archive.close();
  }
}

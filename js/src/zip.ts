// The ZIP structure of an archive (spec §2, §3, §5, §9.1-§9.3): the end records, the central
// directory and the local headers, each checked as spec §9.2 says a reader MUST and reported as
// spec §9.3 says it MAY. The archive's bytes come through a ByteSource; what this module reads of
// them is the tail (a window at the end of the file, grown backwards when needed) and the local
// headers. It knows ZIP only; the .onnxz rules are archive.ts's.

import { ByteWindow, bytesEqual, checkedAdd, checkedRange, concat, decodeText, isValidUtf8, releaseBuffer, toSafeOffset, type LazyPlace } from './bytes.js';
import { crc32 } from './crc32.js';
import { OnnxzipError, quote, type ErrorCode, type ErrorPlace } from './errors.js';
import { warning, type Finding } from './findings.js';
import { hostileNameProblem } from './names.js';
import type { ByteSource } from './source.js';

/** Record signatures and sizes (spec Appendix B). */
const kLocalSignature = 0x04034b50;
const kCentralSignature = 0x02014b50;
const kEndSignature = 0x06054b50;
const kZip64EndSignature = 0x06064b50;
const kZip64LocatorSignature = 0x07064b50;
const kDescriptorSignature = 0x08074b50;
const kLocalSize = 30;
const kCentralSize = 46;
const kEndSize = 22;
const kZip64EndSize = 56;
const kZip64LocatorSize = 20;
const kMaxComment = 0xffff;
const kSentinel16 = 0xffff;
const kSentinel32 = 0xffffffff;
const kZip64ExtraId = 0x0001;
const kAlignmentExtraId = 0xd935;
/** The interrupted edit record (spec §9.6). */
const kEditRecordSize = 48;
const kEditSignature = 'ONNXZEDT';

/** The tail a reader needs at least: the end record with the longest comment, the zip64 locator and record. */
export const kMinTailLength = kEndSize + kMaxComment + kZip64LocatorSize + kZip64EndSize;

export interface ZipOptions {
  readonly maxEntries: number;
  readonly maxDirectoryBytes: number;
  /** Entries before the last one whose data is larger than this are not taken into the tail read. */
  readonly maxModelBytes: number;
  /**
   * For a file with no end record: what else its first bytes show it to be (a layer above ZIP
   * knows a legacy ONNX model), as an error to throw instead of "not a ZIP archive".
   */
  readonly notZip?: (head: Uint8Array) => OnnxzipError | undefined;
}

/** What the local header says, once it has been read and checked against the central record. */
export interface LocalHeader {
  /** The first data byte: local header offset + 30 + name length + extra length. */
  readonly dataOffset: number;
  /** One past the data. */
  readonly dataEnd: number;
  /** One past the entry's span: its data, and its data descriptor once that has been read. */
  readonly end: number;
  /** A data descriptor follows the data and has not been read yet (checkDescriptor). */
  readonly descriptorPending: boolean;
  /** The local header has a zip64 extra field. */
  readonly zip64: boolean;
  /** The alignment the 0xD935 record declares (65536 for 0), or undefined without one. */
  readonly declaredAlignment: number | undefined;
}

export class ZipEntry {
  /** Position in file order (ascending local header offset). */
  index = 0;
  /** The span's upper bound: the next entry's local header offset, or the central directory's. */
  limit = 0;
  local: LocalHeader | undefined = undefined;

  constructor(
    readonly name: string,
    readonly nameBytes: Uint8Array,
    readonly centralIndex: number,
    readonly centralOffset: number,
    readonly localHeaderOffset: number,
    readonly compressedSize: number,
    readonly size: number,
    readonly crc32: number,
    readonly method: number,
    readonly flags: number,
    readonly versionMadeBy: number,
    readonly versionNeeded: number,
    readonly time: number,
    readonly date: number,
    readonly internalAttributes: number,
    readonly externalAttributes: number,
    readonly centralZip64: boolean,
  ) {}

  get isStored(): boolean {
    return this.method === 0;
  }

  get hasDataDescriptor(): boolean {
    return (this.flags & 8) !== 0;
  }
}

export interface ZipDirectory {
  /** Every entry, in file order. */
  readonly entries: readonly ZipEntry[];
  readonly byName: ReadonlyMap<string, ZipEntry>;
  readonly centralOffset: number;
  readonly centralSize: number;
  /** The archive's size: the file's, or less when the file ends with an interrupted edit (spec §9.6). */
  readonly archiveSize: number;
  readonly fileSize: number;
  readonly zip64: boolean;
  /** The bytes at the end of the archive that were read: the central directory, the end records, and usually the last entry. */
  readonly tail: TailWindow;
  readonly findings: Finding[];
}

/**
 * A window of the source's last bytes, grown backwards on demand (one read each time). The
 * buffers it replaces are released at once (releaseBuffer) when they are its own: every read's
 * but a memory source's, whose bytes are the caller's. Callers take the window anew after a
 * change (`window`, or what ensure() returns), never an earlier one.
 */
export class TailWindow {
  private current: ByteWindow;
  private owned: boolean;

  constructor(
    private readonly source: ByteSource,
    bytes: Uint8Array,
    base: number,
  ) {
    this.current = new ByteWindow(bytes, base);
    this.owned = source.kind !== 'memory';
  }

  get window(): ByteWindow {
    return this.current;
  }

  /** Keeps only the bytes [from, to) (a copy of them replaces the buffer, which is released). */
  trim(from: number, to: number): void {
    const start = Math.max(from, this.current.base);
    const end = Math.min(to, this.current.end);
    if (start === this.current.base && end === this.current.end) return;
    this.replace(new ByteWindow(this.current.slice(start, Math.max(0, end - start)).slice(), start));
  }

  /** Frees the window's buffer now (when it is this package's); no read of it may follow. */
  release(): void {
    if (this.owned) releaseBuffer(this.current.bytes.buffer);
    this.current = new ByteWindow(new Uint8Array(0), this.current.end);
    this.owned = false;
  }

  /** Makes the window start at or before `from`. */
  async ensure(from: number): Promise<ByteWindow> {
    const start = Math.max(0, from);
    if (start < this.current.base) {
      const before = await this.source.read(start, this.current.base - start);
      this.replace(new ByteWindow(concat([before, this.current.bytes]), start));
      if (this.source.kind !== 'memory') releaseBuffer(before.buffer);
    }
    return this.current;
  }

  private replace(next: ByteWindow): void {
    if (this.owned) releaseBuffer(this.current.bytes.buffer);
    this.current = next;
    this.owned = true;
  }
}

// Places of entries are built only when an error is thrown (quoting every entry name on the way
// was a good part of what opening allocated).
function fail(code: ErrorCode, place: ErrorPlace | LazyPlace, problem: string, offset?: number): never {
  throw new OnnxzipError(code, typeof place === 'function' ? place() : place, problem, { offset });
}

/** Throws what ZipOptions.notZip makes of the file's first bytes, if anything. */
async function failIfSomethingElse(source: ByteSource, tail: TailWindow, options: ZipOptions): Promise<void> {
  if (options.notZip === undefined) return;
  const w = tail.window;
  const head = w.base === 0 ? w.slice(0, Math.min(16, w.bytes.byteLength)) : await source.read(0, 16);
  const error = options.notZip(head);
  if (error !== undefined) throw error;
}

/** Reads and checks the end records and the central directory; local headers are read by checkLocalHeader. */
export async function readDirectory(source: ByteSource, tailLength: number, options: ZipOptions): Promise<ZipDirectory> {
  const src: ErrorPlace = { source: source.name };
  const first = await source.readTail(Math.max(tailLength, kMinTailLength));
  const fileSize = first.size;
  const tail = new TailWindow(source, first.bytes, fileSize - first.bytes.byteLength);
  const findings: Finding[] = [];
  if (fileSize < kEndSize) {
    fail('corrupt', src, `the file has ${fileSize} bytes, fewer than a ZIP end record (22): not a ZIP archive`);
  }
  const { endOffset, archiveSize } = await locateEndRecord(source, tail, fileSize, options, findings);
  const end = readEndRecord(tail.window, endOffset, findings);
  const locatorOffset = endOffset - kZip64LocatorSize;
  const w = locatorOffset >= 0 ? await tail.ensure(locatorOffset) : tail.window;
  const zip64 = locatorOffset >= 0 && w.u32(locatorOffset) === kZip64LocatorSignature;
  const bounds = zip64 ? await readZip64Records(tail, end, locatorOffset, src, findings) : endRecordBounds(end, src);
  checkDirectoryBounds(bounds, end, zip64, archiveSize, options, src);
  const { centralOffset, centralSize } = bounds;
  const centralEnd = centralOffset + centralSize;
  // One read for the central directory and the last entry: the last central header ends the
  // directory, and names the last entry's local header (spec §2.4).
  if (centralOffset < tail.window.base) {
    const hint = lastEntryHint(tail.window, centralEnd);
    const wanted = hint !== undefined && hint < centralOffset && centralOffset - hint <= options.maxModelBytes ? hint : centralOffset;
    await tail.ensure(wanted);
  }
  const entries = parseCentralDirectory(tail.window, centralOffset, centralEnd, bounds.entryCount, src, findings);
  orderEntries(entries, centralOffset, src);
  const byName = indexNames(entries, src, findings);
  return { entries, byName, centralOffset, centralSize, archiveSize, fileSize, zip64, tail, findings };
}

/** The end of central directory record's fields (spec Appendix B). */
interface EndRecord {
  readonly offset: number;
  readonly disk: number;
  readonly centralDisk: number;
  readonly entriesHere: number;
  readonly entriesTotal: number;
  readonly size32: number;
  readonly offset32: number;
}

/** Where the central directory is, how many records it holds, and where the end records start. */
interface DirectoryBounds {
  readonly entryCount: number;
  readonly centralSize: number;
  readonly centralOffset: number;
  /** Where the central directory must end: the zip64 end record, else the end record. */
  readonly recordsStart: number;
}

function endPlace(end: { readonly offset: number }, what: string): string {
  return `end of central directory record at offset ${end.offset}: ${what}`;
}

// Spec §9.1 and §9.6: the end record whose comment reaches the end of the archive, which is the
// file, or its first bytes when the file ends with an interrupted edit record.
async function locateEndRecord(source: ByteSource, tail: TailWindow, fileSize: number, options: ZipOptions, findings: Finding[]): Promise<{ endOffset: number; archiveSize: number }> {
  const src: ErrorPlace = { source: source.name };
  const end = await findEndRecord(tail, fileSize);
  if (end.offset !== undefined) return { endOffset: end.offset, archiveSize: fileSize };
  const edit = await readInterruptedEdit(source, tail, fileSize);
  if (edit === undefined) {
    if (end.trailing !== undefined) {
      fail('corrupt', src, `end of central directory record at offset ${end.trailing}: its comment of ${end.trailingComment} bytes does not reach the end of the file (${fileSize - end.trailing - kEndSize} bytes follow the record): bytes after the archive, or a truncated comment`, end.trailing);
    }
    await failIfSomethingElse(source, tail, options);
    fail('corrupt', src, `no end of central directory record in the last ${Math.min(fileSize, kEndSize + kMaxComment)} bytes: not a ZIP archive, or a truncated one`, Math.max(0, fileSize - kEndSize));
  }
  const archiveSize = edit.archiveSize;
  findings.push(warning('zip', `the file ends with what an interrupted edit left (spec §9.6): the archive is its first ${archiveSize} bytes; ${fileSize - archiveSize} bytes after it are ignored`, { offset: archiveSize }));
  const inner = await findEndRecord(tail, archiveSize);
  if (inner.offset === undefined) {
    fail('corrupt', src, `interrupted edit record at offset ${fileSize - kEditRecordSize}: no end of central directory record ends at offset ${archiveSize}, where it says the archive ends`, fileSize - kEditRecordSize);
  }
  return { endOffset: inner.offset, archiveSize };
}

function readEndRecord(w: ByteWindow, offset: number, findings: Finding[]): EndRecord {
  const commentLength = w.u16(offset + 20);
  if (commentLength > 0) {
    findings.push(warning('layout', `the archive has a comment of ${commentLength} bytes`, { offset: offset + kEndSize }));
  }
  return {
    offset,
    disk: w.u16(offset + 4),
    centralDisk: w.u16(offset + 6),
    entriesHere: w.u16(offset + 8),
    entriesTotal: w.u16(offset + 10),
    size32: w.u32(offset + 12),
    offset32: w.u32(offset + 16),
  };
}

// Without zip64 records: one disk, whose two entry counts must then agree.
function endRecordBounds(end: EndRecord, src: ErrorPlace): DirectoryBounds {
  if (end.disk !== 0 || end.centralDisk !== 0) {
    fail('unsupported', src, endPlace(end, `a multi-disk archive (disk ${end.disk}, central directory on disk ${end.centralDisk})`), end.offset);
  }
  if (end.entriesHere !== end.entriesTotal) {
    fail('corrupt', src, endPlace(end, `it counts ${end.entriesHere} entries on this disk and ${end.entriesTotal} in all, on a single disk`), end.offset);
  }
  return { entryCount: end.entriesTotal, centralSize: end.size32, centralOffset: end.offset32, recordsStart: end.offset };
}

/** The zip64 locator before the end record at `locatorOffset`, and the zip64 end record it points to (spec §5.2). */
async function readZip64Records(tail: TailWindow, end: EndRecord, locatorOffset: number, src: ErrorPlace, findings: Finding[]): Promise<DirectoryBounds> {
  let w = tail.window;
  const lp = (what: string): string => `zip64 end of central directory locator at offset ${locatorOffset}: ${what}`;
  const recordDisk = w.u32(locatorOffset + 4);
  const diskCount = w.u32(locatorOffset + 16);
  if (recordDisk !== 0 || diskCount !== 1) {
    fail('unsupported', src, lp(`a multi-disk archive (zip64 end record on disk ${recordDisk}, ${diskCount} disks)`), locatorOffset);
  }
  const recordOffset = toSafeOffset(w.u64(locatorOffset + 8), lp('the zip64 end record offset'), () => src, locatorOffset);
  if (recordOffset > locatorOffset - kZip64EndSize || locatorOffset < kZip64EndSize) {
    fail('corrupt', src, lp(`the zip64 end record it points to (offset ${recordOffset}, 56 bytes) does not end before the locator`), locatorOffset);
  }
  w = await tail.ensure(recordOffset);
  const rp = (what: string): string => `zip64 end of central directory record at offset ${recordOffset}: ${what}`;
  if (w.u32(recordOffset) !== kZip64EndSignature) fail('corrupt', src, rp('wrong signature'), recordOffset);
  const restSize = w.u64(recordOffset + 4);
  if (restSize < 44n) fail('corrupt', src, rp(`its size field is ${restSize}, less than 44`), recordOffset);
  if (BigInt(recordOffset) + 12n + restSize !== BigInt(locatorOffset)) {
    fail('corrupt', src, rp(`it ends at offset ${BigInt(recordOffset) + 12n + restSize}, not at the locator (offset ${locatorOffset})`), recordOffset);
  }
  if (restSize > 44n) {
    findings.push(warning('layout', rp(`${restSize - 44n} bytes of extensible data`), { offset: recordOffset }));
  }
  const d1 = w.u32(recordOffset + 16);
  const d2 = w.u32(recordOffset + 20);
  if (d1 !== 0 || d2 !== 0) fail('unsupported', src, rp(`a multi-disk archive (disk ${d1}, central directory on disk ${d2})`), recordOffset);
  const record = { here: w.u64(recordOffset + 24), total: w.u64(recordOffset + 32), size: w.u64(recordOffset + 40), offset: w.u64(recordOffset + 48) };
  if (record.here !== record.total) fail('corrupt', src, rp(`it counts ${record.here} entries on this disk and ${record.total} in all, on a single disk`), recordOffset);
  checkZip64Agrees(end, record, rp, recordOffset, src, findings);
  return {
    entryCount: toSafeOffset(record.total, rp('the entry count'), () => src, recordOffset),
    centralSize: toSafeOffset(record.size, rp('the central directory size'), () => src, recordOffset),
    centralOffset: toSafeOffset(record.offset, rp('the central directory offset'), () => src, recordOffset),
    recordsStart: recordOffset,
  };
}

/** The end record's values against the zip64 end record's: equal, or the sentinel where (and only where) the value overflows. */
function checkZip64Agrees(end: EndRecord, record: { here: bigint; total: bigint; size: bigint; offset: bigint }, rp: (what: string) => string, recordOffset: number, src: ErrorPlace, findings: Finding[]): void {
  const contradicts = (field: string, value32: number, sentinel: number, value64: bigint): void => {
    if (value32 !== sentinel && BigInt(value32) !== value64) {
      fail('corrupt', src, rp(`its ${field} (${value64}) contradicts the end record's (${value32})`), recordOffset);
    }
  };
  contradicts('entry count', end.entriesTotal, kSentinel16, record.total);
  contradicts('entry count on this disk', end.entriesHere, kSentinel16, record.here);
  contradicts('central directory size', end.size32, kSentinel32, record.size);
  contradicts('central directory offset', end.offset32, kSentinel32, record.offset);
  // Spec §5.2: zip64 end records exactly when a value overflows, and sentinels exactly there.
  const countNeeds = record.total >= BigInt(kSentinel16);
  const sizeNeeds = record.size >= BigInt(kSentinel32);
  const offsetNeeds = record.offset >= BigInt(kSentinel32);
  if (!countNeeds && !sizeNeeds && !offsetNeeds) {
    findings.push(warning('layout', rp('zip64 end records in an archive whose entry count, central directory size and offset all fit the end record (spec §5.2)'), { offset: recordOffset }));
  } else if ((end.entriesTotal === kSentinel16) !== countNeeds || (end.size32 === kSentinel32) !== sizeNeeds || (end.offset32 === kSentinel32) !== offsetNeeds) {
    findings.push(warning('layout', endPlace(end, 'sentinels in other fields than those whose value overflows (spec §5.2)'), { offset: end.offset }));
  }
}

// The central directory lies within the archive and ends where the end records begin; its
// records fit it; the options' limits hold.
function checkDirectoryBounds(bounds: DirectoryBounds, end: EndRecord, zip64: boolean, archiveSize: number, options: ZipOptions, src: ErrorPlace): void {
  const { entryCount, centralSize, centralOffset, recordsStart } = bounds;
  if (zip64 && ((end.disk !== 0 && end.disk !== kSentinel16) || (end.centralDisk !== 0 && end.centralDisk !== kSentinel16))) {
    fail('unsupported', src, endPlace(end, `a multi-disk archive (disk ${end.disk}, central directory on disk ${end.centralDisk})`), end.offset);
  }
  const centralEnd = checkedRange(centralOffset, centralSize, archiveSize, `the central directory`, 'the end of the file', () => src);
  if (centralEnd > recordsStart) {
    fail('corrupt', src, `the central directory (offset ${centralOffset}, ${centralSize} bytes) overlaps the end records at offset ${recordsStart}`, centralOffset);
  }
  if (centralEnd < recordsStart) {
    fail('corrupt', src, `${recordsStart - centralEnd} bytes between the end of the central directory (offset ${centralEnd}) and the end records (offset ${recordsStart}): bytes prepended or inserted without fixing the offsets`, centralEnd);
  }
  if (entryCount > Math.floor(centralSize / kCentralSize)) {
    fail('corrupt', src, `the end record claims ${entryCount} entries, more than a central directory of ${centralSize} bytes can hold (46 bytes each at least)`, centralOffset);
  }
  if (centralSize > options.maxDirectoryBytes) {
    fail('limit_exceeded', src, `the central directory is ${centralSize} bytes, more than the limit of ${options.maxDirectoryBytes} (option maxDirectoryBytes)`, centralOffset);
  }
  if (entryCount > options.maxEntries) {
    fail('limit_exceeded', src, `the archive has ${entryCount} entries, more than the limit of ${options.maxEntries} (option maxEntries)`, centralOffset);
  }
}

// Names are compared as bytes (spec §9.2): the same bytes twice are refused; names that decode
// to the same text, or differ only in case, are findings.
function indexNames(entries: readonly ZipEntry[], src: ErrorPlace, findings: Finding[]): Map<string, ZipEntry> {
  const byName = new Map<string, ZipEntry>();
  const lowerNames = new Map<string, string>();
  const byBytes = new Map<string, ZipEntry>();
  for (const e of [...entries].sort((a, b) => a.centralIndex - b.centralIndex)) {
    // A text without U+FFFD came from valid UTF-8, which decodes one way only (but for a leading
    // byte order mark, which the decoder drops): it stands for its bytes. Only other names need a
    // key made of their bytes, which starts with U+FFFD where no such text does.
    const key = e.name.includes('\uFFFD') || e.nameBytes[0] === 0xef ? `\uFFFD${binaryKey(e.nameBytes)}` : e.name;
    const twin = byBytes.get(key);
    if (twin !== undefined) {
      fail('corrupt', { ...src, entry: `entry ${quote(e.name)}` }, `two entries have this name (central directory records at offsets ${twin.centralOffset} and ${e.centralOffset})`, e.centralOffset);
    }
    byBytes.set(key, e);
    if (byName.has(e.name)) {
      findings.push(warning('zip', `two entries have names that decode to the same text; the first is used`, { entry: e.name, offset: e.centralOffset }));
    } else {
      byName.set(e.name, e);
    }
    const lower = e.name.toLowerCase();
    const other = lowerNames.get(lower);
    if (other !== undefined) {
      findings.push(warning('zip', `entries ${quote(other)} and ${quote(e.name)} differ only in case`, { entry: e.name, offset: e.centralOffset }));
    }
    lowerNames.set(lower, e.name);
  }
  return byName;
}

function binaryKey(bytes: Uint8Array): string {
  let key = '';
  for (const b of bytes) key += String.fromCharCode(b);
  return key;
}

interface EndSearch {
  /** The end record whose comment reaches exactly `archiveSize`. */
  offset: number | undefined;
  /** Else the nearest signature whose comment does not (trailing bytes, or a truncated comment). */
  trailing: number | undefined;
  trailingComment: number;
}

// Spec §9.1: the end record is searched backwards within the last 22 + 65535 bytes. When several
// signatures have a comment that reaches exactly the end, the one farthest from the end wins:
// every later one lies inside its comment.
async function findEndRecord(tail: TailWindow, archiveSize: number): Promise<EndSearch> {
  const lowest = Math.max(0, archiveSize - kEndSize - kMaxComment);
  const w = await tail.ensure(lowest);
  let found: number | undefined;
  let trailing: number | undefined;
  let trailingComment = 0;
  for (let at = archiveSize - kEndSize; at >= lowest; --at) {
    if (w.bytes[at - w.base] !== 0x50 || w.u32(at) !== kEndSignature) continue;
    const comment = w.u16(at + 20);
    if (at + kEndSize + comment === archiveSize) found = at;
    else if (trailing === undefined && found === undefined) {
      trailing = at;
      trailingComment = comment;
    }
  }
  return { offset: found, trailing, trailingComment };
}

// Spec §9.6: a file that ends with an interrupted edit record is the archive the record names.
async function readInterruptedEdit(source: ByteSource, tail: TailWindow, fileSize: number): Promise<{ archiveSize: number } | undefined> {
  if (fileSize < kEditRecordSize) return undefined;
  const at = fileSize - kEditRecordSize;
  const w = await tail.ensure(at);
  if (decodeText(w.slice(at, 8)) !== kEditSignature) return undefined;
  const src: ErrorPlace = { source: source.name };
  const rp = (what: string): string => `interrupted edit record at offset ${at}: ${what}`;
  const oldEnd = w.u64(at + 8);
  const recordOffset = w.u64(at + 16);
  const newStart = w.u64(at + 24);
  const newEnd = w.u64(at + 32);
  const newCrc = w.u32(at + 40);
  if (recordOffset !== BigInt(at)) fail('corrupt', src, rp(`it says it is at offset ${recordOffset}`), at);
  if (!(oldEnd <= newStart && newStart <= newEnd && newEnd <= recordOffset)) {
    fail('corrupt', src, rp(`its offsets are out of order (old end ${oldEnd}, new tail ${newStart} to ${newEnd}, record ${recordOffset})`), at);
  }
  const start = Number(newStart);
  const end = Number(newEnd);
  let crc = 0;
  await source.stream(start, end - start, (piece) => {
    crc = crc32(piece, crc);
  });
  return { archiveSize: crc === newCrc ? end : Number(oldEnd) };
}

// The local header offset named by the central header that ends exactly at `centralEnd`, if the
// window holds one: where the last entry starts, to read it with the directory in one request.
// Only a hint for planning reads; the directory itself is parsed from its start.
function lastEntryHint(w: ByteWindow, centralEnd: number): number | undefined {
  const lowest = Math.max(w.base, centralEnd - kCentralSize - 3 * 0xffff);
  for (let at = centralEnd - kCentralSize; at >= lowest; --at) {
    if (w.bytes[at - w.base] !== 0x50 || w.u32(at) !== kCentralSignature) continue;
    if (at + kCentralSize + w.u16(at + 28) + w.u16(at + 30) + w.u16(at + 32) !== centralEnd) continue;
    const offset = w.u32(at + 42);
    return offset === kSentinel32 ? undefined : offset;
  }
  return undefined;
}

function parseCentralDirectory(w: ByteWindow, start: number, end: number, count: number, src: ErrorPlace, findings: Finding[]): ZipEntry[] {
  const entries: ZipEntry[] = [];
  let at = start;
  for (let i = 0; i < count; ++i) {
    if (end - at < kCentralSize) {
      fail('corrupt', src, `the central directory holds ${i} records where the end record says ${count} (record ${i} at offset ${at} would run past its end at ${end})`, at);
    }
    const { entry, recordEnd } = parseCentralRecord(w, at, i, end, src, findings);
    entries.push(entry);
    at = recordEnd;
  }
  if (at !== end) {
    fail('corrupt', src, `the central directory holds more than the ${count} records the end record says (${end - at} bytes left at offset ${at})`, at);
  }
  return entries;
}

/** What a central header's fixed fields and zip64 extra field give (spec §3.2, §5.1). */
interface CentralValues {
  compressedSize: number;
  size: number;
  localHeaderOffset: number;
  readonly diskStart: number;
  zip64: boolean;
}

/** Central directory record `index` at `at`, checked (spec §9.2 items 3-5, 11, 12), and where it ends. */
function parseCentralRecord(w: ByteWindow, at: number, index: number, end: number, src: ErrorPlace, findings: Finding[]): { entry: ZipEntry; recordEnd: number } {
  const rp = (what: string): string => `central directory record ${index} at offset ${at}: ${what}`;
  if (w.u32(at) !== kCentralSignature) fail('corrupt', src, rp('wrong signature'), at);
  const nameLength = w.u16(at + 28);
  const extraLength = w.u16(at + 30);
  const commentLength = w.u16(at + 32);
  const recordEnd = checkedRange(at, kCentralSize + nameLength + extraLength + commentLength, end, rp('its name, extra field and comment'), 'the end of the central directory', () => src);
  // A copy: a view would keep the whole read that holds the directory (the 1 MiB tail of a
  // URL or file) alive as long as the archive.
  const nameBytes = w.slice(at + kCentralSize, nameLength).slice();
  const flags = w.u16(at + 8);
  const method = w.u16(at + 10);
  const name = decodeText(nameBytes);
  const place = (): ErrorPlace => ({ ...src, entry: `entry ${quote(name)}` });
  const ep = (what: string): string => `central directory record at offset ${at}: ${what}`;
  const values: CentralValues = { compressedSize: w.u32(at + 20), size: w.u32(at + 24), localHeaderOffset: w.u32(at + 42), diskStart: w.u16(at + 34), zip64: false };
  // Extra field: records must tile it exactly (spec §3.4 item 3, §9.2 item 12).
  forEachExtraRecord(w, at + kCentralSize + nameLength, extraLength, place, ep, (id, dataStart, dataSize) => {
    if (id === kZip64ExtraId) {
      readCentralZip64(w, dataStart, dataSize, values, at, place, ep);
    } else if (id === kAlignmentExtraId) {
      findings.push(warning('layout', ep('an alignment record (0xD935) in the central header (spec §3.4 item 2)'), { entry: name, offset: dataStart - 4 }));
    } else {
      findings.push(warning('layout', ep(`an extra field record with id 0x${id.toString(16).padStart(4, '0')}`), { entry: name, offset: dataStart - 4 }));
    }
  });
  checkCentralRecord(name, nameBytes, flags, method, values, at, place, ep);
  if (commentLength > 0) findings.push(warning('layout', ep(`a comment of ${commentLength} bytes`), { entry: name, offset: at }));
  if ((flags & 0x800) === 0) {
    findings.push(warning('zip', ep('the UTF-8 flag (bit 11) is not set'), { entry: name, offset: at }));
  } else if (!isValidUtf8(nameBytes)) {
    findings.push(warning('zip', ep('the name is not valid UTF-8 though the UTF-8 flag is set'), { entry: name, offset: at }));
  }
  if (name.endsWith('/')) findings.push(warning('layout', ep('a directory entry'), { entry: name, offset: at }));
  const entry = new ZipEntry(name, nameBytes, index, at, values.localHeaderOffset, values.compressedSize, values.size, w.u32(at + 16), method, flags,
    w.u16(at + 4), w.u16(at + 6), w.u16(at + 12), w.u16(at + 14), w.u16(at + 36), w.u32(at + 38), values.zip64);
  return { entry, recordEnd };
}

// Spec §5.1: the zip64 extra field holds, in this order, the values whose fixed field is the sentinel.
function readCentralZip64(w: ByteWindow, dataStart: number, dataSize: number, values: CentralValues, at: number, place: LazyPlace, ep: (what: string) => string): void {
  if (values.zip64) fail('corrupt', place, ep('two zip64 extra fields'), dataStart - 4);
  values.zip64 = true;
  let p = dataStart;
  const take = (what: string): number => {
    if (p + 8 > dataStart + dataSize) fail('corrupt', place, ep(`the zip64 extra field (${dataSize} bytes) is too short for the ${what}`), dataStart - 4);
    const v = toSafeOffset(w.u64(p), ep(`the zip64 ${what}`), place, p);
    p += 8;
    return v;
  };
  if (values.size === kSentinel32) values.size = take('uncompressed size');
  if (values.compressedSize === kSentinel32) values.compressedSize = take('compressed size');
  if (values.localHeaderOffset === kSentinel32) values.localHeaderOffset = take('local header offset');
  if (values.diskStart === kSentinel16) {
    if (p + 4 > dataStart + dataSize) fail('corrupt', place, ep(`the zip64 extra field (${dataSize} bytes) is too short for the disk number`), dataStart - 4);
    if (w.u32(p) !== 0) fail('unsupported', place, ep(`a multi-disk archive (entry on disk ${w.u32(p)})`), at);
  }
}

// What a reader refuses in a central header: hostile names, other disks, encryption, methods
// other than stored and deflate, sentinels without their zip64 value, a stored entry that shrank.
function checkCentralRecord(name: string, nameBytes: Uint8Array, flags: number, method: number, values: CentralValues, at: number, place: LazyPlace, ep: (what: string) => string): void {
  const { compressedSize, size, localHeaderOffset, diskStart } = values;
  const hostile = hostileNameProblem(name);
  if (hostile !== undefined || nameBytes.includes(0)) fail('corrupt', place, ep(hostile ?? 'the entry name contains a NUL byte'), at);
  if (diskStart !== 0 && diskStart !== kSentinel16) fail('unsupported', place, ep(`a multi-disk archive (entry on disk ${diskStart})`), at);
  if ((flags & 0x41) !== 0 || method === 99) fail('unsupported', place, ep(`an encrypted entry (flags 0x${flags.toString(16).padStart(4, '0')}, method ${method})`), at);
  if (method !== 0 && method !== 8) fail('unsupported', place, ep(`compression method ${method} (only 0, stored, and 8, deflate, are read)`), at);
  if (size === kSentinel32 || compressedSize === kSentinel32 || localHeaderOffset === kSentinel32) {
    if (!values.zip64) fail('corrupt', place, ep('a size or offset field holds 0xFFFFFFFF, and there is no zip64 extra field with its value'), at);
  }
  if (method === 0 && compressedSize !== size) {
    fail('corrupt', place, ep(`a stored entry whose compressed size (${compressedSize}) differs from its size (${size})`), at);
  }
}

function forEachExtraRecord(
  w: ByteWindow,
  start: number,
  length: number,
  place: LazyPlace,
  where: (what: string) => string,
  each: (id: number, dataStart: number, dataSize: number) => void,
): void {
  let p = start;
  const end = start + length;
  while (p < end) {
    if (end - p < 4) fail('corrupt', place, where(`an extra field record at offset ${p} runs past the end of the extra field (${end - p} bytes left for its 4-byte header)`), p);
    const id = w.u16(p);
    const size = w.u16(p + 2);
    if (size > end - p - 4) fail('corrupt', place, where(`the extra field record 0x${id.toString(16).padStart(4, '0')} at offset ${p} (${size} bytes) runs past the end of the extra field`), p);
    each(id, p + 4, size);
    p += 4 + size;
  }
}

// File order, and what the central directory alone tells of the spans (spec §9.2 item 7): each
// entry's span must end before the next local header, the last one before the central directory.
function orderEntries(entries: ZipEntry[], centralOffset: number, src: ErrorPlace): void {
  entries.sort((a, b) => a.localHeaderOffset - b.localHeaderOffset);
  entries.forEach((e, i) => {
    e.index = i;
    const next = entries[i + 1];
    e.limit = next === undefined ? centralOffset : next.localHeaderOffset;
    const place = (): ErrorPlace => ({ ...src, entry: `entry ${quote(e.name)}` });
    if (next !== undefined && next.localHeaderOffset === e.localHeaderOffset) {
      fail('corrupt', place, `shares its local header at offset ${e.localHeaderOffset} with entry ${quote(next.name)}`, e.localHeaderOffset);
    }
    const minimalEnd = checkedAdd(checkedAdd(e.localHeaderOffset, kLocalSize + e.nameBytes.byteLength, 'a local header', place), e.compressedSize, 'an entry', place);
    if (minimalEnd > e.limit) {
      const what = next === undefined ? `the central directory at offset ${centralOffset}` : `entry ${quote(next.name)} at offset ${next.localHeaderOffset}`;
      fail('corrupt', place, `its local header at offset ${e.localHeaderOffset} and ${e.compressedSize} bytes of data overlap ${what}`, e.localHeaderOffset);
    }
  });
}

/** How many bytes from the local header offset hold the whole header, for a first read (name, and a typical extra field). */
export function localHeaderGuess(e: ZipEntry): number {
  return Math.min(e.limit - e.localHeaderOffset, kLocalSize + e.nameBytes.byteLength + 20 + 4 + 65536 / 64 + 128);
}

/**
 * Checks the local header of `e` held in `w` against its central record (spec §9.2 items 6, 7,
 * 12), sets e.local and returns undefined; or returns how many bytes from the local header offset
 * the window must hold to check it.
 */
export function checkLocalHeader(w: ByteWindow, e: ZipEntry, src: ErrorPlace, findings: Finding[]): number | undefined {
  if (e.local !== undefined) return undefined;
  const lho = e.localHeaderOffset;
  const place = (): ErrorPlace => ({ ...src, entry: `entry ${quote(e.name)}` });
  const lp = (what: string): string => `local header at offset ${lho}: ${what}`;
  if (!w.contains(lho, kLocalSize)) return kLocalSize;
  if (w.u32(lho) !== kLocalSignature) fail('corrupt', place, lp('wrong signature'), lho);
  const nameLength = w.u16(lho + 26);
  const extraLength = w.u16(lho + 28);
  const headerEnd = lho + kLocalSize + nameLength + extraLength;
  if (headerEnd > e.limit) fail('corrupt', place, lp(`the header (${headerEnd - lho} bytes) runs into ${limitText(e)}`), lho);
  if (!w.contains(lho, headerEnd - lho)) return headerEnd - lho;
  if (!bytesEqual(w.slice(lho + kLocalSize, nameLength), e.nameBytes)) {
    fail('corrupt', place, lp(`its name ${quote(decodeText(w.slice(lho + kLocalSize, nameLength)))} differs from the central directory's`), lho);
  }
  const method = w.u16(lho + 8);
  if (method !== e.method) fail('corrupt', place, lp(`compression method ${method}, the central directory says ${e.method}`), lho);
  if ((w.u16(lho + 6) & 8) !== (e.flags & 8)) fail('corrupt', place, lp('flag bit 3 (data descriptor) differs from the central directory'), lho);
  const extra = readLocalExtra(w, e, lho + kLocalSize + nameLength, extraLength, place, lp, findings);
  compareWithCentral(w, e, extra, place, lp, findings);
  const dataOffset = headerEnd;
  const end = checkedAdd(dataOffset, e.compressedSize, 'the entry data', place);
  if (end > e.limit) fail('corrupt', place, `its data (offset ${dataOffset}, ${e.compressedSize} bytes) overlaps ${limitText(e)}`, dataOffset);
  e.local = { dataOffset, dataEnd: end, end, declaredAlignment: extra.declaredAlignment, descriptorPending: e.hasDataDescriptor, zip64: extra.zip64 };
  if (e.hasDataDescriptor) findings.push(warning('layout', 'a data descriptor follows its data (flag bit 3)', { entry: e.name, offset: end }));
  return undefined;
}

/** What a local header's extra field gives: the sizes (zip64), the declared alignment (0xD935). */
interface LocalExtra {
  compressedSize: number;
  size: number;
  zip64: boolean;
  declaredAlignment: number | undefined;
}

// The extra field of a local header (spec §3.4): a zip64 record, an alignment record, in that
// order, and nothing else (findings).
function readLocalExtra(w: ByteWindow, e: ZipEntry, start: number, length: number, place: LazyPlace, lp: (what: string) => string, findings: Finding[]): LocalExtra {
  const lho = e.localHeaderOffset;
  const extra: LocalExtra = { compressedSize: w.u32(lho + 18), size: w.u32(lho + 22), zip64: false, declaredAlignment: undefined };
  const records: number[] = [];
  forEachExtraRecord(w, start, length, place, lp, (id, dataStart, dataSize) => {
    records.push(id);
    if (id === kZip64ExtraId) {
      if (extra.zip64) fail('corrupt', place, lp('two zip64 extra fields'), dataStart - 4);
      extra.zip64 = true;
      let p = dataStart;
      const take = (what: string): number => {
        if (p + 8 > dataStart + dataSize) fail('corrupt', place, lp(`the zip64 extra field (${dataSize} bytes) is too short for the ${what}`), dataStart - 4);
        const v = toSafeOffset(w.u64(p), lp(`the zip64 ${what}`), place, p);
        p += 8;
        return v;
      };
      if (extra.size === kSentinel32) extra.size = take('uncompressed size');
      if (extra.compressedSize === kSentinel32) extra.compressedSize = take('compressed size');
    } else if (id === kAlignmentExtraId) {
      const problem = alignmentRecordProblem(w, dataStart, dataSize);
      if (problem !== undefined) {
        findings.push(warning('layout', lp(`its alignment record (0xD935) ${problem}`), { entry: e.name, offset: dataStart - 4 }));
      } else {
        extra.declaredAlignment = w.u16(dataStart) === 0 ? 65536 : w.u16(dataStart);
      }
    } else {
      findings.push(warning('layout', lp(`an extra field record with id 0x${id.toString(16).padStart(4, '0')}`), { entry: e.name, offset: dataStart - 4 }));
    }
  });
  if (extra.zip64 && e.size < kSentinel32 && e.compressedSize < kSentinel32) {
    findings.push(warning('layout', lp('a zip64 extra field, though its sizes fit the header (spec §5.1 item 3)'), { entry: e.name, offset: lho }));
  }
  if (records.length > 1 && !(records.length === 2 && records[0] === kZip64ExtraId && records[1] === kAlignmentExtraId)) {
    findings.push(warning('layout', lp('its extra field holds other records than a zip64 record followed by an alignment record (spec §3.4 item 1)'), { entry: e.name, offset: lho }));
  }
  return extra;
}

// Spec §9.2 item 6: the CRC-32 and sizes must agree with the central header (unless a data
// descriptor carries them); other fields that differ are a finding.
function compareWithCentral(w: ByteWindow, e: ZipEntry, extra: LocalExtra, place: LazyPlace, lp: (what: string) => string, findings: Finding[]): void {
  const lho = e.localHeaderOffset;
  if (!e.hasDataDescriptor) {
    const crc = w.u32(lho + 14);
    if (crc !== e.crc32) fail('corrupt', place, lp(`CRC-32 0x${hex32(crc)}, the central directory says 0x${hex32(e.crc32)}`), lho);
    if (extra.compressedSize !== e.compressedSize) fail('corrupt', place, lp(`compressed size ${extra.compressedSize}, the central directory says ${e.compressedSize}`), lho);
    if (extra.size !== e.size) fail('corrupt', place, lp(`size ${extra.size}, the central directory says ${e.size}`), lho);
  }
  const flags = w.u16(lho + 6);
  const mismatches: string[] = [];
  if (flags !== e.flags) mismatches.push(`flags 0x${flags.toString(16)} (central 0x${e.flags.toString(16)})`);
  if (w.u16(lho + 4) !== e.versionNeeded) mismatches.push(`version needed ${w.u16(lho + 4)} (central ${e.versionNeeded})`);
  if (w.u16(lho + 10) !== e.time || w.u16(lho + 12) !== e.date) mismatches.push('the modification time');
  if (mismatches.length > 0) {
    findings.push(warning('zip', lp(`differs from the central directory in ${mismatches.join(', ')}`), { entry: e.name, offset: lho }));
  }
}

/**
 * Checks the data descriptor of `e` (after checkLocalHeader) held in `w` against the central
 * record, and sets where the entry's span ends; or returns how many bytes from the end of its data
 * the window must hold to check it.
 */
export function checkDescriptor(w: ByteWindow, e: ZipEntry, src: ErrorPlace): number | undefined {
  const local = e.local;
  if (local === undefined || !local.descriptorPending) return undefined;
  const place = (): ErrorPlace => ({ ...src, entry: `entry ${quote(e.name)}` });
  const at = local.dataEnd;
  const room = e.limit - at;
  const width = e.centralZip64 || local.zip64 ? 8 : 4;
  if (room < 4 + 2 * width) fail('corrupt', place, `its data descriptor at offset ${at} (${4 + 2 * width} bytes at least) overlaps ${limitText(e)}`, at);
  if (!w.contains(at, 4)) return 4;
  const signed = w.u32(at) === kDescriptorSignature;
  const length = (signed ? 4 : 0) + 4 + 2 * width;
  if (length > room) fail('corrupt', place, `its data descriptor at offset ${at} (${length} bytes) overlaps ${limitText(e)}`, at);
  if (!w.contains(at, length)) return length;
  const p = at + (signed ? 4 : 0);
  const crc = w.u32(p);
  const compressed = width === 8 ? w.u64(p + 4) : BigInt(w.u32(p + 4));
  const size = width === 8 ? w.u64(p + 4 + width) : BigInt(w.u32(p + 4 + width));
  if (crc !== e.crc32 || compressed !== BigInt(e.compressedSize) || size !== BigInt(e.size)) {
    fail('corrupt', place, `its data descriptor at offset ${at} (CRC-32 0x${hex32(crc)}, sizes ${compressed} and ${size}) contradicts the central directory (0x${hex32(e.crc32)}, ${e.compressedSize} and ${e.size})`, at);
  }
  e.local = { ...local, end: at + length, descriptorPending: false };
  return undefined;
}


function alignmentRecordProblem(w: ByteWindow, dataStart: number, dataSize: number): string | undefined {
  if (dataSize < 2) return `has ${dataSize} data bytes, fewer than 2`;
  const value = w.u16(dataStart);
  const a = value === 0 ? 65536 : value;
  if (a < 64 || (a & (a - 1)) !== 0) return `declares alignment ${value}, not a power of two from 64 to 65536`;
  for (let i = 2; i < dataSize; ++i) if (w.bytes[dataStart + i - w.base] !== 0) return 'has padding bytes that are not zero';
  return undefined;
}

function limitText(e: ZipEntry): string {
  return `the next local header or the central directory (offset ${e.limit})`;
}

function hex32(v: number): string {
  return v.toString(16).padStart(8, '0');
}

/** The central header's values that differ from the fixed ones of spec §3.1, in words. */
function headerValueProblems(e: ZipEntry): string[] {
  const needs64 = e.size >= kSentinel32 || e.localHeaderOffset >= kSentinel32;
  const values: string[] = [];
  if (e.versionNeeded !== (needs64 ? 45 : 20)) values.push(`version needed ${e.versionNeeded}`);
  if (e.versionMadeBy !== (needs64 ? 0x032d : 0x0314)) values.push(`version made by 0x${e.versionMadeBy.toString(16)}`);
  if (e.flags !== 0x0800) values.push(`flags 0x${e.flags.toString(16)}`);
  if (e.time !== 0 || e.date !== 0x21) values.push('a modification time other than 1980-01-01 00:00');
  if (e.externalAttributes !== 0x81a40000) values.push(`external attributes 0x${e.externalAttributes.toString(16)}`);
  if (e.internalAttributes !== 0) values.push(`internal attributes ${e.internalAttributes}`);
  if (e.centralZip64 !== needs64) values.push(e.centralZip64 ? 'a zip64 extra field it does not need' : 'no zip64 extra field');
  return values;
}

/** The findings only a whole-archive view gives: gaps, alignment, fixed header values (spec §9.3). */
export function layoutFindings(dir: ZipDirectory): Finding[] {
  const out: Finding[] = [];
  const declared = new Set<number>();
  for (const e of dir.entries) if (e.local?.declaredAlignment !== undefined) declared.add(e.local.declaredAlignment);
  if (declared.size > 1) out.push(warning('layout', `alignment records declare different alignments: ${[...declared].join(', ')}`));
  const archiveAlignment = declared.size === 1 ? [...declared][0]! : 64;
  let previousEnd = 0;
  for (const e of dir.entries) {
    const local = e.local;
    if (local === undefined) continue;
    const gap = e.localHeaderOffset - previousEnd;
    // Spec §4.4: with A = 65536 a writer may leave a 64-byte gap of zeros before a local header.
    if (gap > 0 && !(archiveAlignment === 65536 && gap <= 64)) {
      out.push(warning('layout', `${gap} bytes that belong to no entry before its local header (offset ${previousEnd})`, { entry: e.name, offset: previousEnd }));
    }
    previousEnd = local.end;
    if (local.dataOffset % 64 !== 0) {
      out.push(warning('layout', `its data offset ${local.dataOffset} is not a multiple of 64`, { entry: e.name, offset: local.dataOffset }));
    } else if (local.dataOffset % archiveAlignment !== 0) {
      out.push(warning('layout', `its data offset ${local.dataOffset} is not a multiple of the archive's alignment ${archiveAlignment}`, { entry: e.name, offset: local.dataOffset }));
    }
    if (!e.isStored) out.push(warning('layout', `a deflated entry (${e.compressedSize} bytes inflating to ${e.size}): not zero-copy`, { entry: e.name, offset: e.localHeaderOffset }));
    const values = headerValueProblems(e);
    if (values.length > 0) out.push(warning('layout', `central header values other than spec §3.1's: ${values.join(', ')}`, { entry: e.name, offset: e.centralOffset }));
  }
  if (dir.entries.some((e, i) => e.centralIndex !== i)) {
    out.push(warning('layout', 'the central directory lists the entries in another order than their local headers (spec §2.4 item 4)', { offset: dir.centralOffset }));
  }
  if (dir.centralOffset > previousEnd && dir.entries.every((e) => e.local !== undefined)) {
    out.push(warning('layout', `${dir.centralOffset - previousEnd} bytes that belong to no entry before the central directory (offset ${previousEnd})`, { offset: previousEnd }));
  }
  return out;
}

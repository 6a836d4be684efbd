// The model's tensors against the archive's entries (spec §9.4 items 3-5, §6): every external
// tensor's reference checked and resolved to its entry, every inline one's data against its dims
// and type, and the entries no tensor explains.

import { OnnxzipError, quote, type ErrorPlace } from './errors.js';
import { warning, type Finding } from './findings.js';
import { isIntegrityEntry } from './integrity.js';
import { isReservedName, kModelEntryName, payloadNameProblem } from './names.js';
import { DataType, dataTypeName, elementBits, payloadSize, typedFieldNames, type TensorRecord } from './onnx.js';
import type { SourceKind } from './source.js';
import { externalTensorInfo, inlineTensorInfo, type TensorInfo } from './tensor_info.js';
import type { ZipDirectory, ZipEntry } from './zip.js';

/** A tensor the archive lists (internal): its record, and its entry when it is external. */
export interface ListedTensor {
  readonly info: TensorInfo;
  readonly record: TensorRecord;
  /** The payload entry; undefined for an inline tensor. */
  readonly entry: ZipEntry | undefined;
  /** Why an inline tensor's payload cannot be read (spec §9.4 item 5), or undefined. */
  readonly problem: string | undefined;
}

/** An external tensor and its entry (internal). */
export interface ResolvedTensor extends ListedTensor {
  readonly entry: ZipEntry;
}

export interface ResolvedTensors {
  /** Every tensor that holds data, in the walk's order (spec §7.5). */
  readonly listed: readonly ListedTensor[];
  /** The external ones, in the same order. */
  readonly external: readonly ResolvedTensor[];
}

const kDecimal = /^[0-9]+$/;
const kTwoTo64 = 1n << 64n;

export function tensorLabel(t: { name: string; site: string }): string {
  return `tensor ${quote(t.name)} at ${t.site}`;
}

/**
 * Spec §9.4 item 3 (rejects) and item 4 (findings) for every EXTERNAL tensor; item 5 for the
 * others. Tensors without a fixed-size payload (STRING, UNDEFINED, unknown types) and inline ones
 * whose dims give no size are not listed (the latter with their finding).
 */
export function resolveReferences(records: readonly TensorRecord[], dir: ZipDirectory, src: ErrorPlace, sourceKind: SourceKind, findings: Finding[]): ResolvedTensors {
  const listed: ListedTensor[] = [];
  const external: ResolvedTensor[] = [];
  for (const r of records) {
    if (r.dataLocation === 1n) {
      const t = resolveExternal(r, dir, src, sourceKind, findings);
      listed.push(t);
      external.push(t);
    } else {
      const t = checkInline(r, findings);
      if (t !== undefined) listed.push(t);
    }
  }
  return { listed, external };
}

function checkInline(r: TensorRecord, findings: Finding[]): ListedTensor | undefined {
  const label = tensorLabel({ name: r.name ?? '', site: r.site });
  if (r.externalData.length > 0) {
    findings.push(warning('reference', 'external_data on a tensor whose data_location is not EXTERNAL: ignored', { tensor: label }));
  }
  const problem = inlinePayloadProblem(r);
  if (problem !== undefined) findings.push(warning('model', `an inline tensor whose payload disagrees with its dims and data type: ${problem} (spec §9.4 item 5)`, { tensor: label }));
  const bits = elementBits(r.dataType);
  const size = bits === undefined ? undefined : payloadSize(r.dims, bits);
  if (typeof size !== 'bigint' || size > BigInt(Number.MAX_SAFE_INTEGER) || r.dims.some((d) => d > BigInt(Number.MAX_SAFE_INTEGER))) return undefined;
  const info = inlineTensorInfo({ name: r.name ?? '', site: r.site, dataType: r.dataType, dims: r.dims.map(Number), size: Number(size) });
  return { info, record: r, entry: undefined, problem };
}

/** The external_data keys, each once (location, offset and length twice: corrupt). */
function externalDataKeys(r: TensorRecord, reject: (problem: string) => never): Map<string, string> {
  const seen = new Map<string, string>();
  for (const { key, value } of r.externalData) {
    if ((key === 'location' || key === 'offset' || key === 'length') && seen.has(key)) {
      reject(`external_data has the key '${key}' more than once`);
    }
    if (!seen.has(key)) seen.set(key, value);
  }
  for (const key of ['offset', 'length']) {
    const v = seen.get(key);
    if (v !== undefined && (!kDecimal.test(v) || BigInt(v) >= kTwoTo64)) {
      reject(`external_data ${key} ${quote(v)} is not a decimal number below 2^64`);
    }
  }
  return seen;
}

/** The entry a reference names (spec §6.1, §7.2), and what the tensor may not carry besides. */
function referencedEntry(r: TensorRecord, location: string | undefined, dir: ZipDirectory, reject: (problem: string) => never): ZipEntry {
  if (location === undefined) reject('external data without a location');
  const nameProblem = payloadNameProblem(location);
  if (nameProblem !== undefined) reject(`its location ${quote(location)} is not a payload entry name: it ${nameProblem} (spec §6.1)`);
  const entry = dir.byName.get(location);
  if (entry === undefined) reject(`its location ${quote(location)} names no entry of the archive`);
  if (r.rawDataLength !== undefined) reject('an EXTERNAL tensor that also carries raw_data');
  for (const field of r.typedCounts.keys()) reject(`an EXTERNAL tensor that also carries ${typedFieldNames.get(field) ?? field}`);
  if (r.dataType === DataType.STRING || r.dataType === DataType.UNDEFINED) {
    reject(`an EXTERNAL tensor of type ${dataTypeName(r.dataType)} (spec §7.2 item 5)`);
  }
  return entry;
}

function resolveExternal(r: TensorRecord, dir: ZipDirectory, src: ErrorPlace, sourceKind: SourceKind, findings: Finding[]): ResolvedTensor {
  // Labels and places are built when a finding or an error needs them.
  const label = (): string => tensorLabel({ name: r.name ?? '', site: r.site });
  const place = (): ErrorPlace => ({ ...src, tensor: r.name ?? '', site: r.site });
  const reject = (problem: string): never => {
    throw new OnnxzipError('corrupt', place(), problem);
  };
  const keys = externalDataKeys(r, reject);
  const e = referencedEntry(r, keys.get('location'), dir, reject);
  const entryPlace = (): ErrorPlace => ({ ...place(), entry: e.name });
  const atEntry = { offset: e.localHeaderOffset }; // As the C++ reader: the entry's local header.
  const bits = elementBits(r.dataType);
  if (bits === undefined) throw new OnnxzipError('unsupported', place(), `data type ${r.dataType} is not one this reader knows`);
  const size = payloadSize(r.dims, bits);
  if (typeof size === 'string') reject(size);
  if (BigInt(e.size) !== size) {
    throw new OnnxzipError('corrupt', entryPlace(), `the entry has ${e.size} bytes, the tensor's dims ${dimsText(r.dims)} of ${dataTypeName(r.dataType)} need ${size} (spec §7.3)`, atEntry);
  }
  const length = keys.get('length');
  if (length !== undefined && BigInt(length) !== BigInt(e.size)) {
    throw new OnnxzipError('corrupt', entryPlace(), `external_data length ${length} differs from the entry's size ${e.size}`, atEntry);
  }
  const offset = keys.get('offset');
  if (offset !== undefined && BigInt(offset) !== 0n) {
    throw new OnnxzipError('corrupt', entryPlace(), `external_data offset ${offset} is not 0: a payload starts at its entry's first byte (spec §7.2 item 4)`, atEntry);
  }
  const keyFinding = externalDataKeysFinding(r, length);
  if (keyFinding !== undefined) findings.push(warning('reference', keyFinding, { tensor: label(), entry: e.name }));
  const dims = r.dims.map((d) => {
    if (d > BigInt(Number.MAX_SAFE_INTEGER)) throw new OnnxzipError('unsupported', place(), `dim ${d} is past 2^53 - 1, which JavaScript numbers cannot hold`);
    return Number(d);
  });
  const info = externalTensorInfo({ name: r.name ?? '', site: r.site, dataType: r.dataType, dims, size: e.size }, e, sourceKind);
  return { info, record: r, entry: e, problem: undefined };
}

/** Spec §9.4 item 4: keys other than exactly [location, length], or a length with leading zeros. */
function externalDataKeysFinding(r: TensorRecord, length: string | undefined): string | undefined {
  const keys = r.externalData.map((kv) => kv.key);
  const leadingZeros = length !== undefined && length.length > 1 && length.startsWith('0');
  const canonical = keys.length === 2 && keys[0] === 'location' && keys[1] === 'length' && length !== undefined && !leadingZeros;
  if (canonical) return undefined;
  return `external_data keys are [${keys.join(', ')}]${leadingZeros ? ` (length ${quote(length)} has leading zeros)` : ''}, not exactly [location, length] (spec §7.2 items 3-4, §9.4 item 4)`;
}

function dimsText(dims: readonly bigint[]): string {
  return `[${dims.join(', ')}]`;
}

/** Spec §9.4 item 5; the same rule, in the same order, as the C++ library's payload_problem. */
export function inlinePayloadProblem(r: TensorRecord): string | undefined {
  const typed = [...r.typedCounts.keys()];
  const present = (r.rawDataLength !== undefined ? 1 : 0) + typed.length;
  if (present > 1) return `it carries ${[...(r.rawDataLength !== undefined ? ['raw_data'] : []), ...typed.map((f) => typedFieldNames.get(f) ?? String(f))].join(' and ')}`;
  let count = 1n;
  for (const [i, d] of r.dims.entries()) {
    if (d < 0n) return `dims[${i}] is negative (${d})`;
    count *= d;
    if (count >= kTwoTo64) return 'its element count overflows 64 bits';
  }
  if (r.dataType === DataType.STRING) return stringPayloadProblem(r, typed, count);
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

function stringPayloadProblem(r: TensorRecord, typed: readonly number[], count: bigint): string | undefined {
  if (r.rawDataLength !== undefined) return 'a STRING tensor with raw_data';
  const strings = BigInt(r.typedCounts.get(6) ?? 0);
  if (typed.length > 0 && typed[0] !== 6) return `a STRING tensor with ${typedFieldNames.get(typed[0]!)}`;
  if (strings !== count && !(strings === 0n && count === 0n)) return `string_data holds ${strings} strings, dims say ${count}`;
  return undefined;
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
export function entryFindings(dir: ZipDirectory, external: readonly ResolvedTensor[]): Finding[] {
  const out: Finding[] = [];
  const referenced = new Set(external.map((t) => t.entry));
  for (const e of dir.entries) {
    if (e.name === kModelEntryName) continue;
    if (isIntegrityEntry(e.name)) continue; // Spec §12: known to a version 1.1 reader, checked by verify().
    // A folder entry (a name ending in '/', which `zip -r` records) is no payload: the ZIP
    // layer's finding says what it is.
    if (e.name.endsWith('/')) continue;
    if (isReservedName(e.name)) {
      out.push(warning('zip', `an entry with a reserved name this reader does not know (spec §6.2, §11); ignored`, { entry: e.name, offset: e.localHeaderOffset }));
      continue;
    }
    const problem = payloadNameProblem(e.name);
    if (problem !== undefined) out.push(warning('zip', `the entry name ${problem} (spec §6.1)`, { entry: e.name, offset: e.localHeaderOffset }));
    if (!referenced.has(e)) out.push(warning('reference', 'no tensor refers to this entry (spec §7.2)', { entry: e.name, offset: e.localHeaderOffset }));
  }
  return out;
}

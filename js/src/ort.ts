// ONNX Runtime (onnxruntime-node, onnxruntime-web) without copying the archive twice.
//
// Whatever the route, tensors below kInlineBelow bytes go inline (see there).
//
// Two routes, chosen by createSession:
//  * externalData (browsers, bytes, Blobs, URLs; ORT-web anywhere): the model bytes and, per entry,
//    {path: entry name, data}. Every location in an archive already is an entry name, so the model
//    goes to ORT unchanged -- except for the tensors ORT does not look up in `externalData`. Measured
//    with ORT 1.30 (test/ort/sites.test.mjs, README "What ONNX Runtime resolves"): both ORT-node
//    and ORT-web resolve in-memory external data for the initializers of the main graph and the
//    `value` of its Constant nodes, and for nothing else -- not initializers or Constants of
//    subgraphs (If/Loop/Scan bodies: "should be stored in X, but it is not regular file"), not
//    other attribute tensors, not sparse tensors; ORT-node not function bodies' Constants; ORT-node
//    refuses an empty buffer ("contains null pointers"). Those tensors are written inline into the
//    model bytes (raw_data), the rest stay external.
//  * the file route (a file source with ORT-node): the model bytes with every location rewritten to
//    the archive's own file name plus the entry's offset and length, and ORT's session option
//    `session.model_external_initializers_file_folder_path` set to the archive's folder: ORT opens
//    and maps the archive itself, resolves every site (subgraphs included), and no weight passes
//    through JavaScript.

import { tensorLabel, type Archive, type ResolvedTensor } from './archive.js';
import { OnnxzipError } from './errors.js';
import { kTensorFieldDataLocation, kTensorFieldExternalData, kTensorFieldRawData, type TensorRecord } from './onnx.js';
import { lengthDelimitedPrefix, Pieces, spliceSubmessages, stringField, WireReader, type SubmessageEdit } from './protobuf.js';

/** What ORT's `externalData` session option takes, as this package gives it. */
export interface ExternalDataFile {
  /** The location the model's tensors name: the entry name. */
  readonly path: string;
  /** The entry's bytes: a view (memory sources), a lazy Blob slice (Blob and File sources, ORT-web), or a buffer. */
  readonly data: Uint8Array | Blob;
}

/** The model bytes and external data to give ORT, and what was done to the model. */
export interface OrtModel {
  readonly model: Uint8Array;
  readonly externalData: readonly ExternalDataFile[];
  /** Tensors written inline into `model` because ORT would not resolve them from externalData. */
  readonly inlined: readonly string[];
}

/** Which ORT will load the model: ORT-node takes only typed arrays, ORT-web also Blobs. */
export type OrtFlavor = 'node' | 'web';

/**
 * Tensors smaller than this are written inline for ORT whatever their site: ORT's shape inference
 * reads the values of shape-like inputs (a ConstantOfShape's or Reshape's shape) when it loads the
 * model, before it reads any external data, and refuses external ones ("Cannot parse data from
 * external tensors") -- from a file path too. Those tensors are tiny; 1 KiB is the writers'
 * default threshold (spec §7.4), below which no archive the default writer makes has an entry.
 */
export const kInlineBelow = 1024;

/** The sites ORT 1.30 resolves from in-memory externalData (see the module comment). */
export function resolvableFromExternalData(t: TensorRecord, flavor: OrtFlavor, size: number, inlineBelow = kInlineBelow): boolean {
  void flavor; // Both resolve the same sites, but for functions (ORT-web) and empty buffers (ORT-node): inlined.
  if (!t.inMainGraph || t.inSparseTensor) return false;
  if (!t.isInitializer && !t.isConstantValue) return false;
  return size > 0 && size >= inlineBelow;
}

/**
 * The model and `externalData` for ORT: every tensor at a site ORT resolves from externalData stays
 * external, the others are inlined (their entries read now).
 */
export async function ortExternalData(archive: Archive, flavor: OrtFlavor, inlineBelow = kInlineBelow): Promise<OrtModel> {
  const external: ResolvedTensor[] = [];
  const inline: ResolvedTensor[] = [];
  for (const t of archive.resolved) {
    const deflated = !t.entry.isStored;
    if (!deflated && resolvableFromExternalData(t.record, flavor, t.entry.size, inlineBelow)) external.push(t);
    else inline.push(t);
  }
  const entries = [...new Set(external.map((t) => t.entry))];
  const blobs = archive.source.blobSlice !== undefined && flavor === 'web';
  // One read for every entry ORT gets, external or inlined (for a URL, one request).
  const read = await archive.readEntries([...(blobs ? [] : entries), ...inline.map((t) => t.entry)], true);
  // Lazy slices: ORT-web reads each when it needs it. The local headers were checked at open.
  const data: Array<Uint8Array | Blob> = blobs ? entries.map((e) => archive.source.blobSlice!(e.local!.dataOffset, e.compressedSize)) : read.slice(0, entries.length);
  const externalData = entries.map((e, i) => ({ path: e.name, data: data[i]! }));
  const model = inline.length === 0 ? archive.modelBytes : inlineTensors(archive, inline, read.slice(read.length - inline.length));
  return { model, externalData, inlined: inline.map((t) => tensorLabel(t.info)) };
}

/**
 * The model bytes with these tensors written inline (raw_data) instead of referring to their
 * entries; `payloads` are their entries' bytes (readEntries), in their order.
 */
export function inlineTensors(archive: Archive, tensors: readonly ResolvedTensor[], payloads: readonly Uint8Array[]): Uint8Array {
  const edits: SubmessageEdit[] = tensors.map((t, i) => ({
    path: t.record.path,
    payload: rewriteTensor(archive.modelBytes, t.record, (out) => {
      out.push(lengthDelimitedPrefix(kTensorFieldRawData, payloads[i]!.byteLength));
      out.push(payloads[i]!);
    }, true),
  }));
  return spliceSubmessages(archive.modelBytes, 0, archive.modelBytes.byteLength, edits).join();
}

/**
 * The TensorProto at `t` with its external_data (and, when `dropLocation`, its data_location)
 * removed and `add` appended. Every other field is kept byte for byte.
 */
function rewriteTensor(model: Uint8Array, t: TensorRecord, add: (out: Pieces) => void, dropLocation: boolean): Pieces {
  const span = t.path[t.path.length - 1]!;
  const out = new Pieces();
  const r = new WireReader(model, span.start, span.end, (problem) => {
    throw new OnnxzipError('corrupt', {}, problem);
  });
  while (!r.atEnd()) {
    const start = r.pos;
    const { field, wire } = r.tag();
    r.skip(wire, field);
    if (field === kTensorFieldExternalData || (dropLocation && field === kTensorFieldDataLocation)) continue;
    out.push(model.subarray(start, r.pos));
  }
  add(out);
  return out;
}

/**
 * The model for ORT-node's file route: every external tensor's location is the archive's file
 * name, with the entry's offset and length; deflated entries and tensors below `inlineBelow`
 * bytes are inlined.
 */
export async function ortFileModel(archive: Archive, fileName: string, inlineBelow = kInlineBelow): Promise<OrtModel> {
  const inline = archive.resolved.filter((t) => !t.entry.isStored || t.entry.size < inlineBelow);
  const payloads = await archive.readEntries(inline.map((t) => t.entry));
  const edits: SubmessageEdit[] = archive.resolved.map((t) => {
    const k = inline.indexOf(t);
    if (k >= 0) {
      return {
        path: t.record.path,
        payload: rewriteTensor(archive.modelBytes, t.record, (out) => {
          out.push(lengthDelimitedPrefix(kTensorFieldRawData, payloads[k]!.byteLength));
          out.push(payloads[k]!);
        }, true),
      };
    }
    const local = t.entry.local;
    if (local === undefined) throw new OnnxzipError('bad_state', { source: archive.sourceName, entry: t.entry.name }, 'its local header has not been read');
    return {
      path: t.record.path,
      payload: rewriteTensor(archive.modelBytes, t.record, (out) => {
        for (const [key, value] of [['location', fileName], ['offset', String(local.dataOffset)], ['length', String(t.entry.size)]] as const) {
          const entry = new Pieces();
          entry.push(stringField(1, key));
          entry.push(stringField(2, value));
          out.push(lengthDelimitedPrefix(kTensorFieldExternalData, entry.length));
          out.append(entry);
        }
      }, false),
    };
  });
  return {
    model: spliceSubmessages(archive.modelBytes, 0, archive.modelBytes.byteLength, edits).join(),
    externalData: [],
    inlined: inline.map((t) => tensorLabel(t.info)),
  };
}

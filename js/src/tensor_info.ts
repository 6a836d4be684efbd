// The tensor record of spec/names.md, as the archive lists its tensors.

import { dataTypeName } from './onnx.js';
import type { SourceKind } from './source.js';
import { arrayElementBytes } from './typed.js';
import type { ZipEntry } from './zip.js';

/** One tensor of the model that holds data, external (an entry's payload, spec §7.2) or inline. */
export interface TensorInfo {
  /** TensorProto.name ("" when absent). */
  readonly name: string;
  /** Where it sits in the model: "graph/initializer[3]", "graph/node[5]/then_branch/node[0]/value"... */
  readonly site: string;
  /** Its payload entry's name; "" for an inline tensor. */
  readonly entry: string;
  /** TensorProto.data_type (onnx.proto's DataType). */
  readonly dataType: number;
  /** The data type's name: "FLOAT", "FLOAT16"... */
  readonly dataTypeName: string;
  readonly dims: readonly number[];
  /** Payload bytes (spec §7.3). */
  readonly size: number;
  /**
   * The file offset of its entry's data; undefined for an inline tensor, and for a URL until the
   * entry has been read (its local header is read with it).
   */
  readonly offset: number | undefined;
  /** The largest power of two (at most 65536) dividing `offset`; 0 while `offset` is undefined. */
  readonly alignment: number;
  /** Its payload sits inside the model (no entry). */
  readonly inline: boolean;
  /** getTensor lends the source's bytes (a view of an ArrayBuffer or typed array source, no copy). */
  readonly zeroCopy: boolean;
}

/** The largest power of two dividing `offset`, capped at 65536 (offset 0 counts as 65536). */
export function alignmentOf(offset: number | undefined): number {
  if (offset === undefined) return 0;
  let a = 1;
  while (a < 65536 && offset % (a * 2) === 0) a *= 2;
  return a;
}

interface Described {
  readonly name: string;
  readonly site: string;
  readonly dataType: number;
  readonly dims: readonly number[];
  readonly size: number;
}

/** The record of an external tensor; its offset follows the entry (for a URL it appears once read). */
export function externalTensorInfo(t: Described, e: ZipEntry, sourceKind: SourceKind): TensorInfo {
  const elementBytes = arrayElementBytes(t.dataType) ?? 1;
  const zeroCopy = sourceKind === 'memory' && e.isStored && (e.local?.dataOffset ?? 0) % elementBytes === 0;
  return {
    name: t.name,
    site: t.site,
    entry: e.name,
    dataType: t.dataType,
    dataTypeName: dataTypeName(t.dataType),
    dims: t.dims,
    size: t.size,
    get offset() {
      return e.local?.dataOffset;
    },
    get alignment() {
      return alignmentOf(e.local?.dataOffset);
    },
    inline: false,
    zeroCopy,
  };
}

export function inlineTensorInfo(t: Described): TensorInfo {
  const { name, site, dataType, dims, size } = t;
  return { name, site, entry: '', dataType, dataTypeName: dataTypeName(dataType), dims, size, offset: undefined, alignment: 0, inline: true, zeroCopy: false };
}

// The parts of onnx.proto this package reads: a walk of a serialized ModelProto that finds every
// TensorProto it can hold (spec §7.5: initializers, sparse initializers, node attributes,
// subgraphs at any depth, functions and their attribute defaults, training information) and reads
// of each what the archive layer needs -- name, data type, dims, where its data is -- plus the
// field spans that let the model be rewritten around it. Nothing else of the model is decoded.

import { decodeText } from './bytes.js';
import {
  kWireI32,
  kWireI64,
  kWireLen,
  kWireVarint,
  WireReader,
  type FieldSpan,
  type WireFail,
} from './protobuf.js';

/** TensorProto.DataType values (onnx.proto). */
export const DataType = {
  UNDEFINED: 0,
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  UINT16: 4,
  INT16: 5,
  INT32: 6,
  INT64: 7,
  STRING: 8,
  BOOL: 9,
  FLOAT16: 10,
  DOUBLE: 11,
  UINT32: 12,
  UINT64: 13,
  COMPLEX64: 14,
  COMPLEX128: 15,
  BFLOAT16: 16,
  FLOAT8E4M3FN: 17,
  FLOAT8E4M3FNUZ: 18,
  FLOAT8E5M2: 19,
  FLOAT8E5M2FNUZ: 20,
  UINT4: 21,
  INT4: 22,
  FLOAT4E2M1: 23,
  FLOAT8E8M0: 24,
  UINT2: 25,
  INT2: 26,
} as const;

const dataTypeNames: ReadonlyMap<number, string> = new Map(Object.entries(DataType).map(([k, v]) => [v, k]));

/** The data type's name ("FLOAT"), or its number when onnx.proto has no such value. */
export function dataTypeName(dataType: number): string {
  return dataTypeNames.get(dataType) ?? String(dataType);
}

/** Element width in bits of a fixed-size data type (spec §7.3), or undefined (STRING, UNDEFINED, unknown). */
export function elementBits(dataType: number): number | undefined {
  switch (dataType) {
    case DataType.UINT2:
    case DataType.INT2:
      return 2;
    case DataType.UINT4:
    case DataType.INT4:
    case DataType.FLOAT4E2M1:
      return 4;
    case DataType.UINT8:
    case DataType.INT8:
    case DataType.BOOL:
    case DataType.FLOAT8E4M3FN:
    case DataType.FLOAT8E4M3FNUZ:
    case DataType.FLOAT8E5M2:
    case DataType.FLOAT8E5M2FNUZ:
    case DataType.FLOAT8E8M0:
      return 8;
    case DataType.UINT16:
    case DataType.INT16:
    case DataType.FLOAT16:
    case DataType.BFLOAT16:
      return 16;
    case DataType.FLOAT:
    case DataType.INT32:
    case DataType.UINT32:
      return 32;
    case DataType.INT64:
    case DataType.DOUBLE:
    case DataType.UINT64:
    case DataType.COMPLEX64:
      return 64;
    case DataType.COMPLEX128:
      return 128;
    default:
      return undefined;
  }
}

const kTwoTo64 = 1n << 64n;

/**
 * The payload size S of spec §7.3 for these dims, or a problem: a negative dim, or an element count
 * or size past 2^64 - 1 (the overflow §9.4 item 3 rejects). `bits` from elementBits.
 */
export function payloadSize(dims: readonly bigint[], bits: number): bigint | string {
  let count = 1n;
  for (let i = 0; i < dims.length; ++i) {
    const d = dims[i]!;
    if (d < 0n) return `dims[${i}] is negative (${d})`;
    count *= d;
    if (count >= kTwoTo64) return `the element count overflows 64 bits at dims[${i}]`;
  }
  const size = (count * BigInt(bits) + 7n) / 8n;
  if (size >= kTwoTo64) return `the size of ${count} elements of ${bits} bits overflows 64 bits`;
  return size;
}

/** TensorProto fields (onnx.proto). */
const T = {
  dims: 1,
  dataType: 2,
  floatData: 4,
  int32Data: 5,
  stringData: 6,
  int64Data: 7,
  name: 8,
  rawData: 9,
  doubleData: 10,
  uint64Data: 11,
  externalData: 13,
  dataLocation: 14,
} as const;

/** The typed data fields, by field number. */
export const typedFieldNames: ReadonlyMap<number, string> = new Map([
  [T.floatData, 'float_data'],
  [T.int32Data, 'int32_data'],
  [T.stringData, 'string_data'],
  [T.int64Data, 'int64_data'],
  [T.doubleData, 'double_data'],
  [T.uint64Data, 'uint64_data'],
]);

export const kTensorFieldExternalData = T.externalData;
export const kTensorFieldDataLocation = T.dataLocation;
export const kTensorFieldRawData = T.rawData;

/** One external_data key/value of a TensorProto, in the order they appear. */
export interface KeyValue {
  readonly key: string;
  readonly value: string;
}

/** Where a TensorProto sits in the model, and what the walk read of it. */
export interface TensorRecord {
  /** Its place: "graph/initializer[3]", "graph/node[2]/then_branch/node[0]/value"... */
  readonly site: string;
  /** The chain of fields from the ModelProto to this TensorProto (for rewriting it). */
  readonly path: readonly FieldSpan[];
  /** In ModelProto.graph itself: not in a subgraph, a function or training information. */
  readonly inMainGraph: boolean;
  /** A graph initializer (GraphProto.initializer), of whichever graph. */
  readonly isInitializer: boolean;
  /** The `value` attribute (field t) of a Constant node of the default domain. */
  readonly isConstantValue: boolean;
  /** values or indices of a SparseTensorProto. */
  readonly inSparseTensor: boolean;
  readonly name: string | undefined;
  readonly dataType: number;
  readonly dims: readonly bigint[];
  readonly dataLocation: bigint;
  readonly externalData: readonly KeyValue[];
  /** raw_data's length, or undefined when absent. */
  readonly rawDataLength: number | undefined;
  /** Element counts of the typed data fields present, by field number. */
  readonly typedCounts: ReadonlyMap<number, number>;
}

/** What the walk reads of one TensorProto, as it reads it. */
interface TensorFields {
  name: string | undefined;
  dataType: number;
  dataLocation: bigint;
  readonly dims: bigint[];
  readonly externalData: KeyValue[];
  rawDataLength: number | undefined;
  typedCounts: Map<number, number> | undefined;
}

export interface ModelWalk {
  readonly tensors: readonly TensorRecord[];
}

export interface WalkOptions {
  /** Messages nested deeper than this (the ModelProto counting as 1) are refused. */
  readonly maxDepth: number;
}

/** ModelProto fields. */
const M = { graph: 7, trainingInfo: 20, functions: 25 } as const;
/** GraphProto fields. */
const G = { node: 1, initializer: 5, sparseInitializer: 15 } as const;
/** NodeProto fields. */
const N = { name: 3, opType: 4, attribute: 5, domain: 7 } as const;
/** AttributeProto fields. */
const A = { name: 1, t: 5, g: 6, tensors: 10, graphs: 11, sparseTensor: 22, sparseTensors: 23 } as const;
/** FunctionProto fields. */
const F = { name: 1, node: 7, attributeProto: 11 } as const;
/** SparseTensorProto fields. */
const S = { values: 1, indices: 2 } as const;
/** TrainingInfoProto fields. */
const TI = { initialization: 1, algorithm: 2 } as const;

/**
 * Walks the ModelProto in `bytes` and returns every TensorProto it holds, in the order they appear.
 * Every message on the way is checked to be well-formed protobuf (the fields this walk does not
 * read are skipped, not decoded); `fail` reports the first problem.
 */
export function walkModel(bytes: Uint8Array, options: WalkOptions, fail: WireFail): ModelWalk {
  const tensors: TensorRecord[] = [];
  const walker = new Walker(bytes, options, fail, tensors);
  walker.model();
  return { tensors };
}

// Where the walk is: a chain of the messages it entered, each with the segment it adds to the
// site ("node", 3 for "node[3]"). Sites and paths are built only for tensors (and errors): the
// walk enters a message per node, attribute and initializer, and building both for each of them
// was most of what opening an archive allocated.
interface Context {
  readonly outer: Context | undefined;
  readonly span: FieldSpan;
  readonly name: string;
  /** The segment's index ("node[3]"), or -1 for none ("graph"). */
  readonly index: number;
  /** An attribute: in the path (its span) but not in the site, which names the attribute's field instead. */
  readonly hidden: boolean;
  readonly depth: number;
  readonly inMainGraph: boolean;
}

function segmentOf(c: Context): string {
  return c.index < 0 ? c.name : `${c.name}[${c.index}]`;
}

/** The site of `c`: its segments joined by '/', but for the attributes it is inside of. */
function siteOf(c: Context): string {
  const segments: string[] = [];
  for (let at: Context | undefined = c; at !== undefined; at = at.outer) {
    if (at.hidden && at !== c) continue;
    segments.push(segmentOf(at));
  }
  return segments.reverse().join('/');
}

function pathOf(c: Context): FieldSpan[] {
  const path: FieldSpan[] = [];
  for (let at: Context | undefined = c; at !== undefined; at = at.outer) path.push(at.span);
  return path.reverse();
}

/** Whether bytes [start, end) are the ASCII `text` (opType and domain are compared, not decoded). */
function bytesAre(bytes: Uint8Array, start: number, end: number, text: string): boolean {
  if (end - start !== text.length) return false;
  for (let i = 0; i < text.length; ++i) if (bytes[start + i] !== text.charCodeAt(i)) return false;
  return true;
}

const kNoTypedCounts: ReadonlyMap<number, number> = new Map();

class Walker {
  constructor(
    private readonly bytes: Uint8Array,
    private readonly options: WalkOptions,
    private readonly fail: WireFail,
    private readonly tensors: TensorRecord[],
  ) {}

  model(): void {
    const r = new WireReader(this.bytes, 0, this.bytes.byteLength, this.fail);
    let functionIndex = 0;
    let trainingIndex = 0;
    while (!r.atEnd()) {
      const keyStart = r.pos;
      const { field, wire } = r.tag();
      if (field === M.graph && wire === kWireLen) {
        this.graph(this.enter(undefined, r.lengthDelimited(keyStart), 'graph', -1, true));
      } else if (field === M.functions && wire === kWireLen) {
        this.function(this.enter(undefined, r.lengthDelimited(keyStart), 'functions', functionIndex++, false));
      } else if (field === M.trainingInfo && wire === kWireLen) {
        this.trainingInfo(this.enter(undefined, r.lengthDelimited(keyStart), 'training_info', trainingIndex++, false));
      } else {
        r.skip(wire, field);
      }
    }
  }

  // The ModelProto counts as depth 1.
  private enter(outer: Context | undefined, span: FieldSpan, name: string, index: number, inMainGraph: boolean, hidden = false): Context {
    const c: Context = { outer, span, name, index, hidden, depth: (outer?.depth ?? 1) + 1, inMainGraph };
    if (c.depth > this.options.maxDepth) {
      this.fail(`messages nested more than ${this.options.maxDepth} deep (at ${segmentOf(c)})`, span.keyStart);
    }
    return c;
  }

  private reader(c: Context): WireReader {
    return new WireReader(this.bytes, c.span.start, c.span.end, this.fail);
  }

  private graph(c: Context): void {
    const r = this.reader(c);
    let node = 0;
    let initializer = 0;
    let sparse = 0;
    while (!r.atEnd()) {
      const keyStart = r.pos;
      const { field, wire } = r.tag();
      if (field === G.node && wire === kWireLen) {
        this.node(this.enter(c, r.lengthDelimited(keyStart), 'node', node++, c.inMainGraph));
      } else if (field === G.initializer && wire === kWireLen) {
        const t = this.enter(c, r.lengthDelimited(keyStart), 'initializer', initializer++, c.inMainGraph);
        this.tensor(t, true, false, false);
      } else if (field === G.sparseInitializer && wire === kWireLen) {
        this.sparseTensor(this.enter(c, r.lengthDelimited(keyStart), 'sparse_initializer', sparse++, c.inMainGraph));
      } else {
        r.skip(wire, field);
      }
    }
  }

  private function(c: Context): void {
    const r = this.reader(c);
    let node = 0;
    let attribute = 0;
    while (!r.atEnd()) {
      const keyStart = r.pos;
      const { field, wire } = r.tag();
      if (field === F.node && wire === kWireLen) {
        this.node(this.enter(c, r.lengthDelimited(keyStart), 'node', node++, false));
      } else if (field === F.attributeProto && wire === kWireLen) {
        // A function's attribute defaults: sites "functions[0]/attribute_proto[1]/...".
        this.attribute(this.enter(c, r.lengthDelimited(keyStart), 'attribute_proto', attribute++, false), false);
      } else {
        r.skip(wire, field);
      }
    }
  }

  private trainingInfo(c: Context): void {
    const r = this.reader(c);
    while (!r.atEnd()) {
      const keyStart = r.pos;
      const { field, wire } = r.tag();
      if (field === TI.initialization && wire === kWireLen) {
        this.graph(this.enter(c, r.lengthDelimited(keyStart), 'initialization', -1, false));
      } else if (field === TI.algorithm && wire === kWireLen) {
        this.graph(this.enter(c, r.lengthDelimited(keyStart), 'algorithm', -1, false));
      } else {
        r.skip(wire, field);
      }
    }
  }

  // The op type may follow the attributes, so they are read after the whole node.
  private node(c: Context): void {
    const r = this.reader(c);
    let isConstantOp = false;
    let defaultDomain = true;
    let attributes: FieldSpan[] | undefined;
    while (!r.atEnd()) {
      const keyStart = r.pos;
      const { field, wire } = r.tag();
      if (field === N.attribute && wire === kWireLen) {
        (attributes ??= []).push(r.lengthDelimited(keyStart));
      } else if (field === N.opType && wire === kWireLen) {
        const start = r.skipLengthDelimited();
        isConstantOp = bytesAre(this.bytes, start, r.pos, 'Constant');
      } else if (field === N.domain && wire === kWireLen) {
        const start = r.skipLengthDelimited();
        defaultDomain = start === r.pos || bytesAre(this.bytes, start, r.pos, 'ai.onnx');
      } else {
        r.skip(wire, field);
      }
    }
    const isConstant = isConstantOp && defaultDomain;
    attributes?.forEach((span, i) => this.attribute(this.enter(c, span, 'attribute', i, c.inMainGraph, true), isConstant));
  }

  // Sites name a node's attribute rather than its index: "node[3]/value", "node[3]/then_branch"
  // ("node[3]/attribute[2]" when it has no name). A function's attribute_proto keeps its
  // index, and adds its name: "functions[0]/attribute_proto[1]/value".
  private attribute(c: Context, ofConstant: boolean): void {
    const r = this.reader(c);
    let name = '';
    let found: Array<{ field: number; span: FieldSpan }> | undefined;
    while (!r.atEnd()) {
      const keyStart = r.pos;
      const { field, wire } = r.tag();
      if (wire === kWireLen && (field === A.t || field === A.g || field === A.tensors || field === A.graphs || field === A.sparseTensor || field === A.sparseTensors)) {
        (found ??= []).push({ field, span: r.lengthDelimited(keyStart) });
      } else if (field === A.name && wire === kWireLen) {
        const start = r.skipLengthDelimited();
        name = decodeText(this.bytes.subarray(start, r.pos));
      } else {
        r.skip(wire, field);
      }
    }
    if (found === undefined) return;
    const label = name !== '' || !c.hidden ? name : `attribute[${c.index}]`;
    const counts = new Map<number, number>();
    for (const { field, span } of found) {
      const n = counts.get(field) ?? 0;
      counts.set(field, n + 1);
      this.attributeValue(c, field, span, label, n, ofConstant && name === 'value');
    }
  }

  // The n-th value of an attribute's field: a tensor (`t`, `tensors`), a subgraph (`g`,
  // `graphs`) or a sparse tensor; single fields take no index in the site.
  private attributeValue(c: Context, field: number, span: FieldSpan, label: string, n: number, isConstantValue: boolean): void {
    switch (field) {
      case A.t:
        return this.tensor(this.enter(c, span, label, -1, c.inMainGraph), false, isConstantValue, false);
      case A.tensors:
        return this.tensor(this.enter(c, span, label, n, c.inMainGraph), false, false, false);
      case A.g:
        return this.graph(this.enter(c, span, label, -1, false));
      case A.graphs:
        return this.graph(this.enter(c, span, label, n, false));
      case A.sparseTensor:
        return this.sparseTensor(this.enter(c, span, label, -1, c.inMainGraph));
      default:
        return this.sparseTensor(this.enter(c, span, label, n, c.inMainGraph));
    }
  }

  private sparseTensor(c: Context): void {
    const r = this.reader(c);
    while (!r.atEnd()) {
      const keyStart = r.pos;
      const { field, wire } = r.tag();
      if ((field === S.values || field === S.indices) && wire === kWireLen) {
        const t = this.enter(c, r.lengthDelimited(keyStart), field === S.values ? 'values' : 'indices', -1, c.inMainGraph);
        this.tensor(t, false, false, true);
      } else {
        r.skip(wire, field);
      }
    }
  }

  private tensor(c: Context, isInitializer: boolean, isConstantValue: boolean, inSparseTensor: boolean): void {
    const r = this.reader(c);
    const t: TensorFields = { name: undefined, dataType: 0, dataLocation: 0n, dims: [], externalData: [], rawDataLength: undefined, typedCounts: undefined };
    while (!r.atEnd()) {
      const keyStart = r.pos;
      const { field, wire } = r.tag();
      if (typedFieldNames.has(field)) {
        const count = this.typedField(r, field, wire, keyStart, c);
        t.typedCounts ??= new Map();
        t.typedCounts.set(field, (t.typedCounts.get(field) ?? 0) + count);
      } else {
        this.tensorField(r, field, wire, keyStart, c, t);
      }
    }
    this.tensors.push({
      site: siteOf(c),
      path: pathOf(c),
      inMainGraph: c.inMainGraph,
      isInitializer,
      isConstantValue,
      inSparseTensor,
      name: t.name,
      dataType: t.dataType,
      dims: t.dims,
      dataLocation: t.dataLocation,
      externalData: t.externalData,
      rawDataLength: t.rawDataLength,
      typedCounts: t.typedCounts ?? kNoTypedCounts,
    });
  }

  /** A TensorProto field other than the typed data fields: read into `t`, or skipped. */
  private tensorField(r: WireReader, field: number, wire: number, keyStart: number, c: Context, t: TensorFields): void {
    switch (field) {
      case T.dims:
        if (wire === kWireVarint) t.dims.push(r.int64());
        else if (wire === kWireLen) this.packedVarints(r.lengthDelimited(keyStart), (v) => t.dims.push(BigInt.asIntN(64, v)));
        else this.wrongWire(c, 'dims', keyStart);
        return;
      case T.dataType:
        if (wire !== kWireVarint) this.wrongWire(c, 'data_type', keyStart);
        t.dataType = r.int32();
        return;
      case T.dataLocation:
        if (wire !== kWireVarint) this.wrongWire(c, 'data_location', keyStart);
        t.dataLocation = BigInt(r.int32());
        return;
      case T.name: {
        if (wire !== kWireLen) this.wrongWire(c, 'name', keyStart);
        const start = r.skipLengthDelimited();
        t.name = decodeText(this.bytes.subarray(start, r.pos));
        return;
      }
      case T.rawData: {
        if (wire !== kWireLen) this.wrongWire(c, 'raw_data', keyStart);
        const start = r.skipLengthDelimited();
        t.rawDataLength = r.pos - start;
        return;
      }
      case T.externalData:
        if (wire !== kWireLen) this.wrongWire(c, 'external_data', keyStart);
        t.externalData.push(this.keyValue(r.lengthDelimited(keyStart)));
        return;
      default:
        r.skip(wire, field);
    }
  }

  /** Skips a typed data field (float_data...), returning how many values it holds. */
  private typedField(r: WireReader, field: number, wire: number, keyStart: number, c: Context): number {
    switch (field) {
      case T.floatData:
        return this.fixedCount(r, wire, kWireI32, 4, c, 'float_data', keyStart);
      case T.doubleData:
        return this.fixedCount(r, wire, kWireI64, 8, c, 'double_data', keyStart);
      case T.stringData:
        if (wire !== kWireLen) this.wrongWire(c, 'string_data', keyStart);
        r.skipLengthDelimited();
        return 1;
      default: {
        // int32_data, int64_data, uint64_data: varints, one or packed.
        if (wire === kWireVarint) {
          r.skipVarint();
          return 1;
        }
        if (wire !== kWireLen) this.wrongWire(c, typedFieldNames.get(field) ?? String(field), keyStart);
        let count = 0;
        this.packedVarints(r.lengthDelimited(keyStart), () => ++count);
        return count;
      }
    }
  }

  private keyValue(span: FieldSpan): KeyValue {
    const r = new WireReader(this.bytes, span.start, span.end, this.fail);
    let key = '';
    let value = '';
    while (!r.atEnd()) {
      const keyStart = r.pos;
      const { field, wire } = r.tag();
      if ((field === 1 || field === 2) && wire === kWireLen) {
        const s = r.lengthDelimited(keyStart);
        const text = decodeText(this.bytes.subarray(s.start, s.end));
        if (field === 1) key = text;
        else value = text;
      } else if (field === 1 || field === 2) {
        this.fail(`StringStringEntryProto field ${field} has wire type ${wire}, not 2`, keyStart);
      } else {
        r.skip(wire, field);
      }
    }
    return { key, value };
  }

  private packedVarints(span: FieldSpan, each: (v: bigint) => void): void {
    const r = new WireReader(this.bytes, span.start, span.end, this.fail);
    while (!r.atEnd()) each(r.varint());
  }

  private fixedCount(r: WireReader, wire: number, single: number, width: number, c: Context, what: string, keyStart: number): number {
    if (wire === single) {
      r.skip(wire, 0);
      return 1;
    }
    if (wire === kWireLen) {
      const s = r.lengthDelimited(keyStart);
      if ((s.end - s.start) % width !== 0) this.fail(`packed ${what} of ${s.end - s.start} bytes at ${siteOf(c)} is not a whole number of ${width}-byte values`, keyStart);
      return (s.end - s.start) / width;
    }
    return this.wrongWire(c, what, keyStart);
  }

  private wrongWire(c: Context, what: string, at: number): never {
    return this.fail(`TensorProto field ${what} at ${siteOf(c)} has the wrong wire type`, at);
  }
}

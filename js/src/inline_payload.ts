// An inline tensor's payload as spec §7.3 lays a payload out: the bytes of its raw_data, or its
// typed field's values written as raw_data would hold them (little-endian at the element's width;
// 16- and 8-bit types from int32_data, one packed byte per int32_data entry for the sub-byte
// types, UINT32 from uint64_data), as the C++ library's typed_data_to_raw writes them.

import { DataType, elementBits, type TensorRecord } from './onnx.js';
import { kWireLen, kWireVarint, WireReader, type WireFail } from './protobuf.js';
import { allocateFor } from './source.js';

/** TensorProto fields (onnx.proto). */
const kFloatData = 4;
const kInt32Data = 5;
const kInt64Data = 7;
const kRawData = 9;
const kDoubleData = 10;
const kUint64Data = 11;

/** Bytes one value of the typed `field` takes in raw form for `dataType`. */
function rawUnit(field: number, dataType: number): number {
  switch (field) {
    case kFloatData:
      return 4;
    case kDoubleData:
    case kInt64Data:
      return 8;
    case kUint64Data:
      return dataType === DataType.UINT32 ? 4 : 8;
    default:
      return Math.max(elementBits(dataType) ?? 8, 8) / 8;
  }
}

/** Writes integer values as `unit`-byte little-endian integers (truncating, as a C cast does). */
class RawWriter {
  at = 0;
  private readonly view: DataView;

  constructor(readonly out: Uint8Array) {
    this.view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  }

  bytes(part: Uint8Array): void {
    this.out.set(part, this.at);
    this.at += part.byteLength;
  }

  integer(value: bigint, unit: number): void {
    if (unit === 8) this.view.setBigUint64(this.at, BigInt.asUintN(64, value), true);
    else if (unit === 4) this.view.setUint32(this.at, Number(BigInt.asUintN(32, value)), true);
    else if (unit === 2) this.view.setUint16(this.at, Number(BigInt.asUintN(16, value)), true);
    else this.view.setUint8(this.at, Number(BigInt.asUintN(8, value)));
    this.at += unit;
  }
}

/**
 * The payload of the inline tensor `record` (whose data agrees with its dims and type: spec §9.4
 * item 5 found no problem), `size` bytes, in a new 64-byte aligned buffer. `model` holds the
 * ModelProto the record was walked from.
 */
export function inlinePayload(model: Uint8Array, record: TensorRecord, size: number, fail: WireFail): Uint8Array {
  const span = record.path[record.path.length - 1]!;
  const out = new RawWriter(allocateFor({ offset: 0, length: size }));
  const r = new WireReader(model, span.start, span.end, fail);
  while (!r.atEnd()) {
    const keyStart = r.pos;
    const { field, wire } = r.tag();
    if (field === kRawData && wire === kWireLen) {
      const s = r.lengthDelimited(keyStart);
      out.bytes(model.subarray(s.start, s.end));
    } else if (field === kFloatData || field === kDoubleData) {
      const width = field === kFloatData ? 4 : 8;
      const start = r.pos;
      if (wire === kWireLen) {
        const s = r.lengthDelimited(keyStart);
        out.bytes(model.subarray(s.start, s.end));
      } else {
        r.skip(wire, field);
        out.bytes(model.subarray(start, start + width));
      }
    } else if (field === kInt32Data || field === kInt64Data || field === kUint64Data) {
      const unit = rawUnit(field, record.dataType);
      if (wire === kWireVarint) {
        out.integer(r.varint(), unit);
      } else {
        const s = r.lengthDelimited(keyStart);
        const packed = new WireReader(model, s.start, s.end, fail);
        while (!packed.atEnd()) out.integer(packed.varint(), unit);
      }
    } else {
      r.skip(wire, field);
    }
  }
  // The walk checked the counts (spec §9.4 item 5): anything else is a bug of this reader.
  if (out.at !== size) fail(`the inline payload has ${out.at} bytes, its dims and data type need ${size}`, span.start);
  return out.out;
}


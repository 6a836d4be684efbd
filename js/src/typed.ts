// A tensor's payload as the typed array of its data type.

import { OnnxzipError, type ErrorPlace } from './errors.js';
import { DataType, dataTypeName } from './onnx.js';

/**
 * A tensor's data. FLOAT Float32Array, DOUBLE Float64Array, INT8 Int8Array, UINT8 and BOOL
 * Uint8Array, INT16 Int16Array, UINT16 Uint16Array, INT32 Int32Array, UINT32 Uint32Array, INT64
 * BigInt64Array, UINT64 BigUint64Array; COMPLEX64 and COMPLEX128 Float32Array / Float64Array of
 * (real, imaginary) pairs. Types JavaScript has no array for come as their raw unsigned integers:
 * FLOAT16 and BFLOAT16 Uint16Array of bit patterns, the 8-bit float types Uint8Array, and the packed
 * 4-bit and 2-bit types (UINT4, INT4, FLOAT4E2M1, UINT2, INT2) Uint8Array of their packed bytes
 * (spec §7.3: the first element in the low bits).
 */
export type TensorData =
  | Float32Array
  | Float64Array
  | Int8Array
  | Uint8Array
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | BigInt64Array
  | BigUint64Array;

interface ArrayKind {
  readonly bytes: number;
  readonly make: (buffer: ArrayBufferLike, byteOffset: number, length: number) => TensorData;
}

const f32: ArrayKind = { bytes: 4, make: (b, o, n) => new Float32Array(b, o, n) };
const f64: ArrayKind = { bytes: 8, make: (b, o, n) => new Float64Array(b, o, n) };
const i8: ArrayKind = { bytes: 1, make: (b, o, n) => new Int8Array(b, o, n) };
const u8: ArrayKind = { bytes: 1, make: (b, o, n) => new Uint8Array(b, o, n) };
const i16: ArrayKind = { bytes: 2, make: (b, o, n) => new Int16Array(b, o, n) };
const u16: ArrayKind = { bytes: 2, make: (b, o, n) => new Uint16Array(b, o, n) };
const i32: ArrayKind = { bytes: 4, make: (b, o, n) => new Int32Array(b, o, n) };
const u32: ArrayKind = { bytes: 4, make: (b, o, n) => new Uint32Array(b, o, n) };
const i64: ArrayKind = { bytes: 8, make: (b, o, n) => new BigInt64Array(b, o, n) };
const u64: ArrayKind = { bytes: 8, make: (b, o, n) => new BigUint64Array(b, o, n) };

function arrayKind(dataType: number): ArrayKind | undefined {
  switch (dataType) {
    case DataType.FLOAT:
    case DataType.COMPLEX64:
      return f32;
    case DataType.DOUBLE:
    case DataType.COMPLEX128:
      return f64;
    case DataType.INT8:
      return i8;
    case DataType.INT16:
      return i16;
    case DataType.UINT16:
    case DataType.FLOAT16:
    case DataType.BFLOAT16:
      return u16;
    case DataType.INT32:
      return i32;
    case DataType.UINT32:
      return u32;
    case DataType.INT64:
      return i64;
    case DataType.UINT64:
      return u64;
    case DataType.UINT8:
    case DataType.BOOL:
    case DataType.FLOAT8E4M3FN:
    case DataType.FLOAT8E4M3FNUZ:
    case DataType.FLOAT8E5M2:
    case DataType.FLOAT8E5M2FNUZ:
    case DataType.FLOAT8E8M0:
    case DataType.UINT4:
    case DataType.INT4:
    case DataType.FLOAT4E2M1:
    case DataType.UINT2:
    case DataType.INT2:
      return u8;
    default:
      return undefined;
  }
}

/** The bytes per element of the typed array getTensor gives for `dataType` (undefined: none). */
export function arrayElementBytes(dataType: number): number | undefined {
  return arrayKind(dataType)?.bytes;
}

const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** `bytes` as the typed array of `dataType`: a view when its offset allows, else a copy. */
export function tensorView(bytes: Uint8Array, t: { dataType: number }, place: ErrorPlace): TensorData {
  const kind = arrayKind(t.dataType);
  if (kind === undefined) throw new OnnxzipError('unsupported', place, `no typed array for data type ${dataTypeName(t.dataType)}`);
  if (kind.bytes > 1 && !littleEndian) {
    throw new OnnxzipError('unsupported', place, 'a big-endian platform: typed arrays would not read the little-endian payload');
  }
  let view = bytes;
  if (view.byteOffset % kind.bytes !== 0) view = view.slice();
  return kind.make(view.buffer, view.byteOffset, view.byteLength / kind.bytes);
}

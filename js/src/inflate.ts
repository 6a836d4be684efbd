// Deflated entries (spec §9.3 item 1), which archives other tools wrote may hold: inflated with
// the platform's DecompressionStream("deflate-raw") into a buffer of exactly the recorded size.
// The stream may never produce more than that, and must produce exactly that; the CRC-32 is
// checked on the way. Zip bombs are refused before anything is inflated (spec §9.3 item 1, the C++
// library's defaults): an entry above 1 MiB that claims more than maxCompressionRatio times its
// compressed size, or any entry above maxInflatedSize.

import { crc32 } from './crc32.js';
import { OnnxzipError, type ErrorPlace } from './errors.js';
import { withKind } from './findings.js';

export interface InflateLimits {
  readonly maxInflatedSize: number;
  /** 0: no limit. */
  readonly maxCompressionRatio: number;
}

const kRatioGraceSize = 1 << 20;

export function checkInflateLimits(compressedSize: number, size: number, limits: InflateLimits, place: ErrorPlace): void {
  if (size > limits.maxInflatedSize) {
    throw new OnnxzipError('limit_exceeded', place, `a deflated entry of ${compressedSize} bytes that inflates to ${size} bytes, more than the limit of ${limits.maxInflatedSize} (option maxInflatedSize)`);
  }
  if (limits.maxCompressionRatio > 0 && size > kRatioGraceSize && size > compressedSize * limits.maxCompressionRatio) {
    throw new OnnxzipError('limit_exceeded', place, `a deflated entry of ${compressedSize} bytes that inflates to ${size} bytes (${(size / Math.max(1, compressedSize)).toFixed(0)}:1), more than the limit of ${limits.maxCompressionRatio}:1 (option maxCompressionRatio): a zip bomb, or an archive to open with a higher limit`);
  }
}

/** The inflated bytes of a deflated entry, exactly `size` of them, with CRC-32 `crc`. */
export async function inflateRaw(compressed: Uint8Array, size: number, crc: number, place: ErrorPlace): Promise<Uint8Array> {
  let out: Uint8Array;
  try {
    out = new Uint8Array(size);
  } catch (e) {
    throw new OnnxzipError('limit_exceeded', place, `cannot allocate ${size} bytes to inflate the entry into: ${String(e)}`, { cause: e });
  }
  let at = 0;
  const inflater = new DecompressionStream('deflate-raw');
  const writer = inflater.writable.getWriter();
  // The write settles when the stream has taken the bytes; its errors surface through the reader.
  const input = compressed.buffer instanceof ArrayBuffer ? (compressed as Uint8Array<ArrayBuffer>) : compressed.slice();
  writer.write(input).then(() => writer.close()).catch(() => undefined);
  const reader = inflater.readable.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (value.byteLength > size - at) {
        throw new OnnxzipError('corrupt', place, `the deflate stream inflates to more than the recorded size of ${size} bytes`);
      }
      out.set(value, at);
      at += value.byteLength;
    }
  } catch (e) {
    await reader.cancel().catch(() => undefined);
    if (e instanceof OnnxzipError) throw e;
    throw new OnnxzipError('corrupt', place, `invalid deflate stream: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  if (at !== size) throw new OnnxzipError('corrupt', place, `the deflate stream inflates to ${at} bytes, the recorded size is ${size}`);
  const actual = crc32(out);
  if (actual !== crc) {
    throw withKind('crc', new OnnxzipError('corrupt', place, `CRC-32 mismatch: the data has 0x${actual.toString(16).padStart(8, '0')}, the archive records 0x${crc.toString(16).padStart(8, '0')}`));
  }
  return out;
}

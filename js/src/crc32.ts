// The ZIP CRC-32 (spec §3.1: reflected polynomial 0xEDB88320, initial value and final XOR
// 0xFFFFFFFF), slicing by 8: eight table lookups per 8 bytes.

const tables: Uint32Array[] = (() => {
  const out: Uint32Array[] = [];
  const first = new Uint32Array(256);
  for (let n = 0; n < 256; ++n) {
    let c = n;
    for (let k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    first[n] = c >>> 0;
  }
  out.push(first);
  for (let t = 1; t < 8; ++t) {
    const prev = out[t - 1]!;
    const table = new Uint32Array(256);
    for (let n = 0; n < 256; ++n) table[n] = (prev[n]! >>> 8) ^ first[prev[n]! & 0xff]!;
    out.push(table);
  }
  return out;
})();

/** The CRC-32 of `bytes` continued from `crc` (the CRC-32 of the bytes before them; 0 to start). */
export function crc32(bytes: Uint8Array, crc = 0): number {
  const [t0, t1, t2, t3, t4, t5, t6, t7] = tables as [
    Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array, Uint32Array,
  ];
  let c = ~crc >>> 0;
  let i = 0;
  const n = bytes.byteLength;
  const whole = n - (n % 8);
  while (i < whole) {
    const lo = (c ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24))) >>> 0;
    c =
      t7[lo & 0xff]! ^
      t6[(lo >>> 8) & 0xff]! ^
      t5[(lo >>> 16) & 0xff]! ^
      t4[lo >>> 24]! ^
      t3[bytes[i + 4]!]! ^
      t2[bytes[i + 5]!]! ^
      t1[bytes[i + 6]!]! ^
      t0[bytes[i + 7]!]!;
    i += 8;
  }
  while (i < n) c = t0[(c ^ bytes[i++]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

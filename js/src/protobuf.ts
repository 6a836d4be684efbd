// The protobuf wire format (https://protobuf.dev/programming-guides/encoding/): a bounded reader
// over a byte range, and the splicing writer that rewrites chosen submessages of a message and
// keeps every other byte as it is.
//
// The reader checks every length against the end of the enclosing message before it is used and
// never allocates from a number it read. Groups (wire types 3 and 4, deprecated, never written by
// ONNX) are skipped with their nested groups, as libprotobuf skips unknown fields.

export const kWireVarint = 0;
export const kWireI64 = 1;
export const kWireLen = 2;
export const kWireStartGroup = 3;
export const kWireEndGroup = 4;
export const kWireI32 = 5;

/** Reports a malformed message: `problem` at byte `at` of the message bytes. Never returns. */
export type WireFail = (problem: string, at: number) => never;

/** A length-delimited field: its key starts at `keyStart`, its payload is [start, end). */
export interface FieldSpan {
  readonly keyStart: number;
  readonly start: number;
  readonly end: number;
}

const kMaxGroupDepth = 100;

export class WireReader {
  pos: number;
  readonly end: number;
  /** The field number and wire type of the last tag() (see there). */
  field = 0;
  wire = 0;
  private readonly bytes: Uint8Array;
  private readonly fail: WireFail;

  constructor(bytes: Uint8Array, start: number, end: number, fail: WireFail) {
    this.bytes = bytes;
    this.pos = start;
    this.end = end;
    this.fail = fail;
  }

  atEnd(): boolean {
    return this.pos >= this.end;
  }

  /**
   * The next field's number and wire type; refuses field 0, numbers past 2^29 - 1 and wire types
   * 6, 7. What it returns is this reader, whose `field` and `wire` the next tag() changes: take
   * them at once (`const { field, wire } = r.tag()`). A walk reads a tag per field, and an object
   * for each was garbage at once.
   */
  tag(): { readonly field: number; readonly wire: number } {
    const at = this.pos;
    const short = this.shortVarint();
    if (short !== undefined) {
      // Bit operations below 2^32: division would box a double in V8's first tiers.
      const wire = short < 2 ** 32 ? short & 7 : short % 8;
      const field = short < 2 ** 32 ? short >>> 3 : Math.floor(short / 8);
      if (field === 0 || field > 0x1fffffff) this.fail(`invalid field number ${field} in a tag`, at);
      if (wire > 5) this.fail(`invalid wire type ${wire} in the tag of field ${field}`, at);
      this.field = field;
      this.wire = wire;
      return this;
    }
    const key = this.varint();
    const wire = Number(key & 7n);
    const field = key >> 3n;
    if (field === 0n || field > 0x1fffffffn) this.fail(`invalid field number ${field} in a tag`, at);
    if (wire > 5) this.fail(`invalid wire type ${wire} in the tag of field ${field}`, at);
    this.field = Number(field);
    this.wire = wire;
    return this;
  }

  /**
   * A varint below 2^49 (at most 7 bytes: every tag and length, most values) as a number, or
   * undefined, `pos` unmoved, for a longer one. Opening an archive walks the whole model once,
   * mostly before V8 optimizes this: a bigint per varint, and a boxed double per byte, were most
   * of what it allocated. The first four bytes are taken with int32 operations, which box nothing.
   */
  private shortVarint(): number | undefined {
    const at = this.pos;
    let value = 0;
    for (let shift = 0; shift < 49; shift += 7) {
      if (this.pos >= this.end) this.fail('a varint runs past the end of its message', at);
      const b = this.bytes[this.pos++]!;
      value = shift < 28 ? value | ((b & 0x7f) << shift) : value + (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return value;
    }
    this.pos = at;
    return undefined;
  }

  /** Skips a varint, with varint()'s checks. */
  skipVarint(): void {
    if (this.shortVarint() === undefined) this.varint();
  }

  /** A varint as an int32 field takes it: its low 32 bits, signed. */
  int32(): number {
    const short = this.shortVarint();
    return short !== undefined ? short | 0 : Number(BigInt.asIntN(32, this.varint()));
  }

  /** A varint of at most 10 bytes whose value fits 64 bits. */
  varint(): bigint {
    const at = this.pos;
    let low = 0;
    let shift = 0;
    // The first 7 bytes (49 bits) in a number, the rest in a bigint: most varints are short.
    while (shift < 49) {
      if (this.pos >= this.end) this.fail('a varint runs past the end of its message', at);
      const b = this.bytes[this.pos++]!;
      low += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return BigInt(low);
      shift += 7;
    }
    let value = BigInt(low);
    let bigShift = 49n;
    for (let i = 7; i < 10; ++i) {
      if (this.pos >= this.end) this.fail('a varint runs past the end of its message', at);
      const b = this.bytes[this.pos++]!;
      if (i === 9 && b > 1) this.fail('a varint overflows 64 bits', at);
      value |= BigInt(b & 0x7f) << bigShift;
      if (b < 0x80) return value;
      bigShift += 7n;
    }
    return this.fail('a varint is longer than 10 bytes', at);
  }

  /** A varint as a signed 64-bit value (int64 fields: negative numbers take 10 bytes). */
  int64(): bigint {
    return BigInt.asIntN(64, this.varint());
  }

  /** A length-delimited payload's [start, end), checked against the end of this message. */
  lengthDelimited(keyStart: number): FieldSpan {
    const start = this.skipLengthDelimited();
    return { keyStart, start, end: this.pos };
  }

  /** Skips a length-delimited payload, checked as lengthDelimited() checks it; returns where it started. */
  skipLengthDelimited(): number {
    const at = this.pos;
    const length = this.shortVarint() ?? this.varint();
    if (length > this.end - this.pos) {
      this.fail(`a field of ${length} bytes runs past the end of its message (${this.end - this.pos} bytes left)`, at);
    }
    const start = this.pos;
    this.pos += Number(length);
    return start;
  }

  /** Skips the value of a field whose tag was just read. */
  skip(wire: number, field: number, groupDepth = 0): void {
    const at = this.pos;
    switch (wire) {
      case kWireVarint:
        this.skipVarint();
        return;
      case kWireI64:
        this.advance(8, at);
        return;
      case kWireI32:
        this.advance(4, at);
        return;
      case kWireLen:
        this.skipLengthDelimited();
        return;
      case kWireStartGroup: {
        if (groupDepth >= kMaxGroupDepth) this.fail(`groups nested more than ${kMaxGroupDepth} deep`, at);
        for (;;) {
          if (this.atEnd()) this.fail(`group ${field} has no end`, at);
          const { field: innerField, wire: innerWire } = this.tag();
          if (innerWire === kWireEndGroup) {
            if (innerField !== field) this.fail(`group ${field} ends with the end of group ${innerField}`, at);
            return;
          }
          this.skip(innerWire, innerField, groupDepth + 1);
        }
      }
      default:
        this.fail(`unexpected end of group ${field}`, at);
    }
  }

  private advance(count: number, at: number): void {
    if (this.end - this.pos < count) this.fail(`a ${count}-byte value runs past the end of its message`, at);
    this.pos += count;
  }
}

/** The varint encoding of a non-negative safe integer. */
export function encodeVarint(value: number): Uint8Array {
  const out: number[] = [];
  let v = value;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return Uint8Array.from(out);
}

/** The key and length prefix of a length-delimited field. */
export function lengthDelimitedPrefix(field: number, length: number): Uint8Array {
  const key = encodeVarint(field * 8 + kWireLen);
  const len = encodeVarint(length);
  const out = new Uint8Array(key.byteLength + len.byteLength);
  out.set(key);
  out.set(len, key.byteLength);
  return out;
}

/** A string field (key, length, UTF-8 bytes). */
export function stringField(field: number, value: string): Uint8Array {
  const text = new TextEncoder().encode(value);
  const prefix = lengthDelimitedPrefix(field, text.byteLength);
  const out = new Uint8Array(prefix.byteLength + text.byteLength);
  out.set(prefix);
  out.set(text, prefix.byteLength);
  return out;
}

/**
 * Bytes built from pieces without copying them until the end: the model rewrite is a list of
 * slices of the original model with new fields between them.
 */
export class Pieces {
  readonly parts: Uint8Array[] = [];
  length = 0;

  push(part: Uint8Array): void {
    if (part.byteLength === 0) return;
    this.parts.push(part);
    this.length += part.byteLength;
  }

  append(other: Pieces): void {
    for (const p of other.parts) this.push(p);
  }

  join(): Uint8Array {
    const out = new Uint8Array(this.length);
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.byteLength;
    }
    return out;
  }
}

/** One submessage to replace: the chain of length-delimited fields that leads to it, outermost first. */
export interface SubmessageEdit {
  readonly path: readonly FieldSpan[];
  /** The new payload of the innermost field (its key is kept, its length prefix recomputed). */
  readonly payload: Pieces;
}

interface EditNode {
  readonly span: FieldSpan;
  payload: Pieces | undefined;
  readonly children: Map<number, EditNode>;
}

/**
 * `message[start, end)` with each edit's innermost field given its new payload, and the length
 * prefix of every enclosing field recomputed. Every other byte is kept as it is.
 */
export function spliceSubmessages(message: Uint8Array, start: number, end: number, edits: readonly SubmessageEdit[]): Pieces {
  const root = new Map<number, EditNode>();
  for (const edit of edits) {
    let level = root;
    edit.path.forEach((span, i) => {
      let node = level.get(span.keyStart);
      if (node === undefined) {
        node = { span, payload: undefined, children: new Map() };
        level.set(span.keyStart, node);
      }
      if (i === edit.path.length - 1) node.payload = edit.payload;
      level = node.children;
    });
  }
  return splice(message, start, end, root);
}

function splice(message: Uint8Array, start: number, end: number, edits: Map<number, EditNode>): Pieces {
  const out = new Pieces();
  let pos = start;
  for (const node of [...edits.values()].sort((a, b) => a.span.keyStart - b.span.keyStart)) {
    out.push(message.subarray(pos, node.span.keyStart));
    const payload = node.payload ?? splice(message, node.span.start, node.span.end, node.children);
    // The key is kept byte for byte; only the length that follows it changes.
    const keyEnd = keyLength(message, node.span.keyStart);
    out.push(message.subarray(node.span.keyStart, keyEnd));
    out.push(encodeVarint(payload.length));
    out.append(payload);
    pos = node.span.end;
  }
  out.push(message.subarray(pos, end));
  return out;
}

function keyLength(message: Uint8Array, keyStart: number): number {
  let at = keyStart;
  while (message[at]! >= 0x80) ++at;
  return at + 1;
}

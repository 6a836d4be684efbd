// Strict JSON for the integrity entries (spec §12.1 item 3): the size bounded before a byte is
// parsed, UTF-8 checked, JSON.parse for the syntax and the values, then one scan of the text for
// what JSON.parse hides -- a key given twice in one object (JSON.parse keeps the last; a signed
// document must say one thing) and the spelling of numbers (JSON.parse turns 1e3 and 2^64 + 1 into
// doubles; the C++ reader, whose parser keeps integers apart, refuses them as sizes).

import { OnnxzipError, quote, type ErrorPlace } from './errors.js';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export interface JsonDocument {
  readonly value: JsonValue;
  /** The text of every number, by its path ("predicate.onnxzip.entries[0].size"). */
  readonly numbers: ReadonlyMap<string, string>;
}

/** Thrown as a problem of the entry at `place`; `limitName` names the option that bounds it. */
export function parseJson(bytes: Uint8Array, place: ErrorPlace, limit: number, limitName: string): JsonDocument {
  if (bytes.byteLength > limit) {
    throw new OnnxzipError('limit_exceeded', place, `${bytes.byteLength} bytes, more than the limit of ${limit} (${limitName})`);
  }
  let text: string;
  try {
    // As the C++ reader (nlohmann::json skips one), a leading byte order mark is dropped.
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new OnnxzipError('corrupt', place, 'not valid JSON (not valid UTF-8)');
  }
  if (tooDeep(text)) {
    throw new OnnxzipError('corrupt', place, `not valid JSON for this entry: arrays and objects nested more than ${kMaxJsonDepth} deep (spec §12.1 item 3)`);
  }
  let value: JsonValue;
  try {
    value = JSON.parse(text) as JsonValue;
  } catch (e) {
    throw new OnnxzipError('corrupt', place, `not valid JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  return { value, numbers: scan(text, place) };
}

/** The deepest nesting of arrays and objects accepted (spec §12.1 item 3); the top level is 1. */
export const kMaxJsonDepth = 64;

// Checked before JSON.parse, which would build every level of a hostile entry made of '['.
function tooDeep(text: string): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; ++i) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: its brackets are not structure.
      for (++i; i < text.length && text.charCodeAt(i) !== 0x22; ++i) if (text.charCodeAt(i) === 0x5c) ++i;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > kMaxJsonDepth) return true;
    } else if (c === 0x5d || c === 0x7d) {
      --depth;
    }
  }
  return false;
}

interface Frame {
  /** The keys seen, for an object; undefined for an array. */
  readonly keys: Set<string> | undefined;
  key: string;
  index: number;
  expectKey: boolean;
}

/** Duplicate keys and number spellings of text that JSON.parse accepted. */
function scan(text: string, place: ErrorPlace): Map<string, string> {
  const numbers = new Map<string, string>();
  const stack: Frame[] = [];
  const path = (): string => stack.map((f, i) => (f.keys !== undefined ? `${i > 0 ? '.' : ''}${f.key}` : `[${f.index}]`)).join('');
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    const top = stack[stack.length - 1];
    if (c === '{' || c === '[') {
      stack.push({ keys: c === '{' ? new Set() : undefined, key: '', index: 0, expectKey: c === '{' });
      ++i;
    } else if (c === '}' || c === ']') {
      stack.pop();
      ++i;
    } else if (c === ',') {
      if (top !== undefined) {
        if (top.keys === undefined) ++top.index;
        else top.expectKey = true;
      }
      ++i;
    } else if (c === ':') {
      if (top !== undefined) top.expectKey = false;
      ++i;
    } else if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (top?.keys !== undefined && top.expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.keys.has(key)) {
          throw new OnnxzipError('corrupt', place, `the key ${quote(key)} appears twice in one object (a signed document must say one thing)`);
        }
        top.keys.add(key);
        top.key = key;
      }
      i = j + 1;
    } else if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      ++i;
    } else {
      let j = i;
      while (j < text.length && !',]} \t\n\r'.includes(text[j]!)) ++j;
      if (c === '-' || (c >= '0' && c <= '9')) numbers.set(path(), text.slice(i, j));
      i = j;
    }
  }
  return numbers;
}

/** What a JSON value is, in words, as the C++ reader says it. */
export function kindOf(value: JsonValue | undefined): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'object':
      return 'an object';
    case 'string':
      return 'a string';
    case 'boolean':
      return 'a boolean';
    case 'number':
      return 'a number';
    default:
      return 'not a JSON value';
  }
}

/** Typed access to a parsed document; every failure is corrupt, naming the field. */
export class JsonReader {
  constructor(
    private readonly doc: JsonDocument,
    private readonly place: ErrorPlace,
  ) {}

  fail(problem: string): never {
    throw new OnnxzipError('corrupt', this.place, problem);
  }

  object(value: JsonValue | undefined, path: string): { [key: string]: JsonValue } {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      this.fail(`${path === '' ? 'the document' : path} is ${kindOf(value)}, expected an object`);
    }
    return value;
  }

  member(object: JsonValue | undefined, key: string, path: string): JsonValue {
    const o = this.object(object, path);
    if (!Object.hasOwn(o, key)) this.fail(`${field(path, key)} is missing`);
    return o[key]!;
  }

  objectMember(object: JsonValue | undefined, key: string, path: string): { [key: string]: JsonValue } {
    return this.object(this.member(object, key, path), field(path, key));
  }

  arrayMember(object: JsonValue | undefined, key: string, path: string): JsonValue[] {
    const value = this.member(object, key, path);
    if (!Array.isArray(value)) this.fail(`${field(path, key)} is ${kindOf(value)}, expected an array`);
    return value;
  }

  stringMember(object: JsonValue | undefined, key: string, path: string): string {
    const value = this.member(object, key, path);
    if (typeof value !== 'string') this.fail(`${field(path, key)} is ${kindOf(value)}, expected a string`);
    return value;
  }

  expectString(object: JsonValue | undefined, key: string, expected: string, path: string): void {
    const value = this.stringMember(object, key, path);
    if (value !== expected) this.fail(`${field(path, key)} is ${quote(value)}, expected ${quote(expected)}`);
  }

  /** A whole number from 0 to 2^64 - 1, written as one (no fraction, no exponent). */
  unsignedMember(object: JsonValue | undefined, key: string, path: string): bigint {
    const value = this.member(object, key, path);
    const at = field(path, key);
    const spelled = this.doc.numbers.get(at);
    if (typeof value === 'number' && spelled !== undefined && /^-?(0|[1-9][0-9]*)$/.test(spelled)) {
      const n = BigInt(spelled);
      if (n >= 0n && n < 1n << 64n) return n;
    }
    this.fail(`${at} is ${kindOf(value)}${typeof value === 'number' ? ' that is not a whole number from 0 to 2^64 - 1' : ''}, expected an unsigned integer`);
  }
}

export function field(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

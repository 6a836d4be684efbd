// The integrity entries of spec §12, as bytes: `__DIGESTS` (an in-toto Statement v1 with
// model_signing's v1.0 predicate) and `__SIGNATURE` (a Sigstore bundle v0.3 whose DSSE envelope
// holds `__DIGESTS`, signed with ECDSA P-256 / SHA-256), and the public keys that verify it, with
// WebCrypto. The same checks, in the same order and words, as the C++ library's integrity layer
// (src/integrity/): every failure an OnnxzipError naming the entry and the field. verify.ts
// decides which entries are hashed.

import { OnnxzipError, quote, type ErrorPlace } from './errors.js';
import { JsonReader, parseJson, type JsonValue } from './json.js';
import { bufferSource, sha256Of, toHex, webCrypto } from './sha256.js';

export const kDigestsEntryName = '__DIGESTS';
export const kSignatureEntryName = '__SIGNATURE';
export const kInTotoPayloadType = 'application/vnd.in-toto+json';
const kStatementType = 'https://in-toto.io/Statement/v1';
const kPredicateType = 'https://model_signing/signature/v1.0';
const kBundleMediaType = 'application/vnd.dev.sigstore.bundle.v0.3+json';
const kFormatVersion = '1.1';

export interface IntegrityLimits {
  /** A `__DIGESTS` larger than this is refused before it is parsed. Default 64 MiB (some 300,000 entries). */
  readonly maxDigestsBytes?: number;
  /** A `__SIGNATURE` larger than this is refused before it is parsed. Default 96 MiB. */
  readonly maxSignatureBytes?: number;
}

export const kDefaultMaxDigestsBytes = 64 * 2 ** 20;
export const kDefaultMaxSignatureBytes = 96 * 2 ** 20;

export interface EntryDigest {
  readonly name: string;
  /** Lower-case hex. */
  readonly sha256: string;
  readonly size: bigint;
  readonly crc32: number;
}

export interface DigestStatement {
  readonly modelName: string;
  /** In the order listed. */
  readonly entries: readonly EntryDigest[];
}

export function isIntegrityEntry(name: string): boolean {
  return name === kDigestsEntryName || name === kSignatureEntryName;
}

const kLowerHex = /^[0-9a-f]*$/;

/** Parses and checks `__DIGESTS` (spec §12.2), the subject digest included. */
export async function decodeDigests(bytes: Uint8Array, source: string, limit = kDefaultMaxDigestsBytes): Promise<DigestStatement> {
  const place: ErrorPlace = { source, entry: kDigestsEntryName };
  const doc = parseJson(bytes, place, limit, 'option maxDigestsBytes');
  const j: JsonReader = new JsonReader(doc, place);
  const root = doc.value;
  j.object(root, '');
  j.expectString(root, '_type', kStatementType, '');
  j.expectString(root, 'predicateType', kPredicateType, '');
  const subjects = j.arrayMember(root, 'subject', '');
  if (subjects.length !== 1) j.fail(`subject has ${subjects.length} items, expected 1`);
  const modelName = j.stringMember(subjects[0], 'name', 'subject[0]');
  const subjectDigest = j.objectMember(subjects[0], 'digest', 'subject[0]');
  const subjectSha256 = hexMember(j, subjectDigest, 'sha256', 'subject[0].digest', 64);
  const predicate = j.objectMember(root, 'predicate', '');
  checkSerialization(j, predicate);
  const listed = readResources(j, predicate);
  const entries = readEntryFacts(j, predicate, listed);
  // model_signing's subject digest: SHA-256 over the resources' digests in the order listed.
  const concatenated = new Uint8Array(32 * entries.length);
  entries.forEach((e, i) => concatenated.set(fromHex(e.sha256), 32 * i));
  const rootDigest = toHex(await sha256Of(concatenated, place));
  if (rootDigest !== subjectSha256) j.fail(`subject[0].digest.sha256 is ${subjectSha256}, but the resources' digests hash to ${rootDigest}`);
  return { modelName, entries };
}

// predicate.serialization: files hashed with SHA-256, no symbolic links, the integrity entries ignored.
function checkSerialization(j: JsonReader, predicate: JsonValue | undefined): void {
  const serialization = j.objectMember(predicate, 'serialization', 'predicate');
  const at = 'predicate.serialization';
  j.expectString(serialization, 'method', 'files', at);
  j.expectString(serialization, 'hash_type', 'sha256', at);
  const symlinks = j.member(serialization, 'allow_symlinks', at);
  if (symlinks !== false) j.fail(`${at}.allow_symlinks is ${JSON.stringify(symlinks)}, expected false`);
  const ignored = j.arrayMember(serialization, 'ignore_paths', at);
  if (ignored.length !== 2 || ignored[0] !== kDigestsEntryName || ignored[1] !== kSignatureEntryName) {
    j.fail(`${at}.ignore_paths is ${JSON.stringify(ignored)}, expected ["__DIGESTS","__SIGNATURE"]`);
  }
}

// predicate.resources: each entry once, by name, with its SHA-256.
function readResources(j: JsonReader, predicate: JsonValue | undefined): { name: string; sha256: string }[] {
  const resources = j.arrayMember(predicate, 'resources', 'predicate');
  const names = new Set<string>();
  return resources.map((resource, i) => {
    const where = `predicate.resources[${i}]`;
    const name = j.stringMember(resource, 'name', where);
    if (name === '') j.fail(`${where}.name is empty`);
    if (names.has(name)) j.fail(`entry ${quote(name)} is listed twice (${where})`);
    names.add(name);
    j.expectString(resource, 'algorithm', 'sha256', where);
    return { name, sha256: hexMember(j, resource as JsonValue, 'digest', where, 64) };
  });
}

// predicate.onnxzip: the format version, and each resource's size and CRC-32 in the same order.
function readEntryFacts(j: JsonReader, predicate: JsonValue | undefined, listed: readonly { name: string; sha256: string }[]): EntryDigest[] {
  const record = j.objectMember(predicate, 'onnxzip', 'predicate');
  j.expectString(record, 'format_version', kFormatVersion, 'predicate.onnxzip');
  const facts = j.arrayMember(record, 'entries', 'predicate.onnxzip');
  if (facts.length !== listed.length) {
    j.fail(`predicate.onnxzip.entries has ${facts.length} items, predicate.resources ${listed.length}`);
  }
  return facts.map((fact, i) => {
    const where = `predicate.onnxzip.entries[${i}]`;
    const name = j.stringMember(fact, 'name', where);
    const expected = listed[i]!;
    if (name !== expected.name) j.fail(`${where}.name is ${quote(name)}, but predicate.resources[${i}].name ${quote(expected.name)}`);
    const size = j.unsignedMember(fact, 'size', where);
    const crcText = j.stringMember(fact, 'crc32', where);
    if (crcText.length !== 8 || !kLowerHex.test(crcText)) j.fail(`${where}.crc32 is ${quote(crcText)}, not 8 lower-case hex digits`);
    return { name, sha256: expected.sha256, size, crc32: Number.parseInt(crcText, 16) };
  });
}

function hexMember(j: JsonReader, object: JsonValue | undefined, key: string, path: string, digits: number): string {
  const text = j.stringMember(object, key, path);
  if (text.length !== digits || !kLowerHex.test(text)) j.fail(`${path}.${key} is ${quote(text)}, not ${digits} lower-case hex digits`);
  return text;
}

function fromHex(text: string): Uint8Array {
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; ++i) out[i] = Number.parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** What `__SIGNATURE` holds. */
export interface SignatureBundle {
  /** verificationMaterial.publicKey.hint: the signer's key id. */
  readonly keyHint: string;
  readonly payloadType: string;
  readonly payload: Uint8Array;
  /** DER ECDSA signature over the DSSE PAE of the payload. */
  readonly signature: Uint8Array;
}

/** Parses `__SIGNATURE` (spec §12.3). Verifies nothing. */
export function decodeSignature(bytes: Uint8Array, source: string, limit = kDefaultMaxSignatureBytes): SignatureBundle {
  const place: ErrorPlace = { source, entry: kSignatureEntryName };
  const doc = parseJson(bytes, place, limit, 'option maxSignatureBytes');
  const j: JsonReader = new JsonReader(doc, place);
  const root = doc.value;
  j.object(root, '');
  j.expectString(root, 'mediaType', kBundleMediaType, '');
  const material = j.objectMember(root, 'verificationMaterial', '');
  const publicKey = j.objectMember(material, 'publicKey', 'verificationMaterial');
  const keyHint = j.stringMember(publicKey, 'hint', 'verificationMaterial.publicKey');
  const envelope = j.objectMember(root, 'dsseEnvelope', '');
  const payloadType = j.stringMember(envelope, 'payloadType', 'dsseEnvelope');
  const payload = fromBase64(j.stringMember(envelope, 'payload', 'dsseEnvelope'));
  if (payload === undefined) j.fail('dsseEnvelope.payload is not base64');
  const signatures = j.arrayMember(envelope, 'signatures', 'dsseEnvelope');
  if (signatures.length !== 1) j.fail(`dsseEnvelope.signatures has ${signatures.length} items, expected 1`);
  const signature = fromBase64(j.stringMember(signatures[0], 'sig', 'dsseEnvelope.signatures[0]'));
  if (signature === undefined || signature.byteLength === 0) j.fail('dsseEnvelope.signatures[0].sig is not a non-empty base64 string');
  return { keyHint, payloadType, payload, signature };
}

/** Standard base64 with padding; undefined for anything else. */
export function fromBase64(text: string): Uint8Array | undefined {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return undefined;
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; ++i) out[i] = binary.charCodeAt(i);
  return out;
}

function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.byteLength; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** DSSE's pre-authentication encoding: "DSSEv1 <len> <type> <len> <payload>". */
export function dssePae(payloadType: string, payload: Uint8Array): Uint8Array {
  const type = new TextEncoder().encode(payloadType);
  const head = new TextEncoder().encode(`DSSEv1 ${type.byteLength} `);
  const middle = new TextEncoder().encode(` ${payload.byteLength} `);
  const out = new Uint8Array(head.byteLength + type.byteLength + middle.byteLength + payload.byteLength);
  out.set(head, 0);
  out.set(type, head.byteLength);
  out.set(middle, head.byteLength + type.byteLength);
  out.set(payload, head.byteLength + type.byteLength + middle.byteLength);
  return out;
}

/**
 * A DER ECDSA-Sig-Value (SEQUENCE of two INTEGERs) as WebCrypto's IEEE P1363 r || s of 32 bytes
 * each; undefined for anything that is not strict DER of two positive integers below 2^256 (as
 * OpenSSL, which the C++ reader uses, accepts only the one DER encoding of a signature).
 */
export function derToP1363(der: Uint8Array): Uint8Array | undefined {
  // At most 2 + 2 * (2 + 33) bytes: the lengths are single bytes.
  if (der.byteLength < 8 || der[0] !== 0x30 || der[1] !== der.byteLength - 2) return undefined;
  const out = new Uint8Array(64);
  let at = 2;
  for (const half of [0, 1]) {
    if (der[at] !== 0x02 || at + 2 > der.byteLength) return undefined;
    const length = der[at + 1]!;
    at += 2;
    if (length === 0 || length > 33 || at + length > der.byteLength) return undefined;
    let value = der.subarray(at, at + length);
    at += length;
    if ((value[0]! & 0x80) !== 0) return undefined; // Negative.
    if (value[0] === 0 && length > 1) {
      if ((value[1]! & 0x80) === 0) return undefined; // A leading zero DER does not allow.
      value = value.subarray(1);
    }
    if (value.byteLength > 32) return undefined;
    out.set(value, half * 32 + 32 - value.byteLength);
  }
  return at === der.byteLength ? out : undefined;
}

/** An ECDSA P-256 public key and its key id (spec §12.3 item 3). */
export interface PublicKeyInfo {
  readonly key: CryptoKey;
  /** SHA-256 (lower-case hex) of the key as PEM SubjectPublicKeyInfo, as `openssl ec -pubout` writes it. */
  readonly keyId: string;
}

// Algorithm and curve identifiers (DER-encoded OIDs) a SubjectPublicKeyInfo may name.
const kKeyKinds: ReadonlyArray<readonly [string, readonly number[]]> = [
  ['an RSA key', [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01]],
  ['an EC key on curve P-384', [0x2b, 0x81, 0x04, 0x00, 0x22]],
  ['an EC key on curve P-521', [0x2b, 0x81, 0x04, 0x00, 0x23]],
  ['an EC key on curve secp256k1', [0x2b, 0x81, 0x04, 0x00, 0x0a]],
  ['an Ed25519 key', [0x2b, 0x65, 0x70]],
  ['an Ed448 key', [0x2b, 0x65, 0x71]],
  ['a DSA key', [0x2a, 0x86, 0x48, 0xce, 0x38, 0x04, 0x01]],
];

/** What kind of key the SubjectPublicKeyInfo `der` names ("an RSA key"), when it is a known other one. */
function keyKind(der: Uint8Array): string | undefined {
  // The algorithm identifier comes first, within the first few dozen bytes.
  const head = der.subarray(0, 40);
  const holds = (oid: readonly number[]): boolean => head.some((_, i) => oid.every((b, k) => head[i + k] === b));
  return kKeyKinds.find(([, oid]) => holds(oid))?.[0];
}

/** Reads a PEM SubjectPublicKeyInfo of an ECDSA P-256 key: invalid_argument for anything else. */
export async function importPublicKey(pem: string | Uint8Array, source = '<key>'): Promise<PublicKeyInfo> {
  const place: ErrorPlace = { source };
  const text = typeof pem === 'string' ? pem : new TextDecoder().decode(pem);
  const m = /-----BEGIN PUBLIC KEY-----([A-Za-z0-9+/=\s]*)-----END PUBLIC KEY-----/.exec(text);
  const der = m === null ? undefined : fromBase64(m[1]!.replace(/\s+/g, ''));
  if (der === undefined) throw new OnnxzipError('invalid_argument', place, 'not a PEM public key (-----BEGIN PUBLIC KEY-----)');
  const subtle = webCrypto(place);
  let key: CryptoKey;
  try {
    key = await subtle.importKey('spki', bufferSource(der), { name: 'ECDSA', namedCurve: 'P-256' }, true, ['verify']);
  } catch (e) {
    const what = keyKind(der) ?? (e instanceof Error ? e.message : String(e));
    throw new OnnxzipError('invalid_argument', place, `not an ECDSA P-256 public key: ${what}`, { cause: e });
  }
  // The id hashes the key as OpenSSL writes it (uncompressed point, 64 columns, LF), whatever
  // spelling was given.
  const body = toBase64(new Uint8Array(await subtle.exportKey('spki', key)));
  const lines = body.match(/.{1,64}/g) ?? [];
  const canonical = `-----BEGIN PUBLIC KEY-----\n${lines.join('\n')}\n-----END PUBLIC KEY-----\n`;
  const keyId = toHex(await sha256Of(new TextEncoder().encode(canonical), place));
  return { key, keyId };
}

/**
 * Why `bundle` is not a valid signature of `digests` by `key` ("signed by another key ...", "the
 * signature does not verify with the key given", "its payload is not the __DIGESTS entry"), or
 * undefined when it is one.
 */
export async function signatureProblem(bundle: SignatureBundle, digests: Uint8Array, key: PublicKeyInfo, source: string): Promise<string | undefined> {
  if (bundle.keyHint !== key.keyId) return `signed by another key (key id ${bundle.keyHint}, the key given has ${key.keyId})`;
  if (bundle.payloadType !== kInTotoPayloadType) return `its payload type is ${quote(bundle.payloadType)}, expected ${quote(kInTotoPayloadType)}`;
  if (!equalBytes(bundle.payload, digests)) return 'its payload is not the __DIGESTS entry';
  const signature = derToP1363(bundle.signature);
  const good =
    signature !== undefined &&
    (await webCrypto({ source }).verify({ name: 'ECDSA', hash: 'SHA-256' }, key.key, bufferSource(signature), bufferSource(dssePae(bundle.payloadType, bundle.payload))));
  return good ? undefined : 'the signature does not verify with the key given';
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; ++i) if (a[i] !== b[i]) return false;
  return true;
}

// verify(): the whole archive read once, in order, in bounded memory.
//
// One pass over the entries' bytes (for a URL, one request) feeds each entry's data to the checks
// of its entry: the CRC-32, and the SHA-256 that `__DIGESTS` gives it (spec §12.5). A local header
// not read yet (URL sources) is checked on the way. `__DIGESTS` and `__SIGNATURE` are read and
// checked before that pass, the signature with WebCrypto when a public key is given. Problems are
// findings, never exceptions: a verify report names every one.

import { ByteWindow } from './bytes.js';
import { crc32 } from './crc32.js';
import { OnnxzipError, quote } from './errors.js';
import { errorFinding, kindOf, type Finding, type FindingKind } from './findings.js';
import {
  decodeDigests,
  decodeSignature,
  importPublicKey,
  isIntegrityEntry,
  kDefaultMaxDigestsBytes,
  kDefaultMaxSignatureBytes,
  kDigestsEntryName,
  kSignatureEntryName,
  signatureProblem,
  type EntryDigest,
  type IntegrityLimits,
  type PublicKeyInfo,
} from './integrity.js';
import { kModelEntryName } from './names.js';
import { createSha256, toHex, type Sha256 } from './sha256.js';
import type { VerifyTarget } from './verify_target.js';
import { checkDescriptor, checkLocalHeader, layoutFindings, type ZipEntry } from './zip.js';

export interface VerifyOptions extends IntegrityLimits {
  /**
   * Read every entry: check its CRC-32, and its SHA-256 when the archive has `__DIGESTS`. Default
   * true. With false, only the listing and the sizes of `__DIGESTS` are compared.
   */
  readonly checkCrc?: boolean;
  /**
   * An ECDSA P-256 public key (PEM SubjectPublicKeyInfo, as `openssl ec -pubout` writes it): a
   * valid `__SIGNATURE` by this key is then required (spec §12.5 item 4); its absence, another
   * key, a bad signature are error findings. invalid_argument when it is no such key.
   */
  readonly publicKey?: string | Uint8Array;
}

/** `__DIGESTS` (spec/names.md "Integrity status"). */
export type DigestsStatus = 'absent' | 'verified' | 'unchecked' | 'failed';
/** `__SIGNATURE` (spec/names.md "Integrity status"). */
export type SignatureStatus = 'absent' | 'verified' | 'unchecked' | 'other_key' | 'failed';

export interface VerifyReport {
  readonly findings: readonly Finding[];
  /** The archive conforms to the spec: no finding of either severity (spec §9.5). */
  readonly ok: boolean;
  /** openArchive accepts it, every CRC-32 is right and so is every digest: no finding of severity error. */
  readonly loadable: boolean;
  /**
   * `absent`: no `__DIGESTS`; `verified`: every entry listed, with its size and SHA-256;
   * `unchecked`: listing and sizes right, the bytes not hashed (checkCrc false); `failed`: a
   * digest, a size or the list is wrong, or it does not parse (the findings say which).
   */
  readonly digests: DigestsStatus;
  /**
   * `absent`: no `__SIGNATURE`; `verified`: valid, by the key given; `unchecked`: one that
   * parses, no key given; `other_key`: signed by another key than the one given; `failed`: it
   * does not verify or parse, or signs other bytes (the findings say why).
   */
  readonly signature: SignatureStatus;
  /** The key id `__SIGNATURE` names ("" without one). */
  readonly signatureKeyId: string;
  /** What was checked, in words: "ZIP structure, layout, references, CRC-32s; digests verified; signature not checked: give publicKey". */
  readonly checked: string;
}

/** A check fed with one entry's uncompressed data, in order. */
interface EntryCheck {
  update(piece: Uint8Array): void;
  /** A finding when the data is wrong. */
  finish(): Finding | undefined | Promise<Finding | undefined>;
}

function digestCheck(e: ZipEntry, expected: string, source: string): EntryCheck {
  const hasher: Sha256 = createSha256(e.size, { source, entry: `entry ${quote(e.name)}` });
  return {
    update(piece) {
      hasher.update(piece);
    },
    async finish() {
      const actual = toHex(await hasher.digest());
      return actual === expected ? undefined : digestMismatch(e, actual, expected);
    },
  };
}

function digestMismatch(e: ZipEntry, actual: string, expected: string): Finding {
  return entryFinding('digest', e, `its SHA-256 is ${actual}, __DIGESTS says ${expected}: its bytes are not those that were digested (spec §12.5)`, e.local?.dataOffset ?? e.localHeaderOffset);
}

function crcCheck(e: ZipEntry): EntryCheck {
  let crc = 0;
  return {
    update(piece) {
      crc = crc32(piece, crc);
    },
    finish() {
      if (crc === e.crc32) return undefined;
      return entryFinding('crc', e, `CRC-32 mismatch: the data has 0x${hex(crc)}, the archive records 0x${hex(e.crc32)}`, e.local?.dataOffset ?? e.localHeaderOffset);
    },
  };
}

function hex(v: number): string {
  return v.toString(16).padStart(8, '0');
}

function entryFinding(kind: FindingKind, e: ZipEntry, message: string, offset: number): Finding {
  return errorFinding(kind, message, { entry: e.name, offset });
}

/** An error met while reading entry `e` as a finding: of the kind its thrower marked, else `kind` (a local header's: zip). */
function fromError(e: ZipEntry, error: unknown, fallback: FindingKind = 'zip'): Finding {
  const kind = kindOf(error) ?? fallback;
  const message = error instanceof OnnxzipError ? error.problem : String(error);
  const offset = error instanceof OnnxzipError ? error.offset ?? e.localHeaderOffset : e.localHeaderOffset;
  return entryFinding(kind, e, message, offset);
}

type Phase = 'header' | 'data' | 'descriptor' | 'skip';

/** Feeds the bytes of [first local header, central directory) to each entry's checks, in order. */
class EntryStreamer {
  private index = 0;
  private phase: Phase = 'header';
  private gathered: Uint8Array[] = [];
  private gatheredLength = 0;
  private wanted = 0;
  private checks: EntryCheck[] = [];
  readonly deflated: ZipEntry[] = [];
  readonly findings: Finding[] = [];
  /** Checks whose verdict is on its way (a WebCrypto digest): awaited before the next piece. */
  private pending: Promise<void>[] = [];

  constructor(
    private readonly entries: readonly ZipEntry[],
    private readonly src: { source: string },
    private readonly headerFindings: Finding[],
    private readonly checkCrc: boolean,
    private readonly digests: ReadonlyMap<ZipEntry, string>,
  ) {
    this.startEntry();
  }

  /** Waits for the checks under way, so that at most one entry's bytes are held for hashing. */
  async settle(): Promise<void> {
    while (this.pending.length > 0) await Promise.all(this.pending.splice(0));
  }

  /** `piece` holds the bytes from offset `at` on. */
  feed(piece: Uint8Array, at: number): void {
    let p = 0;
    while (p < piece.byteLength && this.index < this.entries.length) {
      const e = this.entries[this.index]!;
      const here = at + p;
      if (here >= e.limit) {
        if (this.phase !== 'skip') this.fail(e, new Error(`the entry's bytes did not end before offset ${e.limit}`));
        ++this.index;
        this.startEntry();
        continue;
      }
      const room = Math.min(piece.byteLength - p, e.limit - here);
      switch (this.phase) {
        case 'header':
          p += this.header(e, piece.subarray(p, p + room), here);
          break;
        case 'data': {
          const local = e.local!;
          const n = Math.min(room, local.dataEnd - here);
          const part = piece.subarray(p, p + n);
          for (const c of this.checks) c.update(part);
          p += n;
          if (here + n >= local.dataEnd) this.endData(e);
          break;
        }
        case 'descriptor':
          p += this.descriptor(e, piece.subarray(p, p + room));
          break;
        default:
          p += room;
      }
    }
  }

  private startEntry(): void {
    const e = this.entries[this.index];
    this.phase = 'header';
    this.gathered = [];
    this.gatheredLength = 0;
    this.checks = [];
    this.wanted = e === undefined ? 0 : 30 + e.nameBytes.byteLength + 1024;
  }

  /** Takes header bytes from `part` (at offset `here`); returns how many it used. */
  private header(e: ZipEntry, part: Uint8Array, here: number): number {
    if (e.local !== undefined) {
      // Checked at open: skip to the data.
      const n = Math.min(part.byteLength, e.local.dataOffset - here);
      if (here + n >= e.local.dataOffset) this.beginData(e);
      return n;
    }
    const n = Math.min(part.byteLength, this.wanted - this.gatheredLength);
    this.gathered.push(part.slice(0, n));
    this.gatheredLength += n;
    try {
      const w = new ByteWindow(join(this.gathered), e.localHeaderOffset);
      this.gathered = [w.bytes];
      const need = checkLocalHeader(w, e, this.src, this.headerFindings);
      if (need === undefined) {
        // Bytes past the header that came along belong to the data: give them back.
        const used = n - (e.localHeaderOffset + this.gatheredLength - e.local!.dataOffset);
        this.beginData(e);
        return used;
      }
      this.wanted = need;
    } catch (error) {
      this.fail(e, error);
    }
    return n;
  }

  private beginData(e: ZipEntry): void {
    this.phase = 'data';
    this.checks = [];
    if (this.checkCrc && e.isStored) {
      this.checks.push(crcCheck(e));
      const digest = this.digests.get(e);
      if (digest !== undefined) {
        try {
          this.checks.push(digestCheck(e, digest, this.src.source));
        } catch (error) {
          this.findings.push(fromError(e, error, 'digest'));
        }
      }
    }
    if (this.checkCrc && !e.isStored) this.deflated.push(e);
    if (e.compressedSize === 0) this.endData(e);
  }

  private endData(e: ZipEntry): void {
    // The CRC-32 first: an entry whose CRC-32 is wrong is reported for that alone, as in C++.
    const [crc, ...rest] = this.checks;
    const crcFinding = crc?.finish() as Finding | undefined;
    if (crcFinding !== undefined) this.findings.push(crcFinding);
    else {
      for (const c of rest) {
        this.pending.push(
          Promise.resolve(c.finish()).then(
            (f) => {
              if (f !== undefined) this.findings.push(f);
            },
            (error: unknown) => {
              this.findings.push(fromError(e, error, 'digest'));
            },
          ),
        );
      }
    }
    this.checks = [];
    this.phase = e.local!.descriptorPending ? 'descriptor' : 'skip';
    this.gathered = [];
    this.gatheredLength = 0;
    this.wanted = 4;
  }

  private descriptor(e: ZipEntry, part: Uint8Array): number {
    const n = Math.min(part.byteLength, this.wanted - this.gatheredLength);
    this.gathered.push(part.slice(0, n));
    this.gatheredLength += n;
    try {
      const need = checkDescriptor(new ByteWindow(join(this.gathered), e.local!.dataEnd), e, this.src);
      if (need === undefined) this.phase = 'skip';
      else this.wanted = need;
    } catch (error) {
      this.fail(e, error);
    }
    return n;
  }

  private fail(e: ZipEntry, error: unknown): void {
    this.findings.push(fromError(e, error));
    this.phase = 'skip';
  }
}

function join(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const all = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.byteLength;
  }
  return all;
}

export async function verifyArchive(archive: VerifyTarget, options: VerifyOptions): Promise<VerifyReport> {
  const checkCrc = options.checkCrc ?? true;
  // The key first: a key that is no key is the caller's error, thrown before any reading.
  const key = options.publicKey === undefined ? undefined : await importPublicKey(options.publicKey);
  const integrityFindings: Finding[] = [];
  const integrity = await checkIntegrity(archive, options, key, checkCrc, integrityFindings);
  const { headerFindings, dataFindings } = await checkEntries(archive, checkCrc, integrity.expected);
  const all: Finding[] = [...archive.findings, ...headerFindings];
  // For a URL the layout shows only now that every local header has been read.
  const dir = archive.dir;
  if (archive.sourceKind === 'url' && dir.entries.every((e) => e.local !== undefined)) all.push(...layoutFindings(dir));
  all.push(...integrityFindings, ...dataFindings);
  const digestFailed = all.some((f) => f.kind === 'digest' && f.severity === 'error');
  const digests: DigestsStatus = integrity.digests === 'absent' || !digestFailed ? integrity.digests : 'failed';
  return {
    findings: all,
    ok: all.length === 0,
    loadable: all.every((f) => f.severity !== 'error'),
    digests,
    signature: integrity.signature,
    signatureKeyId: integrity.keyId,
    checked: checkedText(checkCrc, digests, integrity.signature, integrity.keyId),
  };
}

/** The report's `checked`: what this verify looked at, and how to check what it did not (the C++ verify's words). */
function checkedText(checkCrc: boolean, digests: DigestsStatus, signature: SignatureStatus, keyId: string): string {
  const read = checkCrc ? 'ZIP structure, layout, references, CRC-32s' : 'ZIP structure, layout, references (no CRC-32s)';
  const digestsText = { absent: 'no digests', verified: 'digests verified', unchecked: 'digests listed, not hashed', failed: 'digests failed' }[digests];
  const signatureText = {
    absent: 'no signature',
    verified: `signature verified (key ${keyId})`,
    unchecked: 'signature not checked: give publicKey',
    other_key: `signed by another key (${keyId})`,
    failed: 'signature failed',
  }[signature];
  return `${read}; ${digestsText}; ${signatureText}`;
}

/**
 * The pass over the entries' bytes (one request for a URL): local headers not read yet, each
 * entry's CRC-32 and its SHA-256 where `expected` has one; deflated entries inflated after it.
 */
async function checkEntries(archive: VerifyTarget, checkCrc: boolean, expected: ReadonlyMap<ZipEntry, string>): Promise<{ headerFindings: Finding[]; dataFindings: Finding[] }> {
  const { dir, source } = archive;
  const entries = dir.entries;
  const headerFindings: Finding[] = [];
  if (entries.length === 0 || (!checkCrc && entries.every((e) => e.local !== undefined))) return { headerFindings, dataFindings: [] };
  const first = entries[0]!.localHeaderOffset;
  const streamer = new EntryStreamer(entries, { source: source.name }, headerFindings, checkCrc, expected);
  let position = first;
  await source.stream(first, dir.centralOffset - first, async (piece) => {
    streamer.feed(piece, position);
    position += piece.byteLength;
    await streamer.settle();
  });
  await streamer.settle();
  const dataFindings = [...streamer.findings];
  for (const e of streamer.deflated) {
    try {
      const [bytes] = await archive.readEntries([e]);
      const digest = expected.get(e);
      if (digest === undefined) continue;
      const check = digestCheck(e, digest, source.name);
      check.update(bytes!);
      const f = await check.finish();
      if (f !== undefined) dataFindings.push(f);
    } catch (error) {
      dataFindings.push(fromError(e, error));
    }
  }
  return { headerFindings, dataFindings };
}

interface IntegrityState {
  /** The SHA-256 each entry must have (stored and deflated entries alike). */
  readonly expected: Map<ZipEntry, string>;
  readonly digests: DigestsStatus;
  readonly signature: SignatureStatus;
  readonly keyId: string;
}

/** The entries and what verify() was asked, for the checks of spec §12.5. */
interface IntegrityContext {
  readonly archive: VerifyTarget;
  readonly options: VerifyOptions;
  readonly key: PublicKeyInfo | undefined;
  readonly findings: Finding[];
}

function addFinding(c: IntegrityContext, kind: FindingKind, entry: string, offset: number, message: string, severity: 'error' | 'warning' = 'error'): void {
  c.findings.push({ severity, kind, entry, tensor: '', offset, message });
}

function dataOffsetOf(e: ZipEntry): number {
  return e.local?.dataOffset ?? e.localHeaderOffset;
}

/**
 * Spec §12.5 items 1, 2 and 4, and the sizes of item 3, as the C++ check_integrity orders them:
 * findings of kind `digest` (the entry `__DIGESTS`, the listing, an entry's size or bytes) and
 * `signature`. The SHA-256 of each entry is left to the pass over the entries.
 */
async function checkIntegrity(archive: VerifyTarget, options: VerifyOptions, key: PublicKeyInfo | undefined, checkCrc: boolean, findings: Finding[]): Promise<IntegrityState> {
  const c: IntegrityContext = { archive, options, key, findings };
  const dir = archive.dir;
  const expected = new Map<ZipEntry, string>();
  const digestsEntry = dir.byName.get(kDigestsEntryName);
  const signatureEntry = dir.byName.get(kSignatureEntryName);
  if (digestsEntry === undefined) {
    if (signatureEntry !== undefined) {
      addFinding(c, 'signature', kSignatureEntryName, signatureEntry.localHeaderOffset, 'a signature, but no __DIGESTS entry (spec §12.1 item 1)');
      return { expected, digests: 'absent', signature: 'failed', keyId: '' };
    }
    // A signature asked for and missing is an error finding; the status says what is there.
    if (key !== undefined) addFinding(c, 'signature', '', 0, `no __DIGESTS and no __SIGNATURE entry${keyAskedFor(key)}`);
    return { expected, digests: 'absent', signature: 'absent', keyId: '' };
  }
  checkIntegrityPlace(c, digestsEntry, signatureEntry);
  let digestsBytes: Uint8Array;
  try {
    digestsBytes = await readBounded(archive, digestsEntry, options.maxDigestsBytes ?? kDefaultMaxDigestsBytes, 'maxDigestsBytes');
    const statement = await decodeDigests(digestsBytes, archive.source.name, options.maxDigestsBytes ?? kDefaultMaxDigestsBytes);
    checkListing(c, digestsEntry, new Map(statement.entries.map((e) => [e.name, e])), checkCrc ? expected : undefined);
  } catch (error) {
    entryError(c, 'digest', digestsEntry, error);
    // A signature over digests that do not parse signs nothing checkable.
    const signature = signatureEntry === undefined ? 'absent' : key === undefined ? 'unchecked' : 'failed';
    return { expected, digests: 'failed', signature, keyId: '' };
  }
  const digests = checkCrc ? 'verified' : 'unchecked';
  return { expected, digests, ...(await checkSignature(c, signatureEntry, digestsBytes)) };
}

function keyAskedFor(key: PublicKeyInfo | undefined): string {
  return key === undefined ? '' : ` (a signature by key ${key.keyId} was asked for)`;
}

// Spec §12.1 item 2: directly before the model, __DIGESTS then __SIGNATURE.
function checkIntegrityPlace(c: IntegrityContext, digestsEntry: ZipEntry, signatureEntry: ZipEntry | undefined): void {
  const model = c.archive.dir.byName.get(kModelEntryName);
  if (model === undefined) return;
  let next = model.index;
  for (const e of [signatureEntry, digestsEntry]) {
    if (e === undefined) continue;
    if (e.index !== next - 1) {
      const before = e === digestsEntry && signatureEntry !== undefined ? kSignatureEntryName : kModelEntryName;
      addFinding(c, 'layout', e.name, e.localHeaderOffset, `entry ${quote(e.name)} is not where spec §12.1 puts it (directly before ${quote(before)})`, 'warning');
      return;
    }
    next = e.index;
  }
}

async function readBounded(archive: VerifyTarget, e: ZipEntry, limit: number, option: string): Promise<Uint8Array> {
  const size = Math.max(e.size, e.compressedSize);
  if (size > limit) {
    throw new OnnxzipError('limit_exceeded', { source: archive.source.name, entry: `entry ${quote(e.name)}` }, `${size} bytes, more than the limit of ${limit} (option ${option})`);
  }
  return (await archive.readEntries([e]))[0]!;
}

function entryError(c: IntegrityContext, kind: FindingKind, e: ZipEntry, error: unknown): void {
  if (!(error instanceof OnnxzipError)) throw error;
  addFinding(c, kind, e.name, dataOffsetOf(e), error.problem);
}

/** Spec §12.2 and the sizes of §12.5 item 3: every entry listed with its size, nothing more; `expected` gets each SHA-256. */
function checkListing(c: IntegrityContext, digestsEntry: ZipEntry, listed: Map<string, EntryDigest>, expected: Map<ZipEntry, string> | undefined): void {
  for (const e of c.archive.dir.entries) {
    if (isIntegrityEntry(e.name)) continue;
    const digest = listed.get(e.name);
    if (digest === undefined) {
      addFinding(c, 'digest', e.name, e.localHeaderOffset, 'not listed in __DIGESTS (spec §12.2)');
      continue;
    }
    listed.delete(e.name);
    if (BigInt(e.size) !== digest.size) {
      addFinding(c, 'digest', e.name, dataOffsetOf(e), `${e.size} bytes, __DIGESTS says ${digest.size} (spec §12.5)`);
      continue;
    }
    expected?.set(e, digest.sha256);
  }
  for (const name of listed.keys()) {
    addFinding(c, 'digest', kDigestsEntryName, dataOffsetOf(digestsEntry), `lists entry ${quote(name)}, which the archive does not hold (spec §12.2)`);
  }
}

/** Spec §12.5 item 4: the signature's status and key id, and a finding when one is required and missing or wrong. */
async function checkSignature(c: IntegrityContext, signatureEntry: ZipEntry | undefined, digestsBytes: Uint8Array): Promise<{ signature: SignatureStatus; keyId: string }> {
  const { archive, options, key } = c;
  if (signatureEntry === undefined) {
    if (key !== undefined) addFinding(c, 'signature', '', 0, `no __SIGNATURE entry${keyAskedFor(key)}`);
    return { signature: 'absent', keyId: '' };
  }
  try {
    const limit = options.maxSignatureBytes ?? kDefaultMaxSignatureBytes;
    const bundle = decodeSignature(await readBounded(archive, signatureEntry, limit, 'maxSignatureBytes'), archive.source.name, limit);
    if (key === undefined) return { signature: 'unchecked', keyId: bundle.keyHint };
    const problem = await signatureProblem(bundle, digestsBytes, key, archive.source.name);
    if (problem === undefined) return { signature: 'verified', keyId: bundle.keyHint };
    addFinding(c, 'signature', signatureEntry.name, dataOffsetOf(signatureEntry), `${problem} (spec §12.5)`);
    return { signature: bundle.keyHint !== key.keyId ? 'other_key' : 'failed', keyId: bundle.keyHint };
  } catch (error) {
    entryError(c, 'signature', signatureEntry, error);
    return { signature: 'failed', keyId: '' };
  }
}

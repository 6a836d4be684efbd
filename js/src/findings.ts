// What a reader accepts but reports (spec §9.3, §9.4 items 4-5, §11), and what verify() adds.

/** `error`: the archive is refused for it (or a CRC-32 is wrong); `warning`: accepted, not conforming. */
export type Severity = 'error' | 'warning';

/** What breaks: the kinds of spec/names.md, the same in every face. */
export type FindingKind =
  | 'zip' // ZIP records: signatures, sizes, ZIP64, names, overlaps.
  | 'layout' // The profile: entry order, alignment, padding, compression, extra fields, gaps.
  | 'reference' // A tensor's reference to an entry, or an entry no tensor refers to.
  | 'model' // The model entry's parse, or an inline tensor's data against its dims and type.
  | 'ir' // An ONNX IR rule.
  | 'crc' // A CRC-32.
  | 'digest' // `__DIGESTS`, or an entry's SHA-256 against it.
  | 'signature'; // `__SIGNATURE`.

export interface Finding {
  readonly severity: Severity;
  readonly kind: FindingKind;
  /** The entry it concerns, or "" */
  readonly entry: string;
  /** The tensor it concerns (name and site), or "" */
  readonly tensor: string;
  /** The byte offset in the archive where it lies (0 when it has none). */
  readonly offset: number;
  /** The problem alone; the place is in `entry`, `tensor` and `offset`. */
  readonly message: string;
}

export interface FindingPlace {
  readonly entry?: string;
  readonly tensor?: string;
  readonly offset?: number;
}

export function warning(kind: FindingKind, message: string, where: FindingPlace = {}): Finding {
  return { severity: 'warning', kind, entry: where.entry ?? '', tensor: where.tensor ?? '', offset: where.offset ?? 0, message };
}

export function errorFinding(kind: FindingKind, message: string, where: FindingPlace = {}): Finding {
  return { severity: 'error', kind, entry: where.entry ?? '', tensor: where.tensor ?? '', offset: where.offset ?? 0, message };
}

// What an error thrown while opening breaks, for verify() to report it as a finding of that kind
// (set where the error is met, by the stage of the open that knows it; the innermost one wins).
const errorKinds = new WeakMap<object, FindingKind>();

/** Runs `stage` of opening an archive; an error it throws is marked as breaking `kind`. */
export async function markKind<T>(kind: FindingKind, stage: () => Promise<T> | T): Promise<T> {
  try {
    return await stage();
  } catch (e) {
    if (typeof e === 'object' && e !== null && !errorKinds.has(e)) errorKinds.set(e, kind);
    throw e;
  }
}

/** `error`, marked as breaking `kind` (for an error whose kind its thrower knows best). */
export function withKind<E extends object>(kind: FindingKind, error: E): E {
  errorKinds.set(error, kind);
  return error;
}

/** The kind markKind or withKind gave `error`, if any. */
export function kindOf(error: unknown): FindingKind | undefined {
  return typeof error === 'object' && error !== null ? errorKinds.get(error) : undefined;
}

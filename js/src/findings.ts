// What a reader accepts but reports (spec §9.3, §9.4 items 4-5, §11), and what verify() adds.

/** `error`: the archive is refused for it (or a CRC-32 is wrong); `warning`: accepted, not conforming. */
export type Severity = 'error' | 'warning';

export interface Finding {
  readonly severity: Severity;
  /** A short stable name: "deflated", "gap", "unaligned", "external_data_keys"... */
  readonly kind: string;
  /** The entry it concerns, or "" */
  readonly entry: string;
  /** The tensor it concerns (name and site), or "" */
  readonly tensor: string;
  /** The byte offset in the archive where it lies (0 when it has none). */
  readonly offset: number;
  readonly message: string;
}

export function warning(kind: string, message: string, where: { entry?: string; tensor?: string; offset?: number } = {}): Finding {
  return { severity: 'warning', kind, entry: where.entry ?? '', tensor: where.tensor ?? '', offset: where.offset ?? 0, message };
}

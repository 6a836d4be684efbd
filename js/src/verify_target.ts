// What verify() needs of an open archive: its own module, so that verify.ts does not import
// archive.ts, which calls it (the two stay one-way: archive.ts -> verify.ts -> this).

import type { Finding } from './findings.js';
import type { ByteSource, SourceKind } from './source.js';
import type { ZipDirectory, ZipEntry } from './zip.js';

export interface VerifyTarget {
  readonly dir: ZipDirectory;
  readonly source: ByteSource;
  readonly sourceKind: SourceKind;
  /** What opening found (spec §9.3, §9.4 items 4-5, §11). */
  readonly findings: readonly Finding[];
  /** The entries' uncompressed bytes, local headers checked on the way. */
  readEntries(entries: readonly ZipEntry[]): Promise<Uint8Array[]>;
}

// createSession: an ONNX Runtime session from an archive in one call.

import { Archive, openWith, type OpenOptions } from './archive.js';
import { OnnxzipError } from './errors.js';
import type { ArchiveSource } from './open_source.js';
import { kInlineBelow, ortExternalData, ortFileModel, type OrtFlavor, type OrtModel } from './ort.js';

/** The part of `onnxruntime-node` / `onnxruntime-web` this package calls; pass the module itself. */
export interface OrtModule<Session, SessionOptions> {
  readonly InferenceSession: {
    create(model: Uint8Array, options?: SessionOptions): Promise<Session>;
  };
  readonly env?: { readonly versions?: { readonly node?: string | undefined; readonly web?: string | undefined } };
}

export interface CreateSessionOptions extends OpenOptions {
  /**
   * How ORT gets the weights. 'auto' (default): the file route for a file source with ORT-node
   * (ORT maps the archive itself), else 'externalData'.
   */
  readonly route?: 'auto' | 'file' | 'externalData';
  /** Tensors smaller than this many bytes go to ORT inline (see kInlineBelow, src/ort.ts). Default 1024. */
  readonly inlineBelow?: number;
}

/** Which ORT this is: ORT-node says so in env.versions.node. */
export function ortFlavor(ort: { readonly env?: { readonly versions?: { readonly node?: string | undefined } } }): OrtFlavor {
  return ort.env?.versions?.node !== undefined ? 'node' : 'web';
}

/**
 * The model bytes and options ONNX Runtime needs for this archive, by the route createSession
 * takes: for the file route the rewritten model and `extraSessionConfig` (to merge into
 * sessionOptions.extra.session), else the model and `externalData`.
 */
export async function ortModelFor(
  archive: Archive,
  flavor: OrtFlavor,
  route: 'auto' | 'file' | 'externalData' = 'auto',
  inlineBelow = kInlineBelow,
): Promise<OrtModel & { readonly extraSessionConfig?: Readonly<Record<string, string>> }> {
  const location = archive.source.fileLocation;
  const useFile = route === 'file' || (route === 'auto' && flavor === 'node' && location !== undefined);
  if (useFile) {
    if (location === undefined || flavor !== 'node') {
      throw new OnnxzipError('invalid_argument', { source: archive.sourceName }, 'the file route needs a file source (Node) and onnxruntime-node');
    }
    const model = await ortFileModel(archive, location.name, inlineBelow);
    return { ...model, extraSessionConfig: { model_external_initializers_file_folder_path: location.folder } };
  }
  return ortExternalData(archive, flavor, inlineBelow);
}

/**
 * `ort.InferenceSession.create(model, {...sessionOptions, externalData})` for the archive at
 * `source` (or an open Archive, which stays open); see ortModelFor for what ORT is given.
 */
export async function createSession<Session, SessionOptions extends object>(
  ort: OrtModule<Session, SessionOptions>,
  source: ArchiveSource | Archive,
  sessionOptions?: SessionOptions,
  options: CreateSessionOptions = {},
): Promise<Session> {
  if (typeof (ort as Partial<OrtModule<Session, SessionOptions>> | undefined)?.InferenceSession?.create !== 'function') {
    throw new OnnxzipError('invalid_argument', {}, `createSession takes the ONNX Runtime module first (import * as ort from 'onnxruntime-web' or 'onnxruntime-node'), not ${describe(ort)}`);
  }
  // The archive this opened is closed, and unreachable, before ORT runs: while ORT holds every
  // weight (the peak of memory), nothing of the reader's (entries, tensor records, requests)
  // is kept alive with them.
  const { model, merged } = await prepareSession(ort, source, sessionOptions, options);
  return ort.InferenceSession.create(model, merged);
}

async function prepareSession<Session, SessionOptions extends object>(
  ort: OrtModule<Session, SessionOptions>,
  source: ArchiveSource | Archive,
  sessionOptions: SessionOptions | undefined,
  options: CreateSessionOptions,
): Promise<{ model: Uint8Array; merged: SessionOptions }> {
  // An archive opened here keeps its whole tail read: the entries ORT needs are read once, the
  // bytes the tail holds taken from it (copied) and the rest with one request; then it is freed.
  const opened = source instanceof Archive ? undefined : await openWith(source, options, true);
  const archive = opened ?? (source as Archive);
  try {
    const prepared = await ortModelFor(archive, ortFlavor(ort), options.route ?? 'auto', options.inlineBelow ?? kInlineBelow);
    opened?.releaseTail();
    const base = (sessionOptions ?? {}) as Record<string, unknown>;
    const merged: Record<string, unknown> = { ...base };
    if (prepared.extraSessionConfig !== undefined) {
      const extra = (base['extra'] ?? {}) as Record<string, unknown>;
      const session = (extra['session'] ?? {}) as Record<string, unknown>;
      merged['extra'] = { ...extra, session: { ...session, ...prepared.extraSessionConfig } };
    } else {
      const given = Array.isArray(base['externalData']) ? (base['externalData'] as unknown[]) : [];
      merged['externalData'] = [...given, ...prepared.externalData];
    }
    return { model: prepared.model, merged: merged as SessionOptions };
  } finally {
    await opened?.close();
  }
}

/** What was passed, for a message: its type, never its content. */
function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  return typeof value === 'object' ? `an object without InferenceSession.create` : `a ${typeof value}`;
}

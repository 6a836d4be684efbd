// From what the caller passes to a ByteSource.

import { OnnxzipError } from './errors.js';
import { HttpSource, type HttpOptions } from './http.js';
import { isS3Url, type S3Options } from './s3_options.js';
import { BlobSource, MemorySource, type ByteSource } from './source.js';

/**
 * A file path (Node), a URL (http, https; file and s3://bucket/key in Node; in a page, a string
 * relative to the document), a Blob or File, or bytes in memory.
 */
export type ArchiveSource = string | URL | Blob | ArrayBuffer | ArrayBufferView;

export interface SourceOptions extends HttpOptions {
  /** Where an s3://bucket/key source's store is, and its keys (Node only). */
  readonly s3?: S3Options;
}

/** Opens a file path; registered by the Node entry point (node.ts). */
export type FileOpener = (path: string | URL) => Promise<ByteSource>;

/** Opens an s3://bucket/key URL; registered by the Node entry point (node.ts). */
export type S3Opener = (url: string, options: SourceOptions) => ByteSource;

let fileOpener: FileOpener | undefined;
let s3Opener: S3Opener | undefined;

/** @internal */
export function registerFileOpener(opener: FileOpener): void {
  fileOpener = opener;
}

/** @internal */
export function registerS3Opener(opener: S3Opener): void {
  s3Opener = opener;
}

// An s3:// string is taken as written (the key's bytes as they are, as C++ takes it); a URL object
// has percent-encoded its path, which is decoded back into the key.
function s3UrlText(source: string | URL): string | undefined {
  if (typeof source === 'string') return isS3Url(source) ? source : undefined;
  if (source.protocol !== 's3:') return undefined;
  return `s3://${source.host}${decodeURIComponent(source.pathname)}`;
}

export async function openSource(source: ArchiveSource, options: SourceOptions): Promise<ByteSource> {
  if (typeof source === 'string' || source instanceof URL) {
    const s3 = s3UrlText(source);
    if (s3 !== undefined) {
      if (s3Opener === undefined) {
        // SigV4 needs the secret key, which a page should not hold.
        throw new OnnxzipError('invalid_argument', { source: s3 }, "an s3:// URL needs Node.js (the package's 'node' export), which signs its requests; in a browser pass a presigned https:// URL of the object");
      }
      return s3Opener(s3, options);
    }
    const url = typeof source === 'string' ? parseUrl(source) : source;
    if (url !== undefined && (url.protocol === 'http:' || url.protocol === 'https:')) return new HttpSource(url, options);
    if (url !== undefined && url.protocol !== 'file:') {
      throw new OnnxzipError('invalid_argument', {}, `cannot read ${url.protocol} URLs: pass an http(s) URL, a file path, a Blob or bytes`);
    }
    if (fileOpener === undefined && url === undefined && typeof source === 'string') {
      // In a page, a relative URL is relative to the document, as fetch() takes it.
      const base = (globalThis as { location?: { href?: string } }).location?.href;
      if (base !== undefined) return new HttpSource(new URL(source, base), options);
    }
    if (fileOpener === undefined) {
      throw new OnnxzipError('invalid_argument', { source: String(source) }, "a file path needs Node.js (the package's 'node' export); in a browser pass a URL, a File or bytes");
    }
    return fileOpener(url ?? (source as string));
  }
  if (typeof Blob !== 'undefined' && source instanceof Blob) return new BlobSource(source);
  if (source instanceof ArrayBuffer) return new MemorySource(new Uint8Array(source));
  if (ArrayBuffer.isView(source)) return new MemorySource(new Uint8Array(source.buffer, source.byteOffset, source.byteLength));
  throw new OnnxzipError('invalid_argument', {}, 'openArchive takes a path, a URL, a Blob or File, an ArrayBuffer or a typed array');
}

// Only absolute URLs with a scheme of two letters or more: "C:\\model.onnxz" is a path.
function parseUrl(text: string): URL | undefined {
  if (!/^[A-Za-z][A-Za-z0-9+.-]+:/.test(text)) return undefined;
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

// The one error type of the package.
//
// Every problem the package detects is thrown as an OnnxzipError: a machine-readable `code` (the
// error codes of spec/names.md, as the C++ library's `to_string(ErrorCode)` names them), and a message that names
// the place -- the source (file, URL or "<memory>"), the tensor, the entry -- and says what is wrong,
// with the byte offset where there is one. The place and the problem are kept apart as fields, so
// no caller ever takes the message apart again.

/** The error codes of spec/names.md, as the C++ library names them (include/onnxzip/error.h). */
export type ErrorCode =
  | 'corrupt' // The input breaks its format: truncated, contradictory, out of bounds.
  | 'unsupported' // Valid for its format, but a feature this package does not implement.
  | 'not_found' // A named thing (entry, tensor, file) does not exist.
  | 'io' // A read failed: the file system, the network, an HTTP status.
  | 'invalid_argument' // The caller passed something the API does not accept.
  | 'limit_exceeded' // A configured safety limit (count, size, depth) was exceeded.
  | 'bad_state' // The call is not allowed in the object's current state.
  | 'changed'; // The file changed while it was read (another writer): retrying may succeed.

/**
 * Where a problem lies, as plain values (spec/names.md, "Error codes"): OnnxzipError words them
 * in its message ("<source>: tensor 'W' at graph/initializer[0]: entry 'W': <problem>").
 */
export interface ErrorPlace {
  /** The file path, the URL (without its query, which may hold credentials) or "<memory>". */
  readonly source?: string | undefined;
  /** The tensor's name ("" for an unnamed one). */
  readonly tensor?: string | undefined;
  /** The tensor's site in the model: "graph/initializer[0]". */
  readonly site?: string | undefined;
  /** The archive entry's name. */
  readonly entry?: string | undefined;
}

/** How a message names the tensor of `place`: "tensor 'W' at graph/initializer[0]", or "". */
export function tensorPhrase(place: ErrorPlace): string {
  if (place.tensor === undefined && place.site === undefined) return '';
  const name = `tensor ${quote(place.tensor ?? '')}`;
  return place.site === undefined ? name : `${name} at ${place.site}`;
}

export class OnnxzipError extends Error {
  override readonly name = 'OnnxzipError';
  readonly code: ErrorCode;
  /** What is wrong, without the place (the message is "<source>: <tensor>: <entry>: <problem>"). */
  readonly problem: string;
  readonly source: string | undefined;
  /** The tensor's name, its site and the entry's name: plain values, as in ErrorPlace. */
  readonly tensor: string | undefined;
  readonly site: string | undefined;
  readonly entry: string | undefined;
  /** The byte offset of the problem in the source, when it has one. */
  readonly offset: number | undefined;

  constructor(
    code: ErrorCode,
    place: ErrorPlace,
    problem: string,
    options: { offset?: number | undefined; cause?: unknown } = {},
  ) {
    const entry = place.entry === undefined ? '' : `entry ${quote(place.entry)}`;
    const parts = [place.source ?? '', tensorPhrase(place), entry].filter((part) => part !== '');
    super([...parts, problem].join(': '), options.cause === undefined ? {} : { cause: options.cause });
    this.code = code;
    this.problem = problem;
    this.source = place.source;
    this.tensor = place.tensor;
    this.site = place.site;
    this.entry = place.entry;
    this.offset = options.offset;
  }

  /** This error with the parts of `outer` it does not name yet (its thrower knew its own best). */
  withPlace(outer: ErrorPlace): OnnxzipError {
    return new OnnxzipError(
      this.code,
      {
        source: this.source ?? outer.source,
        tensor: this.tensor ?? outer.tensor,
        site: this.site ?? outer.site,
        entry: this.entry ?? outer.entry,
      },
      this.problem,
      { offset: this.offset, cause: this.cause },
    );
  }
}

/** `value` quoted for a message: 'W', with control characters escaped. */
export function quote(value: string): string {
  const escaped = value.replace(/[\u0000-\u001f\u007f\\']/g, (c) =>
    c === '\\' || c === "'" ? `\\${c}` : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
  return `'${escaped}'`;
}

// Archives over HTTP(S): every read is a range request (RFC 9110 §14).
//
// Opening costs one suffix request (`Range: bytes=-N`), which also gives the file's size
// (Content-Range) and its validator (ETag, else Last-Modified). Every later request carries
// `If-Range` with that validator, so a file replaced between requests answers 200 with the new
// file instead of a range of it, and the read fails instead of mixing two files. What the server
// answers is checked before a byte of it is used: a 206 whose Content-Range is not the range asked
// for (or names another file size), a 200 to a range request, a body longer than its range, are
// errors. 5xx answers, network errors, bodies cut short and stalls longer than the timeout are
// retried a bounded number of times, resuming at the byte reached; other statuses fail at once.
// Messages name the URL without its query and fragment, which may hold credentials (presigned
// URLs), and never show request headers.

import { OnnxzipError, type ErrorPlace } from './errors.js';
import { allocateFor, type ByteRange, type ByteSource, type ReadStats, type StreamConsumer, type TailRead } from './source.js';

/** A fetch function (the global one by default). */
export type FetchFunction = (input: string, init: RequestInit) => Promise<Response>;

export interface HttpOptions {
  /** Extra request headers, e.g. Authorization for a private hub. Never shown in errors. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Attempts after the first for 5xx answers, network errors, short bodies and stalls. Default 3. */
  readonly retries?: number;
  /** Delay before the first retry, doubled for each next one. Default 200 ms. */
  readonly retryDelayMs?: number;
  /** A request that receives no byte for this long is aborted (and retried). Default 30,000 ms. */
  readonly timeoutMs?: number;
  /** Ranges no farther apart than this are fetched with one request. Default 65,536 bytes. */
  readonly mergeGap?: number;
  /** Requests in flight at most when several runs of ranges are read. Default 4. */
  readonly maxConcurrentRequests?: number;
  readonly fetch?: FetchFunction;
}

/** The first `limit` bytes of a response's body as text ("" when it cannot be read). */
async function boundedText(response: Response, limit: number): Promise<string> {
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const pieces: Uint8Array[] = [];
  let length = 0;
  try {
    while (length < limit) {
      const { done, value } = await reader.read();
      if (done || value === undefined) break;
      pieces.push(value);
      length += value.byteLength;
    }
  } catch {
    // A refusal whose body was cut: its status still says what happened.
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  const all = new Uint8Array(length);
  let at = 0;
  for (const piece of pieces) {
    all.set(piece, at);
    at += piece.byteLength;
  }
  return new TextDecoder().decode(all.subarray(0, Math.min(length, limit)));
}

/** The URL as messages show it: without query and fragment. */
export function displayUrl(url: URL): string {
  return `${url.origin}${url.pathname}`;
}

class Retryable extends Error {}

/**
 * @internal What a store's source (s3.ts) adds to plain HTTP reads: a name for messages, a
 * signature on each attempt, the object pinned by its ETag (If-Match beside If-Range: a replaced
 * object answers 412, which is `changed`), redirects not followed, and a refusal read from the
 * store's answer. Holds the keys only inside `sign`, never as a field that could be shown.
 */
export interface RequestHooks {
  readonly name: string;
  /** Adds the signature headers for a GET of the URL; called at the time of each attempt. */
  sign(headers: Headers): void;
  /** The error for a refusal (not 2xx, not 412), and whether the same request may succeed later. */
  refusal(status: number, body: string): { error: OnnxzipError; retryable: boolean };
}

/** The most of a refusal's body read for RequestHooks.refusal (the store's XML is short). */
const kMaxRefusalBody = 64 << 10;

/** The range a request still has to read: [start, end) of the file; start -1 before the first response. */
interface Progress {
  start: number;
  end: number;
}

/** The most a body read takes at once into a scratch buffer (bytes that have no buffer of their own). */
const kReadPiece = 1 << 18;
/**
 * Ranges up to this size are read in place (BodySink): a failed read keeps the buffer it was
 * given, so a retry reads such a range again from its start. Larger ones go through the scratch
 * buffer, and a retry resumes at the byte reached.
 */
const kInPlaceMax = 64 << 20;

/**
 * Where a response body goes. With a byte-stream reader, the bytes from `at` are read straight
 * into the view `target` gives (a part of their final buffer, at most `max` bytes): the read
 * transfers that buffer and gives it back to `filled`, and the owner takes it instead of its old
 * one (now detached). Bytes without a target (the gaps of a merged run, a consumer of pieces) come
 * to `put` in pieces of a reused scratch buffer.
 *
 * A body is read in many pieces, and whatever each read allocates is garbage at the moment ONNX
 * Runtime holds all the weights (the JS heap's peak): one view per read, no other object (the
 * byte counts are plain numbers, the stall timer one per attempt).
 */
interface BodySink {
  target?(at: number, max: number): Uint8Array | undefined;
  filled?(buffer: ArrayBuffer, at: number): void;
  put(piece: Uint8Array, at: number): void | Promise<void>;
  /**
   * Before a retry that would resume at `at`: where it must resume instead. A read that failed
   * in place kept the buffer it was given (detached, with the bytes before it): the owner
   * allocates that one again and has its bytes read again.
   */
  resume?(at: number): number;
}

/** Buffers of the ranges a readRanges call fills, shared by the requests of its runs. */
interface RangeBuffers {
  readonly ranges: readonly ByteRange[];
  /** Where each range starts in its buffer. */
  readonly placed: readonly number[];
  /** Each range's buffer (replaced by the one a read in place gives back). */
  readonly owners: ArrayBuffer[];
}

/** Runs of ranges (indices) close enough to fetch with one request. */
function runsOf(ranges: readonly ByteRange[], mergeGap: number): number[][] {
  const runs: number[][] = [];
  ranges.forEach((r, i) => {
    const run = runs[runs.length - 1];
    const last = run === undefined ? undefined : ranges[run[run.length - 1]!]!;
    if (last !== undefined && r.offset >= last.offset + last.length && r.offset - (last.offset + last.length) <= mergeGap) run!.push(i);
    else runs.push([i]);
  });
  return runs;
}

/** Where the body of one run goes: each range's own buffer; the gaps between them are skipped. */
class RunSink implements BodySink {
  /** The first range of the run not yet complete. */
  private k = 0;

  constructor(
    private readonly into: RangeBuffers,
    private readonly run: readonly number[],
    private readonly sourceName: string,
  ) {}

  target(at: number, max: number): Uint8Array | undefined {
    const i = this.holding(at);
    const r = i === undefined ? undefined : this.into.ranges[i]!;
    if (i === undefined || r === undefined || r.length > kInPlaceMax) return undefined;
    return new Uint8Array(this.into.owners[i]!, this.into.placed[i]! + (at - r.offset), Math.min(max, r.offset + r.length - at));
  }

  filled(buffer: ArrayBuffer, at: number): void {
    this.into.owners[this.holding(at)!] = buffer;
  }

  put(piece: Uint8Array, at: number): void {
    // Hand each byte of the piece to the range that holds it; skip the gaps between them.
    const { ranges, owners, placed } = this.into;
    let p = 0;
    while (p < piece.byteLength) {
      const pos = at + p;
      const i = this.holding(pos);
      if (i === undefined) {
        if (this.k >= this.run.length) break;
        p += Math.min(piece.byteLength - p, ranges[this.run[this.k]!]!.offset - pos);
        continue;
      }
      const r = ranges[i]!;
      const n = Math.min(piece.byteLength - p, r.offset + r.length - pos);
      new Uint8Array(owners[i]!, placed[i]! + (pos - r.offset), n).set(piece.subarray(p, p + n));
      p += n;
    }
  }

  resume(at: number): number {
    const { ranges, owners } = this.into;
    for (const [j, i] of this.run.entries()) {
      if (owners[i]!.byteLength === 0 && ranges[i]!.length > 0) {
        owners[i] = allocateFor(ranges[i]!, this.sourceName).buffer as ArrayBuffer;
        this.k = j;
        return Math.min(at, ranges[i]!.offset);
      }
    }
    return at;
  }

  // The range that holds `at`, or undefined in a gap.
  private holding(at: number): number | undefined {
    const { ranges } = this.into;
    const run = this.run;
    while (this.k < run.length && at >= ranges[run[this.k]!]!.offset + ranges[run[this.k]!]!.length) ++this.k;
    return this.k < run.length && at >= ranges[run[this.k]!]!.offset ? run[this.k]! : undefined;
  }
}

/**
 * One timer for an attempt: when it fires, it aborts the request if no byte came for the
 * timeout, else waits for the rest of that time (not a timer per read).
 */
class StallTimer {
  private readonly controller = new AbortController();
  // A typed array: a number field would box a double each time it is set.
  private readonly lastByte = new Float64Array([performance.now()]);
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly timeoutMs: number) {
    this.timer = setTimeout(() => this.check(), timeoutMs);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  touch(): void {
    this.lastByte[0] = performance.now();
  }

  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
  }

  private check(): void {
    const idle = performance.now() - this.lastByte[0]!;
    if (idle >= this.timeoutMs) this.controller.abort();
    else this.timer = setTimeout(() => this.check(), this.timeoutMs - idle);
  }
}

/**
 * Reads a response body. A byte-stream reader fills the bytes' own buffer (a sink's target), or
 * one reused scratch buffer: no chunk is allocated per read, since every one would be garbage at
 * the JS heap's peak, when ONNX Runtime holds the weights. Platforms without one give chunks.
 * The last read's outcome is in `done`, `value` and `inPlace` (fields, not a new object per read).
 */
class BodyReader {
  done = false;
  value: Uint8Array | undefined;
  /** The last read filled a sink's target. */
  inPlace = false;
  private readonly byob: ReadableStreamBYOBReader | undefined;
  private readonly chunks: ReadableStreamDefaultReader<Uint8Array> | undefined;
  // Allocated when a byte has no buffer of its own to go to.
  private scratch: ArrayBuffer | undefined;

  constructor(body: ReadableStream<Uint8Array>) {
    let byob: ReadableStreamBYOBReader | undefined;
    try {
      byob = body.getReader({ mode: 'byob' });
    } catch {
      byob = undefined;
    }
    this.byob = byob;
    this.chunks = byob === undefined ? body.getReader() : undefined;
  }

  /** Reads the bytes from `at` (the range ends at `end`) into the sink's target, or elsewhere. */
  async next(at: number, end: number, sink: BodySink): Promise<void> {
    this.inPlace = false;
    if (this.byob === undefined) {
      ({ done: this.done, value: this.value } = await this.chunks!.read());
      return;
    }
    // Past the end of the range, a few bytes tell a body that is too long.
    const target = at < end ? sink.target?.(at, end - at) : undefined;
    if (target !== undefined && target.byteLength > 0) {
      this.inPlace = true;
      ({ done: this.done, value: this.value } = await this.byob.read(target));
      return;
    }
    const room = at < end ? Math.min(end - at, kReadPiece) : 16;
    if (this.scratch === undefined || this.scratch.byteLength < room) this.scratch = new ArrayBuffer(room);
    ({ done: this.done, value: this.value } = await this.byob.read(new Uint8Array(this.scratch, 0, room)));
    // The read detached the buffer it filled and gives it back with the bytes.
    if (this.value !== undefined) this.scratch = this.value.buffer as ArrayBuffer;
  }

  async cancel(): Promise<void> {
    await (this.byob ?? this.chunks)!.cancel().catch(() => undefined);
  }
}

export class HttpSource implements ByteSource {
  readonly kind = 'url';
  readonly name: string;
  private requests = 0;
  private bytesRead = 0;
  private size: number | undefined;
  private etag: string | undefined;
  private lastModified: string | undefined;
  private readonly place: ErrorPlace;
  private readonly fetchImpl: FetchFunction;
  private readonly retries: number;
  private readonly retryDelayMs: number;
  private readonly timeoutMs: number;
  private readonly mergeGap: number;
  private readonly concurrency: number;

  constructor(
    private readonly url: URL,
    private readonly options: HttpOptions = {},
    private readonly hooks?: RequestHooks,
  ) {
    this.name = hooks?.name ?? displayUrl(url);
    this.place = { source: this.name };
    const global = globalThis.fetch as FetchFunction | undefined;
    const f = options.fetch ?? global;
    if (f === undefined) throw new OnnxzipError('unsupported', this.place, 'no fetch() in this environment: pass options.fetch');
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.retries = options.retries ?? 3;
    this.retryDelayMs = options.retryDelayMs ?? 200;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.mergeGap = options.mergeGap ?? 65_536;
    this.concurrency = Math.max(1, options.maxConcurrentRequests ?? 4);
  }

  get stats(): ReadStats {
    return { requests: this.requests, bytes: this.bytesRead };
  }

  async readTail(length: number): Promise<TailRead> {
    // The size is known from the first response only: the buffer is allocated then.
    let buffer = new ArrayBuffer(0);
    let start = -1;
    const ensure = (): void => {
      if (start >= 0) return;
      start = Math.max(0, (this.size ?? 0) - length);
      buffer = allocateFor({ offset: start, length: (this.size ?? 0) - start }, this.name).buffer as ArrayBuffer;
    };
    // A read that failed in place took the buffer with it: its length reads 0.
    const detached = (): boolean => start >= 0 && buffer.byteLength === 0 && (this.size ?? 0) > start;
    await this.request(
      { suffix: length },
      {
        target: (at, max) => {
          ensure();
          return at - start < buffer.byteLength ? new Uint8Array(buffer, at - start, Math.min(max, buffer.byteLength - (at - start))) : undefined;
        },
        filled: (given) => {
          buffer = given;
        },
        put: (piece, at) => {
          ensure();
          new Uint8Array(buffer).set(piece, at - start);
        },
        resume: (at) => {
          if (!detached()) return at;
          buffer = allocateFor({ offset: start, length: (this.size ?? 0) - start }, this.name).buffer as ArrayBuffer;
          return start;
        },
      },
    );
    return { size: this.size ?? 0, bytes: new Uint8Array(buffer) };
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    const [bytes] = await this.readRanges([{ offset, length }]);
    return bytes!;
  }

  async readRanges(ranges: readonly ByteRange[]): Promise<Uint8Array[]> {
    // Each range's buffer, and where in it the range starts (allocateFor's phase). A read in
    // place transfers the buffer: the one it gives back replaces it; a failed one leaves it
    // detached (its length reads 0).
    const buffers = ranges.map((r) => allocateFor(r, this.name));
    const into: RangeBuffers = { ranges, placed: buffers.map((b) => b.byteOffset), owners: buffers.map((b) => b.buffer as ArrayBuffer) };
    const runs = runsOf(ranges, this.mergeGap);
    let next = 0;
    const workers = Array.from({ length: Math.min(this.concurrency, runs.length) }, async () => {
      while (next < runs.length) await this.fetchRun(into, runs[next++]!);
    });
    await Promise.all(workers);
    return ranges.map((r, i) => new Uint8Array(into.owners[i]!, into.placed[i]!, r.length));
  }

  /** One request for the run of ranges `run` (indices into `into.ranges`). */
  private async fetchRun(into: RangeBuffers, run: readonly number[]): Promise<void> {
    const first = into.ranges[run[0]!]!;
    const last = into.ranges[run[run.length - 1]!]!;
    const start = first.offset;
    const end = last.offset + last.length;
    if (end === start) return;
    await this.request({ start, end }, new RunSink(into, run, this.name));
  }

  async stream(offset: number, length: number, consume: StreamConsumer): Promise<void> {
    if (length === 0) return;
    await this.request({ start: offset, end: offset + length }, { put: consume });
  }

  async close(): Promise<void> {}

  /**
   * One range with retries: `sink` gets the body's bytes with the offset of the first, in order,
   * each byte once (a retry resumes where the last attempt stopped).
   */
  private async request(what: { suffix: number } | { start: number; end: number }, sink: BodySink): Promise<void> {
    // After the first response, a retry asks for the rest of the range that response announced
    // (attempt() keeps `reached` up to date; start -1: no response yet).
    const reached: Progress = 'start' in what ? { start: what.start, end: what.end } : { start: -1, end: -1 };
    for (let attempt = 0; ; ++attempt) {
      try {
        await this.attempt(reached.start < 0 ? what : reached, sink, reached);
        return;
      } catch (e) {
        if (!(e instanceof Retryable) || attempt >= this.retries) {
          if (e instanceof OnnxzipError) throw e;
          throw new OnnxzipError('io', this.place, `${e instanceof Error ? e.message : String(e)}${attempt > 0 ? ` (after ${attempt + 1} attempts)` : ''}`, { cause: e });
        }
        if (reached.start >= 0 && sink.resume !== undefined) reached.start = sink.resume(reached.start);
        else sink.resume?.(0);
        await new Promise((resolve) => setTimeout(resolve, this.retryDelayMs * 2 ** attempt));
      }
    }
  }

  private async attempt(what: { suffix: number } | { readonly start: number; readonly end: number }, sink: BodySink, reached: Progress): Promise<void> {
    const headers = new Headers(this.options.headers ?? {});
    const asked = 'suffix' in what ? `bytes=-${what.suffix}` : `bytes=${what.start}-${what.end - 1}`;
    headers.set('Range', asked);
    const validator = this.etag ?? this.lastModified;
    if (validator !== undefined) headers.set('If-Range', validator);
    if (this.hooks !== undefined && this.etag !== undefined) headers.set('If-Match', this.etag);
    this.hooks?.sign(headers);
    const stall = new StallTimer(this.timeoutMs);
    ++this.requests;
    try {
      let response: Response;
      try {
        // A store answers a request for the bucket's wrong region with a 301, which is reported.
        const redirect = this.hooks === undefined ? 'follow' : 'manual';
        response = await this.fetchImpl(this.url.href, { headers, signal: stall.signal, cache: 'no-store', redirect });
      } catch (e) {
        throw new Retryable(stall.signal.aborted ? `no response within ${this.timeoutMs} ms (${asked})` : `request failed (${asked}): ${e instanceof Error ? e.message : String(e)}`);
      }
      if (this.hooks !== undefined) await this.storeRefusal(response, what, asked);
      const { start, end } = this.checkResponse(response, what, asked, validator !== undefined);
      reached.start = start;
      reached.end = end;
      const at = response.body === null ? start : await this.readBody(response.body, { start, end, asked }, sink, reached, stall);
      if (at < end) throw new Retryable(`the body ended at offset ${at}, before the end of its range at ${end} (${asked})`);
    } finally {
      stall.stop();
    }
  }

  /** Reads `body` (of the range [start, end)) into `sink`, keeping `reached` up to date; returns the offset reached. */
  private async readBody(body: ReadableStream<Uint8Array>, range: { start: number; end: number; asked: string }, sink: BodySink, reached: Progress, stall: StallTimer): Promise<number> {
    const { start, end, asked } = range;
    const reader = new BodyReader(body);
    let at = start;
    try {
      for (;;) {
        try {
          await reader.next(at, end, sink);
        } catch (e) {
          throw new Retryable(stall.signal.aborted ? `the body stalled for ${this.timeoutMs} ms at offset ${at} (${asked})` : `the body was cut at offset ${at} (${asked}): ${e instanceof Error ? e.message : String(e)}`);
        }
        const value = reader.value;
        // A done read gives the buffer back empty: an in-place target takes it back all the same.
        if (reader.inPlace && value !== undefined) sink.filled?.(value.buffer as ArrayBuffer, at);
        if (reader.done || value === undefined) break;
        if (value.byteLength === 0) continue;
        stall.touch();
        if (value.byteLength > end - at) {
          throw new OnnxzipError('io', this.place, `the server sent more than the ${end - start} bytes of its Content-Range (${asked})`, { offset: at });
        }
        if (!reader.inPlace) await sink.put(value, at);
        at += value.byteLength;
        this.bytesRead += value.byteLength;
        reached.start = at;
      }
    } finally {
      await reader.cancel();
    }
    return at;
  }

  /**
   * Throws a store's refusal: 412 to If-Match (the pinned ETag no longer matches) as `changed`,
   * any other status but 200, 206 and the 416 of an empty object as the hooks word it.
   */
  private async storeRefusal(response: Response, what: { suffix: number } | { start: number; end: number }, asked: string): Promise<void> {
    const status = response.status;
    if (status === 200 || status === 206 || (status === 416 && 'suffix' in what)) return;
    const body = await boundedText(response, kMaxRefusalBody);
    if (status === 412 && this.etag !== undefined) this.changed(`its ETag is no longer ${this.etag} (HTTP 412 for ${asked})`);
    const { error, retryable } = this.hooks!.refusal(status, body);
    if (retryable) throw new Retryable(error.problem);
    throw error;
  }

  /** The [start, end) the response carries, after checking it is what was asked for. */
  private checkResponse(response: Response, what: { suffix: number } | { start: number; end: number }, asked: string, conditional: boolean): { start: number; end: number } {
    if (response.status === 200 && 'suffix' in what && !conditional) {
      const whole = this.wholeFileAsTail(response, what.suffix);
      if (whole !== undefined) return whole;
    }
    const empty = this.checkStatus(response, what, asked, conditional);
    if (empty) return { start: 0, end: 0 };
    const header = response.headers.get('Content-Range');
    const m = header === null ? null : /^bytes (\d+)-(\d+)\/(\d+)$/.exec(header.trim());
    if (m === null) this.badRange(response, `Content-Range ${header === null ? 'is missing' : `'${header}' is not 'bytes first-last/size'`}`, asked);
    const first = Number(m![1]);
    const last = Number(m![2]);
    const total = Number(m![3]);
    if (![first, last, total].every(Number.isSafeInteger) || last < first || last >= total) {
      this.badRange(response, `Content-Range '${header}' is not a range of the file`, asked);
    }
    this.checkSameFile(response, total);
    const wantStart = 'suffix' in what ? Math.max(0, total - what.suffix) : what.start;
    const wantEnd = 'suffix' in what ? total : what.end;
    if (first !== wantStart || last + 1 !== wantEnd) {
      this.badRange(response, `Content-Range '${header}' is not the range asked for`, asked);
    }
    const length = response.headers.get('Content-Length');
    if (length !== null && Number(length) !== last + 1 - first) {
      this.badRange(response, `Content-Length ${length} differs from the ${last + 1 - first} bytes of Content-Range '${header}'`, asked);
    }
    return { start: first, end: last + 1 };
  }

  /**
   * A 200 to the opening suffix request is the whole file: its tail when its Content-Length is no
   * more than was asked for (S3 answers so for an empty object, as the C++ reader accepts).
   */
  private wholeFileAsTail(response: Response, suffix: number): { start: number; end: number } | undefined {
    const length = Number(response.headers.get('Content-Length') ?? NaN);
    if (!Number.isSafeInteger(length) || length < 0 || length > suffix) return undefined;
    this.checkSameFile(response, length);
    return { start: 0, end: length };
  }

  /**
   * Refuses a status other than 206 (5xx: retryable; 200: a Range ignored, or If-Range not met);
   * true for the 416 of a suffix range of an empty file, which has no bytes to send.
   */
  private checkStatus(response: Response, what: { suffix: number } | { start: number; end: number }, asked: string, conditional: boolean): boolean {
    const status = response.status;
    if (status === 206) return false;
    void response.body?.cancel().catch(() => undefined);
    if (status >= 500) throw new Retryable(`HTTP ${status} ${response.statusText} (${asked})`);
    if (status === 200) {
      if (conditional) this.changed('If-Range was not met (HTTP 200 instead of 206)');
      throw new OnnxzipError('io', this.place, `the server ignored the Range header (HTTP 200 with the whole file for ${asked}): a server that serves byte ranges is needed`);
    }
    if (status === 416 && 'suffix' in what) {
      const total = /^bytes \*\/(\d+)$/.exec(response.headers.get('Content-Range') ?? '');
      if (total !== null && Number(total[1]) === 0) {
        this.size = 0;
        return true;
      }
    }
    throw new OnnxzipError('io', this.place, `HTTP ${status} ${response.statusText} (${asked})`);
  }

  /** The first response gives the file's size and validator; every later one must agree with them. */
  private checkSameFile(response: Response, total: number): void {
    const etag = response.headers.get('ETag') ?? undefined;
    const lastModified = response.headers.get('Last-Modified') ?? undefined;
    if (this.size === undefined) {
      this.size = total;
      // If-Range needs a strong validator: a strong ETag, else the date.
      if (etag !== undefined && !etag.startsWith('W/')) this.etag = etag;
      else this.lastModified = lastModified;
      return;
    }
    if (total !== this.size) this.changed(`its size was ${this.size} bytes, it is now ${total}`);
    if (this.etag !== undefined && etag !== undefined && etag !== this.etag) this.changed(`its ETag was ${this.etag}, it is now ${etag}`);
  }

  private badRange(response: Response, problem: string, asked: string): never {
    void response.body?.cancel().catch(() => undefined);
    throw new OnnxzipError('io', this.place, `${problem} (${asked})`);
  }

  private changed(how: string): never {
    throw new OnnxzipError('changed', this.place, `the remote file changed while it was read: ${how}`);
  }
}

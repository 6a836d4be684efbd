// A small HTTP server for the tests: serves files with byte ranges (RFC 9110 §14: single ranges,
// suffix ranges, If-Range with a strong ETag), logs every request it gets (method, path, Range,
// status), and injects faults into chosen requests. Listens on 127.0.0.1 with an ephemeral port.
//
//   const server = await RangeServer.start({ '/m.onnxz': bytes });
//   server.url('/m.onnxz'); server.log; server.inject('503', { times: 1 }); await server.stop();
//
// Faults, each applied to the next `times` requests (of `path`, or any):
//   '503'          answer 503 Service Unavailable
//   'reset'        send the headers and half the body, then destroy the connection
//   'stall'        send the headers and half the body, then nothing (until the client gives up)
//   'ignore-range' answer 200 with the whole file (a server without range support)
//   'wrong-range'  answer 206 with a Content-Range one byte off from the range asked for
//   'long-body'    answer 206 with a correct Content-Range, then 16 bytes more than it announces
//   'change'       serve the file as if it were replaced: another ETag, and the first byte flipped
//   'claim-terabyte'  answer a range with the right bytes but a Content-Range of a 1 TiB file
import { readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, join, normalize } from 'node:path';

const kTypes = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.map': 'application/json' };

export class RangeServer {
  /** Every request, in order: { method, path, range, ifRange, status, bytes (of the body sent) }. */
  log = [];
  #files;
  #faults = [];
  #server;
  #sockets = new Set();
  #generation = new Map();

  constructor(files) {
    this.#files = new Map(Object.entries(files));
  }

  /** options.static: { '/prefix/': folder } served as files (read when asked for); options.cors. */
  static async start(files, options = {}) {
    const s = new RangeServer(files);
    s.static = options.static ?? {};
    s.#server = createServer((req, res) => s.#handle(req, res));
    s.#server.on('connection', (socket) => {
      s.#sockets.add(socket);
      socket.on('close', () => s.#sockets.delete(socket));
    });
    s.cors = options.cors ?? false;
    await new Promise((resolve) => s.#server.listen(0, '127.0.0.1', resolve));
    return s;
  }

  get origin() {
    return `http://127.0.0.1:${this.#server.address().port}`;
  }

  url(path) {
    return `${this.origin}${path}`;
  }

  setFile(path, bytes) {
    this.#files.set(path, bytes);
  }

  inject(fault, { times = 1, path } = {}) {
    this.#faults.push({ fault, times, path });
  }

  clearFaults() {
    this.#faults.length = 0;
  }

  /** Requests for `path` since the log was last cleared. */
  requests(path) {
    return this.log.filter((r) => path === undefined || r.path === path);
  }

  clearLog() {
    this.log.length = 0;
  }

  async stop() {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  #staticFile(path) {
    for (const [prefix, folder] of Object.entries(this.static)) {
      if (!path.startsWith(prefix)) continue;
      const file = normalize(join(folder, path.slice(prefix.length)));
      if (!file.startsWith(normalize(folder))) return undefined;
      try {
        if (statSync(file).isFile()) return readFileSync(file);
      } catch {
        return undefined;
      }
    }
    return undefined;
  }

  #takeFault(path) {
    const i = this.#faults.findIndex((f) => f.path === undefined || f.path === path);
    if (i < 0) return undefined;
    const f = this.#faults[i];
    if (--f.times <= 0) this.#faults.splice(i, 1);
    return f.fault;
  }

  #handle(req, res) {
    const path = new URL(req.url, 'http://x').pathname;
    const entry = { method: req.method, path, range: req.headers.range, ifRange: req.headers['if-range'], status: 0, bytes: 0 };
    this.log.push(entry);
    const send = (status, headers, body) => {
      entry.status = status;
      entry.bytes = body?.length ?? 0;
      if (this.cors) headers['Access-Control-Allow-Origin'] = '*';
      res.writeHead(status, headers);
      res.end(body);
    };
    let bytes = this.#files.get(path) ?? this.#staticFile(path);
    if (req.method === 'OPTIONS') return send(204, { 'Access-Control-Allow-Headers': 'Range, If-Range', 'Access-Control-Allow-Methods': 'GET' });
    if (bytes === undefined || (req.method !== 'GET' && req.method !== 'HEAD')) return send(404, {}, 'not found');
    const fault = this.#takeFault(path);
    if (fault === 'change') {
      this.#generation.set(path, (this.#generation.get(path) ?? 0) + 1);
      const changed = Buffer.from(bytes);
      changed[0] ^= 0xff;
      this.#files.set(path, changed);
      bytes = changed;
    }
    if (fault === '503') return send(503, { 'Content-Type': 'text/plain' }, 'try again');
    const etag = `"${bytes.length.toString(16)}-${this.#generation.get(path) ?? 0}"`;
    const common = { ETag: etag, 'Accept-Ranges': 'bytes', 'Content-Type': kTypes[extname(path)] ?? 'application/octet-stream', 'Access-Control-Expose-Headers': 'Content-Range, ETag, Content-Length' };
    const size = bytes.length;
    let range = parseRange(req.headers.range, size);
    if (req.headers['if-range'] !== undefined && req.headers['if-range'] !== etag) range = undefined; // Changed: the whole file.
    if (range === null) return send(416, { ...common, 'Content-Range': `bytes */${size}` });
    if (range === undefined || fault === 'ignore-range') {
      return send(200, { ...common, 'Content-Length': String(size) }, req.method === 'HEAD' ? undefined : bytes);
    }
    let [start, end] = range; // Inclusive.
    let announced = `bytes ${start}-${end}/${size}`;
    if (fault === 'wrong-range') announced = `bytes ${start + 1}-${Math.min(end + 1, size - 1)}/${size}`;
    if (fault === 'claim-terabyte') {
      // The file's real tail, as the tail of a 1 TiB file.
      const huge = 2 ** 40;
      announced = `bytes ${huge - (end + 1 - start)}-${huge - 1}/${huge}`;
    }
    const body = bytes.subarray(start, end + 1);
    if (fault === 'long-body') {
      entry.status = 206;
      res.writeHead(206, { ...common, 'Content-Range': announced });
      res.end(Buffer.concat([body, Buffer.alloc(16)]));
      return;
    }
    if (fault === 'reset' || fault === 'stall') {
      entry.status = 206;
      res.writeHead(206, { ...common, 'Content-Range': announced, 'Content-Length': String(body.length) });
      res.write(body.subarray(0, Math.floor(body.length / 2)));
      if (fault === 'reset') setTimeout(() => res.socket?.destroy(), 20);
      return;
    }
    send(206, { ...common, 'Content-Range': announced, 'Content-Length': String(body.length) }, req.method === 'HEAD' ? undefined : body);
  }
}

// [start, end] inclusive; undefined without a (usable) Range header; null when unsatisfiable.
function parseRange(header, size) {
  if (header === undefined) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (m === null || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    const n = Number(m[2]);
    if (n === 0 || size === 0) return null;
    return [Math.max(0, size - n), size - 1];
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) return null;
  return [start, end];
}

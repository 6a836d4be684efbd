// Archives over HTTP: the requests each operation costs, counted at the server, and what the
// reader does when the server misbehaves.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';

import { OnnxzipError, openArchive } from '../../dist/node.js';
import { fixture } from '../support/fixtures.mjs';
import { RangeServer } from '../support/range_server.mjs';

const kSmallTail = 65_633; // The least tail: the end record with the longest comment, zip64 records.

let server;
const mlp = () => server.url('/mlp.onnxz');

before(async () => {
  server = await RangeServer.start({
    '/mlp.onnxz': readFileSync(fixture('mlp.onnxz')),
    '/docmodel.onnxz': readFileSync(fixture('docmodel.onnxz')),
  });
});
after(async () => server.stop());

/** The requests `f` makes, as [Range, If-Range, status]. */
async function requestsOf(f) {
  server.clearLog();
  const result = await f();
  return { result, requests: server.log.map((r) => [r.range, r.ifRange, r.status]) };
}

async function expectError(promise, code, pattern) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof OnnxzipError, String(e));
    assert.equal(e.code, code, e.message);
    assert.match(e.message, pattern);
    return true;
  });
}

describe('request counts', () => {
  it('open, list and model: one suffix request when the tail holds them', async () => {
    const { result: archive, requests } = await requestsOf(() => openArchive(mlp(), { tailSize: kSmallTail }));
    assert.deepEqual(requests, [[`bytes=-${kSmallTail}`, undefined, 206]]);
    assert.deepEqual(archive.tensors.map((t) => `${t.name}:${t.dims.join('x')}`), ['W1:256x512', 'b1:512', 'W2:512x256', 'b2:256']);
    const local = await openArchive(fixture('mlp.onnxz'));
    assert.deepEqual(archive.modelBytes, local.modelBytes);
    await local.close();
  });

  it('open: two requests when the model is larger than the tail, the second ending where the first began', async () => {
    const size = readFileSync(fixture('docmodel.onnxz')).length;
    const { result: archive, requests } = await requestsOf(() => openArchive(server.url('/docmodel.onnxz'), { tailSize: kSmallTail }));
    assert.equal(requests.length, 2);
    assert.deepEqual(requests[0], [`bytes=-${kSmallTail}`, undefined, 206]);
    const [, from, to] = /^bytes=(\d+)-(\d+)$/.exec(requests[1][0]).map(Number);
    assert.equal(to, size - kSmallTail - 1);
    assert.equal(from, archive.entries.at(-1).localHeaderOffset);
    assert.match(requests[1][1], /^".+"$/); // If-Range: the ETag of the first response.
    assert.ok(archive.modelBytes.byteLength > 200_000);
  });

  it('open with the default tail (1 MiB): one request for a 200 KB model', async () => {
    const { requests } = await requestsOf(() => openArchive(server.url('/docmodel.onnxz')));
    assert.equal(requests.length, 1);
  });

  it('one tensor: one range request with If-Range, exactly its entry', async () => {
    const archive = await openArchive(mlp(), { tailSize: kSmallTail });
    const w1 = archive.entry('W1');
    assert.equal(w1.dataOffset, undefined); // Not known before the entry is read.
    const { result, requests } = await requestsOf(() => archive.getTensor('W1'));
    assert.equal(requests.length, 1);
    const [range, ifRange, status] = requests[0];
    assert.equal(status, 206);
    assert.match(ifRange, /^".+"$/);
    // Its span: from its local header to the next one (the header is checked on the way).
    assert.equal(range, `bytes=${w1.localHeaderOffset}-${archive.entries[1].localHeaderOffset - 1}`);
    const local = await openArchive(fixture('mlp.onnxz'));
    assert.deepEqual(result, await local.getTensor('W1'));
    assert.equal(result.byteOffset % 64, 0); // Aligned in memory as in the file: a view, not a copy.
    // Read again: the local header is known, only the data is asked for.
    const again = await requestsOf(() => archive.getTensor('W1'));
    assert.deepEqual(again.requests.map((r) => r[0]), [`bytes=${w1.dataOffset}-${w1.dataOffset + w1.size - 1}`]);
    await local.close();
  });

  it('tensors asked for together: one request for adjacent entries', async () => {
    const archive = await openArchive(mlp(), { tailSize: kSmallTail });
    const { result, requests } = await requestsOf(() => archive.getTensors(['W1', 'b1', 'W2']));
    assert.equal(requests.length, 1);
    const local = await openArchive(fixture('mlp.onnxz'));
    assert.deepEqual(result, await local.getTensors(['W1', 'b1', 'W2']));
    await local.close();
  });

  it('tensors apart: W1 and W2 with b1 (2 KiB) between them merge; with mergeGap 0 they do not', async () => {
    let archive = await openArchive(mlp(), { tailSize: kSmallTail });
    assert.equal((await requestsOf(() => archive.getTensors(['W1', 'W2']))).requests.length, 1);
    archive = await openArchive(mlp(), { tailSize: kSmallTail, mergeGap: 0 });
    assert.equal((await requestsOf(() => archive.getTensors(['W1', 'W2']))).requests.length, 2);
  });

  it('tensors inside the tail read at open cost no request', async () => {
    const archive = await openArchive(mlp());
    assert.equal((await requestsOf(() => archive.getTensor('b2'))).requests.length, 0);
  });

  it('verify: one request for every entry after the open', async () => {
    const archive = await openArchive(mlp(), { tailSize: kSmallTail });
    const { result: report, requests } = await requestsOf(() => archive.verify());
    assert.equal(requests.length, 1);
    assert.equal(requests[0][0], `bytes=0-${(await centralOffset()) - 1}`);
    assert.deepEqual(report.findings, []);
  });
});

async function centralOffset() {
  const bytes = readFileSync(fixture('mlp.onnxz'));
  return bytes.readUInt32LE(bytes.length - 22 + 16);
}

describe('faults', () => {
  it('a 503 is retried: two requests, the tensor read', async () => {
    const archive = await openArchive(mlp(), { tailSize: kSmallTail, retryDelayMs: 1 });
    server.inject('503');
    const { result, requests } = await requestsOf(() => archive.getTensor('W2'));
    assert.deepEqual(requests.map((r) => r[2]), [503, 206]);
    assert.equal(requests[0][0], requests[1][0]);
    assert.equal(result.length, 512 * 256);
  });

  it('a connection reset mid-body is retried: a tensor read in place again from its start', async () => {
    const archive = await openArchive(mlp(), { tailSize: kSmallTail, retryDelayMs: 1 });
    await archive.getTensor('W1'); // Its local header is known from now on.
    const w1 = archive.entry('W1');
    server.inject('reset');
    const { result, requests } = await requestsOf(() => archive.getTensor('W1'));
    assert.deepEqual(requests.map((r) => r[0]), [`bytes=${w1.dataOffset}-${w1.dataOffset + w1.size - 1}`, `bytes=${w1.dataOffset}-${w1.dataOffset + w1.size - 1}`]);
    const local = await openArchive(fixture('mlp.onnxz'));
    assert.deepEqual(result, await local.getTensor('W1'));
    await local.close();
  });

  it('a connection reset mid-body of a stream is resumed at the byte reached', async () => {
    const archive = await openArchive(mlp(), { tailSize: kSmallTail, retryDelayMs: 1 });
    server.inject('reset');
    const { result: report, requests } = await requestsOf(() => archive.verify());
    assert.equal(requests.length, 2);
    const [, first, end] = /^bytes=(\d+)-(\d+)$/.exec(requests[0][0]).map(Number);
    const [, resumed, last] = /^bytes=(\d+)-(\d+)$/.exec(requests[1][0]).map(Number);
    assert.equal(first, 0);
    assert.ok(resumed > first, `resumed at ${resumed}, not after ${first}`);
    assert.equal(last, end);
    assert.deepEqual(report.findings, []);
  });

  it('a stalled body times out and is retried', async () => {
    const archive = await openArchive(mlp(), { tailSize: kSmallTail, timeoutMs: 300, retryDelayMs: 1 });
    server.inject('stall');
    const { result, requests } = await requestsOf(() => archive.getTensor('W2'));
    assert.equal(requests.length, 2);
    assert.equal(result.length, 512 * 256);
  });

  it('a stall with no retries left is an io error naming the stall', async () => {
    const archive = await openArchive(mlp(), { tailSize: kSmallTail, timeoutMs: 200, retries: 0 });
    server.inject('stall');
    await expectError(archive.getTensor('W2'), 'io', /stalled for 200 ms at offset \d+/);
  });

  it('5xx on every attempt: an io error after 1 + retries requests', async () => {
    const archive = await openArchive(mlp(), { tailSize: kSmallTail, retries: 2, retryDelayMs: 1 });
    server.inject('503', { times: 10 });
    server.clearLog();
    await expectError(archive.getTensor('W2'), 'io', /HTTP 503 .*after 3 attempts/);
    assert.equal(server.log.length, 3);
    server.clearFaults();
  });

  it('a server that ignores Range is refused at open', async () => {
    server.inject('ignore-range');
    await expectError(openArchive(mlp()), 'io', /ignored the Range header \(HTTP 200/);
  });

  // As the C++ reader takes it, and as S3 answers a suffix range of an empty object.
  it('a whole file no larger than the tail asked for is the tail', async () => {
    server.setFile('/whole.onnxz', readFileSync(fixture('sites.onnxz')));
    server.inject('ignore-range', { path: '/whole.onnxz' });
    server.clearLog();
    const archive = await openArchive(server.url('/whole.onnxz'));
    try {
      assert.equal(server.log.length, 1);
      assert.equal(server.log[0].status, 200);
      const local = await openArchive(fixture('sites.onnxz'));
      assert.deepEqual(await archive.getTensors(archive.tensors), await local.getTensors(local.tensors));
      await local.close();
    } finally {
      await archive.close();
    }
  });

  it('a file changed between requests is refused, not mixed', async () => {
    server.setFile('/changing.onnxz', readFileSync(fixture('mlp.onnxz')));
    const archive = await openArchive(server.url('/changing.onnxz'), { tailSize: kSmallTail });
    server.inject('change', { path: '/changing.onnxz' });
    await expectError(archive.getTensor('W1'), 'changed', /the remote file changed while it was read/);
  });

  it('a wrong Content-Range is refused', async () => {
    const archive = await openArchive(mlp(), { tailSize: kSmallTail });
    server.inject('wrong-range');
    await expectError(archive.getTensor('W1'), 'io', /Content-Range 'bytes \d+-\d+\/\d+' is not the range asked for/);
  });

  it('a body longer than its Content-Range is refused', async () => {
    const archive = await openArchive(mlp(), { tailSize: kSmallTail, retries: 0 });
    server.inject('long-body');
    await expectError(archive.getTensor('b1'), 'io', /sent more than the \d+ bytes of its Content-Range/);
  });

  it('404 fails at once, naming the URL without its query', async () => {
    server.clearLog();
    await expectError(openArchive(server.url('/missing.onnxz?token=secret')), 'io', /^http:\/\/127\.0\.0\.1:\d+\/missing\.onnxz: HTTP 404/);
    assert.equal(server.log.length, 1);
    await assert.rejects(openArchive(server.url('/missing.onnxz?token=secret')), (e) => !e.message.includes('secret'));
  });

  it('a server claiming a 1 TiB file gets an error, not a 1 TiB read', async () => {
    server.inject('claim-terabyte');
    server.clearLog();
    await expectError(openArchive(mlp()), 'corrupt', /central directory \(offset \d+, \d+ bytes\)|bytes between the end of the central directory/);
    assert.equal(server.log.length, 1);
  });

  it('an empty file is not a ZIP archive', async () => {
    server.setFile('/empty.onnxz', Buffer.alloc(0));
    await expectError(openArchive(server.url('/empty.onnxz')), 'corrupt', /0 bytes/);
  });
});

// The tail read's buffers are released (detached) as soon as the reader replaces them
// (bytes.ts releaseBuffer, zip.ts TailWindow). Node 20 has no ArrayBuffer.prototype.transfer,
// which does it, so this file (its own process under node --test) gives ArrayBuffer one that
// detaches as the platform's does: a view of a released buffer that the reader still used would
// then read as empty, or throw, and these reads would fail or differ.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';

import { openArchive, ortModelFor } from '../../dist/node.js';
import { openWith } from '../../dist/archive.js';
import { fixture } from '../support/fixtures.mjs';
import { RangeServer } from '../support/range_server.mjs';

let detached = 0;
const platformTransfer = ArrayBuffer.prototype.transfer;
if (typeof platformTransfer !== 'function') {
  ArrayBuffer.prototype.transfer = function transfer(length = this.byteLength) {
    const moved = structuredClone(this, { transfer: [this] });
    ++detached;
    return moved.slice(0, length);
  };
}

const kSmallTail = 65_633;
const names = ['mlp.onnxz', 'docmodel.onnxz', 'sites.onnxz', 'silero.onnxz'];
let server;

before(async () => {
  server = await RangeServer.start(Object.fromEntries(names.map((n) => [`/${n}`, readFileSync(fixture(n))])));
});
after(async () => server.stop());

/** What an archive gives: its tensors' bytes, model, entries and verdict. */
async function contents(source, options) {
  const a = await openArchive(source, options);
  try {
    const tensors = await a.getTensors(a.tensors);
    const report = await a.verify();
    return {
      model: Buffer.from(a.modelBytes).toString('base64'),
      entries: a.entries.map((e) => [e.name, e.size, e.dataOffset]),
      tensors: tensors.map((t) => Buffer.from(t.buffer, t.byteOffset, t.byteLength).toString('base64')),
      ok: report.ok,
      findings: report.findings.length,
    };
  } finally {
    await a.close();
  }
}

describe('released tail buffers', () => {
  it('file, Blob and URL sources, with the least tail and the default one, read as from memory', async () => {
    const before = detached;
    for (const name of names) {
      const bytes = readFileSync(fixture(name));
      const expected = await contents(new Uint8Array(bytes));
      assert.equal(expected.ok, true, name);
      for (const tailSize of [kSmallTail, 1 << 20]) {
        for (const [kind, source] of [['file', fixture(name)], ['Blob', new Blob([bytes])], ['URL', server.url(`/${name}`)]]) {
          const got = await contents(source, { tailSize });
          // A URL entry's dataOffset is known once it has been read, as here: all the same.
          assert.deepEqual(got, expected, `${name} from a ${kind}, tailSize ${tailSize}`);
        }
      }
    }
    // The models larger than the least tail need the window grown: both the trim and ensure() released.
    if (typeof platformTransfer !== 'function') assert.ok(detached - before >= names.length * 2 * 3, `${detached - before} buffers released`);
  });

  it('createSession\'s kept tail is released once ORT\'s bytes are read, and none of them views it', async () => {
    /** What createSession hands ORT for `source`, copied out after the tail is released. */
    const handed = async (source, flavor, options) => {
      const archive = await openWith(source, options, true);
      try {
        const prepared = await ortModelFor(archive, flavor, 'externalData');
        archive.releaseTail();
        return {
          model: Buffer.from(prepared.model).toString('base64'),
          data: prepared.externalData.map((f) => [f.path, Buffer.from(f.data.buffer, f.data.byteOffset, f.data.byteLength).toString('base64')]),
        };
      } finally {
        await archive.close();
      }
    };
    const before = detached;
    for (const name of names) {
      const bytes = readFileSync(fixture(name));
      const expected = await handed(new Uint8Array(bytes), 'node', {});
      for (const tailSize of [kSmallTail, 1 << 20]) {
        for (const [kind, source] of [['file', fixture(name)], ['URL', server.url(`/${name}`)]]) {
          assert.deepEqual(await handed(source, 'node', { tailSize }), expected, `${name} from a ${kind}, tailSize ${tailSize}`);
        }
      }
    }
    if (typeof platformTransfer !== 'function') assert.ok(detached > before, 'the kept tails were released');
  });

  it('a memory source is never released: its bytes are the caller\'s', async () => {
    const bytes = new Uint8Array(readFileSync(fixture('docmodel.onnxz')));
    const before = detached;
    await contents(bytes, { tailSize: kSmallTail });
    assert.equal(detached, before);
    assert.equal(bytes.byteLength, readFileSync(fixture('docmodel.onnxz')).length);
  });
});

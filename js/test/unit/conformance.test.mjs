// The conformance vectors of spec/conformance/ through this reader, from a file, from memory
// and from a Blob: every verdict must be the manifest's (which the C++ test checks too, in
// tests/conformance_test.cpp).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

import { OnnxzipError, openArchive, verify } from '../../dist/node.js';
import { RangeServer } from '../support/range_server.mjs';

const dir = fileURLToPath(new URL('../../../spec/conformance/', import.meta.url));
const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));

/** What opening gives: 'ok' or the error code, with the error's message. */
export async function openVerdict(source, options = {}) {
  try {
    const archive = await openArchive(source, options);
    try {
      // Everything load() would read: every external tensor's data (inline ones pass through).
      await archive.getTensors(archive.tensors.filter((t) => !t.inline));
    } finally {
      await archive.close();
    }
    return { verdict: 'ok', message: '' };
  } catch (e) {
    if (!(e instanceof OnnxzipError)) throw e;
    return { verdict: e.code, message: e.message };
  }
}

/** The finding kinds of spec/names.md. */
const kFindingKinds = new Set(['zip', 'layout', 'reference', 'model', 'ir', 'crc', 'digest', 'signature']);

export function verifyVerdict(report) {
  if (report.findings.length === 0) return 'ok';
  return report.findings.some((f) => f.severity === 'error') ? 'error' : 'warning';
}

export function describeFindings(report) {
  return report.findings.map((f) => `${f.severity} ${f.kind} [${f.entry}] ${f.tensor}: ${f.message}`).join('\n');
}

let server;
before(async () => {
  server = await RangeServer.start(Object.fromEntries(manifest.vectors.map((v) => [`/${v.file}`, readFileSync(join(dir, v.file))])));
});
after(async () => server.stop());

// Over HTTP the local header of a payload entry is read with its data, not at open: opening and
// then reading every tensor gives the verdict opening alone gives for the other sources.
const sources = {
  file: (path) => path,
  memory: (path) => new Uint8Array(readFileSync(path)),
  blob: (path) => new Blob([readFileSync(path)]),
  url: (path) => server.url(`/${path.slice(dir.length)}`),
};

describe('conformance vectors', () => {
  it('the manifest holds vectors of every verdict', () => {
    assert.ok(manifest.vectors.length >= 50);
    for (const verdict of ['ok', 'warning', 'error']) assert.ok(manifest.vectors.some((v) => v.verify === verdict), verdict);
  });
  for (const v of manifest.vectors) {
    for (const [kind, make] of Object.entries(sources)) {
      it(`${v.file} from ${kind}: ${v.rule}, ${v.description}`, async () => {
        const path = join(dir, v.file);
        const opened = await openVerdict(make(path));
        assert.equal(opened.verdict, v.open, opened.message);
        if (v.sites !== undefined) {
          // The C++ test checks the same list: one site notation (spec/names.md).
          const archive = await openArchive(make(path));
          try {
            assert.deepEqual(archive.tensors.map((t) => t.site), v.sites);
          } finally {
            await archive.close();
          }
        }
        if (v.tensors !== undefined) {
          // The C++ and Python tests check the same records: every tensor listed, inline ones too,
          // and each read by its record (spec/names.md).
          const archive = await openArchive(make(path));
          try {
            const records = [];
            for (const t of archive.tensors) {
              const data = await archive.getTensor(t);
              const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
              records.push({
                name: t.name, site: t.site, entry: t.entry, data_type: t.dataType, dims: [...t.dims],
                size: t.size, inline: t.inline, sha256: createHash('sha256').update(bytes).digest('hex'),
              });
            }
            assert.deepEqual(records, v.tensors);
          } finally {
            await archive.close();
          }
        }
        const report = await verify(make(path));
        assert.equal(verifyVerdict(report), v.verify, describeFindings(report));
        // Every finding has one of spec/names.md's kinds.
        for (const f of report.findings) assert.ok(kFindingKinds.has(f.kind), describeFindings(report));
        const findings = [...report.findings];
        if (v.key !== undefined) {
          const keyed = await verify(make(path), { publicKey: readFileSync(join(dir, v.key), 'utf8') });
          assert.equal(verifyVerdict(keyed), v.verify_key, describeFindings(keyed));
          // The names below may be in what only the key's check finds.
          findings.push(...keyed.findings);
        }
        if (v.names !== undefined) {
          // One word, or several that the same message must all hold (the entry and the rule cited).
          const words = Array.isArray(v.names) ? v.names : [v.names];
          const namesAll = (text) => words.every((word) => text.includes(word));
          if (opened.verdict !== 'ok') assert.ok(namesAll(opened.message), opened.message);
          else assert.ok(findings.some((f) => namesAll(`${f.entry} ${f.tensor} ${f.message}`)), describeFindings({ findings }));
        }
      });
    }
  }
});

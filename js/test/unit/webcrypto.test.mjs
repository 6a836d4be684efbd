// The browser entry point (no Node import, so no node:crypto): digests and signatures checked with
// WebCrypto alone, from memory, as a page does. Its own file, so its own process: the Node entry
// point, which registers the streaming hash, is never loaded here.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { verify } from '../../dist/index.js';
import { conformanceDir } from '../support/fixtures.mjs';

const bytes = (name) => new Uint8Array(readFileSync(join(conformanceDir, 'vectors', `${name}.onnxz`)));
const pem = readFileSync(join(conformanceDir, 'vectors', 'signer.pub.pem'), 'utf8');

describe('digests and signature with WebCrypto', () => {
  it('verifies a signed archive', async () => {
    const report = await verify(bytes('valid_signed'), { publicKey: pem });
    assert.deepEqual(report.findings, []);
    assert.equal(report.digests, 'verified');
    assert.equal(report.signature, 'verified');
  });

  it('finds a changed payload and a bad signature', async () => {
    const changed = await verify(bytes('reject_12_5_payload_changed'));
    assert.deepEqual(changed.findings.map((f) => [f.kind, f.entry]), [['digest', 'W']]);
    const bad = await verify(bytes('reject_12_5_bad_signature'), { publicKey: pem });
    assert.deepEqual(bad.findings.map((f) => [f.kind, f.entry]), [['signature', '__SIGNATURE']]);
  });
});

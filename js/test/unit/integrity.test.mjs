// Digests and signatures (spec §12) through verify(): what the report says, the findings' kinds
// and words, the limits, the keys; and the strict parts of the bundle (DER signatures, JSON numbers
// and keys) one by one. Node's entry point: SHA-256 by node:crypto's streaming hash
// (webcrypto.test.mjs runs the browser entry point's WebCrypto path).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { OnnxzipError, importPublicKey, openArchive, verify } from '../../dist/node.js';
import { decodeDigests, derToP1363, decodeSignature } from '../../dist/integrity.js';
import { conformanceDir } from '../support/fixtures.mjs';

const vector = (name) => join(conformanceDir, 'vectors', `${name}.onnxz`);
const pem = readFileSync(join(conformanceDir, 'vectors', 'signer.pub.pem'), 'utf8');
// The key id is the SHA-256 of the key as `openssl ec -pubout` writes it: that file.
const keyId = createHash('sha256').update(pem).digest('hex');

async function entryText(name, entry) {
  const a = await openArchive(vector(name));
  try {
    return new TextDecoder().decode(await a.getEntryBytes(entry));
  } finally {
    await a.close();
  }
}

/** The report's integrity statuses (spec/names.md "Integrity status"). */
const statuses = (r) => ({ digests: r.digests, signature: r.signature, signatureKeyId: r.signatureKeyId });

describe('verify with __DIGESTS and __SIGNATURE', () => {
  it('reports digests and signature verified by the key given, and the key id', async () => {
    const report = await verify(vector('valid_signed'), { publicKey: pem });
    assert.deepEqual(report.findings, []);
    assert.deepEqual(statuses(report), { digests: 'verified', signature: 'verified', signatureKeyId: keyId });
    assert.equal(report.checked, `ZIP structure, layout, references, CRC-32s; digests verified; signature verified (key ${keyId})`);
  });

  it('without a key, parses the signature only', async () => {
    const report = await verify(vector('reject_12_5_bad_signature'));
    assert.deepEqual(statuses(report), { digests: 'verified', signature: 'unchecked', signatureKeyId: keyId });
    assert.equal(report.checked, 'ZIP structure, layout, references, CRC-32s; digests verified; signature not checked: give publicKey');
  });

  it('says when there are no digests, and when they were not read', async () => {
    assert.deepEqual(statuses(await verify(vector('valid_minimal'))), { digests: 'absent', signature: 'absent', signatureKeyId: '' });
    assert.deepEqual(statuses(await verify(vector('valid_digests'))), { digests: 'verified', signature: 'absent', signatureKeyId: '' });
    const unread = await verify(vector('valid_digests'), { checkCrc: false });
    assert.deepEqual(statuses(unread), { digests: 'unchecked', signature: 'absent', signatureKeyId: '' });
    assert.equal(unread.checked, 'ZIP structure, layout, references (no CRC-32s); digests listed, not hashed; no signature');
  });

  it('names the entry whose bytes differ from its digest, though its CRC-32 is right', async () => {
    const report = await verify(vector('reject_12_5_payload_changed'));
    assert.equal(report.digests, 'failed');
    assert.equal(report.loadable, false);
    assert.equal(report.findings.length, 1);
    const [f] = report.findings;
    assert.equal(f.kind, 'digest');
    assert.equal(f.entry, 'W');
    assert.match(f.message, /^its SHA-256 is [0-9a-f]{64}, __DIGESTS says [0-9a-f]{64}: its bytes are not those that were digested/);
    // Without reading the bytes, the listing and the sizes hold.
    assert.deepEqual((await verify(vector('reject_12_5_payload_changed'), { checkCrc: false })).findings, []);
  });

  it('requires a signature by the key given', async () => {
    const none = await verify(vector('valid_digests'), { publicKey: pem });
    assert.deepEqual(none.findings.map((f) => [f.kind, f.message]), [['signature', `no __SIGNATURE entry (a signature by key ${keyId} was asked for)`]]);
    assert.equal(none.signature, 'absent'); // What is there; the error finding says it was required.
    assert.equal(none.loadable, false);
    const plain = await verify(vector('valid_minimal'), { publicKey: pem });
    assert.match(plain.findings[0].message, /^no __DIGESTS and no __SIGNATURE entry/);
    const other = await verify(vector('reject_12_5_other_key'), { publicKey: pem });
    assert.equal(other.signature, 'other_key');
    assert.match(other.checked, /; signed by another key \([0-9a-f]{64}\)$/);
    assert.equal(other.findings[0].kind, 'signature');
    assert.match(other.findings[0].message, new RegExp(`^signed by another key \\(key id [0-9a-f]{64}, the key given has ${keyId}\\)`));
    const bad = await verify(vector('reject_12_5_bad_signature'), { publicKey: pem });
    assert.equal(bad.signature, 'failed');
    assert.equal(bad.findings[0].entry, '__SIGNATURE');
    assert.equal(bad.findings[0].message, 'the signature does not verify with the key given (spec §12.5)');
  });

  it('refuses __DIGESTS and __SIGNATURE beyond their limits before reading them', async () => {
    const a = await openArchive(vector('valid_signed'));
    const digestsSize = a.entry('__DIGESTS').size;
    const before = a.source.stats.bytes;
    const report = await a.verify({ maxDigestsBytes: digestsSize - 1, checkCrc: false });
    assert.equal(a.source.stats.bytes, before, 'nothing read');
    await a.close();
    assert.deepEqual(report.findings.map((f) => [f.kind, f.entry, f.message]), [
      ['digest', '__DIGESTS', `${digestsSize} bytes, more than the limit of ${digestsSize - 1} (option maxDigestsBytes)`],
    ]);
    const signature = await verify(vector('valid_signed'), { maxSignatureBytes: 100 });
    assert.match(signature.findings[0].message, /^\d+ bytes, more than the limit of 100 \(option maxSignatureBytes\)$/);
    assert.equal(signature.signature, 'failed');
  });

  it('takes the key in any PEM spelling, and refuses what is no P-256 public key', async () => {
    const crlf = pem.replace(/\n/g, '\r\n');
    assert.equal((await importPublicKey(crlf)).keyId, keyId);
    assert.equal((await importPublicKey(new TextEncoder().encode(pem))).keyId, keyId);
    for (const wrong of ['', 'hello', pem.replace('MFkw', 'MFkx')]) {
      await assert.rejects(verify(vector('valid_signed'), { publicKey: wrong }), (e) => e instanceof OnnxzipError && e.code === 'invalid_argument');
    }
  });

  it('says which other kind of key it was given, with the right article', async () => {
    const rsa = `-----BEGIN PUBLIC KEY-----
MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQCpY2g8qY1s+xt/Q9yGuXurWSES
v3q5+iT6DqSMjJnWfToN1gpHGH4DvBr4DOpnwWFnJ8G0G/DwgSWQuPiMDA5T0iSA
X1TuT2jOpcBPU0wA6KbKSwyfWzRE+fPZOoLvAPzuOx+e0E0IiGb9/xF/Pw0LoCzh
oItSN8dqV8r9RsC+aQIDAQAB
-----END PUBLIC KEY-----\n`;
    const p384 = `-----BEGIN PUBLIC KEY-----
MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEx7IG2jLrA++50ZlhXRcCLgZ6uvp8y3Hp
SLHfUx7kZJtCBw/QKwvWASBb9Y+D3vK3pU6eAqdnGIWzQ7xqPR+8VxQA9Hg5sxjd
/pcLUueB0WBI56QScuyKNxfYWlczaAw7
-----END PUBLIC KEY-----\n`;
    for (const [key, what] of [[rsa, 'an RSA key'], [p384, 'an EC key on curve P-384']]) {
      await assert.rejects(importPublicKey(key), (e) => e instanceof OnnxzipError && e.code === 'invalid_argument' && e.message === `<key>: not an ECDSA P-256 public key: ${what}`);
    }
  });
});

describe('__DIGESTS parsing', () => {
  const place = 'm.onnxz';
  const encode = (text) => new TextEncoder().encode(text);
  async function refused(text, pattern) {
    await assert.rejects(decodeDigests(encode(text), place), (e) => {
      assert.ok(e instanceof OnnxzipError, String(e));
      assert.equal(e.code, 'corrupt');
      assert.equal(e.entry, '__DIGESTS');  // A plain value; the message words it.
      assert.ok(e.message.includes("entry '__DIGESTS'"), e.message);
      assert.match(e.problem, pattern);
      return true;
    });
  }

  it('reads what the C++ signer writes', async () => {
    const statement = await decodeDigests(encode(await entryText('valid_digests', '__DIGESTS')), place);
    assert.deepEqual(statement.entries.map((e) => [e.name, e.size]), [['B', 256n], ['W', 256n], ['__MODEL_PROTO', statement.entries[2].size]]);
  });

  it('refuses sizes not written as whole numbers from 0 to 2^64 - 1', async () => {
    const text = await entryText('valid_digests', '__DIGESTS');
    const size = /"size": (\d+)/.exec(text)[1];
    for (const spelled of [`${size}.0`, '2.56e2', '-1', '18446744073709551616', `"${size}"`, 'null']) {
      await refused(text.replace(`"size": ${size}`, `"size": ${spelled}`), /^predicate\.onnxzip\.entries\[0\]\.size is .*expected an unsigned integer$/);
    }
    // 2^64 - 1 is one: the size check of verify() then tells.
    const big = await decodeDigests(encode(text.replace(`"size": ${size}`, '"size": 18446744073709551615')), place);
    assert.equal(big.entries[0].size, 2n ** 64n - 1n);
  });

  it('refuses a key given twice in any object, whatever its spelling', async () => {
    const text = await entryText('valid_digests', '__DIGESTS');
    await refused(text.replace('"method": "files",', '"method": "files", "m\\u0065thod": "files",'), /^the key 'method' appears twice in one object/);
    // The same key in two objects is no duplicate.
    assert.ok(await decodeDigests(encode(text), place));
  });

  it('reads arrays and objects nested 64 deep, and refuses 65 before JSON.parse builds them', async () => {
    const text = await entryText('valid_digests', '__DIGESTS');
    const nested = (levels) => text.replace('{', `{"nested": ${'['.repeat(levels)}${']'.repeat(levels)},`);
    assert.equal((await decodeDigests(encode(nested(63)), place)).entries.length, 3);
    await refused(nested(64), /^not valid JSON for this entry: arrays and objects nested more than 64 deep \(spec §12\.1 item 3\)$/);
    // Brackets inside strings are no nesting.
    assert.ok(await decodeDigests(encode(text.replace('{', `{"text": "${'['.repeat(100)}\\"${'{'.repeat(100)}",`)), place));
    // 16 MiB of '[' (within the limit): refused at once, in both entries.
    const hostile = new Uint8Array(16 * 2 ** 20).fill(0x5b);
    await refused(new TextDecoder().decode(hostile), /nested more than 64 deep/);
    assert.throws(() => decodeSignature(hostile, place), /nested more than 64 deep/);
  });

  it('refuses what is not UTF-8 JSON', async () => {
    await refused('{"_type": "\udc00', /^not valid JSON/);
    await assert.rejects(decodeDigests(new Uint8Array([0x7b, 0xff, 0x7d]), place), /not valid UTF-8/);
  });
});

describe('__SIGNATURE parsing', () => {
  it('reads the bundle, and gives its DER signature to WebCrypto as r || s', async () => {
    const bundle = decodeSignature(new TextEncoder().encode(await entryText('valid_signed', '__SIGNATURE')), 'm.onnxz');
    assert.equal(bundle.keyHint, keyId);
    assert.equal(bundle.payloadType, 'application/vnd.in-toto+json');
    assert.equal(new TextDecoder().decode(bundle.payload), await entryText('valid_signed', '__DIGESTS'));
    const p1363 = derToP1363(bundle.signature);
    assert.equal(p1363.byteLength, 64);
  });

  it('takes strict DER only', () => {
    const r = new Uint8Array(32).fill(0x11);
    const s = new Uint8Array(32).fill(0x22);
    const int = (v) => [0x02, v.length, ...v];
    const seq = (...parts) => new Uint8Array([0x30, parts.flat().length, ...parts.flat()]);
    assert.deepEqual(derToP1363(seq(int(r), int(s))), new Uint8Array([...r, ...s]));
    // A high bit needs a leading zero (33 bytes); small values are shorter and padded.
    const high = new Uint8Array(32).fill(0x91);
    assert.deepEqual(derToP1363(seq(int([0, ...high]), int([5]))), new Uint8Array([...high, ...new Uint8Array(31), 5]));
    assert.equal(derToP1363(seq(int(high), int(s))), undefined, 'negative');
    assert.equal(derToP1363(seq(int([0, ...r]), int(s))), undefined, 'a leading zero not needed');
    assert.equal(derToP1363(new Uint8Array([...seq(int(r), int(s)), 0])), undefined, 'a byte after the sequence');
    assert.equal(derToP1363(seq(int(r), int(s), [0x02, 0x01, 0x01])), undefined, 'a third integer');
    assert.equal(derToP1363(seq(int([1, ...r]), int(s))), undefined, 'more than 256 bits');
    assert.equal(derToP1363(seq(int(r))), undefined, 'one integer');
  });
});

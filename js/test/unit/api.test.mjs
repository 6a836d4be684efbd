// The API over the fixtures: tensors and their typed arrays, views and copies, sources, limits,
// and the errors' codes and messages.
import assert from 'node:assert/strict';
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { DataType, OnnxzipError, openArchive, verify } from '../../dist/node.js';
import { crc32 } from '../../dist/crc32.js';
import { walkModel } from '../../dist/onnx.js';
import { conformanceDir, fixture } from '../support/fixtures.mjs';

const vector = (name) => join(conformanceDir, 'vectors', `${name}.onnxz`);

async function expectError(promise, code, pattern) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof OnnxzipError, String(e));
    assert.equal(e.code, code, e.message);
    assert.match(e.message, pattern);
    return true;
  });
}

/** The float32 values of an .onnx initializer, read with the reference onnx package's layout (raw_data). */
function mlpWeights() {
  // mlp.onnx holds the same weights inline; the archive's bytes must be those.
  return readFileSync(fixture('mlp.onnx'));
}

describe('tensors', () => {
  it('lists every external tensor with its type, dims, entry and size', async () => {
    const a = await openArchive(fixture('mlp.onnxz'));
    assert.deepEqual(a.tensors.map((t) => [t.name, t.site, t.dataTypeName, t.dims, t.entry, t.size]), [
      ['W1', 'graph/initializer[0]', 'FLOAT', [256, 512], 'W1', 524288],
      ['b1', 'graph/initializer[1]', 'FLOAT', [512], 'b1', 2048],
      ['W2', 'graph/initializer[2]', 'FLOAT', [512, 256], 'W2', 524288],
      ['b2', 'graph/initializer[3]', 'FLOAT', [256], 'b2', 1024],
    ]);
    for (const e of a.entries) assert.equal(e.dataOffset % 64, 0, e.name);
    await a.close();
  });

  it('getTensor gives the bytes the legacy model holds inline', async () => {
    const a = await openArchive(fixture('mlp.onnxz'));
    const onnx = mlpWeights();
    for (const t of a.tensors) {
      const data = await a.getTensor(t.name);
      assert.ok(data instanceof Float32Array);
      assert.equal(data.length, t.dims.reduce((x, y) => x * y, 1));
      // The raw bytes appear verbatim in the legacy model's raw_data.
      assert.ok(onnx.indexOf(Buffer.from(data.buffer, data.byteOffset, data.byteLength)) > 0, t.name);
    }
    await a.close();
  });

  it('from memory: views of the caller bytes, no copy', async () => {
    const bytes = new Uint8Array(readFileSync(fixture('mlp.onnxz')));
    const a = await openArchive(bytes);
    const w = await a.getTensor('W1');
    assert.equal(w.buffer, bytes.buffer);
    assert.equal(w.byteOffset, a.entry('W1').dataOffset);
    assert.equal(a.modelBytes.buffer, bytes.buffer);
    assert.equal(a.source.stats.requests, 0);
  });

  it('from memory at an odd byte offset: a copy, since a Float32Array cannot view it', async () => {
    const file = readFileSync(fixture('mlp.onnxz'));
    const shifted = new Uint8Array(file.length + 1);
    shifted.set(file, 1);
    const a = await openArchive(shifted.subarray(1));
    const w = await a.getTensor('W1');
    assert.notEqual(w.buffer, shifted.buffer);
    assert.deepEqual(w, await (await openArchive(file)).getTensor('W1'));
  });

  it('a file is read through its handle, never whole', async () => {
    const size = readFileSync(fixture('mlp.onnxz')).length;
    const a = await openArchive(fixture('mlp.onnxz'), { tailSize: 65_633 });
    const atOpen = a.source.stats;
    assert.ok(atOpen.bytes < 80_000, `${atOpen.bytes} bytes read to open a ${size}-byte archive`);
    assert.equal(atOpen.requests, 1 + 3); // The tail, then the three local headers outside it.
    await a.close();
    await expectError(a.getTensor('W1'), 'bad_state', /the archive is closed/);
  });

  it('from a Blob: slices', async () => {
    const a = await openArchive(new Blob([readFileSync(fixture('mlp.onnxz'))]));
    assert.equal(a.sourceKind, 'blob');
    assert.deepEqual(await a.getTensor('b2'), await (await openArchive(readFileSync(fixture('mlp.onnxz')))).getTensor('b2'));
  });

  it('tensors that share a name are told apart by their TensorInfo', async () => {
    const a = await openArchive(fixture('silero.onnxz'));
    const basis = a.tensors.filter((t) => t.name === 'stft.forward_basis_buffer');
    assert.deepEqual(basis.map((t) => t.dims), [[130, 1, 128], [258, 1, 256]]);
    assert.match(basis[0].site, /^graph\/node\[\d+\]\/(then|else)_branch\//);
    const [small, large] = await a.getTensors(basis);
    assert.equal(small.length, 130 * 128);
    assert.equal(large.length, 258 * 256);
    // A name two tensors share is refused, naming both sites (spec/names.md: never the first silently).
    await expectError(a.getTensor('stft.forward_basis_buffer'), 'invalid_argument', /2 tensors are named 'stft\.forward_basis_buffer' \(at graph\/node\[\d+\]\/else_branch\/node\[0\]\/value, graph\/node\[\d+\]\/then_branch\/node\[0\]\/value\)/);
    assert.throws(() => a.tensor('stft.forward_basis_buffer'), (e) => e instanceof OnnxzipError && e.code === 'invalid_argument');
    await a.close();
  });

  it('a deflated entry is inflated and checked', async () => {
    const a = await openArchive(vector('warn_9_3_1_deflated'));
    const inflated = await a.getTensor('W');
    const stored = await (await openArchive(readFileSync(vector('valid_minimal')))).getTensor('W');
    assert.deepEqual(inflated, stored);
    await a.close();
    assert.ok(a.findings.some((f) => f.kind === 'layout' && f.entry === 'W' && /a deflated entry/.test(f.message)));
    const w = a.tensors.find((t) => t.name === 'W');
    assert.equal(w.zeroCopy, false);
  });

  it('typed arrays by data type', () => {
    assert.equal(DataType.FLOAT16, 10);
    assert.equal(DataType.INT4, 22);
  });

  it('unknown names are not_found', async () => {
    const a = await openArchive(fixture('mlp.onnxz'));
    await expectError(a.getTensor('nope'), 'not_found', /no tensor named 'nope'/);
    await a.close();
  });
});

describe('limits and bad input', () => {
  it('a zip64 offset past 2^53 is refused as unsupported, not rounded', async () => {
    const bytes = new Uint8Array(readFileSync(vector('warn_5_2_zip64_not_needed')));
    const view = new DataView(bytes.buffer);
    // The zip64 end record sits 20 + 56 bytes before the end record; its CD offset at +48.
    const record = bytes.length - 22 - 20 - 56;
    assert.equal(view.getUint32(record, true), 0x06064b50);
    view.setBigUint64(record + 48, 1n << 60n, true);
    await expectError(openArchive(bytes), 'unsupported', /central directory offset is 1152921504606846976, past 2\^53 - 1/);
  });

  it('more entries than maxEntries: limit_exceeded before the directory is read', async () => {
    await expectError(openArchive(fixture('mlp.onnxz'), { maxEntries: 2 }), 'limit_exceeded', /5 entries, more than the limit of 2/);
  });

  it('a central directory larger than maxDirectoryBytes: limit_exceeded before it is read', async () => {
    await expectError(openArchive(fixture('mlp.onnxz'), { maxDirectoryBytes: 100 }), 'limit_exceeded', /central directory is \d+ bytes, more than the limit of 100/);
  });

  it('a model larger than maxModelBytes: limit_exceeded', async () => {
    await expectError(openArchive(fixture('docmodel.onnxz'), { maxModelBytes: 100_000 }), 'limit_exceeded', /__MODEL_PROTO.*more than the limit of 100000/);
  });

  it('a deflated entry past maxInflatedSize: limit_exceeded naming the entry', async () => {
    const a = await openArchive(vector('warn_9_3_1_deflated'), { maxInflatedSize: 100 });
    await expectError(a.getTensor('W'), 'limit_exceeded', /entry 'W'.*inflates to 256 bytes, more than the limit of 100/);
    await a.close();
  });

  it('a missing file is not_found; a folder is io', async () => {
    await expectError(openArchive('/nonexistent/model.onnxz'), 'not_found', /\/nonexistent\/model\.onnxz: cannot open/);
    await expectError(openArchive(conformanceDir), 'io', /not a regular file/);
  });

  it('verify reports a CRC-32 mismatch as an error finding naming the entry and offset', async () => {
    const bytes = new Uint8Array(readFileSync(fixture('mlp.onnxz')));
    const a0 = await openArchive(bytes);
    const b1 = a0.entry('b1');
    bytes[b1.dataOffset + 5] ^= 1;
    const report = await verify(bytes);
    assert.equal(report.loadable, false);
    const crc = report.findings.filter((f) => f.kind === 'crc');
    assert.equal(crc.length, 1);
    assert.equal(crc[0].entry, 'b1');
    assert.equal(crc[0].offset, b1.dataOffset);
    assert.match(crc[0].message, /CRC-32 mismatch: the data has 0x[0-9a-f]{8}, the archive records 0x[0-9a-f]{8}/);
  });
});

describe('a model read while the file is edited in place', () => {
  // Issue 32: the tail of a file edited meanwhile may pair one archive's directory with another's
  // model bytes; the model's CRC-32 tells, and a file is then read again (changed, if it keeps
  // changing).
  it('refuses model bytes whose CRC-32 is not the one the archive records', async () => {
    const bytes = new Uint8Array(readFileSync(fixture('mlp.onnxz')));
    const model = (await openArchive(bytes)).entry('__MODEL_PROTO');
    const data = bytes.subarray(model.dataOffset, model.dataOffset + model.size);
    const at = Buffer.from(data).indexOf('W1');
    assert.ok(at >= 0);
    data[at] = 'V'.charCodeAt(0); // A node's input renamed: the model still parses.
    await expectError(openArchive(bytes), 'corrupt', /entry '__MODEL_PROTO': CRC-32 mismatch: the data has 0x[0-9a-f]{8}, the archive records 0x[0-9a-f]{8}/);
    const path = join(tmpdir(), `onnxzip-crc-${process.pid}.onnxz`);
    writeFileSync(path, bytes);
    try {
      // A file that does not change is corrupt, not 'changed', however often it is read.
      await expectError(openArchive(path), 'corrupt', /CRC-32 mismatch/);
    } finally {
      unlinkSync(path);
    }
  });
});

describe('pieces', () => {
  it('crc32 is the ZIP CRC-32', () => {
    assert.equal(crc32(new TextEncoder().encode('123456789')), 0xcbf43926);
    assert.equal(crc32(new Uint8Array(0)), 0);
    const bytes = new Uint8Array(100_003).map((_, i) => (i * 7919) & 0xff);
    // In pieces of any size, as verify feeds it.
    let c = 0;
    for (let at = 0; at < bytes.length; at += 4097) c = crc32(bytes.subarray(at, at + 4097), c);
    assert.equal(c, crc32(bytes));
  });

  it('the model walk finds every site, and refuses nesting past its limit', async () => {
    const a = await openArchive(fixture('sites.onnxz'));
    const walk = walkModel(a.modelBytes, { maxDepth: 100 }, (p) => {
      throw new Error(p);
    });
    const sites = walk.tensors.map((t) => `${t.site}${t.inMainGraph ? ' main' : ''}${t.isConstantValue ? ' constant' : ''}${t.inSparseTensor ? ' sparse' : ''}`);
    // In the order the bytes hold them: a GraphProto's nodes (field 1) come before its initializers.
    assert.deepEqual(sites, [
      'graph/node[0]/value main constant',
      'graph/node[3]/else_branch/node[0]/value constant',
      'graph/node[3]/else_branch/initializer[0]',
      'graph/node[3]/then_branch/node[0]/value constant',
      'graph/node[3]/then_branch/initializer[0]',
      'graph/node[7]/value main', // A ConstantOfShape's value: an attribute tensor, not a Constant's.
      'graph/initializer[0] main',
      'graph/initializer[1] main',
      'graph/initializer[2] main',
      'graph/sparse_initializer[0]/values main sparse',
      'graph/sparse_initializer[0]/indices main sparse',
      'functions[0]/node[0]/value constant',
    ]);
    assert.throws(() => walkModel(a.modelBytes, { maxDepth: 4 }, (p) => {
      throw new Error(p);
    }), /nested more than 4 deep/);
  });
});

/** A stored ZIP of these entries (name bytes, data), in this order: no alignment, no zip64. */
function storedZip(entries) {
  const locals = [];
  const centrals = [];
  let offset = 0;
  for (const [name, data] of entries) {
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x800, 6);
    local.writeUInt32LE(crc32(data), 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x800, 8);
    central.writeUInt32LE(crc32(data), 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, data);
    centrals.push(central, name);
    offset += 30 + name.length + data.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return new Uint8Array(Buffer.concat([...locals, directory, end]));
}

describe('entry names', () => {
  // An empty ModelProto is a valid one: these archives have no tensors.
  const model = ['__MODEL_PROTO', Buffer.alloc(0)];

  it('names that differ by a leading byte order mark are two entries, not one given twice', async () => {
    const a = await openArchive(storedZip([[Buffer.from('w'), Buffer.from('1')], [Buffer.from('\uFEFFw'), Buffer.from('2')], model.map((x) => Buffer.from(x))]));
    assert.deepEqual(a.entries.map((e) => e.size), [1, 1, 0]);
    assert.ok(a.findings.some((f) => f.kind === 'zip' && /decode to the same text/.test(f.message)), JSON.stringify(a.findings));
  });

  it('names that are not UTF-8 and decode to the same text are two entries', async () => {
    const a = await openArchive(storedZip([[Buffer.from([0xff, 0x61]), Buffer.from('1')], [Buffer.from([0xfe, 0x61]), Buffer.from('2')], model.map((x) => Buffer.from(x))]));
    assert.equal(a.entries.length, 3);
    assert.ok(a.findings.some((f) => f.kind === 'zip' && /decode to the same text/.test(f.message)), JSON.stringify(a.findings));
  });

  it('a folder entry (zip -r records them) is reported as one, not as a payload no tensor refers to', async () => {
    const a = await openArchive(storedZip([[Buffer.from('d/'), Buffer.alloc(0)], model.map((x) => Buffer.from(x))]));
    const about = a.findings.filter((f) => f.entry === 'd/');
    assert.ok(about.some((f) => f.kind === 'layout' && /a directory entry$/.test(f.message)), JSON.stringify(about));
    assert.ok(!about.some((f) => f.kind === 'reference' || /entry name/.test(f.message)), JSON.stringify(about));
  });

  it('the same name twice is refused, whether or not it is UTF-8', async () => {
    for (const name of [Buffer.from('w'), Buffer.from([0xff, 0x61])]) {
      await expectError(openArchive(storedZip([[name, Buffer.from('1')], [name, Buffer.from('2')], model.map((x) => Buffer.from(x))])), 'corrupt', /two entries have this name/);
    }
  });
});

describe('memory after open', () => {
  it('keeps no view of the 1 MiB tail read: entry names and the model are copies', async () => {
    // mlp.onnxz is larger than the tail read, which also holds most of W2's payload.
    const a = await openArchive(fixture('mlp.onnxz'));
    try {
      for (const e of a.dir.entries) assert.ok(e.nameBytes.buffer.byteLength < 4096, `${e.name}: a view of ${e.nameBytes.buffer.byteLength} bytes`);
      assert.ok(a.modelBytes.buffer.byteLength < 128 << 10, `the model is a view of ${a.modelBytes.buffer.byteLength} bytes`);
    } finally {
      await a.close();
    }
  });

  it('keeps of the tail read neither the central directory nor the end records: they are parsed', async () => {
    for (const source of [fixture('mlp.onnxz'), new Blob([readFileSync(fixture('mlp.onnxz'))])]) {
      const a = await openArchive(source);
      try {
        const model = a.dir.byName.get('__MODEL_PROTO');
        assert.equal(a.dir.tail.window.end, model.local.end);
        assert.ok(a.dir.tail.window.bytes.buffer.byteLength <= a.dir.tail.window.end - a.dir.tail.window.base + 64);
        // What is left still serves reads of the model and of the payloads it holds.
        assert.deepEqual(await a.getEntryBytes('__MODEL_PROTO'), a.modelBytes);
        assert.equal((await a.getTensor('b2')).length, 256);
      } finally {
        await a.close();
      }
    }
  });
});

// Protobuf by hand, for models no writer makes: typed data fields of every kind.
function varint(value) {
  let v = BigInt.asUintN(64, BigInt(value));
  const out = [];
  do {
    const byte = Number(v & 0x7fn);
    v >>= 7n;
    out.push(v === 0n ? byte : byte | 0x80);
  } while (v !== 0n);
  return Buffer.from(out);
}
const field = (number, wire, payload) => Buffer.concat([varint((number << 3) | wire), ...(wire === 2 ? [varint(payload.length)] : []), payload]);
const packed = (values) => Buffer.concat(values.map(varint));
function tensorProto({ name, dataType, dims, fields }) {
  return Buffer.concat([...dims.map((d) => field(1, 0, varint(d))), field(2, 0, varint(dataType)), field(8, 2, Buffer.from(name)), ...fields]);
}
function modelOf(tensors) {
  const graph = Buffer.concat(tensors.map((t) => field(5, 2, tensorProto(t))));
  return Buffer.concat([field(1, 0, varint(10)), field(7, 2, graph)]);
}

describe('inline tensors (spec/names.md: listed and readable in every face)', () => {
  const f64 = (v) => {
    const b = Buffer.alloc(8);
    b.writeDoubleLE(v);
    return b;
  };
  const f32s = (values) => Buffer.from(new Float32Array(values).buffer);
  const cases = [
    { name: 'f', dataType: DataType.FLOAT, dims: [2], fields: [field(4, 2, f32s([1.5, -2]))], want: new Float32Array([1.5, -2]) },
    { name: 'h', dataType: DataType.FLOAT16, dims: [2], fields: [field(5, 2, packed([0x3c00, 0xc000]))], want: new Uint16Array([0x3c00, 0xc000]) },
    { name: 'i8', dataType: DataType.INT8, dims: [2], fields: [field(5, 0, varint(-1)), field(5, 0, varint(5))], want: new Int8Array([-1, 5]) },
    { name: 'i64', dataType: DataType.INT64, dims: [2], fields: [field(7, 2, packed([-3, 2 ** 40]))], want: new BigInt64Array([-3n, 2n ** 40n]) },
    { name: 'u32', dataType: DataType.UINT32, dims: [2], fields: [field(11, 2, packed([4294967295, 7]))], want: new Uint32Array([4294967295, 7]) },
    { name: 'i4', dataType: DataType.INT4, dims: [2], fields: [field(5, 2, packed([0x21]))], want: new Uint8Array([0x21]) },
    { name: 'd', dataType: DataType.DOUBLE, dims: [2], fields: [field(10, 1, f64(0.5)), field(10, 1, f64(-8))], want: new Float64Array([0.5, -8]) },
    { name: 'c64', dataType: DataType.COMPLEX64, dims: [1], fields: [field(4, 2, f32s([1, -1]))], want: new Float32Array([1, -1]) },
    { name: 'b', dataType: DataType.BOOL, dims: [3], fields: [field(9, 2, Buffer.from([1, 0, 1]))], want: new Uint8Array([1, 0, 1]) },
    { name: 'e', dataType: DataType.FLOAT, dims: [0], fields: [], want: new Float32Array(0) },
  ];
  const bytes = storedZip([['__MODEL_PROTO', modelOf(cases)].map((x) => Buffer.from(x))]);

  it('every inline tensor is listed (entry "", inline, no offset) and read as raw little-endian data (spec §7.3)', async () => {
    const a = await openArchive(bytes);
    assert.deepEqual(a.findings.filter((f) => f.kind === 'model'), []);
    assert.deepEqual(a.tensors.map((t) => t.name), cases.map((c) => c.name));
    for (const c of cases) {
      const t = a.tensor(c.name);
      assert.deepEqual({ ...t }, {
        name: c.name, site: `graph/initializer[${cases.indexOf(c)}]`, entry: '', dataType: c.dataType, dataTypeName: t.dataTypeName,
        dims: c.dims, size: c.want.byteLength, offset: undefined, alignment: 0, inline: true, zeroCopy: false,
      });
      const got = await a.getTensor(c.name);
      assert.deepEqual(got, c.want, c.name);
      assert.equal(got.byteOffset % 64, 0);
    }
  });

  it('an inline tensor whose data disagrees with its dims is listed, and reading it is corrupt naming it', async () => {
    const a = await openArchive(vector('warn_9_4_5_inline_payload'));
    const s = a.tensor('S');
    assert.equal(s.inline, true);
    await expectError(a.getTensor(s), 'corrupt', /tensor 'S' at graph\/initializer\[2\]: its inline payload disagrees with its dims and data type: raw_data holds 8 bytes, dims and data type need 12/);
    await a.close();
  });

  it("Silero's inline Constants read as the model holds them", async () => {
    const a = await openArchive(fixture('silero.onnxz'));
    const sr = a.tensors.find((t) => t.inline && t.site === 'graph/node[0]/value');
    assert.deepEqual(await a.getTensor(sr), new BigInt64Array([16000n]));
    await a.close();
  });
});

describe('the tensor record (spec/names.md TensorInfo)', () => {
  it('external tensors: entry, offset, alignment, and zeroCopy for memory sources only', async () => {
    const bytes = new Uint8Array(readFileSync(fixture('mlp.onnxz')));
    const fromMemory = await openArchive(bytes);
    const fromFile = await openArchive(fixture('mlp.onnxz'));
    for (const [a, zeroCopy] of [[fromMemory, true], [fromFile, false]]) {
      const t = a.tensor('W2');
      const e = a.entry('W2');
      assert.deepEqual(Object.keys(t), ['name', 'site', 'entry', 'dataType', 'dataTypeName', 'dims', 'size', 'offset', 'alignment', 'inline', 'zeroCopy']);
      assert.equal(t.entry, 'W2');
      assert.equal(t.offset, e.dataOffset);
      let alignment = 1;
      while (alignment < 65536 && t.offset % (alignment * 2) === 0) alignment *= 2;
      assert.ok(alignment >= 64);
      assert.equal(t.alignment, alignment);
      assert.equal(t.inline, false);
      assert.equal(t.zeroCopy, zeroCopy);
      const data = await a.getTensor(t);
      assert.equal(data.buffer === bytes.buffer, zeroCopy);
    }
    await fromFile.close();
  });
});

describe('errors a caller meets', () => {
  it('a legacy .onnx model: says so, and names the fix (convert it)', async () => {
    for (const source of [fixture('mlp.onnx'), new Uint8Array(readFileSync(fixture('mlp.onnx')))]) {
      await expectError(openArchive(source), 'invalid_argument', /not an \.onnxz archive but a legacy \.onnx model: convert it \('onnxzip convert/);
    }
  });

  it('a file that changes while it is read is "changed", which a retry may cure', async () => {
    const { copyFileSync, truncateSync, mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const path = join(mkdtempSync(join(tmpdir(), 'onnxzip-')), 'm.onnxz');
    copyFileSync(fixture('mlp.onnxz'), path);
    const a = await openArchive(path, { tailSize: 65_633 });
    truncateSync(path, 1000);
    await expectError(a.getTensor('W1'), 'changed', /the file changed \(it shrank below \d+ bytes\) while it was read/);
    await a.close();
  });

  it('verify of an archive that does not open is a report of that one finding', async () => {
    const report = await verify(vector('reject_9_2_1_not_zip'));
    assert.deepEqual([report.ok, report.loadable, report.digests, report.signature], [false, false, 'failed', 'failed']);
    assert.deepEqual(report.findings.map((f) => [f.severity, f.kind]), [['error', 'zip']]);
    assert.equal(report.checked, 'the ZIP structure, which does not read');
    const unresolved = await verify(vector('reject_9_4_3_location_missing'));
    assert.deepEqual(unresolved.findings.map((f) => f.kind), ['reference']);
  });

  it('verify of a source that cannot be read throws (no report): not_found for a missing file', async () => {
    await expectError(verify('nope.onnxz'), 'not_found', /nope\.onnxz: cannot open/);
  });
});

describe('getTensors over inline and external tensors', () => {
  it('reads both kinds in one call, in the order asked, external entries in one read', async () => {
    const a = await openArchive(fixture('silero.onnxz'), { tailSize: 65_633 });
    const inline = a.tensors.filter((t) => t.inline).slice(0, 2);
    const external = a.tensors.filter((t) => !t.inline).slice(0, 2);
    const before = a.source.stats.requests;
    const got = await a.getTensors([inline[0], external[0], inline[1], external[1]]);
    assert.ok(a.source.stats.requests - before <= 2, `${a.source.stats.requests - before} reads`);
    const one = async (t) => a.getTensor(t);
    assert.deepEqual(got, [await one(inline[0]), await one(external[0]), await one(inline[1]), await one(external[1])]);
    assert.deepEqual(got.map((d) => d.byteLength), [inline[0].size, external[0].size, inline[1].size, external[1].size]);
    await a.close();
  });
});

describe('errors give their place as plain values (spec/names.md, as Python and C++)', () => {
  for (const [name, tensor, site, entry] of [
    ['reject_9_4_3_location_missing', 'W', 'graph/initializer[0]', undefined],
    ['reject_9_4_3_size_mismatch', 'W', 'graph/initializer[0]', 'W'],
    ['reject_9_4_3_subgraph_location_missing', 'then_K', 'graph/node[2]/then_branch/node[0]/value', undefined],
  ]) {
    it(`${name}: the tensor, its site and the entry`, async () => {
      const path = vector(name);
      await assert.rejects(openArchive(path), (e) => {
        assert.ok(e instanceof OnnxzipError, String(e));
        assert.deepEqual([e.source, e.tensor, e.site, e.entry], [path, tensor, site, entry]);
        // The entry's local header, as C++ and Python give it; none without an entry.
        assert.equal(e.offset === undefined, entry === undefined);
        assert.ok(e.message.startsWith(`${path}: tensor '${tensor}' at ${site}: `), e.message);
        return true;
      });
    });
  }
});

#!/usr/bin/python3
"""Writes the .onnxz conformance vectors and their manifest (spec/conformance/README.md).

    /usr/bin/python3 spec/conformance/generate.py --cli build/src/cli/onnxzip

Every vector starts from an archive the C++ writer made (`onnxzip convert` of a small model built
with python3-onnx); the invalid and non-conforming ones are then changed byte by byte: a field
patched in place, the tail (the model entry, the central directory and the end records, which
follow the payloads) written again after them with a changed model or extra records, or end
records added. Each change names the rule it breaks. The output is deterministic: running the
script again rewrites the same bytes, and `--check` fails when a committed vector differs.
"""

import argparse
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))

LOCAL_SIG, CENTRAL_SIG, END_SIG = 0x04034B50, 0x02014B50, 0x06054B50
ZIP64_END_SIG, ZIP64_LOCATOR_SIG = 0x06064B50, 0x07064B50


# --- Models -------------------------------------------------------------------------------------


def tensor(name, values, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def base_model(subgraph=False, function=False, empty=False, tied=False):
    """y = (x + W) * B, with W and B 64 floats each; optional extras for the site vectors."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [64])
    inits = [tensor("W", np.arange(64) / 8.0), tensor("B", np.linspace(-1, 1, 64))]
    nodes = [helper.make_node("Add", ["x", "W"], ["a"]), helper.make_node("Mul", ["a", "B"], ["m"])]
    last = "m"
    inputs = [x]
    opsets = [helper.make_opsetid("", 17)]
    functions = []
    if subgraph:
        c = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
        inputs.append(c)

        def branch(tag, value):
            k = helper.make_node("Constant", [], [f"{tag}_k"], value=tensor(f"{tag}_K", np.full(64, value)))
            add = helper.make_node("Add", [last, f"{tag}_k"], [f"{tag}_out"])
            out = helper.make_tensor_value_info(f"{tag}_out", TensorProto.FLOAT, [64])
            return helper.make_graph([k, add], tag, [], [out])

        nodes.append(helper.make_node("If", ["c"], ["i"], then_branch=branch("then", 2.0),
                                      else_branch=branch("else", 3.0)))
        last = "i"
    if function:
        fn = helper.make_function("local", "AddF", ["fx"], ["fy"], [
            helper.make_node("Constant", [], ["fk"], value=tensor("F", np.full(64, 7.0))),
            helper.make_node("Add", ["fx", "fk"], ["fy"])], opset_imports=[helper.make_opsetid("", 17)])
        functions.append(fn)
        opsets.append(helper.make_opsetid("local", 1))
        nodes.append(helper.make_node("AddF", [last], ["f"], domain="local"))
        last = "f"
    if empty:
        inits.append(tensor("E", np.zeros(0)))
        nodes.append(helper.make_node("Concat", [last, "E"], ["e"], axis=0))
        last = "e"
    if tied:
        inits.append(tensor("W2", np.arange(64) / 8.0))
        nodes.append(helper.make_node("Add", [last, "W2"], ["t"]))
        last = "t"
    nodes.append(helper.make_node("Identity", [last], ["y"]))
    graph = helper.make_graph(nodes, "conformance", inputs, [y], initializer=inits)
    model = helper.make_model(graph, opset_imports=opsets, functions=functions,
                              producer_name="onnxz-conformance")
    model.ir_version = 8
    return model


def inline_model():
    """The base model with inline tensors beside the external W and B: a raw and a typed-field
    initializer, a Constant's value in the graph, and a STRING initializer (no fixed-size payload:
    listed by no face)."""
    model = base_model()
    graph = model.graph
    graph.initializer.append(tensor("S", [0.5, -1.5, 2.0, 4.0]))
    graph.initializer.append(helper.make_tensor("T", TensorProto.INT64, [3], [7, -8, 9]))
    graph.initializer.append(helper.make_tensor("Str", TensorProto.STRING, [2], [b"a", b"bc"]))
    graph.node.insert(0, helper.make_node("Constant", [], ["k"], value=tensor("K", [1.0, 2.0])))
    return model


def tensor_records(data):
    """Every tensor that holds data, as spec/names.md's record (offset and alignment aside, which a
    face reading over HTTP may not know yet), with the SHA-256 of the payload read by the record."""
    import io
    import zipfile
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as z:
        entries = {info.filename: z.read(info.filename) for info in z.infolist()}
    model = onnx.load_from_string(entries["__MODEL_PROTO"])
    records = []
    walk = [(t, f"graph/initializer[{i}]") for i, t in enumerate(model.graph.initializer)]
    walk += [(a.t, f"graph/node[{i}]/{a.name}") for i, n in enumerate(model.graph.node)
             for a in n.attribute if a.type == onnx.AttributeProto.TENSOR]
    # The model's walk order (spec §7.5): the graph's nodes before its initializers.
    walk = walk[len(model.graph.initializer):] + walk[:len(model.graph.initializer)]
    for t, site in walk:
        if t.data_type == TensorProto.STRING:
            continue
        external = t.data_location == TensorProto.EXTERNAL
        entry = next(kv.value for kv in t.external_data if kv.key == "location") if external else ""
        payload = entries[entry] if external else numpy_helper.to_array(t).tobytes()
        records.append({"name": t.name, "site": site, "entry": entry, "data_type": t.data_type,
                        "dims": list(t.dims), "size": len(payload), "inline": not external,
                        "sha256": hashlib.sha256(payload).hexdigest()})
    return records


def convert(cli, model, *options):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "m.onnx")
        dst = os.path.join(tmp, "m.onnxz")
        onnx.save(model, src)
        subprocess.run([cli, "convert", *options, src, dst], check=True)
        with open(dst, "rb") as f:
            return bytearray(f.read())


# --- ZIP bytes ----------------------------------------------------------------------------------


def u16(b, at):
    return struct.unpack_from("<H", b, at)[0]


def u32(b, at):
    return struct.unpack_from("<I", b, at)[0]


def put16(b, at, v):
    struct.pack_into("<H", b, at, v)


def put32(b, at, v):
    struct.pack_into("<I", b, at, v)


class Entry:
    def __init__(self, data, central_offset):
        self.central_offset = central_offset
        n, e, c = u16(data, central_offset + 28), u16(data, central_offset + 30), u16(data, central_offset + 32)
        self.central = bytes(data[central_offset:central_offset + 46 + n + e + c])
        self.name = bytes(data[central_offset + 46:central_offset + 46 + n]).decode()
        self.lho = u32(data, central_offset + 42)
        self.size = u32(data, central_offset + 24)
        self.crc = u32(data, central_offset + 16)
        ln, le = u16(data, self.lho + 26), u16(data, self.lho + 28)
        self.data_offset = self.lho + 30 + ln + le
        self.local_extra_offset = self.lho + 30 + ln


class Zip:
    """The structure of a plain (non-zip64, no comment) archive, for patching."""

    def __init__(self, data):
        self.end = len(data) - 22
        assert u32(data, self.end) == END_SIG
        self.cd_size, self.cd_offset = u32(data, self.end + 12), u32(data, self.end + 16)
        self.entries = []
        at = self.cd_offset
        while at < self.cd_offset + self.cd_size:
            entry = Entry(data, at)
            self.entries.append(entry)
            at += len(entry.central)

    def entry(self, name):
        return next(e for e in self.entries if e.name == name)


def local_header(name, data, lho, alignment=64, flags=0x0800, method=0, extra_records=b""):
    """A stored entry's local header, padded with a 0xD935 record so its data is aligned (spec §4.2)."""
    name_bytes = name.encode()
    header_end = lho + 30 + len(name_bytes) + len(extra_records)
    p = (alignment - header_end % alignment) % alignment
    if 0 < p < 6:
        p += alignment
    pad = b"" if p == 0 else struct.pack("<HHH", 0xD935, p - 4, alignment % 65536) + bytes(p - 6)
    extra = extra_records + pad
    return struct.pack("<IHHHHHIIIHH", LOCAL_SIG, 20, flags, method, 0, 0x21, zlib.crc32(data),
                       len(data), len(data), len(name_bytes), len(extra)) + name_bytes + extra


def central_header(name, data, lho, flags=0x0800, method=0, extra=b"", comment=b"", compressed=None):
    name_bytes = name.encode()
    csize = len(data) if compressed is None else len(compressed)
    return struct.pack("<IHHHHHHIIIHHHHHII", CENTRAL_SIG, 0x0314, 20, flags, method, 0, 0x21,
                       zlib.crc32(data), csize, len(data), len(name_bytes), len(extra),
                       len(comment), 0, 0, 0x81A40000, lho) + name_bytes + extra + comment


def end_record(count, cd_size, cd_offset, comment=b""):
    return struct.pack("<IHHHHIIH", END_SIG, 0, 0, count, count, cd_size, cd_offset, len(comment)) + comment


def rewrite_tail(base, model_bytes=None, before_model=(), gap=0, at=None, keep=None):
    """The archive `base` with everything from __MODEL_PROTO's local header on written again:
    `before_model` entries (name, data) added after the payloads, `gap` zero bytes before the
    model's local header, the model replaced by `model_bytes`, and the tail laid out for offset
    `at` (default: where the model's local header was). Payload entries keep their bytes.
    Returns (prefix, tail): the archive is prefix + tail when `at` is None."""
    z = Zip(base)
    model = z.entry("__MODEL_PROTO")
    model_bytes = bytes(base[model.data_offset:model.data_offset + model.size]) if model_bytes is None else model_bytes
    kept = [e for e in z.entries if e.name != "__MODEL_PROTO" and (keep is None or e.name in keep)]
    start = model.lho if at is None else at
    out = bytearray()
    central = bytearray()
    for e in kept:
        central += e.central
    for name, data in before_model:
        lho = start + len(out)
        out += local_header(name, data, lho) + data
        central += central_header(name, data, lho)
    out += bytes(gap)
    lho = start + len(out)
    out += local_header("__MODEL_PROTO", model_bytes, lho) + model_bytes
    cd_offset = start + len(out)
    out += central + central_header("__MODEL_PROTO", model_bytes, lho)
    out += end_record(len(kept) + len(before_model) + 1, len(central) + len(central_header("__MODEL_PROTO", model_bytes, lho)), cd_offset)
    return bytearray(base[:model.lho]), out


def with_tail(base, **kwargs):
    prefix, tail = rewrite_tail(base, **kwargs)
    return prefix + tail


def set_external(t, pairs):
    """Makes TensorProto `t` EXTERNAL with exactly these external_data (key, value) pairs."""
    t.ClearField("raw_data")
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    del t.external_data[:]
    for k, v in pairs:
        kv = t.external_data.add()
        kv.key, kv.value = k, v


def archive_model(data):
    z = Zip(data)
    m = z.entry("__MODEL_PROTO")
    model = onnx.ModelProto()
    model.ParseFromString(bytes(data[m.data_offset:m.data_offset + m.size]))
    return model


def model_edit(base, edit):
    """The archive with its model changed by `edit(model)` (which may also return the bytes)."""
    model = archive_model(base)
    result = edit(model)
    return with_tail(base, model_bytes=result if isinstance(result, bytes) else model.SerializeToString())


def init(model, name):
    return next(t for t in model.graph.initializer if t.name == name)


# --- The vectors --------------------------------------------------------------------------------


def patch_both(data, entry, local_at, central_at, writer, value):
    """Patches a field at the same meaning in the local header (offset local_at) and the central
    record (offset central_at)."""
    writer(data, entry.lho + local_at, value)
    writer(data, entry.central_offset + central_at, value)


def rename(data, entry, new_name):
    """Renames an entry in both headers (same length)."""
    new = new_name.encode()
    assert len(new) == len(entry.name.encode())
    data[entry.lho + 30:entry.lho + 30 + len(new)] = new
    data[entry.central_offset + 46:entry.central_offset + 46 + len(new)] = new


def add_zip64_end(data, sentinels=("count", "size", "offset"), count=None, restsize=44, locator_offset=None,
                  disks=1):
    """Inserts a zip64 end record and locator between the central directory and the end record,
    which then holds the sentinel in `sentinels`."""
    z = Zip(data)
    n = len(z.entries)
    rec_offset = z.cd_offset + z.cd_size
    record = struct.pack("<IQHHIIQQQQ", ZIP64_END_SIG, restsize, 0x032D, 45, 0, 0, n if count is None else count,
                         n if count is None else count, z.cd_size, z.cd_offset) + bytes(restsize - 44)
    locator = struct.pack("<IIQI", ZIP64_LOCATOR_SIG, 0, rec_offset if locator_offset is None else locator_offset,
                          disks)
    end = bytearray(data[z.end:])
    if "count" in sentinels:
        put16(end, 8, 0xFFFF)
        put16(end, 10, 0xFFFF)
    if "size" in sentinels:
        put32(end, 12, 0xFFFFFFFF)
    if "offset" in sentinels:
        put32(end, 16, 0xFFFFFFFF)
    return bytearray(data[:z.end]) + record + locator + end


def rebuild_central(data, change):
    """Writes the central directory again, each record passed through change(entry, record) ->
    record bytes, and fixes the end record's size."""
    z = Zip(data)
    central = bytearray()
    for e in z.entries:
        central += change(e, bytearray(e.central))
    end = bytearray(data[z.end:])
    put32(end, 12, len(central))
    return bytearray(data[:z.cd_offset]) + central + end


def with_central_extra(record, extra):
    n, e = u16(record, 28), u16(record, 30)
    assert e == 0
    put16(record, 30, len(extra))
    return record[:46 + n] + extra + record[46 + n:]


def interrupted(base, new_model, complete=True, record_offset_delta=0, order_ok=True):
    """An archive left by an in-place edit interrupted after step 2 of spec §9.6: the old archive X
    (S bytes), zeros, the new tail written at P for offset P, zeros, and the 48-byte record."""
    s = len(base)
    z = Zip(base)
    model = z.entry("__MODEL_PROTO")
    _, final_tail = rewrite_tail(base, model_bytes=new_model)
    p = max(s, model.lho + len(final_tail))
    p = (p + 63) // 64 * 64
    _, tail = rewrite_tail(base, model_bytes=new_model, at=p)
    tail_crc = zlib.crc32(tail)
    if not complete:
        tail = tail[:len(tail) // 2] + bytes(len(tail) - len(tail) // 2)  # A tail not yet whole.
    e = p + len(tail)
    f = (e + 63) // 64 * 64
    out = bytearray(base) + bytes(p - s) + tail + bytes(f - e)
    old_end, new_start = (s, p) if order_ok else (p + 1, p)
    out += b"ONNXZEDT" + struct.pack("<QQQQII", old_end, f + record_offset_delta, new_start, e, tail_crc, 0)
    return out


def zipfile_archive(entries, descriptors=False):
    """An archive written by Python's zipfile (entries: (name, data, deflated)); with descriptors,
    written to an unseekable stream so every entry gets a data descriptor."""
    import io
    import zipfile

    class Unseekable(io.RawIOBase):
        def __init__(self):
            self.buf = bytearray()

        def writable(self):
            return True

        def write(self, b):
            self.buf += b
            return len(b)

    sink = Unseekable() if descriptors else io.BytesIO()
    with zipfile.ZipFile(sink, "w") as zf:
        for name, data, deflated in entries:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED if deflated else zipfile.ZIP_STORED
            info.external_attr = 0o100644 << 16
            info.create_system = 3
            zf.writestr(info, data)
    return bytearray(sink.buf if descriptors else sink.getvalue())


# --- Digests and signatures (spec §12) ----------------------------------------------------------

PUBLIC_KEY = "vectors/signer.pub.pem"


def sign(cli, data, *options):
    """The archive `data` after `onnxzip sign OPTIONS` (the C++ signer)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.onnxz")
        with open(path, "wb") as f:
            f.write(data)
        subprocess.run([cli, "sign", "--no-sync", *options, path], check=True, stdout=subprocess.DEVNULL)
        with open(path, "rb") as f:
            return bytearray(f.read())


def entry_data(data, name):
    e = Zip(data).entry(name)
    return bytes(data[e.data_offset:e.data_offset + e.size])


def replace_data(data, name, new):
    """The archive with entry `name`'s bytes replaced by `new` of the same length, CRC-32 fixed."""
    d = bytearray(data)
    e = Zip(d).entry(name)
    assert len(new) == e.size
    d[e.data_offset:e.data_offset + e.size] = new
    put32(d, e.lho + 14, zlib.crc32(new))
    put32(d, e.central_offset + 16, zlib.crc32(new))
    return d


def keep_committed_signature(data, committed):
    """ECDSA signatures are random (OpenSSL 3.0 has no deterministic ECDSA): when the committed
    vector signs the same __DIGESTS with the same key in a signature of the same length, its
    signature is put back, so that running the generator again writes the same bytes."""
    try:
        with open(committed, "rb") as f:
            old = f.read()
        old_signature, old_digests = entry_data(old, "__SIGNATURE"), entry_data(old, "__DIGESTS")
    except (OSError, StopIteration, AssertionError, struct.error):
        return data
    signature = entry_data(data, "__SIGNATURE")
    same_key = json.loads(old_signature)["verificationMaterial"] == json.loads(signature)["verificationMaterial"]
    if old_digests != entry_data(data, "__DIGESTS") or len(old_signature) != len(signature) or not same_key:
        return data
    return replace_data(data, "__SIGNATURE", old_signature)


def digests_text(statement):
    """`__DIGESTS` bytes for a changed statement, its subject digest computed again (spec §12.2
    item 2) unless the caller spoils it afterwards."""
    resources = statement["predicate"]["resources"]
    root = hashlib.sha256(b"".join(bytes.fromhex(r["digest"]) for r in resources)).hexdigest()
    statement["subject"][0]["digest"]["sha256"] = root
    return (json.dumps(statement, indent=2) + "\n").encode()


def build(cli, out=HERE):
    vectors = []

    def add(name, data, rule, description, open_verdict, verify_verdict, names=None, verify_key=None, sites=None,
            tensors=None):
        vectors.append({"name": name, "data": bytes(data), "rule": rule, "description": description,
                        "open": open_verdict, "verify": verify_verdict, **({"names": names} if names else {}),
                        **({"key": PUBLIC_KEY, "verify_key": verify_key} if verify_key else {}),
                        **({"sites": sites} if sites else {}), **({"tensors": tensors} if tensors else {})})

    base = convert(cli, base_model(), "--threshold", "64")
    z = Zip(base)
    w, b, m = z.entry("W"), z.entry("B"), z.entry("__MODEL_PROTO")
    payload = lambda e: bytes(base[e.data_offset:e.data_offset + e.size])  # noqa: E731

    # Valid archives.
    add("valid_minimal", base, "§2-§7", "two payload entries and the model, A = 64", "ok", "ok")
    add("valid_alignment_4096", convert(cli, base_model(), "--threshold", "64", "--alignment", "4096"), "§4.1",
        "A = 4096", "ok", "ok")
    add("valid_sites", convert(cli, base_model(subgraph=True, function=True), "--threshold", "64"), "§7.5",
        "external tensors in an If subgraph's Constants and in a function's Constant", "ok", "ok",
        sites=["graph/node[2]/else_branch/node[0]/value", "graph/node[2]/then_branch/node[0]/value",
               "graph/initializer[0]", "graph/initializer[1]", "functions[0]/node[0]/value"])
    inline = convert(cli, inline_model(), "--threshold", "64")
    add("valid_inline_tensors", inline, "§7.4", "inline tensors (raw, typed field, a Constant's value, STRING) beside "
        "external ones: every face lists the same records and reads each by its record", "ok", "ok",
        tensors=tensor_records(inline))
    add("valid_zero_length_entry", convert(cli, base_model(empty=True), "--threshold", "0"), "§4.1, §7.4",
        "a zero-length payload entry (FLOAT[0]), aligned like any other", "ok", "ok")
    add("valid_tied_weights", convert(cli, base_model(tied=True), "--threshold", "64", "--dedupe"), "§7.2",
        "two tensors with equal bytes refer to one entry", "ok", "ok")
    add("valid_no_payloads", convert(cli, base_model(), "--threshold", "1M"), "§7.4",
        "every tensor inline: the archive holds __MODEL_PROTO alone", "ok", "ok")

    # §9.2: ZIP structure a reader MUST reject.
    add("reject_9_2_1_not_zip", b"this is not a zip archive, only some text that is long enough" * 2, "§9.2 item 1",
        "no end of central directory record", "corrupt", "error")
    add("reject_9_2_1_empty", b"", "§9.2 item 1", "an empty file", "corrupt", "error")
    add("reject_9_2_1_truncated", base[:-7], "§9.2 item 1", "the last 7 bytes cut: the end record is incomplete",
        "corrupt", "error")
    add("reject_9_2_1_trailing_bytes", base + b"\0" * 16, "§9.2 item 1, §9.6",
        "16 zero bytes after the end record (no interrupted edit record)", "corrupt", "error")
    d = bytearray(base)
    put32(d, z.end + 16, len(base) + 100)
    add("reject_9_2_2_cd_outside", d, "§9.2 item 2", "the central directory offset points past the end of the file",
        "corrupt", "error")
    d = bytearray(base)
    put32(d, z.end + 12, z.cd_size + 10)
    add("reject_9_2_2_cd_overlaps_end", d, "§9.2 item 2", "the central directory size runs into the end record",
        "corrupt", "error")
    d = bytearray(base)
    put16(d, z.end + 4, 1)
    add("reject_9_2_3_multi_disk", d, "§9.2 item 3", "the end record's disk number is 1", "unsupported", "error")
    d = add_zip64_end(base, sentinels=("offset",), disks=2)
    add("reject_9_2_3_zip64_two_disks", d, "§9.2 item 3", "the zip64 locator says 2 disks", "unsupported", "error")
    d = add_zip64_end(base, sentinels=("size", "offset"), count=len(z.entries) + 1)
    add("reject_9_2_4_zip64_contradicts", d, "§9.2 item 4",
        "the zip64 end record's entry count differs from the end record's (not a sentinel)", "corrupt", "error")
    d = add_zip64_end(base, locator_offset=len(base) + 1000)
    add("reject_9_2_2_zip64_locator_outside", d, "§9.2 item 2", "the zip64 locator points past the end of the file",
        "corrupt", "error")
    d = bytearray(base)
    put16(d, z.end + 8, len(z.entries) - 1)
    put16(d, z.end + 10, len(z.entries) - 1)
    add("reject_9_2_5_count_mismatch", d, "§9.2 item 5",
        "the end record counts one entry fewer than the central directory holds", "corrupt", "error")
    d = bytearray(base)
    put16(d, z.end + 8, len(z.entries) - 1)
    add("reject_9_2_5_disk_counts_differ", d, "§9.2 items 3, 5",
        "the end record counts 2 entries on this disk and 3 in all, with both disk numbers 0", "corrupt", "error")
    d = bytearray(base[:z.end]) + bytes(8) + base[z.end:]
    add("reject_9_2_2_bytes_before_end_record", d, "§9.2 item 2, §2.3",
        "8 bytes between the central directory and the end record", "corrupt", "error")
    add("reject_9_2_2_prepended", bytes(64) + base, "§9.2 item 2, §2.3",
        "64 bytes prepended without fixing the offsets: the central directory is not where the end record says",
        "corrupt", "error")
    d = bytearray(base)
    put16(d, z.end + 8, 0xFFFE)
    put16(d, z.end + 10, 0xFFFE)
    add("reject_9_2_5_count_too_large", d, "§9.2 item 5",
        "65534 entries claimed in a central directory too small for them (> CD_SIZE / 46)", "corrupt", "error")
    d = bytearray(base)
    d[w.lho + 30] = ord("X")
    add("reject_9_2_6_local_name", d, "§9.2 item 6", "the local header's name differs from the central record's",
        "corrupt", "error", names="W")
    d = bytearray(base)
    put32(d, w.lho + 14, w.crc ^ 1)
    add("reject_9_2_6_local_crc", d, "§9.2 item 6", "the local header's CRC-32 differs from the central record's",
        "corrupt", "error", names="W")
    d = bytearray(base)
    put32(d, w.lho + 18, w.size - 4)
    put32(d, w.lho + 22, w.size - 4)
    add("reject_9_2_6_local_size", d, "§9.2 item 6", "the local header's sizes differ from the central record's",
        "corrupt", "error", names="W")
    d = bytearray(base)
    put16(d, w.lho + 8, 8)
    add("reject_9_2_6_local_method", d, "§9.2 item 6", "the local header says deflate, the central record stored",
        "corrupt", "error", names="W")
    d = bytearray(base)
    put32(d, b.lho, 0x04034B51)
    add("reject_9_2_6_local_signature", d, "§9.2 item 6", "a local header's signature is wrong", "corrupt", "error",
        names="B")
    d = bytearray(base)
    put32(d, b.central_offset + 42, w.lho)
    add("reject_9_2_7_shared_local_header", d, "§9.2 item 7", "two central records point to one local header",
        "corrupt", "error")
    d = bytearray(base)
    grow = b.lho - w.data_offset - w.size + 8  # W's data now runs 8 bytes into B's local header.
    patch_both(d, w, 18, 20, put32, w.size + grow)
    patch_both(d, w, 22, 24, put32, w.size + grow)
    patch_both(d, w, 14, 16, put32, zlib.crc32(bytes(d[w.data_offset:w.data_offset + w.size + grow])))
    add("reject_9_2_7_overlap", d, "§9.2 item 7", "an entry's data overlaps the next entry's local header", "corrupt",
        "error", names="W")
    d = bytearray(base)
    put32(d, m.central_offset + 20, m.size + 4096)
    put32(d, m.central_offset + 24, m.size + 4096)
    put32(d, m.lho + 18, m.size + 4096)
    put32(d, m.lho + 22, m.size + 4096)
    add("reject_9_2_7_data_past_cd", d, "§9.2 item 7", "the last entry's data runs into the central directory",
        "corrupt", "error", names="__MODEL_PROTO")
    d = bytearray(base)
    rename(d, b, "W")
    add("reject_9_2_8_duplicate_name", d, "§9.2 item 8", "two entries named W", "corrupt", "error", names="W")
    d = bytearray(base)
    patch_both(d, w, 6, 8, put16, 0x0801)
    add("reject_9_2_9_encrypted", d, "§9.2 item 9", "flag bit 0 (encryption) set on W", "unsupported", "error",
        names="W")
    d = bytearray(base)
    patch_both(d, w, 8, 10, put16, 99)
    add("reject_9_2_9_aes", d, "§9.2 item 9", "compression method 99 (AES encryption) on W", "unsupported", "error",
        names="W")
    d = bytearray(base)
    patch_both(d, w, 8, 10, put16, 12)
    add("reject_9_2_10_bzip2", d, "§9.2 item 10", "compression method 12 (bzip2) on W", "unsupported", "error",
        names="W")
    for tag, name in (("dotdot", "../W"), ("backslash", "a\\W"), ("absolute", "/a_W"), ("drive", "C:_W"),
                      ("nul", "a\0_W")):
        d = with_tail(base, before_model=[(name, b"x" * 4)])
        add(f"reject_9_2_11_name_{tag}", d, "§9.2 item 11", f"an entry named {name!r}", "corrupt", "error")
    d = rebuild_central(base, lambda e, r: with_central_extra(r, struct.pack("<HH", 0xCAFE, 40) + bytes(8))
                        if e.name == "W" else r)
    add("reject_9_2_12_extra_overrun", d, "§9.2 item 12",
        "a central extra field record claims 40 bytes where 8 follow", "corrupt", "error", names="W")

    def zip64_short(e, r):
        if e.name != "W":
            return r
        put32(r, 24, 0xFFFFFFFF)  # uncompressed size from the zip64 record...
        put32(r, 20, 0xFFFFFFFF)  # ...and the compressed size too, but the record holds one value
        return with_central_extra(r, struct.pack("<HHQ", 1, 8, w.size))

    add("reject_9_2_12_zip64_extra_short", rebuild_central(base, zip64_short), "§9.2 item 12",
        "both central sizes are sentinels, the zip64 extra field holds one value", "corrupt", "error", names="W")

    # §9.4: archive-level rules.
    d = bytearray(base)
    rename(d, m, "__MODEL_PROTX")
    add("reject_9_4_1_no_model", d, "§9.4 item 1", "no entry named __MODEL_PROTO", "corrupt", "error")
    model_first = zipfile_archive([("__MODEL_PROTO", payload(m), False), ("W", payload(w), False),
                                   ("B", payload(b), False)])
    add("reject_9_4_1_model_first", model_first, "§9.4 item 1", "__MODEL_PROTO is the first entry, not the last",
        "corrupt", "error", names="__MODEL_PROTO")

    def swap_central(data):
        zz = Zip(data)
        records = [e.central for e in zz.entries]
        records = records[-1:] + records[:-1]
        return bytearray(data[:zz.cd_offset]) + b"".join(records) + data[zz.end:]

    add("reject_9_4_1_model_central_first", swap_central(base), "§9.4 item 1, §2.4",
        "__MODEL_PROTO is last in the file but its central record is the first", "corrupt", "error",
        names="__MODEL_PROTO")
    add("reject_9_4_2_model_not_protobuf", with_tail(base, model_bytes=b"\x0a\xff\xff\xff\xff\x0f" + bytes(40)),
        "§9.4 item 2", "__MODEL_PROTO does not parse as a ModelProto (a length past its end)", "corrupt", "error",
        names="__MODEL_PROTO")

    def ref(name, rule, description, pairs, code="corrupt", extra=None, tensor="W"):
        def edit(model):
            t = init(model, tensor)
            set_external(t, pairs)
            if extra:
                extra(t, model)

        add(name, model_edit(base, edit), rule, description, code, "error", names=tensor)

    size = str(w.size)
    ref("reject_9_4_3_no_location", "§9.4 item 3", "external data with length but no location", [("length", size)])
    ref("reject_9_4_3_location_twice", "§9.4 item 3", "location given twice, with equal values",
        [("location", "W"), ("location", "W"), ("length", size)])
    ref("reject_9_4_3_length_twice", "§9.4 item 3", "length given twice, with equal values",
        [("location", "W"), ("length", size), ("length", size)])
    ref("reject_9_4_3_offset_twice", "§9.4 item 3", "offset given twice",
        [("location", "W"), ("length", size), ("offset", "0"), ("offset", "0")])
    ref("reject_9_4_3_length_not_decimal", "§9.4 item 3", "length '256 ' has a space",
        [("location", "W"), ("length", size + " ")])
    ref("reject_9_4_3_length_signed", "§9.4 item 3", "length '+256' has a sign", [("location", "W"), ("length", "+" + size)])
    ref("reject_9_4_3_offset_2_64", "§9.4 item 3", "offset 18446744073709551616 is not below 2^64",
        [("location", "W"), ("length", size), ("offset", "18446744073709551616")])
    ref("reject_9_4_3_location_path", "§9.4 item 3", "location '../W' is not a payload entry name",
        [("location", "../W"), ("length", size)])
    ref("reject_9_4_3_location_reserved", "§9.4 item 3", "location '__MODEL_PROTO' is not a payload entry name",
        [("location", "__MODEL_PROTO"), ("length", size)])
    ref("reject_9_4_3_location_missing", "§9.4 item 3", "location 'Q' names no entry",
        [("location", "Q"), ("length", size)])
    ref("reject_9_4_3_raw_data_too", "§9.4 item 3", "an EXTERNAL tensor that also has raw_data",
        [("location", "W"), ("length", size)], extra=lambda t, _: setattr(t, "raw_data", b"\0" * 4))
    ref("reject_9_4_3_typed_data_too", "§9.4 item 3", "an EXTERNAL tensor that also has float_data",
        [("location", "W"), ("length", size)], extra=lambda t, _: t.float_data.extend([1.0]))
    ref("reject_9_4_3_type_string", "§9.4 item 3", "an EXTERNAL tensor of type STRING",
        [("location", "W"), ("length", size)], extra=lambda t, _: setattr(t, "data_type", TensorProto.STRING))
    ref("reject_9_4_3_type_undefined", "§9.4 item 3", "an EXTERNAL tensor of type UNDEFINED",
        [("location", "W"), ("length", size)], extra=lambda t, _: setattr(t, "data_type", 0))
    ref("reject_9_4_3_type_unknown", "§9.4 item 3", "an EXTERNAL tensor of data type 99 (unknown to v1 readers)",
        [("location", "W"), ("length", size)], code="unsupported",
        extra=lambda t, _: setattr(t, "data_type", 99))

    def negative_dim(t, _):
        del t.dims[:]
        t.dims.extend([-1, -64])

    ref("reject_9_4_3_negative_dim", "§9.4 item 3", "dims [-1, -64] (the product is 64, a dim is negative)",
        [("location", "W"), ("length", size)], extra=negative_dim)

    def overflow_dims(t, _):
        del t.dims[:]
        t.dims.extend([2**62, 8, 0])

    ref("reject_9_4_3_dims_overflow", "§9.4 item 3",
        "dims [2^62, 8, 0]: the element count overflows 64 bits before the 0", [("location", "W"), ("length", size)],
        extra=overflow_dims)

    def wrong_dims(t, _):
        del t.dims[:]
        t.dims.extend([63])

    ref("reject_9_4_3_size_mismatch", "§9.4 item 3", "dims [63] need 252 bytes, the entry has 256",
        [("location", "W")], extra=wrong_dims)
    ref("reject_9_4_3_length_mismatch", "§9.4 item 3", "length 252, the entry has 256",
        [("location", "W"), ("length", str(w.size - 4))])
    ref("reject_9_4_3_offset_nonzero", "§9.4 item 3", "offset 64", [("location", "W"), ("length", size), ("offset", "64")])
    sites = convert(cli, base_model(subgraph=True, function=True), "--threshold", "64")

    def sub_missing(model):
        branch = next(a.g for a in model.graph.node[2].attribute if a.name == "then_branch")
        set_external(branch.node[0].attribute[0].t, [("location", "Q"), ("length", "256")])

    add("reject_9_4_3_subgraph_location_missing", model_edit(sites, sub_missing), "§9.4 item 3, §7.5",
        "a Constant in an If subgraph refers to no entry", "corrupt", "error", names="then_K")

    def function_missing(model):
        set_external(model.functions[0].node[0].attribute[0].t, [("location", "Q"), ("length", "256")])

    add("reject_9_4_3_function_location_missing", model_edit(sites, function_missing), "§9.4 item 3, §7.5",
        "a Constant in a function refers to no entry", "corrupt", "error", names="F")

    # §9.4 items 4-5, §9.3, §11: accepted, reported.
    def keys(name, description, pairs):
        add(name, model_edit(base, lambda model: set_external(init(model, "W"), pairs)), "§9.4 item 4", description,
            "ok", "warning", names="W")

    keys("warn_9_4_4_key_order", "external_data keys in the order [length, location]", [("length", size), ("location", "W")])
    keys("warn_9_4_4_no_length", "external_data without length", [("location", "W")])
    keys("warn_9_4_4_length_leading_zeros", "length '0256'", [("location", "W"), ("length", "0" + size)])
    keys("warn_9_4_4_offset_zero", "an offset of '0'", [("location", "W"), ("length", size), ("offset", "0")])
    keys("warn_9_4_4_checksum", "a checksum key", [("location", "W"), ("length", size), ("checksum", "0" * 40)])

    def bad_inline(model):
        model.graph.initializer.append(tensor("S", [1.0, 2.0]))
        model.graph.initializer[-1].dims[0] = 3

    add("warn_9_4_5_inline_payload", model_edit(base, bad_inline), "§9.4 item 5",
        "an inline tensor with dims [3] and 8 bytes of raw_data", "ok", "warning", names="S")

    def unreferenced(model):
        t = init(model, "B")
        t.ClearField("external_data")
        t.data_location = TensorProto.DEFAULT
        t.raw_data = payload(b)

    add("warn_7_2_unreferenced_entry", model_edit(base, unreferenced), "§7.2, §9.3 item 9",
        "payload entry B that no tensor refers to (B is inline in the model)", "ok", "warning", names="B")
    add("warn_11_unknown_reserved", with_tail(base, before_model=[("__FUTURE", b"{}")]), "§6.2, §11",
        "a reserved entry __FUTURE that version 1 does not define", "ok", "warning", names="__FUTURE")
    add("warn_6_1_name_not_identifier", with_tail(base, before_model=[("w.bin", b"abcd")]), "§6.1, §9.3 item 9",
        "an unreferenced entry named 'w.bin'", "ok", "warning", names="w.bin")
    deflated = zipfile_archive([("W", payload(w), True), ("B", payload(b), False), ("__MODEL_PROTO", payload(m), False)])
    add("warn_9_3_1_deflated", deflated, "§9.3 items 1, 3",
        "W deflated and every entry unaligned (Python's zipfile)", "ok", "warning", names="W")
    descriptors = zipfile_archive([("W", payload(w), False), ("B", payload(b), False),
                                   ("__MODEL_PROTO", payload(m), False)], descriptors=True)
    add("warn_9_3_2_data_descriptors", descriptors, "§9.3 items 2, 3",
        "stored entries with data descriptors (zipfile to an unseekable stream)", "ok", "warning")
    add("warn_9_3_4_directory", with_tail(base, before_model=[("dir/", b"")]), "§9.3 item 4", "a directory entry 'dir/'",
        "ok", "warning", names="dir/")
    d = bytearray(base)
    patch_both(d, w, 6, 8, put16, 0)
    add("warn_9_3_5_no_utf8_flag", d, "§9.3 item 5", "W without the UTF-8 flag", "ok", "warning", names="W")
    add("warn_9_3_6_archive_comment", base[:-2] + struct.pack("<H", 5) + b"hello", "§9.3 item 6",
        "an archive comment of 5 bytes", "ok", "warning")
    add("warn_9_1_comment_holds_end_record", base[:-2] + struct.pack("<H", 22) + bytes(base[z.end:]), "§9.1, §9.3 item 6",
        "an archive comment that is itself an end record: the farthest end record whose comment reaches the end "
        "of the file is the archive's", "ok", "warning")
    add("warn_9_3_6_entry_comment", rebuild_central(base, lambda e, r: r if e.name != "W" else
                                                    (lambda rr: (put16(rr, 32, 4), rr + b"note")[1])(bytearray(r))),
        "§9.3 item 6", "a file comment on W", "ok", "warning", names="W")
    add("warn_9_3_7_unknown_extra", rebuild_central(base, lambda e, r: with_central_extra(r, struct.pack("<HH", 0xCAFE, 4) + b"abcd")
                                                    if e.name == "W" else r), "§9.3 item 7",
        "an unknown extra field record (0xCAFE) in W's central header", "ok", "warning", names="W")
    def local_zip64(data):
        d = bytearray(data)
        record = struct.pack("<HHQQ", 1, 16, w.size, w.size)
        pad = w.data_offset - w.local_extra_offset - len(record)
        d[w.local_extra_offset:w.data_offset] = record + struct.pack("<HHH", 0xD935, pad - 4, 64) + bytes(pad - 6)
        return d

    add("warn_5_1_local_zip64_not_needed", local_zip64(base), "§5.1 item 3, §9.3 item 9",
        "W's local header has a zip64 extra field (before its alignment record) though its sizes fit", "ok",
        "warning", names="W")

    def prepend(data, k):
        zz = Zip(data)
        dd = bytearray(bytes(k) + data)
        for e in zz.entries:
            put32(dd, k + e.central_offset + 42, e.lho + k)
        put32(dd, k + zz.end + 16, zz.cd_offset + k)
        return dd

    add("warn_9_3_9_gap_at_start", prepend(base, 64), "§9.3 item 9, §4.5",
        "64 zero bytes before the first local header, every offset fixed", "ok", "warning")

    def swap_payload_records(data):
        zz = Zip(data)
        records = [e.central for e in zz.entries]
        records[0], records[1] = records[1], records[0]
        return bytearray(data[:zz.cd_offset]) + b"".join(records) + data[zz.end:]

    add("warn_2_4_central_order", swap_payload_records(base), "§2.4 item 4",
        "the central records of W and B in another order than their local headers", "ok", "warning")

    def external_but_default(model):
        t = init(model, "W")  # EXTERNAL, [location W, length 256]: keep those, make it inline.
        t.data_location = TensorProto.DEFAULT
        t.raw_data = payload(w)

    add("warn_9_4_5_external_data_not_external", model_edit(base, external_but_default), "§9.4 item 5, §7.2 item 1",
        "an inline tensor (raw_data, data_location DEFAULT) that keeps its external_data keys", "ok", "warning",
        names="W")
    case = with_tail(base, before_model=[("w", payload(w))])
    add("warn_9_3_8_case_only_duplicate", case, "§9.3 item 8, §6.1 item 4", "entries W and w", "ok", "warning")
    d = bytearray(base)
    patch_both(d, w, 12, 14, put16, 0x5A21)
    add("warn_9_3_9_date", d, "§9.3 item 9", "W dated 2025-01-01", "ok", "warning", names="W")
    add("warn_9_3_9_gap", with_tail(base, gap=64), "§9.3 item 9, §4.4",
        "64 zero bytes between B's data and __MODEL_PROTO's local header (A = 64)", "ok", "warning")
    add("warn_5_2_zip64_not_needed", add_zip64_end(base), "§5.2, §9.3 item 9",
        "zip64 end records, the end record holding sentinels, in an archive that needs none", "ok", "warning")

    def zip64_extra(e, r):
        if e.name != "W":
            return r
        put32(r, 24, 0xFFFFFFFF)
        put32(r, 20, 0xFFFFFFFF)
        put16(r, 6, 45)
        put16(r, 4, 0x032D)
        return with_central_extra(r, struct.pack("<HHQQ", 1, 16, w.size, w.size))

    d = rebuild_central(base, zip64_extra)
    put16(d, w.lho + 4, 45)  # The local header's version needed agrees with the central record's.
    add("warn_5_1_zip64_extra_not_needed", d, "§5.1, §9.3 item 9",
        "W's central record takes both sizes from a zip64 extra field it does not need", "ok", "warning", names="W")

    # §9.6: interrupted in-place edits.
    edited = archive_model(base)
    edited.producer_name = "edited"
    new_model = edited.SerializeToString()
    add("warn_9_6_new_tail_whole", interrupted(base, new_model), "§9.6",
        "an edit interrupted after its new tail was written whole: the new model reads", "ok", "warning")
    add("warn_9_6_new_tail_partial", interrupted(base, new_model, complete=False), "§9.6",
        "an edit interrupted while its new tail was written: the old model reads", "ok", "warning")
    add("reject_9_6_record_offset", interrupted(base, new_model, record_offset_delta=64), "§9.6 item 1",
        "an interrupted edit record whose record offset is not the file size - 48", "corrupt", "error")
    add("reject_9_6_record_order", interrupted(base, new_model, order_ok=False), "§9.6 item 1",
        "an interrupted edit record with old end > new start", "corrupt", "error")

    # §12: digests and signature. Opening ignores them (a reader that does not verify reads the
    # archive as version 1 with two entries it knows); verify checks them, and with the public
    # key (`key`, verdict `verify_key`) the signature too.
    keys = os.path.join(HERE, "keys")
    committed = lambda name: os.path.join(out, "vectors", f"{name}.onnxz")  # noqa: E731
    digested = sign(cli, base, "--digests-only")
    add("valid_digests", digested, "§12.1, §12.2", "__DIGESTS (the C++ signer's, --digests-only) before the model",
        "ok", "ok", verify_key="error")
    signed = keep_committed_signature(sign(cli, base, "--key", os.path.join(keys, "signer.pem")),
                                      committed("valid_signed"))
    add("valid_signed", signed, "§12.1-§12.3", "__DIGESTS and __SIGNATURE by the key vectors/signer.pub.pem",
        "ok", "ok", verify_key="ok")
    changed = bytearray(entry_data(digested, "W"))
    changed[100] ^= 0x01
    add("reject_12_5_payload_changed", replace_data(digested, "W", bytes(changed)), "§12.5 item 3",
        "one bit of W's payload flipped and its CRC-32 fixed in both headers: only the digest catches it",
        "ok", "error", names="W")
    statement = json.loads(entry_data(digested, "__DIGESTS"))

    def digests_edit(edit):
        s = json.loads(json.dumps(statement))
        edit(s)
        return s

    def drop(s, name):
        p = s["predicate"]
        p["resources"] = [r for r in p["resources"] if r["name"] != name]
        p["onnxzip"]["entries"] = [e for e in p["onnxzip"]["entries"] if e["name"] != name]

    def with_digests(text):
        return with_tail(base, before_model=[("__DIGESTS", text)])

    add("reject_12_5_entry_not_listed", with_digests(digests_text(digests_edit(lambda s: drop(s, "B")))),
        "§12.5 item 2", "__DIGESTS does not list entry B (its subject digest computed without it)", "ok", "error",
        names="B")

    def add_missing(s):
        p = s["predicate"]
        p["resources"].insert(1, {"name": "Q", "algorithm": "sha256", "digest": hashlib.sha256(b"Q").hexdigest()})
        p["onnxzip"]["entries"].insert(1, {"name": "Q", "size": 1, "crc32": f"{zlib.crc32(b'Q'):08x}"})

    add("reject_12_5_listed_missing", with_digests(digests_text(digests_edit(add_missing))), "§12.5 item 2",
        "__DIGESTS lists an entry Q that the archive does not hold", "ok", "error", names="Q")

    def twice(s):
        p = s["predicate"]
        for field in (p["resources"], p["onnxzip"]["entries"]):
            field.insert(0, dict(next(r for r in field if r["name"] == "W")))

    add("reject_12_2_listed_twice", with_digests(digests_text(digests_edit(twice))), "§12.2 item 5",
        "__DIGESTS lists entry W twice", "ok", "error", names="W")
    text = entry_data(digested, "__DIGESTS")
    add("reject_12_2_not_json", with_digests(text[:len(text) // 2]), "§12.1 item 3, §12.2 item 5",
        "__DIGESTS cut in half: not valid JSON", "ok", "error", names="__DIGESTS")
    add("reject_12_1_duplicate_key", with_digests(text.replace(b"{", b'{\n  "_type": "x",', 1)), "§12.1 item 3",
        "__DIGESTS holds the key _type twice in one object", "ok", "error", names="_type")
    def nested(levels):
        # An extra top-level member of `levels` arrays: the deepest at depth levels + 1.
        return with_digests(text.replace(b"{", b'{\n  "nested": ' + b"[" * levels + b"]" * levels + b",", 1))

    add("valid_digests_nested_64", nested(63), "§12.1 item 3",
        "__DIGESTS with an extra member whose arrays nest 64 deep, the most a reader accepts", "ok", "ok")
    add("reject_12_1_nested_65", nested(64), "§12.1 item 3",
        "__DIGESTS with an extra member whose arrays nest 65 deep", "ok", "error", names="nested more than 64")
    add("valid_digests_bom", with_digests(b"\xef\xbb\xbf" + text), "§12.1 item 3",
        "__DIGESTS starts with a UTF-8 byte order mark, which a reader ignores", "ok", "ok")
    add("reject_12_1_two_boms", with_digests(b"\xef\xbb\xbf\xef\xbb\xbf" + text), "§12.1 item 3",
        "__DIGESTS starts with two byte order marks: only the first is ignored", "ok", "error",
        names="__DIGESTS")

    def size_as_string(s):
        e = s["predicate"]["onnxzip"]["entries"][0]
        e["size"] = str(e["size"])

    add("reject_12_2_wrong_type", with_digests(digests_text(digests_edit(size_as_string))), "§12.2 item 5",
        "a size in predicate.onnxzip.entries is a JSON string", "ok", "error", names="size")
    add("reject_12_2_algorithm", with_digests(digests_text(digests_edit(
        lambda s: s["predicate"]["resources"][0].update(algorithm="sha512")))), "§12.2 items 1, 5",
        "a resource's algorithm is sha512", "ok", "error", names="algorithm")

    def spoil_subject(s):
        text = digests_text(s)
        root = s["subject"][0]["digest"]["sha256"]
        return text.replace(root.encode(), (("0" if root[0] != "0" else "1") + root[1:]).encode())

    add("reject_12_2_subject", with_digests(spoil_subject(json.loads(json.dumps(statement)))), "§12.2 items 2, 5",
        "the subject digest is not the SHA-256 of the resources' digests", "ok", "error", names="subject")
    add("reject_12_1_signature_without_digests", with_tail(base, before_model=[
        ("__SIGNATURE", entry_data(signed, "__SIGNATURE"))]), "§12.1 item 1",
        "__SIGNATURE without __DIGESTS", "ok", "error", names=["__SIGNATURE", "§12.1 item 1"])
    other = keep_committed_signature(sign(cli, base, "--key", os.path.join(keys, "other.pem")),
                                     committed("reject_12_5_other_key"))
    add("reject_12_5_other_key", other, "§12.5 item 4",
        "signed by another key than vectors/signer.pub.pem (verify without a key accepts it)", "ok", "ok",
        names="another key", verify_key="error")
    bundle = entry_data(signed, "__SIGNATURE")
    sig = json.loads(bundle)["dsseEnvelope"]["signatures"][0]["sig"]
    bad = sig[:40] + ("A" if sig[40] != "A" else "B") + sig[41:]
    add("reject_12_5_bad_signature", replace_data(signed, "__SIGNATURE", bundle.replace(sig.encode(), bad.encode())),
        "§12.5 item 4", "valid_signed with one base64 digit of the signature changed (verify without a key "
        "accepts it)", "ok", "ok", names="does not verify", verify_key="error")
    return vectors


def expected_model(vectors, name):
    return next(v for v in vectors if v["name"] == name)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", required=True, help="the onnxzip tool (build/src/cli/onnxzip)")
    parser.add_argument("--out", default=HERE, help="where to write the vectors and manifest.json")
    parser.add_argument("--check", action="store_true", help="fail when the committed vectors differ")
    args = parser.parse_args()
    vectors = build(os.path.abspath(args.cli), args.out)
    manifest = {"format": "onnxz-conformance", "spec": "spec/onnxz-format.md version 1.1",
                "verdicts": {
                    "open": "what opening the archive gives: 'ok', or the error code of the C++ library "
                            "(corrupt, unsupported, limit_exceeded...)",
                    "verify": "what verification reports: 'ok' (no finding), 'warning' (findings, all "
                              "accepted), 'error' (the archive is refused, or a CRC-32 is wrong)",
                    "names": "a word the error message (or one finding) contains: the entry or tensor",
                    "key": "a public key (PEM) to verify the signature with (spec §12.5 item 4)",
                    "verify_key": "what verification with that key reports",
                    "sites": "the site of every tensor that holds data, in the model's walk order "
                             "(spec/names.md)",
                    "tensors": "every tensor that holds data, as spec/names.md's record (offset and alignment "
                               "aside), in walk order, with the SHA-256 of the payload read by the record"},
                "vectors": []}
    differ = []
    for v in vectors:
        file = f"{v['name']}.onnxz"
        path = os.path.join(args.out, "vectors", file)
        if args.check:
            with open(path, "rb") as f:
                if f.read() != v["data"]:
                    differ.append(file)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(v["data"])
        manifest["vectors"].append({"file": f"vectors/{file}", **{k: v[k] for k in v if k not in ("name", "data")}})
    text = json.dumps(manifest, indent=2, ensure_ascii=True) + "\n"
    manifest_path = os.path.join(args.out, "manifest.json")
    if args.check:
        with open(manifest_path) as f:
            if f.read() != text:
                differ.append("manifest.json")
        if differ:
            sys.exit("generate.py --check: these differ from what the generator writes: " + ", ".join(differ))
        print(f"generate.py --check: {len(vectors)} vectors and the manifest are up to date")
        return
    with open(manifest_path, "w") as f:
        f.write(text)
    total = sum(len(v["data"]) for v in vectors)
    print(f"wrote {len(vectors)} vectors ({total} bytes) and manifest.json to {args.out}")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Writes the seed corpus of fuzz/zip_reader_fuzzer.cpp into fuzz/corpus/zip_reader/.

Small (< 10 KB), varied archives: stored and deflated entries, an aligned entry (0xD935 padding),
data descriptors with and without signature, zip64 (extra fields, end record and locator), an
archive comment, a directory, an empty archive, a gap between entries, a small zip bomb (2 MiB of
zeros in 2 KB: refused by the default compression ratio limit) and a high-ratio entry under the
limit's grace size (512 KiB of zeros, accepted). Deterministic: timestamps
are fixed, so rerunning rewrites identical files. Crash reproducers found by fuzzing also live in
that folder (named crash-*); this script leaves them alone.
"""
import io
import os
import struct
import zipfile
import zlib

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "zip_reader")
DATE = (1980, 1, 1, 0, 0, 0)


def text(n):
    return b"".join(b"seed line %03d\n" % i for i in range(n))


def info(name, method=zipfile.ZIP_STORED):
    i = zipfile.ZipInfo(name, DATE)
    i.compress_type = method
    i.external_attr = 0o100644 << 16
    return i


def python_zip(entries, comment=b"", stream=False):
    buffer = io.BytesIO()
    target = buffer
    if stream:
        class Unseekable(io.RawIOBase):
            def writable(self):
                return True

            def write(self, data):
                return buffer.write(data)
        target = Unseekable()
    with zipfile.ZipFile(target, "w") as z:
        for name, data, method in entries:
            z.writestr(info(name, method), data)
        z.comment = comment
    return buffer.getvalue()


def raw_deflate(data):
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def local_header(name, method, crc, csize, usize, extra=b"", flags=0x0800, version=20):
    return struct.pack("<IHHHHHIIIHH", 0x04034B50, version, flags, method, 0, 0x21, crc, csize,
                       usize, len(name), len(extra)) + name + extra


def central_header(name, method, crc, csize, usize, offset, extra=b"", flags=0x0800, version=20):
    return struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0x0300 | version, version, flags, method,
                       0, 0x21, crc, csize, usize, len(name), len(extra), 0, 0, 0,
                       0o100644 << 16, offset) + name + extra


def end_record(count, cd_size, cd_offset, comment=b""):
    return struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, cd_size, cd_offset,
                       len(comment)) + comment


def aligned_archive(alignment=64):
    """Two stored entries whose data starts on `alignment`, padded with 0xD935 records."""
    out = b""
    central = b""
    for name, data in ((b"weight_a", bytes(range(200))), (b"__MODEL_PROTO", text(3))):
        offset = len(out)
        header_end = offset + 30 + len(name)
        pad = (alignment - header_end % alignment) % alignment
        if 0 < pad < 6:
            pad += alignment
        extra = struct.pack("<HHH", 0xD935, pad - 4, alignment) + bytes(pad - 6) if pad else b""
        crc = zlib.crc32(data)
        out += local_header(name, 0, crc, len(data), len(data), extra) + data
        central += central_header(name, 0, crc, len(data), len(data), offset)
    return out + central + end_record(2, len(central), len(out))


def zip64_archive():
    """One stored entry with zip64 sizes and offset, a zip64 end record and locator."""
    name = b"big"
    data = text(4)
    crc = zlib.crc32(data)
    local_extra = struct.pack("<HHQQ", 1, 16, len(data), len(data))
    out = local_header(name, 0, crc, 0xFFFFFFFF, 0xFFFFFFFF, local_extra, version=45) + data
    central_extra = struct.pack("<HHQQQ", 1, 24, len(data), len(data), 0)
    central = central_header(name, 0, crc, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, central_extra,
                             version=45)
    cd_offset = len(out)
    out += central
    zip64_offset = len(out)
    out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 0x032D, 45, 0, 0, 1, 1, len(central),
                       cd_offset)
    out += struct.pack("<IIQI", 0x07064B50, 0, zip64_offset, 1)
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return out


def descriptor_archive(signature, wide):
    """A deflated entry with flag bit 3, zeros in the local header, then a data descriptor."""
    name = b"streamed"
    data = text(20)
    packed = raw_deflate(data)
    crc = zlib.crc32(data)
    out = local_header(name, 8, 0, 0, 0, flags=0x0808) + packed
    out += struct.pack("<I", 0x08074B50) if signature else b""
    out += struct.pack("<IQQ" if wide else "<III", crc, len(packed), len(data))
    central = central_header(name, 8, crc, len(packed), len(data), 0, flags=0x0808)
    return out + central + end_record(1, len(central), len(out))


def zeros_archive(name, size):
    """One deflated entry of `size` zero bytes (about 1000:1), then a small stored one."""
    return python_zip([(name, bytes(size), zipfile.ZIP_DEFLATED),
                       ("after.txt", text(1), zipfile.ZIP_STORED)])


def gap_archive():
    """Two entries with 32 unused bytes between them."""
    out = b""
    central = b""
    for name, data in ((b"first", b"one"), (b"second", b"two")):
        offset = len(out)
        crc = zlib.crc32(data)
        out += local_header(name, 0, crc, len(data), len(data)) + data + bytes(32)
        central += central_header(name, 0, crc, len(data), len(data), offset)
    return out + central + end_record(2, len(central), len(out))


SEEDS = {
    "empty.zip": end_record(0, 0, 0),
    "stored.zip": python_zip([("a.bin", bytes(range(64)), zipfile.ZIP_STORED),
                              ("b.txt", text(2), zipfile.ZIP_STORED)]),
    "deflated.zip": python_zip([("text.txt", text(60), zipfile.ZIP_DEFLATED),
                                ("empty", b"", zipfile.ZIP_DEFLATED)]),
    "mixed_streamed.zip": python_zip([("d.txt", text(30), zipfile.ZIP_DEFLATED),
                                      ("s.bin", bytes(range(100)), zipfile.ZIP_STORED)],
                                     stream=True),
    "comment.zip": python_zip([("x", b"x", zipfile.ZIP_STORED)], comment=b"archive comment"),
    "directory.zip": python_zip([("dir/", b"", zipfile.ZIP_STORED),
                                 ("dir/file", text(1), zipfile.ZIP_STORED)]),
    "aligned64.zip": aligned_archive(64),
    "aligned4096.zip": aligned_archive(4096),
    "zip64.zip": zip64_archive(),
    "descriptor_signed_narrow.zip": descriptor_archive(True, False),
    "descriptor_unsigned_wide.zip": descriptor_archive(False, True),
    "gap.zip": gap_archive(),
    "bomb.zip": zeros_archive("zeros", 2 << 20),
    "high_ratio.zip": zeros_archive("zeros", 512 << 10),
}


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for file_name, content in SEEDS.items():
        assert len(content) < 10 * 1024, file_name
        with open(os.path.join(OUT, file_name), "wb") as f:
            f.write(content)

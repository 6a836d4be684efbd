#!/usr/bin/python3
"""Writes the seed corpus of fuzz/parts_plan_fuzzer.cpp into fuzz/corpus/parts_plan/.

The three byte strings of an archive written in parts (spec §13): plans (one part, several parts
with an empty one, digests, a big alignment, a zero-size and a 5 GiB tensor), a token and a
receipt. Deterministic; crash reproducers (crash-*) in that folder are left alone.
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "parts_plan")


def head(magic):
    return magic + struct.pack("<I", 1)


def text(s):
    b = s.encode()
    return struct.pack("<I", len(b)) + b


def plan(parts, alignment=64, digests=False):
    out = head(b"ONNXZPLN") + struct.pack("<IBI", alignment, int(digests), len(parts))
    for part in parts:
        out += struct.pack("<I", len(part))
        for name, dtype, dims in part:
            out += text(name) + struct.pack("<II", dtype, len(dims))
            out += b"".join(struct.pack("<q", d) for d in dims)
    return out


SEEDS = {
    "one_part.bin": plan([[("w", 1, [4, 4]), ("b", 1, [4])]]),
    "parts_with_empty.bin": plan([[("a.b", 3, [7])], [], [("A_b", 10, [3, 5]), ("x", 2, [0])]]),
    "digests_65536.bin": plan([[("emb", 1, [1000])], [("head", 11, [2, 3])]], 65536, True),
    "zip64.bin": plan([[("huge", 2, [5 << 30])], [("after", 1, [1])]]),
    "token.bin": head(b"ONNXZTOK") + bytes([1, 1]) + text("/tmp/m.onnxz") +
    text("/tmp/.m.onnxz.tmp.0123456789abcdef") +
    struct.pack("<Q", len(plan([[("w", 1, [2])]]))) + plan([[("w", 1, [2])]]),
    "receipt.bin": head(b"ONNXZRCP") + bytes(range(32)) + struct.pack("<IBI", 0, 1, 1) +
    text("w") + struct.pack("<QI", 8, 0x12345678) + bytes(32) + struct.pack("<I", 0),
    "bucket_token.bin": head(b"ONNXZTOK") + bytes([2, 0]) + text("s3://models/m.onnxz") +
    text("upload-1234") + struct.pack("<Q", len(plan([[("w", 1, [2 << 20])]]))) +
    plan([[("w", 1, [2 << 20])]]),
    "bucket_receipt.bin": head(b"ONNXZRCP") + bytes(range(32)) + struct.pack("<IBI", 0, 0, 1) +
    text("w") + struct.pack("<QI", 8 << 20, 0x12345678) + struct.pack("<I", 2) +
    struct.pack("<I", 1) + text('"etag-1"') + struct.pack("<I", 7) +
    struct.pack("<I", 2) + text('"etag-2"') + struct.pack("<I", 9),
}

os.makedirs(OUT, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)

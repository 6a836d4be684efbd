#!/usr/bin/python3
"""Writes the ZIP archives other tools produce, for tests/zip_reader_test.cpp.

Run with /usr/bin/python3 from this folder; it needs Info-ZIP `zip` on PATH. The contents are
deterministic functions the test recomputes (text_lines, pattern); the archives themselves carry
timestamps, so regenerating them changes bytes but not what the test checks.

  zip_python_deflated.zip  zipfile, ZIP_DEFLATED and ZIP_STORED entries, seekable output
  zip_python_streamed.zip  zipfile writing to an unseekable stream: every entry has a data
                           descriptor and zeros in its local header
  zip_infozip_9.zip        zip -9 of files and a directory (extra fields 0x5455, 0x7875)
  zip_infozip_stdin.zip    zip from stdin to a pipe: zip64 local header, 64-bit data descriptor
"""
import io
import os
import subprocess
import tempfile
import zipfile

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "valid")


def text_lines(count):
    return b"".join(b"onnxzip line %04d\n" % i for i in range(count))


def pattern(size, seed):
    return bytes((((i * 131 + seed) ^ (i >> 7)) & 0xFF) for i in range(size))


class Unseekable(io.RawIOBase):
    def __init__(self):
        self.buffer = bytearray()

    def writable(self):
        return True

    def write(self, data):
        self.buffer += data
        return len(data)


def write_python():
    with zipfile.ZipFile(os.path.join(HERE, "zip_python_deflated.zip"), "w") as z:
        z.writestr("text.txt", text_lines(200), compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("pattern.bin", pattern(5000, 1), compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("empty.bin", b"", compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("stored.bin", pattern(300, 2), compress_type=zipfile.ZIP_STORED)
    stream = Unseekable()
    with zipfile.ZipFile(stream, "w") as z:
        z.writestr("text.txt", text_lines(200), compress_type=zipfile.ZIP_DEFLATED)
        z.writestr("stored.bin", pattern(300, 2), compress_type=zipfile.ZIP_STORED)
    with open(os.path.join(HERE, "zip_python_streamed.zip"), "wb") as f:
        f.write(stream.buffer)


def write_infozip():
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "text.txt"), "wb") as f:
            f.write(text_lines(200))
        with open(os.path.join(work, "pattern.bin"), "wb") as f:
            f.write(pattern(5000, 1))
        os.mkdir(os.path.join(work, "dir"))
        with open(os.path.join(work, "dir", "nested.txt"), "wb") as f:
            f.write(text_lines(3))
        target = os.path.join(HERE, "zip_infozip_9.zip")
        if os.path.exists(target):
            os.remove(target)
        subprocess.run(["zip", "-9", "-q", "-r", target, "text.txt", "pattern.bin", "dir"],
                       cwd=work, check=True)
    # Output to a pipe is unseekable, so zip streams: data descriptors after each entry.
    zipped = subprocess.run(["zip", "-q", "-", "-"], input=text_lines(50),
                            stdout=subprocess.PIPE, check=True).stdout
    with open(os.path.join(HERE, "zip_infozip_stdin.zip"), "wb") as f:
        f.write(zipped)


if __name__ == "__main__":
    os.makedirs(HERE, exist_ok=True)
    write_python()
    write_infozip()

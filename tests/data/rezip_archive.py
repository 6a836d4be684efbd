#!/usr/bin/python3
"""Rewrites an .onnxz the way other ZIP tools would, for tests/convert_test.cpp (repack).

  rezip_archive.py SRC DST MODE [--folder NAME] [--extra]

Reads every entry of SRC with Python's zipfile and writes them to DST in name order (so
__MODEL_PROTO is no longer last: '_' sorts before lower-case letters), as
  deflated   zipfile, ZIP_DEFLATED, seekable output
  streamed   zipfile, ZIP_STORED, to an unseekable stream: data descriptors, zeros in the local
             headers, no alignment
With --folder every name goes under NAME/ (plus a directory entry NAME/), as `zip -r NAME` does.
With --extra a README.txt no tensor refers to is added.
"""
import io
import sys
import zipfile


class Unseekable(io.RawIOBase):
    def __init__(self):
        self.buffer = bytearray()

    def writable(self):
        return True

    def write(self, data):
        self.buffer += data
        return len(data)


def main(argv):
    src, dst, mode = argv[1:4]
    folder = argv[argv.index("--folder") + 1] if "--folder" in argv else None
    with zipfile.ZipFile(src) as z:
        items = sorted((info.filename, z.read(info)) for info in z.infolist())
    if "--extra" in argv:
        items.append(("README.txt", b"not a tensor\n"))
    if folder is not None:
        items = [(folder + "/", b"")] + [(folder + "/" + name, data) for name, data in items]
    compression = zipfile.ZIP_DEFLATED if mode == "deflated" else zipfile.ZIP_STORED
    target = open(dst, "wb") if mode == "deflated" else Unseekable()
    with zipfile.ZipFile(target, "w", compression) as out:
        for name, data in items:
            out.writestr(name, data)
    if mode == "deflated":
        target.close()
    else:
        with open(dst, "wb") as f:
            f.write(target.buffer)


if __name__ == "__main__":
    main(sys.argv)

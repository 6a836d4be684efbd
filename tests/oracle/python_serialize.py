"""Independent judge for the conformance test: how the reference onnx package serializes models.

For every model.onnx under ROOT, loads it with onnx.load (external data left as references, so
the bytes are the file's own) and prints one line: the SHA-256 of SerializeToString(), its size,
and the path relative to ROOT. onnxzip's serialization of the same file must hash the same.
Run by /usr/bin/python3 (Debian's python3-onnx), once per test run, not once per model.
"""
import hashlib
import pathlib
import sys

import onnx


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: python_serialize.py ROOT", file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1])
    count = 0
    for path in sorted(root.rglob("model.onnx")):
        model = onnx.load(str(path), load_external_data=False)
        data = model.SerializeToString()
        digest = hashlib.sha256(data).hexdigest()
        print(f"{digest} {len(data)} {path.relative_to(root).as_posix()}")
        count += 1
    print(f"# {count} models, onnx {onnx.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

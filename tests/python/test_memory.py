"""Archives in memory: open, load, load_file and verify take bytes and any buffer, zero-copy."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest

import onnxzip


def _address_range(buffer):
    view = np.frombuffer(buffer, dtype=np.uint8)
    return view.ctypes.data, view.ctypes.data + view.nbytes


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview,
                                  lambda b: np.frombuffer(b, dtype=np.uint8)])
def test_open_views_the_callers_buffer(small_archive, wrap):
    # Was: pybind11's "Unable to cast Python instance to C++ type".
    path, arrays, _ = small_archive
    data = wrap(path.read_bytes())
    start, end = _address_range(data)
    with onnxzip.open(data) as archive:
        assert archive.path == "<memory>" and repr(archive) == "<onnxzip.Archive '<memory>': 3 tensors>"
        weight = archive.get_tensor("encoder.weight")
        info = archive.tensor_info("encoder.weight")
        assert weight.ctypes.data == start + info.offset  # A view of the caller's bytes.
        assert start <= weight.ctypes.data < end and not weight.flags.writeable
        assert archive.model == onnxzip.open(path).model
    references = sys.getrefcount(data)
    del archive
    gc.collect()
    # The array holds the buffer: it stays valid once the caller and the archive let go.
    assert sys.getrefcount(data) == references
    del data
    gc.collect()
    np.testing.assert_array_equal(weight, arrays["encoder.weight"])


def test_a_bytearray_in_use_cannot_be_resized(small_archive):
    path, _, _ = small_archive
    data = bytearray(path.read_bytes())
    archive = onnxzip.open(data)
    weight = archive.get_tensor("encoder.weight")
    archive.close()
    with pytest.raises(BufferError):
        data.extend(b"x")  # The array still views it.
    del weight
    gc.collect()
    data.extend(b"x")


def test_load_load_file_and_verify_take_bytes(small_archive):
    path, arrays, _ = small_archive
    data = path.read_bytes()
    assert onnxzip.load(memoryview(data)) == onnxzip.load(path)
    assert onnxzip.load(data, load_external_data=False) == onnxzip.load(path,
                                                                        load_external_data=False)
    loaded = onnxzip.load_file(bytearray(data))
    assert sorted(loaded) == sorted(arrays)
    for name, array in arrays.items():
        np.testing.assert_array_equal(loaded[name], array)
    report = onnxzip.verify(data)
    assert report.ok, report.findings


def test_verify_of_bytes_never_shows_them(small_archive, tmp_path):
    # Was: a TypeError whose message held the whole archive (4.9 MB for a real model).
    path, _, model = small_archive
    broken = bytearray(path.read_bytes())
    broken[200:260] = b"\xee" * 60  # Inside the first payload: its CRC-32 no longer holds.
    report = onnxzip.verify(bytes(broken))
    assert not report.ok and not report.loadable
    for finding in report.findings:
        assert finding.message.startswith("<memory>: ") and len(finding.message) < 400
    legacy = onnxzip.verify(model.SerializeToString())
    assert legacy.ok, legacy.findings
    with pytest.raises(onnxzip.CorruptError, match="^<memory>: ") as raised:
        onnxzip.open(b"PK\x03\x04" + b"\x00" * 100)
    assert raised.value.source == "<memory>" and len(str(raised.value)) < 400
    with pytest.raises(TypeError, match="not int"):
        onnxzip.open(42)


@pytest.mark.skipif(shutil.which("strace") is None, reason="no strace")
def test_verify_opens_the_archive_once(small_archive):
    # verify opened it five times: detect_format, verify, Archive::open for the IR rules, and
    # again detect_format and ZipReader::open for the integrity entries.
    path, _, _ = small_archive
    script = f"import onnxzip; assert onnxzip.verify({str(path)!r}).ok"
    run = subprocess.run(["strace", "-f", "-e", "trace=openat,open", sys.executable, "-c", script],
                         capture_output=True, text=True, env={**os.environ,
                                                              "PYTHONPATH": os.pathsep.join(sys.path)})
    assert run.returncode == 0, run.stderr[-2000:]
    opens = [line for line in run.stderr.splitlines() if f'"{path}"' in line]
    assert len(opens) == 1, opens


def test_verify_of_a_legacy_models_bytes_reports_its_external_data(small_archive, tmp_path):
    _, _, model = small_archive
    legacy = tmp_path / "m.onnx"
    onnx.save_model(model, str(legacy), save_as_external_data=True, location="m.data",
                    size_threshold=1024)
    assert onnxzip.verify(legacy).ok  # From its file, the data file is beside it.
    report = onnxzip.verify(legacy.read_bytes())
    errors = [f for f in report.findings if f.severity == "error"]
    assert errors and all("external data" in f.message and f.message.startswith("<memory>: ")
                          for f in errors)


@pytest.mark.parametrize("access", ["map", "read"])
def test_an_open_archive_holds_its_model_bytes_not_a_parsed_model(small_archive, access):
    # Was: the parsed onnx.ModelProto stayed with the archive for its whole life, beside the
    # model's bytes and the library's own parse (about 3x the model's size).
    import weakref

    path, _, _ = small_archive
    with onnxzip.open(path, access=access) as archive:
        model = archive.model
        assert archive.model is model  # The same object while the caller holds it.
        first = model.SerializeToString()
        held = weakref.ref(model)
        del model
        gc.collect()
        assert held() is None
        # The file changes under the open archive (an in-place edit rewrites its tail): the model
        # read again is still the one read at open, from the bytes the archive holds.
        onnxzip.edit_model_properties(path, lambda m: setattr(m, "doc_string", "edited") or m)
        with onnxzip.open(path) as reopened:
            assert reopened.model.doc_string == "edited"
        again = archive.model
        assert again.SerializeToString() == first and again.doc_string != "edited"

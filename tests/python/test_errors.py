"""The onnxzip.Error family, and hostile archives: errors, never a crash."""

from __future__ import annotations

import glob
import os

import numpy as np
import onnx.numpy_helper as nh
import pytest

import onnxzip
from conftest import make_model

CORPORA = "/work/shared/corpora/zip"


def test_a_missing_file_is_not_found(tmp_path):
    missing = tmp_path / "missing.onnxz"
    for call in (onnxzip.open, onnxzip.load, onnxzip.verify):
        with pytest.raises(onnxzip.NotFoundError) as raised:
            call(missing)
        error = raised.value
        assert isinstance(error, FileNotFoundError) and isinstance(error, OSError)
        assert isinstance(error, onnxzip.Error)
        assert error.code == "not_found"
        assert str(missing) in str(error) and not str(error).startswith("not_found")


def test_a_file_that_is_not_an_archive_is_corrupt(tmp_path):
    path = tmp_path / "text.onnxz"
    path.write_bytes(b"PK\x03\x04 this is not really a zip archive" * 4)
    with pytest.raises(onnxzip.CorruptError) as raised:
        onnxzip.open(path)
    assert raised.value.code == "corrupt" and isinstance(raised.value, ValueError)
    assert str(path) in str(raised.value)
    report = onnxzip.verify(path)
    assert not report.loadable and report.findings[0].severity == "error"


def test_bad_arguments_are_invalid_argument(tmp_path, small_archive):
    model = make_model([nh.from_array(np.zeros(1000, np.float32), "w")])
    with pytest.raises(onnxzip.InvalidArgumentError, match="alignment"):
        onnxzip.save(model, tmp_path / "a.onnxz", alignment=48)
    with pytest.raises(TypeError):
        onnxzip.save("model.onnx", tmp_path / "b.onnxz")
    with pytest.raises(onnxzip.CorruptError, match="<model bytes>"):
        onnxzip.save(b"\xff\xff\xff", tmp_path / "c.onnxz")
    path, _, _ = small_archive
    with onnxzip.open(path) as archive:
        with pytest.raises(KeyError, match="nothing"):
            archive.get_tensor("nothing")
    # A tensor still referring to legacy external data cannot be saved as is.
    stored = onnxzip.load(path, load_external_data=False)
    with pytest.raises(onnxzip.InvalidArgumentError, match="EXTERNAL|external"):
        onnxzip.save(stored, tmp_path / "d.onnxz")
    assert sorted(os.listdir(tmp_path)) == ["model.onnxz"]


def _every_call(path):
    """Every reading entry point on `path`; returns how many raised onnxzip.Error."""
    failures = 0
    for call in (lambda: onnxzip.load(path),
                 lambda: [a.get_tensor(k).sum() for a in [onnxzip.open(path)] for k in a.keys()],
                 lambda: onnxzip.open(path).model):
        try:
            call()
        except onnxzip.Error:
            failures += 1
    report = onnxzip.verify(path)  # never raises for content
    assert all(f.severity in ("error", "warning") for f in report.findings)
    return failures


@pytest.mark.skipif(not os.path.isdir(CORPORA), reason="the shared zip corpus is absent")
def test_zip_corpus_raises_errors_only():
    paths = sorted(glob.glob(os.path.join(CORPORA, "*", "*")))
    paths = [p for p in paths if os.path.isfile(p) and not p.endswith(".md")]
    assert len(paths) > 100
    refused = sum(_every_call(p) > 0 for p in paths)
    assert refused == len(paths)  # none of them holds an ONNX model


def test_truncated_and_bit_flipped_archives_raise_errors_only(tmp_path, small_archive):
    path, _, _ = small_archive
    data = path.read_bytes()
    hostile = tmp_path / "hostile.onnxz"
    refused = 0
    cuts = sorted(set(list(range(0, len(data), max(1, len(data) // 97))) + [len(data) - 1]))
    for cut in cuts:
        hostile.write_bytes(data[:cut])
        refused += _every_call(hostile) > 0
    assert refused == len(cuts)  # every truncation breaks the end record or the model
    rng = np.random.default_rng(11)
    for position in rng.integers(0, len(data), 300):
        flipped = bytearray(data)
        flipped[position] ^= 1 << int(rng.integers(0, 8))
        hostile.write_bytes(bytes(flipped))
        _every_call(hostile)  # error or success (a flipped payload bit loads), never a crash


def test_opening_a_legacy_model_or_a_truncated_archive_gives_a_hint(small_archive, tmp_path):
    path, _, model = small_archive
    legacy = tmp_path / "model.onnx"
    legacy.write_bytes(model.SerializeToString())
    for call in (onnxzip.open, onnxzip.load):
        with pytest.raises(onnxzip.CorruptError, match="legacy ONNX model: onnx.load reads it"):
            call(legacy)
    truncated = tmp_path / "cut.onnxz"
    truncated.write_bytes(path.read_bytes()[:-30])
    with pytest.raises(onnxzip.CorruptError, match="may be truncated"):
        onnxzip.open(truncated)


def test_not_found_names_the_file(tmp_path):
    missing = tmp_path / "missing.onnxz"
    with pytest.raises(onnxzip.NotFoundError) as raised:
        onnxzip.open(missing)
    assert raised.value.filename == str(missing)


def test_convert_refuses_a_name_that_contradicts_the_output(small_archive, tmp_path):
    # convert('a.onnxz', 'y.onnxz') wrote a legacy model under an .onnxz name.
    path, _, _ = small_archive
    with pytest.raises(onnxzip.InvalidArgumentError, match="name the output .onnx"):
        onnxzip.convert(path, tmp_path / "y.onnxz")
    legacy = tmp_path / "m.onnx"
    onnxzip.convert(path, legacy)
    with pytest.raises(onnxzip.InvalidArgumentError, match="name the output .onnxz"):
        onnxzip.convert(legacy, tmp_path / "y.onnx")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "model.onnxz"]


def test_messages_show_the_place_and_the_problem(tmp_path):
    # Was "NotFoundError: [Errno None] None: 'nope.onnxz'" and "IOFailure: [Errno None] None:
    # 'models/'": the OSError subclasses printed their empty errno instead of the message.
    missing = tmp_path / "nope.onnxz"
    for call in (onnxzip.open, onnxzip.load, onnxzip.load_file):
        with pytest.raises(onnxzip.NotFoundError) as raised:
            call(missing)
        error = raised.value
        assert str(error) == f"{missing}: {error.problem}" and "Errno" not in str(error)
        assert error.source == str(missing) and error.filename == str(missing)
        assert error.problem == "no such file" and error.args == (str(error),)
    with pytest.raises(onnxzip.IOFailure) as raised:
        onnxzip.load(tmp_path)  # A folder.
    assert str(raised.value) == f"{tmp_path}: {raised.value.problem}"
    assert "Errno" not in str(raised.value) and "folder" in raised.value.problem


@pytest.mark.parametrize("code", ["corrupt", "unsupported", "not_found", "io", "invalid_argument",
                                  "limit_exceeded", "bad_state", "changed"])
def test_every_error_class_prints_its_place_and_problem(code):
    import pickle

    from onnxzip._errors import _from_code

    error = _from_code(code, "m.onnxz: entry 'w': bad", "m.onnxz", "w", "", "", 12, "bad")
    assert type(error).__module__ == "onnxzip" and error.code == code
    assert isinstance(error, onnxzip.Error)
    assert str(error) == "m.onnxz: entry 'w': bad" and "Errno" not in repr(error)
    assert (error.source, error.entry, error.tensor, error.site, error.offset, error.problem) == \
        ("m.onnxz", "w", "", "", 12, "bad")
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is type(error) and str(again) == str(error) and again.offset == 12
    assert onnxzip.ChangedError.code == "changed" and issubclass(onnxzip.ChangedError, OSError)


def test_messages_name_python_options_not_cpp_ones(small_archive):
    # Was: "... as was asked (LoadOptions::check_digests; `onnxzip sign` adds one)".
    path, _, _ = small_archive
    for call in (lambda: onnxzip.open(path, check_digests=True),
                 lambda: onnxzip.load(path, check_digests=True),
                 lambda: onnxzip.load_file(path, check_digests=True)):
        with pytest.raises(onnxzip.CorruptError) as raised:
            call()
        assert "check_digests=True" in str(raised.value) and "::" not in str(raised.value)


def test_an_open_waits_for_an_edit_in_progress(small_archive):
    # An editor holds the exclusive lock for its whole edit (spec §9.6); an open reads the tail
    # under the shared one, so it waits for the edit to end rather than read half of it.
    import fcntl
    import threading
    import time

    path, arrays, _ = small_archive
    editor = os.open(path, os.O_RDONLY)
    fcntl.flock(editor, fcntl.LOCK_EX)
    released = []

    def end_edit():
        time.sleep(0.3)
        released.append(time.monotonic())
        fcntl.flock(editor, fcntl.LOCK_UN)

    thread = threading.Thread(target=end_edit)
    thread.start()
    try:
        with onnxzip.open(path) as archive:
            opened = time.monotonic()
            assert np.array_equal(archive.get_tensor("encoder.weight"), arrays["encoder.weight"])
    finally:
        thread.join()
        os.close(editor)
    assert opened >= released[0]


def test_too_many_open_files_says_so(small_archive):
    # Issue 32 defect 7: one descriptor per open archive, and an open refused for want of one
    # says why (it read "[Errno None] None: '<path>'").
    import resource

    path, _, _ = small_archive
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    in_use = len(os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (in_use + 40, hard))
    archives = []
    try:
        with pytest.raises(onnxzip.IOFailure) as raised:
            for _ in range(1000):
                archives.append(onnxzip.open(path))
    finally:
        for archive in archives:
            archive.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert len(archives) >= 30
    assert "Too many open files" in str(raised.value)
    assert "Errno None" not in str(raised.value)


CONFORMANCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "spec",
                           "conformance", "vectors")


def _local_header_offset(path, entry):
    import zipfile

    with zipfile.ZipFile(path) as z:
        return z.getinfo(entry).header_offset


def test_a_crc_error_gives_the_entry_and_its_offset_as_fields(small_archive, tmp_path):
    path, _, _ = small_archive
    header = _local_header_offset(path, "encoder_weight")
    data = bytearray(path.read_bytes())
    with onnxzip.open(path) as archive:
        at = archive.tensor_info("encoder.weight").offset
    data[at + 5] ^= 0xFF  # A payload byte: only its CRC-32 can tell.
    damaged = tmp_path / "damaged.onnxz"
    damaged.write_bytes(bytes(data))
    with pytest.raises(onnxzip.CorruptError) as raised:
        onnxzip.convert(damaged, tmp_path / "out.onnx")  # Checks every CRC-32, as the CLI.
    error = raised.value
    assert (error.source, error.entry, error.offset) == (str(damaged), "encoder_weight", header)
    assert (error.tensor, error.site) == ("", "")
    assert "CRC-32" in error.problem and "entry 'encoder_weight'" not in error.problem


@pytest.mark.parametrize("vector, tensor, site, entry", [
    ("reject_9_4_3_location_missing.onnxz", "W", "graph/initializer[0]", ""),
    ("reject_9_4_3_size_mismatch.onnxz", "W", "graph/initializer[0]", "W"),
    ("reject_9_4_3_subgraph_location_missing.onnxz", "then_K",
     "graph/node[2]/then_branch/node[0]/value", ""),
])
def test_a_bad_tensor_reference_gives_the_tensor_as_fields(vector, tensor, site, entry):
    path = os.path.join(CONFORMANCE, vector)
    with pytest.raises(onnxzip.CorruptError) as raised:
        onnxzip.open(path)
    error = raised.value
    assert (error.source, error.tensor, error.site, error.entry) == (path, tensor, site, entry)
    assert error.offset == (_local_header_offset(path, entry) if entry else None)
    assert str(error).startswith(f"{path}: tensor '{tensor}' at {site}: ")


def test_a_missing_data_file_gives_the_tensor_and_the_file_as_fields(tmp_path):
    import onnx

    weight = nh.from_array(np.arange(300, dtype=np.float32), "w")
    weight.ClearField("raw_data")
    weight.data_location = onnx.TensorProto.EXTERNAL
    location = weight.external_data.add()
    location.key, location.value = "location", "missing.bin"
    legacy = tmp_path / "m.onnx"
    onnx.save(make_model([weight]), legacy)
    with pytest.raises(onnxzip.NotFoundError) as raised:
        onnxzip.convert(legacy, tmp_path / "m.onnxz")
    error = raised.value
    # A legacy model's data file is its entry (spec/names.md).
    assert (error.source, error.entry, error.tensor, error.site, error.offset) == \
        (str(legacy), "missing.bin", "w", "graph/initializer[0]", None)
    assert error.problem == "the file does not exist"

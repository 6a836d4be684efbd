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


def test_changed_is_a_retryable_os_error():
    assert issubclass(onnxzip.ChangedError, onnxzip.Error)
    assert issubclass(onnxzip.ChangedError, OSError)
    assert onnxzip.ChangedError.code == "changed"
    error = onnxzip._errors._from_code("changed", "m.onnxz: the file changed while it was read")
    assert isinstance(error, onnxzip.ChangedError)
    assert str(error) == "m.onnxz: the file changed while it was read"


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

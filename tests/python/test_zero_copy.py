"""open()/get_tensor(): views of the mapped archive, no copy, and their lifetimes."""

from __future__ import annotations

import gc
import os
import threading

import numpy as np
import onnx.numpy_helper as nh
import pytest

import onnxzip
from conftest import make_model

MIB = 1 << 20


def _mappings_of(path):
    """(start, end) of every mapping of `path` in this process."""
    real = os.path.realpath(path)
    ranges = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].strip() == real:
                start, end = (int(x, 16) for x in fields[0].split("-"))
                ranges.append((start, end))
    return ranges


def _status_kib(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(field)


@pytest.fixture(scope="module")
def weights_archive(tmp_path_factory):
    """16 tensors of 4 MiB each (64 MiB), written through the ArchiveWriter."""
    path = tmp_path_factory.mktemp("zc") / "weights.onnxz"
    expected = {}
    with onnxzip.ArchiveWriter(path) as writer:
        refs = []
        for i in range(16):
            array = np.full((1024, 1024), i + 0.5, dtype=np.float32)
            refs.append(writer.add_tensor(f"layer{i}.weight", array))
            expected[f"layer{i}.weight"] = i + 0.5
        writer.finish(make_model(refs))
    return path, expected


def test_get_tensor_is_a_read_only_view_of_the_file_mapping(weights_archive):
    path, expected = weights_archive
    with onnxzip.open(path) as archive:
        assert archive.keys() == list(expected)
        mappings = _mappings_of(path)
        assert mappings, "the archive is not mapped"
        for name in archive.keys():
            array = archive.get_tensor(name)
            address = array.ctypes.data
            info = archive.tensor_info(name)
            assert address % 64 == 0
            assert any(start <= address and address + array.nbytes <= end
                       for start, end in mappings), (hex(address), mappings)
            assert not array.flags.writeable and not array.flags.owndata
            with pytest.raises(ValueError):
                array[0, 0] = 1.0
            assert array.shape == (1024, 1024) and array[5, 7] == expected[name]
            # The payload's address: the mapping's start plus its file offset (one whole-file map).
            assert any(address - start == info.offset for start, _ in mappings)


def test_reading_every_weight_does_not_grow_anonymous_memory(weights_archive):
    path, expected = weights_archive
    gc.collect()
    before = _status_kib("RssAnon")
    with onnxzip.open(path) as archive:
        arrays = [archive.get_tensor(name) for name in archive.keys()]
        total = sum(float(a[::64, ::64].sum()) + float(a[-1, -1]) for a in arrays)
        checksum = sum(np.bitwise_xor.reduce(a.view(np.uint32), axis=None) for a in arrays)
    grown_kib = _status_kib("RssAnon") - before
    assert total > 0 and checksum >= 0
    # 64 MiB of weights were read (every page touched by the xor); anonymous memory grew by
    # far less than one tensor (4 MiB).
    assert grown_kib < 2 * 1024, f"RssAnon grew by {grown_kib} KiB"


def test_views_outlive_the_archive_object(weights_archive):
    path, expected = weights_archive
    archive = onnxzip.open(path)
    array = archive.get_tensor("layer3.weight")
    archive.close()
    assert archive.closed
    with pytest.raises(onnxzip.BadStateError, match="closed"):
        archive.get_tensor("layer3.weight")
    with pytest.raises(onnxzip.BadStateError, match="closed"):
        archive.tensor_info("layer3.weight")
    with pytest.raises(onnxzip.BadStateError, match="closed"):
        archive.keys()
    del archive
    gc.collect()
    assert array[1023, 1023] == expected["layer3.weight"]
    assert _mappings_of(path), "the view's mapping was released"
    base = array.base
    del array
    del base
    gc.collect()
    assert not _mappings_of(path), "the mapping outlived its last view"


def test_views_survive_the_file_being_removed(tmp_path):
    path = tmp_path / "gone.onnxz"
    onnxzip.save(make_model([nh.from_array(np.arange(4096, dtype=np.int32), "w")]), path)
    with onnxzip.open(path) as archive:
        array = archive.get_tensor("w")
    os.remove(path)
    gc.collect()
    np.testing.assert_array_equal(array, np.arange(4096, dtype=np.int32))


def test_threads_read_views_at_once(weights_archive):
    path, expected = weights_archive
    closed = onnxzip.open(path)
    views = {name: closed.get_tensor(name) for name in closed.keys()}
    closed.close()  # The views alone keep the mapping.
    del closed
    shared = onnxzip.open(path)  # get_tensor from many threads on one open archive.
    results = []
    errors = []

    def reader(name, from_shared):
        try:
            view = shared.get_tensor(name) if from_shared else views[name]
            results.append((name, float(view.sum(dtype=np.float64))))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=reader, args=(name, from_shared))
               for name in views for from_shared in (False, True) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    shared.close()
    assert errors == []
    assert len(results) == 4 * len(views)
    for name, total in results:
        assert total == expected[name] * 1024 * 1024


def test_torch_shares_memory_with_views(weights_archive):
    torch = pytest.importorskip("torch")
    path, expected = weights_archive
    with onnxzip.open(path) as archive:
        array = archive.get_tensor("layer2.weight")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch warns that the array is read-only.
        from_numpy = torch.from_numpy(array)
        from_buffer = torch.frombuffer(array, dtype=torch.float32)
    assert from_numpy.data_ptr() == array.ctypes.data
    assert from_buffer.data_ptr() == array.ctypes.data
    assert from_numpy.shape == (1024, 1024) and from_buffer.shape == (1024 * 1024,)
    assert float(from_numpy[3, 4]) == expected["layer2.weight"]
    del array
    gc.collect()
    assert float(from_buffer[-1]) == expected["layer2.weight"]  # torch keeps the view alive.


_WRITE_THROUGH_TORCH = """
import sys, warnings
import numpy as np, torch, onnxzip
path = sys.argv[1]
with onnxzip.open(path) as archive:
    array = archive.get_tensor("layer3.weight")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch warns that the array is read-only.
        tensor = torch.from_numpy(array)
    assert tensor.data_ptr() == array.ctypes.data  # still zero-copy before the write
    tensor.mul_(2)
    torch.optim.SGD([torch.nn.Parameter(tensor)], lr=1.0)  # what a fine-tuning run builds
    print(float(tensor[0, 0]), float(archive.get_tensor("layer3.weight")[0, 0]))
"""


def test_a_torch_write_to_a_view_copies_and_never_reaches_the_file(weights_archive):
    # The README's torch path: the mapping was read-only and torch ignores numpy's flag, so
    # mul_ killed the process with SIGSEGV. A subprocess, so that a signal fails only this test.
    pytest.importorskip("torch")
    import subprocess
    import sys

    path, expected = weights_archive
    before = path.read_bytes()
    run = subprocess.run([sys.executable, "-c", _WRITE_THROUGH_TORCH, str(path)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    written, seen_again = (float(x) for x in run.stdout.split())
    assert written == 2 * expected["layer3.weight"]
    assert seen_again == written  # one private mapping per Archive: its views see the write
    assert path.read_bytes() == before
    with onnxzip.open(path) as archive:
        assert archive.get_tensor("layer3.weight")[0, 0] == expected["layer3.weight"]


def test_access_read_reads_the_file_into_memory(weights_archive):
    path, expected = weights_archive
    with onnxzip.open(path, access="read") as archive:
        assert not _mappings_of(path)
        array = archive.get_tensor("layer1.weight")
        assert array.ctypes.data % 64 == 0 and array[0, 0] == expected["layer1.weight"]
    with pytest.raises(onnxzip.InvalidArgumentError, match="access"):
        onnxzip.open(path, access="mmap")

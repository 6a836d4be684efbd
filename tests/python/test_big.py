"""A ModelProto over 2 GiB saved from Python (label `slow`: several GiB of memory and disk)."""

from __future__ import annotations

import onnx
import pytest

import onnxzip
from conftest import make_model

GIB = 1 << 30


@pytest.mark.slow
def test_save_a_model_over_2_gib(tmp_path):
    sizes = [GIB + 4096, GIB // 2, GIB // 2 + 64]
    tensors = []
    for i, size in enumerate(sizes):
        tensor = onnx.TensorProto()
        tensor.name = f"w{i}"
        tensor.data_type = onnx.TensorProto.UINT8
        tensor.dims.append(size)
        tensor.raw_data = bytes([i + 1]) * size
        tensors.append(tensor)
    model = make_model(tensors)
    assert model.ByteSize() > 2 * GIB  # protobuf refuses to serialize it (what exporters hit)

    path = tmp_path / "big.onnxz"
    onnxzip.save(model, path)

    assert [len(t.raw_data) for t in model.graph.initializer] == sizes  # restored
    assert onnxzip.verify(path, check_crc=False).ok
    with onnxzip.open(path) as archive:
        assert archive.keys() == ["w0", "w1", "w2"]
        for i, size in enumerate(sizes):
            array = archive.get_tensor(f"w{i}")
            assert array.shape == (size,) and array.ctypes.data % 64 == 0
            assert array[0] == array[-1] == array[size // 3] == i + 1

"""A ModelProto over 2 GiB saved from Python (label `slow`: several GiB of memory and disk)."""

from __future__ import annotations

import onnx
import pytest

import onnxzip
from conftest import make_model

GIB = 1 << 30


@pytest.mark.slow
@pytest.mark.parametrize("bridge", [True, False], ids=["bridge", "tensor_by_tensor"])
def test_save_a_model_over_2_gib(tmp_path, monkeypatch, bridge):
    if not bridge:  # What protobuf's pure-Python and upb implementations get.
        monkeypatch.setattr(onnxzip._onnxzip, "save_message", lambda *args: False)
    sizes = [GIB + 4096, GIB // 2, GIB // 2 + 64]
    model = make_model([])
    for i, size in enumerate(sizes):
        # Added in place: make_graph(initializer=...) would copy every payload once more.
        tensor = model.graph.initializer.add()
        tensor.name = f"w{i}"
        tensor.data_type = onnx.TensorProto.UINT8
        tensor.dims.append(size)
        tensor.raw_data = bytes([i + 1]) * size
    size_before = model.ByteSize()
    assert size_before > 2 * GIB  # protobuf refuses to serialize it (what exporters hit)

    path = tmp_path / "big.onnxz"
    onnxzip.save(model, path)

    # The caller's model is restored: same size, payloads inline again.
    assert model.ByteSize() == size_before
    assert [t.data_location for t in model.graph.initializer] == [onnx.TensorProto.DEFAULT] * 3
    assert model.graph.initializer[2].raw_data[-64:] == bytes([3]) * 64
    assert onnxzip.verify(path, check_crc=False).ok
    with onnxzip.open(path) as archive:
        assert archive.keys() == ["w0", "w1", "w2"]
        for i, size in enumerate(sizes):
            array = archive.get_tensor(f"w{i}")
            assert array.shape == (size,) and array.ctypes.data % 64 == 0
            assert array[0] == array[-1] == array[size // 3] == i + 1

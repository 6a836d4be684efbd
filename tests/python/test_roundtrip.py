"""save/load round trips against the reference onnx package: libonnx-testdata and every data type."""

from __future__ import annotations

import glob
import os

import numpy as np
import onnx
import onnx.numpy_helper as nh
import pytest

import onnxzip
from conftest import make_model

TESTDATA = "/usr/share/libonnx-testdata/data"
TYPED_FIELDS = ("float_data", "int32_data", "int64_data", "double_data", "uint64_data")


def test_the_installed_package_is_tested():
    # scripts/test.sh installs the package into a venv; a copy of the source tree must not shadow it.
    assert "site-packages" in onnxzip.__file__, onnxzip.__file__
    assert onnxzip._onnxzip.__file__.endswith(".so")


def _walk(model):
    from onnxzip._model_walk import model_tensors
    return model_tensors(model)


def _normalized(model: onnx.ModelProto) -> bytes:
    """The model as save() stores a typed-field payload: raw little-endian bytes (spec §7.3)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    for tensor, _, in_sparse in _walk(model):
        if in_sparse or tensor.data_type == onnx.TensorProto.STRING:
            continue
        if any(len(getattr(tensor, f)) for f in TYPED_FIELDS):
            raw = nh.to_array(tensor).tobytes()
            for f in TYPED_FIELDS:
                tensor.ClearField(f)
            tensor.raw_data = raw
    return model.SerializeToString()


def _testdata_models():
    paths = sorted(glob.glob(os.path.join(TESTDATA, "**", "model.onnx"), recursive=True))
    return paths[::5]  # A fifth of the ~1,000 models: every operator family, a few seconds.


@pytest.mark.skipif(not os.path.isdir(TESTDATA), reason="libonnx-testdata is not installed")
def test_libonnx_testdata_round_trips(tmp_path):
    models = _testdata_models()
    assert len(models) > 150
    externalized = 0
    for source in models:
        original = onnx.load(source)
        path = tmp_path / "m.onnxz"
        onnxzip.save(original, path, threshold=0)
        loaded = onnxzip.load(path)
        assert loaded.SerializeToString() == _normalized(original), source
        onnx.checker.check_model(loaded)
        stored = onnxzip.load(path, load_external_data=False)
        externalized += sum(t.data_location == onnx.TensorProto.EXTERNAL for t, _, _ in _walk(stored))
        with onnxzip.open(path) as archive:
            for info in archive.tensors:
                np.testing.assert_array_equal(
                    archive.get_tensor(info).reshape(-1).view(np.uint8),
                    np.frombuffer(archive.get_tensor(info).tobytes(), np.uint8))
        assert onnxzip.verify(path).ok, source
    assert externalized > 50


@pytest.mark.skipif(not os.path.isdir(TESTDATA), reason="libonnx-testdata is not installed")
def test_saving_bytes_equals_saving_the_model(tmp_path):
    source = sorted(glob.glob(os.path.join(TESTDATA, "pytorch-converted", "*", "model.onnx")))[0]
    model = onnx.load(source)
    onnxzip.save(model, tmp_path / "a.onnxz", threshold=0)
    onnxzip.save(model.SerializeToString(), tmp_path / "b.onnxz", threshold=0)
    assert (tmp_path / "a.onnxz").read_bytes() == (tmp_path / "b.onnxz").read_bytes()


# (data type, numpy dtype of get_tensor, dims, payload bytes)
def _cases():
    rng = np.random.default_rng(7)
    T = onnx.TensorProto
    numeric = [
        (T.FLOAT, np.float32), (T.UINT8, np.uint8), (T.INT8, np.int8), (T.UINT16, np.uint16),
        (T.INT16, np.int16), (T.INT32, np.int32), (T.INT64, np.int64), (T.BOOL, np.bool_),
        (T.FLOAT16, np.float16), (T.DOUBLE, np.float64), (T.UINT32, np.uint32),
        (T.UINT64, np.uint64), (T.COMPLEX64, np.complex64), (T.COMPLEX128, np.complex128),
    ]
    for data_type, dtype in numeric:
        if dtype is np.bool_:
            array = rng.integers(0, 2, size=(5, 267)).astype(np.bool_)
        else:
            array = (rng.standard_normal((5, 267)) * 100).astype(dtype)
        yield data_type, np.dtype(dtype), [5, 267], array.tobytes()
    # Types numpy lacks: raw views (help(onnxzip)). Values by number: onnx 1.12 knows only 16.
    yield 16, np.dtype(np.uint16), [7, 300], rng.integers(0, 1 << 16, 2100, np.uint16).tobytes()
    for float8 in (17, 18, 19, 20, 24):
        yield float8, np.dtype(np.uint8), [3, 700], rng.integers(0, 256, 2100, np.uint8).tobytes()
    for four_bit in (21, 22, 23):  # UINT4, INT4, FLOAT4E2M1: two per byte, packed bytes shape.
        yield four_bit, np.dtype(np.uint8), [3, 1001], rng.integers(0, 256, 1502, np.uint8).tobytes()
    for two_bit in (25, 26):  # UINT2, INT2: four per byte.
        yield two_bit, np.dtype(np.uint8), [4099], rng.integers(0, 256, 1025, np.uint8).tobytes()


@pytest.mark.parametrize("data_type,dtype,dims,payload", list(_cases()),
                         ids=lambda v: str(v) if isinstance(v, int) else "")
def test_every_data_type(tmp_path, data_type, dtype, dims, payload):
    tensor = onnx.TensorProto()
    tensor.name = "t"
    tensor.dims.extend(dims)
    onnxzip._dtypes._set_data_type(tensor, data_type)
    tensor.raw_data = payload
    model = make_model([tensor])
    path = tmp_path / "types.onnxz"
    onnxzip.save(model, path)

    with onnxzip.open(path) as archive:
        info = archive.tensor_info("t")
        assert (info.data_type, list(info.dims), info.size) == (data_type, dims, len(payload))
        array = archive.get_tensor("t")
        assert array.dtype == dtype
        expected_shape = (len(payload),) if data_type in (21, 22, 23, 25, 26) else tuple(dims)
        assert array.shape == expected_shape
        assert array.tobytes() == payload
        assert array.ctypes.data % 64 == 0

    loaded = onnxzip.load(path)
    assert loaded.graph.initializer[0].raw_data == payload
    assert loaded.SerializeToString() == model.SerializeToString()
    if data_type <= 16 and data_type != onnx.TensorProto.BFLOAT16:
        np.testing.assert_array_equal(nh.to_array(loaded.graph.initializer[0]),
                                      np.frombuffer(payload, dtype).reshape(dims))

    # And back through the writer, from the raw view with an explicit type and dims.
    with onnxzip.ArchiveWriter(tmp_path / "w.onnxz") as writer:
        reference = writer.add_tensor("t", np.frombuffer(payload, dtype), data_type=data_type,
                                      dims=dims)
        writer.finish(make_model([reference]))
    assert onnxzip.load(tmp_path / "w.onnxz").SerializeToString() == model.SerializeToString()


def test_typed_fields_become_raw_bytes(tmp_path):
    tensor = onnx.helper.make_tensor("f16", onnx.TensorProto.FLOAT16, [600],
                                     np.arange(600).astype(np.float16))
    assert len(tensor.int32_data) == 600 and not tensor.raw_data
    onnxzip.save(make_model([tensor]), tmp_path / "m.onnxz")
    loaded = onnxzip.load(tmp_path / "m.onnxz").graph.initializer[0]
    assert loaded.raw_data == np.arange(600).astype(np.float16).tobytes()
    with onnxzip.open(tmp_path / "m.onnxz") as archive:
        np.testing.assert_array_equal(archive.get_tensor("f16"), np.arange(600).astype(np.float16))


def test_threshold_alignment_and_dedupe(tmp_path):
    same = np.full(1000, 3, np.float32)
    model = make_model([nh.from_array(same, "a"), nh.from_array(same.copy(), "b"),
                        nh.from_array(np.ones(10, np.float32), "small")])
    onnxzip.save(model, tmp_path / "d.onnxz", alignment=4096, dedupe=True)
    stored = onnxzip.load(tmp_path / "d.onnxz", load_external_data=False)
    locations = [onnxzip._dtypes._location(t) for t in stored.graph.initializer]
    assert locations[0] == locations[1] != ""
    assert locations[2] == ""  # 40 bytes < threshold 1024: inline.
    with onnxzip.open(tmp_path / "d.onnxz") as archive:
        assert archive.keys() == ["a", "b", "small"]  # small: inline
        assert all(info.offset % 4096 == 0 for info in archive.tensors if info.entry)
    onnxzip.save(model, tmp_path / "all.onnxz", threshold=0)
    with onnxzip.open(tmp_path / "all.onnxz") as archive:
        assert archive.keys() == ["a", "b", "small"]


def test_attributes_subgraphs_and_unnamed_tensors(tmp_path):
    value = np.arange(512, dtype=np.float32)
    constant = onnx.helper.make_node("Constant", [], ["c"], value=nh.from_array(value))  # unnamed
    then_graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Identity", ["w_then"], ["y"])], "then", [],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [512])],
        initializer=[nh.from_array(value * 2, "w_then")])
    else_graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Identity", ["c"], ["z"])], "else", [],
        [onnx.helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [512])])
    cond = onnx.helper.make_node("If", ["cond"], ["out"], then_branch=then_graph,
                                 else_branch=else_graph)
    graph = onnx.helper.make_graph(
        [constant, cond], "g", [onnx.helper.make_tensor_value_info("cond", onnx.TensorProto.BOOL, [])],
        [onnx.helper.make_tensor_value_info("out", onnx.TensorProto.FLOAT, [512])])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])
    onnxzip.save(model, tmp_path / "sub.onnxz")
    assert onnxzip.load(tmp_path / "sub.onnxz").SerializeToString() == model.SerializeToString()
    with onnxzip.open(tmp_path / "sub.onnxz") as archive:
        keys = archive.keys()
        assert "w_then" in keys and len(keys) == 2
        unnamed = [k for k in keys if k != "w_then"][0]
        assert archive.tensor_info(unnamed).name == ""
        np.testing.assert_array_equal(archive.get_tensor(unnamed), value)
        np.testing.assert_array_equal(archive.get_tensor("w_then"), value * 2)


def test_every_initializer_is_readable_inline_ones_too(tmp_path):
    # A small initializer that save() keeps inline (< threshold) raised KeyError: after convert,
    # resnet18 had 2 of its 26 initializers out of reach.
    big = np.arange(1024, dtype=np.float32).reshape(32, 32)
    shape = np.array([1, -1], dtype=np.int64)
    typed = onnx.helper.make_tensor("typed", onnx.TensorProto.INT32, [3], [7, 8, 9])
    constant = onnx.helper.make_node(
        "Constant", [], ["c"], value=nh.from_array(np.array([0.5, 1.5], np.float32), ""))
    model = make_model([nh.from_array(big, "big"), nh.from_array(shape, "shape"), typed])
    model.graph.node.append(constant)
    path = tmp_path / "inline.onnxz"
    onnxzip.save(model, path)
    with onnxzip.open(path) as archive:
        # Model order: for_each_tensor visits a graph's nodes before its initializers.
        assert archive.keys() == ["graph/node[3]/value", "big", "shape", "typed"]
        np.testing.assert_array_equal(archive.get_tensor("big"), big)
        small = archive.get_tensor("shape")
        np.testing.assert_array_equal(small, shape)
        assert small.dtype == np.int64 and not small.flags.writeable
        np.testing.assert_array_equal(archive.get_tensor("typed"), [7, 8, 9])
        np.testing.assert_array_equal(archive.get_tensor("graph/node[3]/value"),
                                      [0.5, 1.5])
        info = archive.tensor_info("shape")
        assert (info.entry, info.size, info.zero_copy, info.site) == (
            "", 16, False, "graph/initializer[1]")
        assert archive.tensor_info("big").entry == "big"


def test_a_closed_archive_says_so(small_archive):
    path, _, _ = small_archive
    archive = onnxzip.open(path)
    archive.close()
    assert "closed" in repr(archive)
    for call in (archive.keys, lambda: len(archive), lambda: "tiny" in archive,
                 lambda: list(archive), lambda: archive.get_tensor("tiny")):
        with pytest.raises(onnxzip.BadStateError, match="closed"):
            call()


def test_save_file_and_load_file_as_safetensors_has_them(tmp_path):
    tensors = {"embed.weight": np.arange(12, dtype=np.float32).reshape(3, 4),
               "step": np.array(7, dtype=np.int64),
               "mask": np.array([True, False])}
    path = tmp_path / "weights.onnxz"
    onnxzip.save_file(tensors, path, metadata={"format": "pt", "epoch": "3"})
    assert onnxzip.verify(path).ok
    loaded = onnxzip.load_file(path)
    assert list(loaded) == list(tensors)
    for name, array in tensors.items():
        np.testing.assert_array_equal(loaded[name], array)
        assert loaded[name].dtype == array.dtype and loaded[name].shape == array.shape
    with onnxzip.open(path) as archive:
        assert archive.metadata() == {"format": "pt", "epoch": "3"}
        assert all(info.entry for info in archive.tensors)  # every tensor an entry
    with pytest.raises(TypeError, match="metadata must map str to str"):
        onnxzip.save_file(tensors, tmp_path / "bad.onnxz", metadata={"epoch": 3})
    assert not (tmp_path / "bad.onnxz").exists()


def test_framework_pt_gives_torch_tensors_sharing_the_mapping(tmp_path):
    torch = pytest.importorskip("torch")
    weight = torch.arange(4096, dtype=torch.float32).reshape(64, 64)
    half = weight.to(torch.bfloat16)
    path = tmp_path / "t.onnxz"
    onnxzip.save_file({"w": weight, "h": half}, path)
    with onnxzip.open(path, framework="pt") as archive:
        w, h = archive.get_tensor("w"), archive.get_tensor("h")
        assert isinstance(w, torch.Tensor) and torch.equal(w, weight)
        assert h.dtype == torch.bfloat16 and torch.equal(h, half)
        # A view of the mapping: the payload's file offset from the mapping's start.
        real = os.path.realpath(path)
        with open("/proc/self/maps") as maps:
            starts = [int(line.split("-")[0], 16) for line in maps if line.rstrip().endswith(real)]
        assert any(w.data_ptr() - start == archive.tensor_info("w").offset
                   for start in starts)
    assert torch.equal(onnxzip.load_file(path, framework="pt")["h"], half)
    with pytest.raises(onnxzip.InvalidArgumentError, match="framework"):
        onnxzip.open(path, framework="jax")

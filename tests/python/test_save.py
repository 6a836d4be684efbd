"""save() of an onnx.ModelProto: payloads read in place from protobuf's C++ messages (the bridge,
python/src/protobuf_bridge.h), the caller's model left as it was, and the same archive as saving
the serialized bytes; the copying fallback for other protobuf implementations."""

from __future__ import annotations

import ctypes
import gc
import glob
import os
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as nh
import pytest

import onnxzip
from conftest import make_model

TESTDATA = "/usr/share/libonnx-testdata/data"
MIB = 1 << 20


@pytest.fixture(params=["bridge", "fallback"])
def save_path(request, monkeypatch):
    """Runs a test through the bridge, and again with the bridge refused (as for protobuf's
    pure-Python and upb implementations, whose models save() serializes)."""
    if request.param == "fallback":
        monkeypatch.setattr(onnxzip._onnxzip, "save_message", lambda *args: False)
        monkeypatch.setattr(onnxzip._onnxzip.ArchiveWriter, "finish_message",
                            lambda *args: False)
    return request.param


def everywhere_model() -> onnx.ModelProto:
    """Tensors in every place save() looks: initializers (raw, typed, small, unnamed, shared
    payloads), a Constant's attribute, a subgraph, a function, a sparse initializer."""
    rng = np.random.default_rng(3)
    big = rng.standard_normal(3000).astype(np.float32)
    initializers = [
        nh.from_array(big, "w.big"),
        nh.from_array(big.copy(), "w.same"),  # dedupe stores it once
        nh.from_array(np.arange(5, dtype=np.int64), "w.small"),  # 40 bytes: never moved
        oh.make_tensor("w.typed", onnx.TensorProto.FLOAT16, [700],
                       np.arange(700).astype(np.float16)),  # int32_data, not raw_data
        nh.from_array(rng.integers(0, 255, 2000).astype(np.uint8), ""),
    ]
    constant = oh.make_node("Constant", [], ["c"], value=nh.from_array(big[:600] * 2))
    branch = oh.make_graph([oh.make_node("Identity", ["w.sub"], ["y"])], "then", [],
                           [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [900])],
                           initializer=[nh.from_array(big[:900] * 3, "w.sub")])
    cond = oh.make_node("If", ["cond"], ["out"], then_branch=branch, else_branch=branch)
    function = oh.make_function(
        "local", "f", ["x"], ["z"],
        [oh.make_node("Constant", [], ["k"], value=nh.from_array(big[:400] * 4)),
         oh.make_node("Add", ["x", "k"], ["z"])],
        [oh.make_opsetid("", 17)])
    sparse = oh.make_sparse_tensor(nh.from_array(big[:700], "s.values"),
                                   nh.from_array(np.arange(700, dtype=np.int64), "s.indices"),
                                   [2000])
    graph = oh.make_graph(
        [constant, cond], "g",
        [oh.make_tensor_value_info("cond", onnx.TensorProto.BOOL, [])],
        [oh.make_tensor_value_info("out", onnx.TensorProto.FLOAT, [900])],
        initializer=initializers, sparse_initializer=[sparse])
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17),
                                               oh.make_opsetid("local", 1)],
                         functions=[function])


def test_the_bridge_is_taken_with_debians_protobuf(tmp_path):
    # Debian's python3-protobuf is the C++ implementation of the libprotobuf the module links:
    # without the bridge, save() of a 1 GiB model takes 20x as long as cp (bench/python_bench.py).
    from google.protobuf.internal import api_implementation
    from onnxzip._model_walk import model_tensors
    assert api_implementation.Type() == "cpp"
    assert onnxzip._onnxzip.message_bridge_available()
    model = everywhere_model()
    tensors = [found.tensor for found in model_tensors(model)]
    assert onnxzip._onnxzip.save_message(model, tensors, str(tmp_path / "m.onnxz"), 64, 1024,
                                         False)
    with onnxzip.open(tmp_path / "m.onnxz") as archive:
        then_branch = [t for t in archive.tensors if t.name == "w.sub"][0]  # Both branches: w.sub.
        np.testing.assert_array_equal(archive.get_tensor(then_branch),
                                      nh.to_array(model.graph.node[1].attribute[0].g.initializer[0]))


def test_the_bridge_undoes_every_move_when_it_gives_up(tmp_path):
    # One tensor object listed twice: its payload is moved, then its marker; the marker of the
    # first move is then found nowhere, so the bridge refuses and must restore both moves.
    model = everywhere_model()
    before = model.SerializeToString()
    tensor = model.graph.initializer[0]
    path = tmp_path / "never.onnxz"
    assert not onnxzip._onnxzip.save_message(model, [tensor, tensor], str(path), 64, 0, False)
    assert model.SerializeToString() == before
    assert not path.exists()


@pytest.mark.parametrize("options", [{}, {"threshold": 0}, {"dedupe": True, "alignment": 4096}],
                         ids=["default", "threshold0", "dedupe4096"])
def test_same_archive_as_saving_the_bytes_and_the_model_unchanged(tmp_path, save_path, options):
    model = everywhere_model()
    before = model.SerializeToString()
    # Python objects that already point into the model keep seeing its payloads afterwards.
    big = model.graph.initializer[0]
    constant_value = model.graph.node[0].attribute[0].t

    onnxzip.save(model, tmp_path / "model.onnxz", **options)

    assert model.SerializeToString() == before
    assert big.raw_data == model.graph.initializer[0].raw_data and len(big.raw_data) == 12000
    assert len(constant_value.raw_data) == 2400
    onnxzip.save(before, tmp_path / "bytes.onnxz", **options)
    assert (tmp_path / "model.onnxz").read_bytes() == (tmp_path / "bytes.onnxz").read_bytes()
    # The model breaks an IR rule on purpose (an unnamed initializer): nothing else is found.
    assert [f.message.split(": ", 1)[1] for f in onnxzip.verify(tmp_path / "model.onnxz").findings
            ] == ["graph/initializer[4]: initializer has no name"]


@pytest.mark.skipif(not os.path.isdir(TESTDATA), reason="libonnx-testdata is not installed")
def test_libonnx_testdata_saves_as_its_bytes_do(tmp_path):
    paths = sorted(glob.glob(os.path.join(TESTDATA, "**", "model.onnx"), recursive=True))[::25]
    assert len(paths) > 30
    for path in paths:
        model = onnx.load(path)
        before = model.SerializeToString()
        onnxzip.save(model, tmp_path / "model.onnxz", threshold=0)
        assert model.SerializeToString() == before, path
        onnxzip.save(before, tmp_path / "bytes.onnxz", threshold=0)
        assert (tmp_path / "model.onnxz").read_bytes() == (tmp_path / "bytes.onnxz").read_bytes(), path


def test_a_failed_save_leaves_the_model_unchanged_and_no_file(tmp_path, save_path):
    model = everywhere_model()
    model.graph.initializer[1].dims[0] = 2999  # 12000 bytes of raw_data for 2999 floats
    before = model.SerializeToString()
    path = tmp_path / "bad.onnxz"
    with pytest.raises(onnxzip.InvalidArgumentError) as raised:
        onnxzip.save(model, path)
    assert raised.value.code == "invalid_argument"
    assert "w.same" in str(raised.value) and "12000" in str(raised.value)
    assert model.SerializeToString() == before
    assert not path.exists() and os.listdir(tmp_path) == []


def test_a_tensor_already_external_is_refused_and_left_alone(tmp_path, save_path):
    model = everywhere_model()
    tensor = model.graph.initializer[0]
    tensor.data_location = onnx.TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", "weights.bin"
    before = model.SerializeToString()
    with pytest.raises(onnxzip.InvalidArgumentError, match="w.big"):
        onnxzip.save(model, tmp_path / "external.onnxz")
    assert model.SerializeToString() == before


def test_archive_writer_finish_reads_the_model_as_save_does(tmp_path, save_path):
    streamed = np.arange(5000, dtype=np.int32)
    model = everywhere_model()
    with onnxzip.ArchiveWriter(tmp_path / "model.onnxz", dedupe=True) as writer:
        model.graph.initializer.append(writer.add_tensor("streamed", streamed))
        before = model.SerializeToString()
        writer.finish(model)
    assert model.SerializeToString() == before
    with onnxzip.ArchiveWriter(tmp_path / "bytes.onnxz", dedupe=True) as writer:
        writer.add_tensor("streamed", streamed)
        writer.finish(before)
    assert (tmp_path / "model.onnxz").read_bytes() == (tmp_path / "bytes.onnxz").read_bytes()
    with onnxzip.open(tmp_path / "model.onnxz") as archive:
        np.testing.assert_array_equal(archive.get_tensor("streamed"), streamed)
        then_branch = [t for t in archive.tensors if t.name == "w.sub"][0]
        np.testing.assert_array_equal(archive.get_tensor(then_branch), nh.to_array(
            model.graph.node[1].attribute[0].g.initializer[0]))


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def test_the_bridge_copies_no_payload(tmp_path):
    # 256 MiB of payloads; serializing the model (the fallback) would add at least that much to
    # the peak resident memory, the bridge writes from the model's own strings.
    payload = np.arange(4 * MIB // 4, dtype=np.float32)
    model = make_model([])
    for i in range(64):
        tensor = model.graph.initializer.add()
        tensor.CopyFrom(nh.from_array(payload + i, f"w{i}"))
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")  # VmHWM := VmRSS
    baseline = _status_kib("VmRSS")
    onnxzip.save(model, tmp_path / "big.onnxz")
    grown_mib = (_status_kib("VmHWM") - baseline) / 1024
    assert grown_mib < 32, f"peak resident memory grew by {grown_mib:.0f} MiB"
    with onnxzip.open(tmp_path / "big.onnxz") as archive:
        np.testing.assert_array_equal(archive.get_tensor("w63"), payload + 63)


def test_pure_python_protobuf_saves_through_the_fallback(tmp_path):
    script = textwrap.dedent(f"""
        import numpy as np, onnx.numpy_helper as nh, onnxzip
        from google.protobuf.internal import api_implementation
        from conftest import make_model
        assert api_implementation.Type() == "python"
        assert not onnxzip._onnxzip.message_bridge_available()
        model = make_model([nh.from_array(np.arange(1000, dtype=np.float32), "w")])
        before = model.SerializeToString()
        onnxzip.save(model, {str(tmp_path / "python.onnxz")!r})
        assert model.SerializeToString() == before
        with onnxzip.open({str(tmp_path / "python.onnxz")!r}) as archive:
            assert archive.get_tensor("w")[-1] == 999
    """)
    environment = dict(os.environ, PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="python")
    subprocess.run([sys.executable, "-c", script], check=True, env=environment,
                   cwd=os.path.dirname(__file__))


def test_an_output_name_that_contradicts_the_direction_is_refused(small_archive, tmp_path):
    # save(model, "x.onnx") wrote an archive named .onnx. One rule in every face: ".onnxz" holds
    # an archive, ".onnx" a legacy model, other names either.
    path, arrays, model = small_archive
    calls = {
        "save": lambda out: onnxzip.save(model, out),
        "ArchiveWriter": lambda out: onnxzip.ArchiveWriter(out),
        "save_file": lambda out: onnxzip.save_file(arrays, out),
        "repack": lambda out: onnxzip.repack(path, out),
        "export_torch": lambda out: onnxzip.export_torch(None, (), out),
    }
    for function, call in calls.items():
        out = tmp_path / "x.onnx"
        with pytest.raises(onnxzip.InvalidArgumentError) as raised:
            call(out)
        assert str(raised.value).startswith(f"{out}: {function} writes an .onnxz archive")
        assert "name the output .onnxz" in str(raised.value)
    with pytest.raises(onnxzip.InvalidArgumentError, match="name the output .onnx$"):
        onnxzip.write_view_model(path, tmp_path / "view.onnxz")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnxz"]
    onnxzip.save(model, tmp_path / "x.bin")  # Other names take either.
    assert onnxzip.load(tmp_path / "x.bin") == onnxzip.load(path)

"""ArchiveWriter, convert, verify, repack and the streaming (> 2 GiB) save path on small models."""

from __future__ import annotations

import os
import tracemalloc

import numpy as np
import onnx
import onnx.numpy_helper as nh
import pytest

import onnxzip
from conftest import make_model


def test_add_tensor_returns_the_reference_and_writes_at_once(tmp_path):
    path = tmp_path / "w.onnxz"
    array = np.arange(6000, dtype=np.float32).reshape(60, 100)
    with onnxzip.ArchiveWriter(path, alignment=256) as writer:
        reference = writer.add_tensor("/encoder/layer.0/W", array)
        assert reference.name == "/encoder/layer.0/W"
        assert list(reference.dims) == [60, 100]
        assert reference.data_type == onnx.TensorProto.FLOAT
        assert reference.data_location == onnx.TensorProto.EXTERNAL
        assert [(e.key, e.value) for e in reference.external_data] == [
            ("location", "encoder_layer_0_W"), ("length", "24000")]
        assert not reference.HasField("raw_data")
        assert not path.exists()  # Appears only at finish().
        writer.finish(make_model([reference]))
    assert path.exists()
    with onnxzip.open(path) as archive:
        assert archive.tensor_info("/encoder/layer.0/W").offset % 256 == 0
        np.testing.assert_array_equal(archive.get_tensor("/encoder/layer.0/W"), array)
    assert onnxzip.verify(path).ok


def test_add_tensor_takes_buffers_without_copying_them(tmp_path):
    big = np.ones(16 << 20, dtype=np.uint8)  # 16 MiB
    with onnxzip.ArchiveWriter(tmp_path / "b.onnxz") as writer:
        tracemalloc.start()
        refs = [writer.add_tensor("numpy", big), writer.add_tensor("view", memoryview(big)),
                writer.add_tensor("bytes", b"\x07" * 2048),
                writer.add_tensor("matrix", memoryview(np.eye(40, dtype=np.float64)))]
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < 1 << 20, f"add_tensor allocated {peak} bytes"
        assert refs[3].data_type == onnx.TensorProto.DOUBLE and list(refs[3].dims) == [40, 40]
        writer.finish(make_model(refs))
    with onnxzip.open(tmp_path / "b.onnxz") as archive:
        assert archive.get_tensor("view").shape == (16 << 20,)
        assert archive.get_tensor("bytes").tobytes() == b"\x07" * 2048
        np.testing.assert_array_equal(archive.get_tensor("matrix"), np.eye(40))


def test_an_exception_in_the_with_block_leaves_no_file(tmp_path):
    path = tmp_path / "never.onnxz"
    with pytest.raises(RuntimeError, match="exporter failed"):
        with onnxzip.ArchiveWriter(path) as writer:
            writer.add_tensor("w", np.zeros(4096, np.float32))
            raise RuntimeError("exporter failed")
    assert os.listdir(tmp_path) == []


def test_leaving_without_finish_raises_and_leaves_no_file(tmp_path):
    path = tmp_path / "unfinished.onnxz"
    with pytest.raises(onnxzip.BadStateError, match="without finish"):
        with onnxzip.ArchiveWriter(path) as writer:
            writer.add_tensor("w", np.zeros(4096, np.float32))
    assert os.listdir(tmp_path) == []


def test_finish_checks_references_and_can_be_retried(tmp_path):
    path = tmp_path / "retry.onnxz"
    with onnxzip.ArchiveWriter(path) as writer:
        a = writer.add_tensor("a", np.zeros(1000, np.float32))
        b = writer.add_tensor("b", np.ones(1000, np.float32))
        with pytest.raises(onnxzip.InvalidArgumentError) as raised:
            writer.finish(make_model([a]))  # b's entry is referred to by nothing.
        assert raised.value.code == "invalid_argument"
        assert "b" in str(raised.value)
        assert isinstance(raised.value, ValueError)
        writer.finish(make_model([a, b]))
    assert onnxzip.load(path).graph.initializer[1].raw_data == np.ones(1000, np.float32).tobytes()


def test_add_tensor_rejects_wrong_sizes_and_layouts(tmp_path):
    with onnxzip.ArchiveWriter(tmp_path / "x.onnxz") as writer:
        with pytest.raises(onnxzip.InvalidArgumentError, match="add_tensor 'w'") as raised:
            writer.add_tensor("w", np.zeros(10, np.float32), dims=[11])
        assert "44" in str(raised.value) and "40" in str(raised.value)
        writer.abort()
    with onnxzip.ArchiveWriter(tmp_path / "y.onnxz") as writer:
        with pytest.raises(onnxzip.InvalidArgumentError, match="not C-contiguous"):
            writer.add_tensor("t", np.zeros((100, 100), np.float32).T)
        with pytest.raises(onnxzip.InvalidArgumentError, match="big-endian"):
            writer.add_tensor("t", np.zeros(100, ">f4"))
        with pytest.raises(onnxzip.InvalidArgumentError, match="no ONNX data type"):
            writer.add_tensor("t", np.zeros(100, "datetime64[s]"))
        writer.abort()
    assert os.listdir(tmp_path) == []


def _big_model():
    rng = np.random.default_rng(3)
    arrays = {f"w{i}": rng.standard_normal((64, 64)).astype(np.float32) for i in range(5)}
    arrays["dup"] = arrays["w0"].copy()
    tensors = [nh.from_array(a, n) for n, a in arrays.items()]
    typed = onnx.helper.make_tensor("typed", onnx.TensorProto.INT64, [500], list(range(500)))
    strings = onnx.helper.make_tensor("s", onnx.TensorProto.STRING, [300], [b"abcdef"] * 300)
    return make_model(tensors + [typed, strings, nh.from_array(np.ones(3, np.float32), "small")])


@pytest.mark.parametrize("dedupe", [False, True])
def test_streaming_save_equals_save(tmp_path, dedupe):
    # The path models over 2 GiB take, on a small model: same archive content, model restored.
    model = _big_model()
    before = model.SerializeToString()
    onnxzip.save(model, tmp_path / "plain.onnxz", dedupe=dedupe)
    onnxzip._writer._save_streaming(model, tmp_path / "streamed.onnxz", threshold=1024, alignment=64,
                            dedupe=dedupe)
    assert model.SerializeToString() == before
    plain = onnxzip.load(tmp_path / "plain.onnxz")
    streamed = onnxzip.load(tmp_path / "streamed.onnxz")
    assert streamed.SerializeToString() == plain.SerializeToString()
    stored = onnxzip.load(tmp_path / "streamed.onnxz", load_external_data=False)
    locations = {t.name: onnxzip._dtypes._location(t) for t in stored.graph.initializer}
    assert (locations["dup"] == locations["w0"]) is dedupe
    assert locations["s"] == "" and locations["small"] == "" and locations["typed"] != ""
    assert onnxzip.verify(tmp_path / "streamed.onnxz").ok


def test_streaming_save_restores_the_model_on_failure(tmp_path):
    model = _big_model()
    bad = model.graph.initializer.add()
    bad.CopyFrom(nh.from_array(np.zeros(1000, np.float32), "bad"))
    bad.dims[0] = 999  # 4000 bytes of raw_data for 999 floats.
    before = model.SerializeToString()
    with pytest.raises(onnxzip.InvalidArgumentError, match="bad"):
        onnxzip._writer._save_streaming(model, tmp_path / "f.onnxz", threshold=1024, alignment=64,
                                dedupe=False)
    assert model.SerializeToString() == before
    assert os.listdir(tmp_path) == []


def test_convert_both_ways_and_verify(tmp_path):
    model = _big_model()
    legacy = tmp_path / "m.onnx"
    onnx.save_model(model, str(legacy), save_as_external_data=True, location="m.data",
                    size_threshold=1024)
    assert onnxzip.convert(legacy, tmp_path / "m.onnxz", alignment=128) == "legacy"
    report = onnxzip.verify(tmp_path / "m.onnxz")
    assert report.ok and report.loadable and report.findings == ()
    assert onnxzip.convert(tmp_path / "m.onnxz", tmp_path / "back.onnx",
                           external_data="weights.bin") == "onnxz"
    assert (tmp_path / "weights.bin").exists()
    back = onnx.load(str(tmp_path / "back.onnx"))
    for tensor in back.graph.initializer:  # onnx.load sets DEFAULT where onnxzip clears it.
        tensor.ClearField("data_location")
    # Nothing is added to the model: onnx.load of the written files gives the archive's model.
    assert back.SerializeToString() == onnxzip.load(tmp_path / "m.onnxz").SerializeToString()
    with pytest.raises(onnxzip.InvalidArgumentError):
        onnxzip.convert(legacy, legacy)


def test_verify_reports_findings_as_objects(tmp_path, small_archive):
    path, _, _ = small_archive
    data = bytearray(path.read_bytes())
    with onnxzip.open(path) as archive:
        offset = archive.tensor_info("encoder.weight").offset
    data[offset] ^= 0xFF  # A payload byte: load() accepts it, the CRC-32 does not.
    broken = tmp_path / "crc.onnxz"
    broken.write_bytes(bytes(data))
    report = onnxzip.verify(broken)
    assert not report.ok and not report.loadable
    finding = report.findings[0]
    assert finding.severity == "error" and finding.entry == "encoder_weight"
    assert "CRC" in finding.message
    assert onnxzip.verify(broken, check_crc=False).ok


def test_repack_and_view_model(tmp_path, small_archive):
    import zipfile
    path, arrays, _ = small_archive
    deflated = tmp_path / "deflated.zip"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as out:
        for item in source.infolist():
            out.writestr(item.filename, source.read(item.filename))
    with onnxzip.open(deflated) as archive:  # deflated entries: inflated, not mapped
        info = archive.tensor_info("encoder.weight")
        assert not info.zero_copy
        view = archive.get_tensor("encoder.weight")
    np.testing.assert_array_equal(view, arrays["encoder.weight"])  # outlives the archive
    result = onnxzip.repack(deflated, tmp_path / "repacked.onnxz")
    assert result.kept_entries == ("encoder_weight", "encoder_bias")
    assert onnxzip.verify(tmp_path / "repacked.onnxz").ok
    view_path = onnxzip.write_view_model(tmp_path / "repacked.onnxz")
    assert view_path == str(tmp_path / "repacked.view.onnx")
    view_model = onnx.load(view_path)  # onnx resolves the offsets into the archive itself
    np.testing.assert_array_equal(nh.to_array(view_model.graph.initializer[0]),
                                  arrays["encoder.weight"])


def test_add_tensor_refuses_a_name_added_before(tmp_path):
    # The README's writer example did this to resnet18: two entries "a" and "a_2", and a model
    # with two initializers named "a".
    path = tmp_path / "dup.onnxz"
    x = np.arange(512, dtype=np.float32)
    with onnxzip.ArchiveWriter(path) as writer:
        first = writer.add_tensor("a", x)
        with pytest.raises(onnxzip.InvalidArgumentError, match="tensor 'a' was added already"):
            writer.add_tensor("a", 2 * x)
        writer.finish(make_model([first]))
    with onnxzip.open(path) as archive:
        assert archive.keys() == ["a"]
        np.testing.assert_array_equal(archive.get_tensor("a"), x)


@pytest.mark.parametrize("array, data_type", [
    (np.array([object(), object()] * 128, dtype=object), onnx.TensorProto.INT64),
    (np.arange(256, dtype=">f4"), onnx.TensorProto.FLOAT),
    (np.arange(256, dtype=np.float64), onnx.TensorProto.FLOAT),
    (np.arange(256, dtype=np.float32), onnx.TensorProto.BFLOAT16),
])
def test_add_tensor_refuses_a_buffer_that_contradicts_data_type(tmp_path, array, data_type):
    # An object array once stored heap addresses, a big-endian one swapped bytes.
    with onnxzip.ArchiveWriter(tmp_path / "t.onnxz") as writer:
        with pytest.raises(onnxzip.InvalidArgumentError, match="tensor 'w'"):
            writer.add_tensor("w", array, data_type=data_type, dims=[256])
        writer.abort()


def test_add_tensor_takes_raw_views_with_data_type(tmp_path):
    path = tmp_path / "raw.onnxz"
    bits = np.arange(256, dtype=np.uint16)
    floats = np.arange(64, dtype=np.float32)
    with onnxzip.ArchiveWriter(path) as writer:
        tensors = [writer.add_tensor("bf16", bits, data_type=onnx.TensorProto.BFLOAT16),
                   writer.add_tensor("bytes", floats.tobytes(), data_type=onnx.TensorProto.FLOAT,
                                     dims=[64])]
        writer.finish(make_model(tensors))
    with onnxzip.open(path) as archive:
        np.testing.assert_array_equal(archive.get_tensor("bf16"), bits)
        np.testing.assert_array_equal(archive.get_tensor("bytes"), floats)


def test_add_tensor_takes_a_torch_bfloat16_tensor(tmp_path):
    torch = pytest.importorskip("torch")
    weight = torch.arange(512, dtype=torch.float32).to(torch.bfloat16)
    path = tmp_path / "bf16.onnxz"
    with onnxzip.ArchiveWriter(path) as writer:
        reference = writer.add_tensor("w", weight)
        assert reference.data_type == onnx.TensorProto.BFLOAT16
        writer.finish(make_model([reference]))
    with onnxzip.open(path) as archive:
        np.testing.assert_array_equal(archive.get_tensor("w"), weight.view(torch.int16).numpy())


@pytest.mark.parametrize("options, error", [
    ({"threshold": -1}, onnxzip.InvalidArgumentError),
    ({"threshold": 1.5}, TypeError),
    ({"threshold": "1024"}, TypeError),
    ({"alignment": -64}, onnxzip.InvalidArgumentError),
    ({"alignment": 100}, onnxzip.InvalidArgumentError),
    ({"alignment": 64.0}, TypeError),
    ({"dedupe": "yes"}, TypeError),
])
def test_bad_options_get_a_short_message_and_write_nothing(tmp_path, options, error):
    # pybind11 refused these with a TypeError embedding the whole model's text (263 MB for
    # resnet18) and its own signature.
    model = make_model([nh.from_array(np.zeros(4096, dtype=np.float32), "w")])
    path = tmp_path / "x.onnxz"
    for call in (lambda: onnxzip.save(model, path, **options),
                 lambda: onnxzip.ArchiveWriter(path, **options)):
        with pytest.raises(error) as raised:
            call()
        message = str(raised.value)
        assert len(message) < 120 and "incompatible function arguments" not in message
        assert next(iter(options)) in message
    assert not path.exists()


def test_add_tensor_refuses_bad_arguments_with_a_short_message(tmp_path):
    with onnxzip.ArchiveWriter(tmp_path / "t.onnxz") as writer:
        for call in (lambda: writer.add_tensor(3, np.zeros(4)),
                     lambda: writer.add_tensor("w", np.zeros(4), data_type="FLOAT"),
                     lambda: writer.add_tensor("w", np.zeros(4), dims=["4"])):
            with pytest.raises(TypeError) as raised:
                call()
            assert "incompatible function arguments" not in str(raised.value)
        writer.abort()


def _cli_lines(path):
    """`onnxzip verify`'s lines for `path` with the tool next to the package's tests, or None."""
    import shutil
    import subprocess
    here = os.path.dirname(os.path.abspath(__file__))
    tool = os.path.join(here, "..", "..", "build", "src", "cli", "onnxzip")
    tool = tool if os.path.exists(tool) else shutil.which("onnxzip")
    if tool is None:
        return None
    run = subprocess.run([tool, "verify", "--quiet", str(path)], capture_output=True, text=True)
    return run.stdout.splitlines()


def test_verify_checks_the_ir_rules_as_the_cli_does(tmp_path):
    # Python's verify() skipped the IR rules: an archive without opset_import and with two
    # initializers of one name passed, where `onnxzip verify` reported them.
    tensors = [nh.from_array(np.arange(300, dtype=np.float32), "a"),
               nh.from_array(np.arange(300, dtype=np.float32) * 2, "a")]
    model = make_model(tensors[:1])
    model.graph.initializer.extend(tensors[1:])
    del model.opset_import[:]
    path = tmp_path / "ir.onnxz"
    onnxzip.save(model, path)
    report = onnxzip.verify(path)
    messages = [f.message for f in report.findings]
    assert not report.ok and report.loadable  # load() accepts it: warnings
    assert {f.severity for f in report.findings} == {"warning"}
    assert any("opset_import" in m for m in messages), messages
    assert any("'a' is defined twice" in m for m in messages), messages
    assert all(m.startswith(str(path) + ": ") for m in messages)
    cli = _cli_lines(path)
    if cli is not None:
        assert cli == messages


def test_verify_takes_a_legacy_model_as_the_cli_does(tmp_path):
    # A valid legacy .onnx was an error to Python's verify() and "ok" to the CLI.
    model = _big_model()
    legacy = tmp_path / "m.onnx"
    onnx.save_model(model, str(legacy), save_as_external_data=True, location="m.data",
                    size_threshold=1024)
    assert onnxzip.verify(legacy).findings == ()
    os.truncate(tmp_path / "m.data", 10)
    report = onnxzip.verify(legacy)
    assert not report.loadable and "m.data" in report.findings[0].message
    cli = _cli_lines(legacy)
    if cli is not None:
        assert cli == [f.message for f in report.findings]


def test_finish_refuses_a_tensor_named_as_an_initializer_of_the_model(tmp_path):
    # finish() accepted it, and the archive then failed its own verify (ONNX IR: each name is
    # assigned once); the README says a name added twice is refused. The check is the C++
    # ArchiveWriter::finish's, so every face gets it.
    model = make_model([nh.from_array(np.zeros(1000, np.float32), "w")])
    path = tmp_path / "clash.onnxz"
    with onnxzip.ArchiveWriter(path) as writer:
        model.graph.initializer.append(writer.add_tensor("w", np.ones(1000, np.float32)))
        with pytest.raises(onnxzip.InvalidArgumentError) as raised:
            writer.finish(model)
        assert "'w'" in str(raised.value) and "initializer" in str(raised.value)
        writer.abort()
    assert not path.exists()

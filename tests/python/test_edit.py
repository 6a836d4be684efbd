"""replace_model: a new model for an existing archive, payload bytes untouched."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import onnxzip


def _payload_bytes(path):
    with onnxzip.open(path) as archive:
        return {info.entry: (info.offset, archive.get_tensor(info).tobytes())
                for info in archive.tensors}


def test_replace_model_keeps_every_payload_in_place(small_archive):
    path, arrays, _ = small_archive
    before = _payload_bytes(path)
    with onnxzip.open(path) as archive:
        model = archive.model
        view = archive.get_tensor("encoder.weight")
    model.producer_name = "edited"
    model.doc_string = "x" * 5000
    result = onnxzip.replace_model(path, model)
    assert not result.compacted and result.dropped_entries == ()
    assert result.file_size == path.stat().st_size
    assert _payload_bytes(path) == before  # same offsets, same bytes
    np.testing.assert_array_equal(view, arrays["encoder.weight"])  # a view from before the edit
    loaded = onnxzip.load(path)
    assert loaded.producer_name == "edited" and loaded.doc_string == "x" * 5000
    assert onnxzip.verify(path).ok


def test_replace_model_refuses_a_dropped_reference_unless_compact(small_archive):
    path, arrays, _ = small_archive
    original = path.read_bytes()
    with onnxzip.open(path) as archive:
        model = archive.model
    kept = [t for t in model.graph.initializer if t.name != "encoder.bias"]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    model.graph.ClearField("node")
    model.graph.ClearField("output")
    with pytest.raises(onnxzip.InvalidArgumentError, match="encoder_bias") as raised:
        onnxzip.replace_model(path, model)
    assert raised.value.code == "invalid_argument"
    assert path.read_bytes() == original  # unchanged
    result = onnxzip.replace_model(path, model, compact=True)
    assert result.compacted and result.dropped_entries == ("encoder_bias",)
    with onnxzip.open(path) as archive:
        assert archive.keys() == ["encoder.weight", "tiny"]  # tiny: inline, not an entry
        assert [t.entry for t in archive.tensors] == ["encoder_weight", ""]
        np.testing.assert_array_equal(archive.get_tensor("encoder.weight"),
                                      arrays["encoder.weight"])


def test_replace_model_checks_sizes(small_archive):
    path, _, _ = small_archive
    with onnxzip.open(path) as archive:
        model = archive.model
    model.graph.initializer[0].dims[0] = 63  # the entry holds 64 x 32 floats
    with pytest.raises(onnxzip.InvalidArgumentError, match="encoder"):
        onnxzip.replace_model(path, model)
    with pytest.raises(onnxzip.NotFoundError):
        onnxzip.replace_model(path.with_name("missing.onnxz"), onnx.ModelProto())


def test_edit_model_changes_the_archives_own_model_in_place(small_archive):
    path, arrays, _ = small_archive
    before = _payload_bytes(path)

    def rename(model):
        assert model.graph.initializer[0].data_location == onnx.TensorProto.EXTERNAL
        model.producer_name = "edit_model"
        onnx.helper.set_model_props(model, {"license": "MIT"})

    result = onnxzip.edit_model(path, rename)
    assert not result.compacted and result.file_size == path.stat().st_size
    assert _payload_bytes(path) == before
    loaded = onnxzip.load(path)
    assert loaded.producer_name == "edit_model"
    assert [(p.key, p.value) for p in loaded.metadata_props] == [("license", "MIT")]
    # A function may also return a new model instead of changing the one it is given.
    result = onnxzip.edit_model(path, lambda m: onnx.ModelProto(
        ir_version=m.ir_version, opset_import=m.opset_import, graph=m.graph, doc_string="new"))
    loaded = onnxzip.load(path)
    assert loaded.doc_string == "new" and loaded.producer_name == ""
    assert onnxzip.verify(path).ok


def test_edit_model_leaves_the_archive_alone_when_the_change_fails(small_archive):
    path, _, _ = small_archive
    original = path.read_bytes()

    class Refused(Exception):
        pass

    def fail(model):
        model.producer_name = "never written"
        raise Refused("no")

    with pytest.raises(Refused):
        onnxzip.edit_model(path, fail)
    assert path.read_bytes() == original

    def drop_a_weight(model):
        kept = [t for t in model.graph.initializer if t.name != "encoder.bias"]
        del model.graph.initializer[:]
        model.graph.initializer.extend(kept)

    with pytest.raises(onnxzip.InvalidArgumentError, match="encoder_bias"):
        onnxzip.edit_model(path, drop_a_weight)
    assert path.read_bytes() == original


def test_edit_model_properties_only_keeps_the_graph_as_it_is(small_archive, tmp_path):
    path, _, _ = small_archive
    before = _payload_bytes(path)
    twin = tmp_path / "twin.onnxz"
    twin.write_bytes(path.read_bytes())
    seen = {}

    def describe(model):
        seen["graph"] = model.HasField("graph")
        seen["functions"] = len(model.functions)
        model.producer_name = "properties"
        onnx.helper.set_model_props(model, {"license": "MIT"})

    result = onnxzip.edit_model_properties(path, describe)
    assert seen == {"graph": False, "functions": 0}
    assert not result.compacted and result.file_size == path.stat().st_size
    assert _payload_bytes(path) == before
    loaded = onnxzip.load(path)
    assert loaded.producer_name == "properties" and len(loaded.graph.initializer) == 3
    assert onnxzip.verify(path).ok
    # The same archive as the whole model's edit gives, byte for byte.
    onnxzip.edit_model(twin, describe)
    assert twin.read_bytes() == path.read_bytes()

    def add_a_node(model):
        model.graph.node.add(op_type="Relu")

    original = path.read_bytes()
    with pytest.raises(onnxzip.InvalidArgumentError, match="gave it a graph"):
        onnxzip.edit_model_properties(path, add_a_node)
    assert path.read_bytes() == original


def test_edit_model_refuses_a_change_returning_no_model(small_archive):
    # A lambda returns what its last call returns: graph.node.add(...) gives a NodeProto, which
    # once became the model (ir_version 0, no opset_import, domain 'Relu').
    path, _, _ = small_archive
    before = path.read_bytes()
    with pytest.raises(TypeError, match="edit_model: change returned a NodeProto, not an onnx.ModelProto"):
        onnxzip.edit_model(path, lambda m: m.graph.node.add(op_type="Relu", name="added"))
    with pytest.raises(TypeError, match="returned a str"):
        onnxzip.edit_model_properties(path, lambda m: "model")
    assert path.read_bytes() == before


def test_the_model_load_gives_goes_back_with_its_payloads_in_place(small_archive):
    # It failed (every entry unreferenced) and the error advised compact, which moved every
    # weight inline and left no payload entry.
    path, arrays, _ = small_archive
    before = _payload_bytes(path)
    model = onnxzip.load(path)
    model.producer_name = "back"
    serialized = model.SerializeToString()
    result = onnxzip.replace_model(path, model)
    assert not result.compacted and result.dropped_entries == ()
    assert model.SerializeToString() == serialized  # the caller's model is untouched
    assert _payload_bytes(path) == before
    assert onnxzip.load(path).producer_name == "back"
    assert onnxzip.verify(path).ok


def test_replace_model_takes_a_path_as_the_cli_does(small_archive, tmp_path):
    path, _, _ = small_archive
    with onnxzip.open(path) as archive:
        model = archive.model
    model.doc_string = "from a file"
    model_file = tmp_path / "model.onnx"
    model_file.write_bytes(model.SerializeToString())
    onnxzip.replace_model(path, str(model_file))
    assert onnxzip.load(path).doc_string == "from a file"
    with pytest.raises(TypeError, match="model must be an onnx.ModelProto, its bytes or a path"):
        onnxzip.replace_model(path, 42)


def test_an_edit_waits_for_readers_and_refuses_another_edit_after_wait(small_archive):
    """Readers hold the archive's lock shared for a moment: an edit waits for them (`wait=`);
    another edit holding it is reported once the wait is over, the archive left alone."""
    import fcntl
    import threading

    path, _, _ = small_archive
    with open(path, "rb") as reader:
        fcntl.flock(reader, fcntl.LOCK_SH)
        release = threading.Timer(0.3, reader.close)
        release.start()
        onnxzip.edit_model_properties(path, lambda m: setattr(m, "producer_name", "waited"))
        release.join()
    assert onnxzip.load(path, load_external_data=False).producer_name == "waited"

    before = path.read_bytes()
    with open(path, "rb") as editor:
        fcntl.flock(editor, fcntl.LOCK_EX)
        with pytest.raises(onnxzip.IOFailure, match="locked by another process"):
            onnxzip.edit_model_properties(path, lambda m: None, wait=0.1)
        with pytest.raises(onnxzip.IOFailure, match="locked by another process"):
            onnxzip.sign(path, digests_only=True, wait=0)
    assert path.read_bytes() == before
    with pytest.raises(onnxzip.InvalidArgumentError, match="wait=-1"):
        onnxzip.edit_model_properties(path, lambda m: None, wait=-1)

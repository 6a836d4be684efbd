"""Every tensor reachable by the vocabulary of spec/names.md: TensorInfo, site, entry, name."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as nh
import pytest

import onnxzip


def _branch(name, seed):
    """An If branch holding an initializer "w" and a Constant "c", both large enough for entries
    (one Silero VAD build uses 15 names twice so, once per sample-rate branch)."""
    rng = np.random.default_rng(seed)
    weight = rng.standard_normal(512).astype(np.float32)
    constant = rng.standard_normal(300).astype(np.float32)
    graph = oh.make_graph(
        [oh.make_node("Constant", [], ["c_out"], value=nh.from_array(constant, "c")),
         oh.make_node("Add", ["w", "c_out"], ["y"])],
        name, [], [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [512])],
        initializer=[nh.from_array(weight, "w")])
    return graph, weight, constant


@pytest.fixture
def twice(tmp_path):
    then_graph, then_w, then_c = _branch("then", 1)
    else_graph, else_w, else_c = _branch("else", 2)
    node = oh.make_node("If", ["cond"], ["out"], then_branch=then_graph, else_branch=else_graph)
    graph = oh.make_graph([node], "g", [oh.make_tensor_value_info("cond", onnx.TensorProto.BOOL, [])],
                          [oh.make_tensor_value_info("out", onnx.TensorProto.FLOAT, [512])])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
    path = tmp_path / "twice.onnxz"
    onnxzip.save(model, path)
    return path, [else_c, else_w, then_c, then_w]  # onnx.helper sorts attributes by name.


def test_a_name_used_twice_reaches_every_tensor(twice):
    # Was: get_tensor took a name only and gave the first of each; load_file dropped the others.
    path, arrays = twice
    with onnxzip.open(path) as archive:
        infos = archive.tensors
        assert [info.name for info in infos] == ["c", "w", "c", "w"]
        assert len({info.site for info in infos}) == 4
        assert len({info.entry for info in infos}) == 4 and all(info.entry for info in infos)
        for info, array in zip(infos, arrays):
            np.testing.assert_array_equal(archive.get_tensor(info), array)
            np.testing.assert_array_equal(archive.get_tensor(info.site), array)
            if info.entry not in ("c", "w"):  # Else the name wins, and it is ambiguous.
                np.testing.assert_array_equal(archive.get_tensor(info.entry), array)
            assert archive.tensor_info(info.site) == info and info in archive
        together = archive.get_tensors(infos)
        assert list(together) == infos
        for info, array in zip(infos, arrays):
            np.testing.assert_array_equal(together[info], array)
        for name in ("w", "c"):
            assert name in archive
            with pytest.raises(onnxzip.InvalidArgumentError) as raised:
                archive.get_tensor(name)
            sites = [info.site for info in infos if info.name == name]
            assert f"2 tensors are named {name!r}" in str(raised.value)
            assert all(site in str(raised.value) for site in sites)
        with pytest.raises(onnxzip.InvalidArgumentError, match='key="site"'):
            archive.keys()
        assert archive.keys(key="site") == [info.site for info in infos]
        assert len(archive) == 4


def test_load_file_refuses_an_ambiguous_name_and_keys_by_site(twice):
    path, arrays = twice
    with pytest.raises(onnxzip.InvalidArgumentError) as raised:
        onnxzip.load_file(path)
    assert "tensors are named" in str(raised.value) and 'key="site"' in str(raised.value)
    by_site = onnxzip.load_file(path, key="site")
    assert len(by_site) == 4
    for array, loaded in zip(arrays, by_site.values()):
        np.testing.assert_array_equal(loaded, array)
    with pytest.raises(onnxzip.InvalidArgumentError, match="key must be"):
        onnxzip.load_file(path, key="entry")


def test_tensor_info_has_the_names_table_fields(small_archive):
    path, arrays, _ = small_archive
    fields = [field.name for field in dataclasses.fields(onnxzip.TensorInfo)]
    assert fields == ["name", "site", "entry", "data_type", "dims", "size", "offset", "alignment",
                      "inline", "zero_copy"]
    with onnxzip.open(path) as archive:
        weight = archive.tensor_info("encoder.weight")
        assert (weight.entry, weight.size, weight.inline, weight.zero_copy) == (
            "encoder_weight", arrays["encoder.weight"].nbytes, False, True)
        assert weight.offset is not None and weight.offset % 64 == 0
        assert weight.alignment >= 64 and weight.offset % weight.alignment == 0
        tiny = archive.tensor_info("tiny")
        assert (tiny.entry, tiny.offset, tiny.alignment, tiny.inline, tiny.zero_copy) == (
            "", None, 0, True, False)
        with pytest.raises(KeyError, match="nope"):
            archive.get_tensor("nope")
        with pytest.raises(TypeError):
            archive.get_tensor(3)


def test_convert_externalizes_attribute_tensors_when_asked(twice, tmp_path):
    # Weights that are Constant values inside If branches stayed inline with no way to ask
    # otherwise: convert offers the legacy writer's externalize_attributes.
    archive, (else_c, _, then_c, _) = twice

    def external(path):
        loaded = onnx.load(str(path), load_external_data=False)
        branches = [a.g for a in loaded.graph.node[0].attribute]
        return sorted((t.name, t.data_location == onnx.TensorProto.EXTERNAL)
                      for g in branches
                      for t in [*g.initializer, *(n.attribute[0].t for n in g.node
                                                  if n.op_type == "Constant")])

    onnxzip.convert(archive, tmp_path / "plain.onnx", external_data=True)
    assert external(tmp_path / "plain.onnx") == [("c", False), ("c", False), ("w", True),
                                                 ("w", True)]
    onnxzip.convert(archive, tmp_path / "all.onnx", external_data=True,
                    externalize_attributes=True)
    assert external(tmp_path / "all.onnx") == [("c", True), ("c", True), ("w", True),
                                               ("w", True)]
    loaded = onnx.load(str(tmp_path / "all.onnx"))  # External data read back by onnx itself.
    constants = [nh.to_array(a.g.node[0].attribute[0].t) for a in loaded.graph.node[0].attribute]
    np.testing.assert_array_equal(constants[0], else_c)
    np.testing.assert_array_equal(constants[1], then_c)
    with pytest.raises(TypeError, match="externalize_attributes must be a bool"):
        onnxzip.convert(archive, tmp_path / "x.onnx", externalize_attributes="yes")


def test_results_are_records_not_tuples(small_archive, tmp_path):
    path, _, model = small_archive
    results = [onnxzip.sign(path, digests_only=True),
               onnxzip.edit_model(path, lambda m: setattr(m, "doc_string", "x")),
               onnxzip.repack(path, tmp_path / "r.onnxz"),
               onnxzip.verify(path)]
    for result in results:
        assert dataclasses.is_dataclass(result) and not isinstance(result, tuple), result
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(result, dataclasses.fields(result)[0].name, None)
    assert isinstance(results[1].dropped_entries, tuple)

"""The walk over an onnx.ModelProto (onnxzip._model_walk) follows the C++ library's table of tensor
sites: the same tensors as the C++ for_each_tensor, in the same order, at the same site paths."""

from __future__ import annotations

import glob

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as nh
import pytest

import onnxzip
from onnxzip._model_walk import model_tensors

TESTDATA = "/usr/share/libonnx-testdata/data"


def _tensor(name: str, size: int = 4) -> onnx.TensorProto:
    return nh.from_array(np.arange(size, dtype=np.float32), name)


def _sparse(prefix: str) -> onnx.SparseTensorProto:
    return oh.make_sparse_tensor(_tensor(prefix + ".values", 2),
                                 nh.from_array(np.array([0, 3], dtype=np.int64),
                                               prefix + ".indices"), [8])


def tensors_everywhere() -> onnx.ModelProto:
    """A tensor in every place the table names, subgraphs two levels down included."""
    inner = oh.make_graph([oh.make_node("Constant", [], ["k"], value=_tensor("inner.t"))],
                          "inner", [], [], initializer=[_tensor("inner.init")])
    attribute_node = oh.make_node("Custom", [], ["y"], domain="custom")
    for attribute in [oh.make_attribute("t", _tensor("attr.t")),
                      oh.make_attribute("g", inner),
                      oh.make_attribute("tensors", [_tensor("attr.list0"), _tensor("attr.list1")]),
                      oh.make_attribute("graphs", [inner, inner]),
                      oh.make_attribute("sparse", _sparse("attr.sparse")),
                      oh.make_attribute("sparses", [_sparse("attr.sparses0"),
                                                    _sparse("attr.sparses1")])]:
        attribute_node.attribute.append(attribute)
    graph = oh.make_graph([attribute_node], "g", [], [],
                          initializer=[_tensor("init0"), _tensor("init1")],
                          sparse_initializer=[_sparse("sparse_init")])
    function = oh.make_function("custom", "f", ["x"], ["z"],
                                [oh.make_node("Constant", [], ["z"], value=_tensor("fn.t"))],
                                [oh.make_opsetid("", 17)])
    if "attribute_proto" in onnx.FunctionProto.DESCRIPTOR.fields_by_name:  # onnx >= 1.13
        function.attribute_proto.append(oh.make_attribute("default", _tensor("fn.default")))
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17),
                                                oh.make_opsetid("custom", 1)],
                          functions=[function])
    training = model.training_info.add()
    training.initialization.CopyFrom(oh.make_graph([], "init", [], [],
                                                   initializer=[_tensor("ti.init")]))
    training.algorithm.CopyFrom(oh.make_graph([], "algo", [], [], initializer=[_tensor("ti.algo")]))
    return model


def _cpp_sites(model: onnx.ModelProto):
    return onnxzip._onnxzip.tensor_site_paths(model.SerializeToString())


def test_the_walk_gives_the_sites_cpp_gives():
    model = tensors_everywhere()
    walked = list(model_tensors(model))
    assert [found.site for found in walked] == _cpp_sites(model)
    sites = {found.tensor.name: found.site for found in walked}
    assert sites["init1"] == "graph/initializer[1]"
    assert sites["sparse_init.indices"] == "graph/sparse_initializer[0]/indices"
    # An attribute is spelled by its name (spec/names.md), a function's default keeps its index.
    assert sites["attr.t"] == "graph/node[0]/t"
    assert sites["attr.sparses1.values"] == "graph/node[0]/sparses[1]/values"
    assert sites["fn.t"] == "functions[0]/node[0]/value"
    if "fn.default" in sites:
        assert sites["fn.default"] == "functions[0]/attribute_proto[0]/default"
    assert sites["ti.algo"] == "training_info[0]/algorithm/initializer[0]"
    assert "graph/node[0]/graphs[1]/node[0]/value" in sites.values()
    # The parts of sparse tensors, and only they, are flagged.
    assert {found.tensor.name for found in walked if found.is_sparse_part} == {
        name for name in sites if name.endswith((".values", ".indices"))}
    # 15 under the node's attributes (3 subgraphs of 2), 4 of the graph, 1 or 2 of the function,
    # 2 of the training graphs.
    assert len(walked) == 22 + ("fn.default" in sites)
    # The tensors are the model's own objects: a caller may change them in place.
    walked[0].tensor.doc_string = "changed"
    assert model.graph.node[0].attribute[0].t.doc_string == "changed"


def test_the_walk_gives_the_sites_cpp_gives_on_every_testdata_model():
    models = sorted(glob.glob(f"{TESTDATA}/**/model.onnx", recursive=True))
    assert len(models) > 1000, "libonnx-testdata missing or incomplete"
    with_tensors = 0
    for path in models:
        model = onnx.load(path, load_external_data=False)
        sites = [found.site for found in model_tensors(model)]
        assert sites == _cpp_sites(model), path
        with_tensors += bool(sites)
    assert with_tensors > 100


def test_the_table_agrees_with_onnx_proto():
    # Each record names a field of the installed onnx's message of that name: the same number,
    # leading to a message of the child's name, repeated or not.
    records = onnxzip._onnxzip.tensor_sites()
    assert {record.parent for record in records} == {
        "ModelProto", "GraphProto", "NodeProto", "AttributeProto", "SparseTensorProto",
        "FunctionProto", "TrainingInfoProto"}
    for record in records:
        descriptor = getattr(onnx, record.parent).DESCRIPTOR
        field = descriptor.fields_by_name.get(record.name)
        if field is None:  # A field newer than the installed onnx (attribute_proto: onnx 1.13).
            assert record.name == "attribute_proto", record
            continue
        assert field.number == record.number, record
        assert field.message_type.name == record.child, record
        assert (field.label == field.LABEL_REPEATED) == record.repeated, record
    assert repr(records[0]) == "TensorSiteField(ModelProto.graph = 7 -> GraphProto)"


@pytest.mark.parametrize("root", ["graph", "function"])
def test_an_empty_model_has_no_sites(root):
    model = onnx.ModelProto()
    if root == "graph":
        model.graph.name = "empty"
    else:
        model.functions.add().name = "f"
    assert list(model_tensors(model)) == [] == _cpp_sites(model)

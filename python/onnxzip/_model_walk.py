"""Every TensorProto of an onnx.ModelProto, wherever it sits (the C++ for_each_tensor's order)."""

from __future__ import annotations

from typing import Iterator, Tuple

import onnx


def _attribute_tensors(attribute: onnx.AttributeProto) -> Iterator[Tuple[onnx.TensorProto, bool]]:
    # Fields are read whatever `type` says: a model that mislabels an attribute still carries
    # the tensors, and the C++ reader checks them all.
    if attribute.HasField("t"):
        yield attribute.t, False
    for tensor in attribute.tensors:
        yield tensor, False
    if attribute.HasField("sparse_tensor"):
        yield from _sparse(attribute.sparse_tensor)
    for sparse in attribute.sparse_tensors:
        yield from _sparse(sparse)
    if attribute.HasField("g"):
        yield from graph_tensors(attribute.g)
    for graph in attribute.graphs:
        yield from graph_tensors(graph)


def _sparse(sparse: onnx.SparseTensorProto) -> Iterator[Tuple[onnx.TensorProto, bool]]:
    if sparse.HasField("values"):
        yield sparse.values, True
    if sparse.HasField("indices"):
        yield sparse.indices, True


def _nodes(nodes) -> Iterator[Tuple[onnx.TensorProto, bool]]:
    for node in nodes:
        for attribute in node.attribute:
            yield from _attribute_tensors(attribute)


def graph_tensors(graph: onnx.GraphProto) -> Iterator[Tuple[onnx.TensorProto, bool]]:
    """(tensor, is_part_of_a_sparse_tensor) for every tensor of `graph` and its subgraphs."""
    for tensor in graph.initializer:
        yield tensor, False
    for sparse in graph.sparse_initializer:
        yield from _sparse(sparse)
    yield from _nodes(graph.node)


def model_tensors(model: onnx.ModelProto) -> Iterator[Tuple[onnx.TensorProto, bool]]:
    """(tensor, is_part_of_a_sparse_tensor) for every tensor of `model`: the graph, its subgraphs
    at any depth, the functions (node attributes and attribute defaults) and the training info."""
    if model.HasField("graph"):
        yield from graph_tensors(model.graph)
    for function in model.functions:
        yield from _nodes(function.node)
        for attribute in getattr(function, "attribute_proto", ()):  # onnx >= 1.13
            yield from _attribute_tensors(attribute)
    for info in model.training_info:
        if info.HasField("initialization"):
            yield from graph_tensors(info.initialization)
        if info.HasField("algorithm"):
            yield from graph_tensors(info.algorithm)

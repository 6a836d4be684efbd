"""Every TensorProto of an onnx.ModelProto, wherever it sits, and its site.

The walk follows the C++ library's table of tensor sites (``_onnxzip.tensor_sites()``, from
src/onnx/tensor_sites.h) by its field names, so it visits what the C++ ``for_each_tensor`` visits,
in the same order, and names each tensor by the same site path (spec/names.md):
"graph/initializer[3]", "graph/node[0]/value", "graph/node[2]/else_branch/node[0]/value",
"functions[0]/attribute_proto[2]/alpha[0]", "graph/sparse_initializer[0]/values" -- the fields
taken from the model, joined by "/", with the index of each repeated one, and an attribute spelled
by its name (a node's attribute without one as "attribute[i]"). A field the installed onnx does not know (FunctionProto.attribute_proto
before onnx 1.13) is not walked: protobuf keeps it among the message's unknown fields, where only
the C++ library sees its tensors.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, NamedTuple, Tuple

import onnx

from . import _onnxzip

_TENSOR = "TensorProto"
_ATTRIBUTE = "AttributeProto"
_SPARSE_TENSOR = "SparseTensorProto"


class TensorAtSite(NamedTuple):
    """A tensor of a model, where it sits, and whether it is a sparse tensor's values or indices."""
    tensor: onnx.TensorProto
    site: str
    is_sparse_part: bool


# Per message name: (field name, child message name, repeated) for each field on the way to
# tensors, in the table's order, without the fields the installed onnx does not know.
_Rows = Dict[str, List[Tuple[str, str, bool]]]
_ROWS: _Rows = {}


def _rows() -> _Rows:
    if not _ROWS:
        for field in _onnxzip.tensor_sites():
            if field.name in getattr(onnx, field.parent).DESCRIPTOR.fields_by_name:
                _ROWS.setdefault(field.parent, []).append((field.name, field.child, field.repeated))
    return _ROWS


def _collect(message: Any, kind: str, prefix: str, rows: _Rows, out: List[TensorAtSite],
             label: Any = None) -> None:
    # Fields are read whatever an attribute's `type` says: a model that mislabels an attribute
    # still carries the tensors, and the C++ reader checks them all. A list, not a generator per
    # message: a graph's nodes hold few tensors, and generators cost more than the walk itself.
    # `label`: for an attribute, its name, which spells whichever of its fields is taken.
    in_sparse = kind == _SPARSE_TENSOR
    for field_name, child, repeated in rows.get(kind, ()):
        name = field_name if label is None else label
        if child == _ATTRIBUTE:
            for index, item in enumerate(getattr(message, field_name)):
                if kind == "NodeProto":  # A node's attribute is not spelled, only its name.
                    _collect(item, child, prefix, rows, out, item.name or f"attribute[{index}]")
                else:  # A function's attribute default keeps its index.
                    _collect(item, child, f"{prefix}{field_name}[{index}]/", rows, out, item.name)
            continue
        if repeated:
            items = getattr(message, field_name)
            if not items:
                continue
            if child == _TENSOR:
                for index, item in enumerate(items):
                    out.append(TensorAtSite(item, f"{prefix}{name}[{index}]", in_sparse))
            else:
                for index, item in enumerate(items):
                    _collect(item, child, f"{prefix}{name}[{index}]/", rows, out)
        elif message.HasField(field_name):
            if child == _TENSOR:
                out.append(TensorAtSite(getattr(message, field_name), prefix + name, in_sparse))
            else:
                _collect(getattr(message, field_name), child, prefix + name + "/", rows, out)


def model_tensors(model: onnx.ModelProto) -> Iterator[TensorAtSite]:
    """(tensor, site, is_sparse_part) for every tensor of `model`: the graph, its subgraphs at any
    depth, the functions (node attributes and attribute defaults) and the training info."""
    out: List[TensorAtSite] = []
    _collect(model, "ModelProto", "", _rows(), out)
    return iter(out)


def graph_tensors(graph: onnx.GraphProto) -> Iterator[TensorAtSite]:
    """The same for a graph and its subgraphs; sites start below the graph ("initializer[0]")."""
    out: List[TensorAtSite] = []
    _collect(graph, "GraphProto", "", _rows(), out)
    return iter(out)

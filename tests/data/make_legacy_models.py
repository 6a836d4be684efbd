#!/usr/bin/python3
"""Legacy ONNX models in every form, built and judged by the reference onnx package.

tests/legacy_test.cpp runs this with /usr/bin/python3 (python3-onnx) in a scratch folder:

  make_legacy_models.py generate OUT
      Writes OUT/<case>/model.onnx (with its data files) for every case below, and
      OUT/<case>/expected.tsv: one line per tensor, "<place>\t<sha256>", as onnx.load (external
      data loaded) and numpy_helper.to_array see it.
  make_legacy_models.py dump MODEL...
      For each model: onnx.checker.check_model on the path (which checks that external files
      exist) and on the loaded model, then the tensors as above. Prints "model\t<path>", then
      "checker\tok" or "checker\t<error>", then the tensor lines.

<place> spells where a tensor sits exactly as onnxzip's tensor visitor does (tensor.h):
"graph/initializer[0]", "graph/node[3]/body/node[0]/else_branch/node[0]/value",
"functions[0]/node[0]/value", "graph/sparse_initializer[0]/values"...
<sha256> is of the tensor's elements as raw little-endian bytes (BOOL one byte each), which is
what raw_data holds, whichever field the file used.

Cases (the same model each time, stored differently):
  inline_raw          every payload in raw_data
  inline_typed        payloads in typed fields: float_data, int32_data (FLOAT16, INT8, UINT8,
                      BOOL), int64_data, double_data, uint64_data (UINT32, UINT64)
  external_one_file   save_as_external_data, all tensors (attributes too) in one file
  external_per_tensor save_as_external_data, one file per tensor
  external_bare       one file per tensor, 'offset' and 'length' removed
  external_partial    one file, 'offset' removed where it is 0 and 'length' removed for the last
                      tensor of the file
The model has initializers of many types, a Constant (attribute tensor), a Loop whose body has
an initializer and an If with initializers and a Constant in its branches (depth 2), a sparse
initializer and a model-local function whose body holds a Constant.
"""
import hashlib
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def rng_array(seed, shape, dtype):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape).astype(dtype)
    return rng.standard_normal(size=shape).astype(dtype)


def tensor(name, array, typed):
    if not typed:
        return numpy_helper.from_array(array, name)
    dtype = helper.np_dtype_to_tensor_dtype(array.dtype) if hasattr(
        helper, "np_dtype_to_tensor_dtype") else onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[array.dtype]
    return helper.make_tensor(name, dtype, array.shape, array.flatten().tolist(), raw=False)


def build_model(typed):
    f32 = np.float32
    inits = [
        tensor("w_float", rng_array(1, (2, 3), f32), typed),
        tensor("w_big", rng_array(2, (64, 64), f32), typed),
        tensor("w_int64", rng_array(3, (5,), np.int64), typed),
        tensor("w_f16", rng_array(4, (7,), np.float16), typed),
        tensor("w_u8", rng_array(5, (9,), np.uint8), typed),
        tensor("w_i8", rng_array(6, (6,), np.int8), typed),
        tensor("w_bool", rng_array(7, (4,), np.bool_), typed),
        tensor("w_double", rng_array(8, (3,), np.float64), typed),
        tensor("w_u64", rng_array(9, (3,), np.uint64), typed),
        tensor("w_u32", rng_array(10, (3,), np.uint32), typed),
        tensor("w_i32_big", rng_array(11, (300,), np.int32), typed),
        tensor("trip", np.array(2, dtype=np.int64), typed),
        tensor("cond", np.array(True), typed),
    ]
    then_graph = helper.make_graph(
        [helper.make_node("Add", ["v_in", "then_w"], ["then_out"])],
        "then_branch", [], [helper.make_tensor_value_info("then_out", TensorProto.FLOAT, [2, 3])],
        initializer=[tensor("then_w", rng_array(12, (2, 3), f32), typed)])
    else_graph = helper.make_graph(
        [helper.make_node("Constant", [], ["else_c"],
                          value=tensor("else_const", rng_array(13, (2, 3), f32), typed)),
         helper.make_node("Sub", ["v_in", "else_c"], ["else_out"])],
        "else_branch", [], [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, [2, 3])])
    body = helper.make_graph(
        [helper.make_node("If", ["cond_in"], ["if_out"], then_branch=then_graph,
                          else_branch=else_graph),
         helper.make_node("Add", ["if_out", "loop_w"], ["v_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "loop_body",
        [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [2, 3])],
        initializer=[tensor("loop_w", rng_array(14, (2, 3), f32), typed)])
    function = helper.make_function(
        "custom", "ScaleBy", ["x"], ["y"],
        [helper.make_node("Constant", [], ["k"],
                          value=tensor("fn_const", rng_array(15, (2, 3), f32), typed)),
         helper.make_node("Mul", ["x", "k"], ["y"])],
        [helper.make_opsetid("", 13)])
    sparse = helper.make_sparse_tensor(
        tensor("sp_values", rng_array(16, (3,), f32), typed),
        tensor("sp_indices", np.array([1, 4, 7], dtype=np.int64), typed), [10])
    nodes = [
        helper.make_node("Add", ["X", "w_float"], ["a"]),
        helper.make_node("Constant", [], ["c"],
                         value=tensor("const_val", rng_array(17, (2, 3), f32), typed)),
        helper.make_node("Add", ["a", "c"], ["b"]),
        helper.make_node("Loop", ["trip", "cond", "b"], ["loop_out"], body=body),
        helper.make_node("ScaleBy", ["loop_out"], ["Y"], domain="custom"),
    ]
    graph = helper.make_graph(
        nodes, "rich", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3])], initializer=inits,
        sparse_initializer=[sparse])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("custom", 1)],
        functions=[function], producer_name="make_legacy_models")
    model.ir_version = 8
    return model


# --- The tensor walk, in onnxzip's order and spelling ---

def walk_graph(graph, path, out):
    for n, node in enumerate(graph.node):
        for a, attribute in enumerate(node.attribute):
            walk_attribute(attribute, f"{path}/node[{n}]/{attribute.name or f'attribute[{a}]'}", out)
    for i, t in enumerate(graph.initializer):
        out.append((f"{path}/initializer[{i}]", t))
    for i, s in enumerate(graph.sparse_initializer):
        walk_sparse(s, f"{path}/sparse_initializer[{i}]", out)


def walk_sparse(sparse, path, out):
    if sparse.HasField("values"):
        out.append((f"{path}/values", sparse.values))
    if sparse.HasField("indices"):
        out.append((f"{path}/indices", sparse.indices))


# An attribute is spelled by its name (spec/names.md), whichever of its fields holds the tensor.
def walk_attribute(attribute, path, out):
    if attribute.HasField("t"):
        out.append((path, attribute.t))
    if attribute.HasField("g"):
        walk_graph(attribute.g, path, out)
    for i, t in enumerate(attribute.tensors):
        out.append((f"{path}[{i}]", t))
    for i, g in enumerate(attribute.graphs):
        walk_graph(g, f"{path}[{i}]", out)
    if attribute.HasField("sparse_tensor"):
        walk_sparse(attribute.sparse_tensor, path, out)
    for i, s in enumerate(attribute.sparse_tensors):
        walk_sparse(s, f"{path}[{i}]", out)


def walk_model(model):
    out = []
    if model.HasField("graph"):
        walk_graph(model.graph, "graph", out)
    for i, info in enumerate(model.training_info):
        if info.HasField("initialization"):
            walk_graph(info.initialization, f"training_info[{i}]/initialization", out)
        if info.HasField("algorithm"):
            walk_graph(info.algorithm, f"training_info[{i}]/algorithm", out)
    for i, function in enumerate(model.functions):
        for n, node in enumerate(function.node):
            for a, attribute in enumerate(node.attribute):
                walk_attribute(attribute, f"functions[{i}]/node[{n}]/{attribute.name or f'attribute[{a}]'}", out)
        for a, attribute in enumerate(getattr(function, "attribute_proto", [])):
            walk_attribute(attribute, f"functions[{i}]/attribute_proto[{a}]/{attribute.name}", out)
    return out


def tensor_lines(model):
    lines = []
    for place, t in walk_model(model):
        array = np.ascontiguousarray(numpy_helper.to_array(t))
        data = array.astype(array.dtype.newbyteorder("<")).tobytes()
        lines.append(f"{place}\t{hashlib.sha256(data).hexdigest()}")
    return lines


# --- Cases ---

def external_entries(t):
    return {e.key: e.value for e in t.external_data}


def set_entries(t, entries):
    del t.external_data[:]
    for key in ("location", "offset", "length"):
        if key in entries:
            e = t.external_data.add()
            e.key = key
            e.value = entries[key]


def external_tensors(model):
    return [t for _, t in walk_model(model)
            if t.HasField("data_location") and t.data_location == TensorProto.EXTERNAL]


def rewrite(path, edit):
    model = onnx.load(path, load_external_data=False)
    edit(model)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def strip_offset_length(model):
    for t in external_tensors(model):
        entries = external_entries(t)
        set_entries(t, {"location": entries["location"]})


def strip_partial(model):
    tensors = external_tensors(model)
    last = max(tensors, key=lambda t: int(external_entries(t)["offset"]))
    for t in tensors:
        entries = external_entries(t)
        if entries["offset"] == "0":
            del entries["offset"]
        if t is last:
            del entries["length"]
        set_entries(t, entries)


def generate(out):
    cases = {
        "inline_raw": (False, None, None),
        "inline_typed": (True, None, None),
        "external_one_file": (False, True, None),
        "external_per_tensor": (False, False, None),
        "external_bare": (False, False, strip_offset_length),
        "external_partial": (False, True, strip_partial),
    }
    for name, (typed, one_file, edit) in cases.items():
        folder = os.path.join(out, name)
        os.makedirs(folder, exist_ok=True)
        model = build_model(typed)
        onnx.checker.check_model(model)
        expected = tensor_lines(model)
        path = os.path.join(folder, "model.onnx")
        if one_file is None:
            onnx.save_model(model, path)
        else:
            onnx.save_model(model, path, save_as_external_data=True,
                            all_tensors_to_one_file=one_file, location="weights.bin",
                            size_threshold=0, convert_attribute=True)
        if edit is not None:
            rewrite(path, edit)
        loaded = onnx.load(path)  # External data loaded: the reference's reading.
        assert tensor_lines(loaded) == expected, name
        with open(os.path.join(folder, "expected.tsv"), "w") as f:
            f.write("\n".join(expected) + "\n")


def dump(paths):
    for path in paths:
        print(f"model\t{path}")
        try:
            onnx.checker.check_model(path)
            model = onnx.load(path)
            onnx.checker.check_model(model, full_check=True)
            print("checker\tok")
        except Exception as e:  # Reported to the test, which shows it.
            print("checker\t" + str(e).replace("\n", " ").replace("\t", " "))
            model = onnx.load(path)
        for line in tensor_lines(model):
            print(line)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "generate":
        generate(sys.argv[2])
    elif len(sys.argv) >= 3 and sys.argv[1] == "dump":
        dump(sys.argv[2:])
    else:
        sys.exit(__doc__)

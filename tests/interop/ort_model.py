#!/usr/bin/python3
"""A small convolutional model for the ONNX Runtime interoperability test, built and judged by the
reference onnx package (python3-onnx). tests/archive_ort_test.cpp runs it with /usr/bin/python3:

  ort_model.py make OUT_DIR
      Writes OUT_DIR/model.onnx (every payload inline), and the inputs of two runs:
      OUT_DIR/inputs.json (the run_ort.js input spec) with the raw little-endian input files.
      The graph: Conv -> Relu -> Conv -> Flatten -> Reshape (its shape an initializer) -> Gemm
      (about 4.8 MB of random float weights),
      plus a Constant node whose value is a 1 KiB tensor attribute, a row of a 4 MiB embedding
      table (Gather: a weight ONNX Runtime uses as it is, without repacking it into memory of its
      own), then an If whose branches each hold an initializer of their own (a subgraph
      initializer) and a Constant. The two runs take the two branches and different rows.
  ort_model.py compare A B
      onnx.load of both models (external data resolved), onnx.checker.check_model of both; then
      every tensor of A (initializers, attribute tensors, at any subgraph depth) must equal the
      tensor of B at the same place, element by element and in shape and type. Prints
      "tensors <n>" and exits 0, or prints the first difference and exits 1.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def rng_floats(seed, shape, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(size=shape) * scale).astype(np.float32)


def make(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    h = w = 12
    hidden = 256
    flat = 32 * h * w
    inits = [
        numpy_helper.from_array(rng_floats(1, (16, 3, 3, 3), 0.3), "conv1.weight"),
        numpy_helper.from_array(rng_floats(2, (16,), 0.1), "conv1.bias"),
        numpy_helper.from_array(rng_floats(3, (32, 16, 3, 3), 0.1), "conv2.weight"),
        numpy_helper.from_array(rng_floats(4, (32,), 0.1), "conv2.bias"),
        numpy_helper.from_array(rng_floats(5, (flat, hidden), 0.02), "fc.weight"),
        numpy_helper.from_array(rng_floats(6, (hidden,), 0.1), "fc.bias"),
        numpy_helper.from_array(rng_floats(12, (4096, hidden)), "embed.weight"),
        # 16 bytes that ONNX Runtime's shape inference reads while it builds the graph.
        numpy_helper.from_array(np.array([1, flat], dtype=np.int64), "flat_shape"),
    ]
    then_graph = helper.make_graph(
        [helper.make_node("Constant", [], ["then_c"],
                          value=numpy_helper.from_array(rng_floats(7, (hidden,)), "then_const")),
         helper.make_node("Mul", ["shifted", "then_scale"], ["then_m"]),
         helper.make_node("Add", ["then_m", "then_c"], ["then_out"])],
        "then_branch", [], [helper.make_tensor_value_info("then_out", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(rng_floats(8, (1, hidden)), "then_scale")])
    else_graph = helper.make_graph(
        [helper.make_node("Sub", ["shifted", "else_shift"], ["else_out"])],
        "else_branch", [], [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(rng_floats(9, (1, hidden)), "else_shift")])
    nodes = [
        helper.make_node("Conv", ["X", "conv1.weight", "conv1.bias"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "conv2.weight", "conv2.bias"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Flatten", ["c2"], ["f0"]),
        helper.make_node("Reshape", ["f0", "flat_shape"], ["f"]),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["g"]),
        helper.make_node("Constant", [], ["shift"],
                         value=numpy_helper.from_array(rng_floats(10, (hidden,)), "shift_const")),
        helper.make_node("Add", ["g", "shift"], ["g_shift"]),
        helper.make_node("Gather", ["embed.weight", "I"], ["row"]),
        helper.make_node("Add", ["g_shift", "row"], ["shifted"]),
        helper.make_node("If", ["C"], ["Y"], then_branch=then_graph, else_branch=else_graph),
    ]
    graph = helper.make_graph(
        nodes, "ort_interop",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 3, h, w]),
         helper.make_tensor_value_info("C", TensorProto.BOOL, []),
         helper.make_tensor_value_info("I", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, hidden])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="onnxzip ort_model.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out_dir, "model.onnx"))

    x = rng_floats(11, (1, 3, h, w))
    x.tofile(os.path.join(out_dir, "x.bin"))
    runs = []
    for flag, row in ((True, 7), (False, 4000)):
        np.array(flag).tofile(os.path.join(out_dir, f"c_{flag}.bin"))
        np.array([row], dtype=np.int64).tofile(os.path.join(out_dir, f"i_{row}.bin"))
        runs.append({"X": {"type": "float32", "dims": [1, 3, h, w], "file": "x.bin"},
                     "C": {"type": "bool", "dims": [], "file": f"c_{flag}.bin"},
                     "I": {"type": "int64", "dims": [1], "file": f"i_{row}.bin"}})
    spec = {"runs": runs}
    with open(os.path.join(out_dir, "inputs.json"), "w") as f:
        json.dump(spec, f)


def tensors(graph, path):
    for i, t in enumerate(graph.initializer):
        yield f"{path}/initializer[{i}]", t
    for n, node in enumerate(graph.node):
        for a, attribute in enumerate(node.attribute):
            where = f"{path}/node[{n}]/attribute[{a}]"
            if attribute.HasField("t"):
                yield f"{where}/t", attribute.t
            for k, t in enumerate(attribute.tensors):
                yield f"{where}/tensors[{k}]", t
            if attribute.HasField("g"):
                yield from tensors(attribute.g, f"{where}/g")
            for k, g in enumerate(attribute.graphs):
                yield from tensors(g, f"{where}/graphs[{k}]")


def compare(a_path, b_path):
    models = []
    for path in (a_path, b_path):
        onnx.checker.check_model(path)
        model = onnx.load(path)
        onnx.checker.check_model(model)
        models.append(dict(tensors(model.graph, "graph")))
    a, b = models
    if a.keys() != b.keys():
        print("places differ:", sorted(a.keys() ^ b.keys()))
        return 1
    for place, ta in a.items():
        tb = b[place]
        xa, xb = numpy_helper.to_array(ta), numpy_helper.to_array(tb)
        if (ta.name != tb.name or ta.data_type != tb.data_type or xa.shape != xb.shape
                or xa.tobytes() != xb.tobytes()):
            print("differs:", place, ta.name, tb.name)
            return 1
    print("tensors", len(a))
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "make":
        make(argv[2])
        return 0
    if len(argv) == 4 and argv[1] == "compare":
        return compare(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

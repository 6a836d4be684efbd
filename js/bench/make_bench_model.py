#!/usr/bin/python3
"""The bench's large model: 8 MatMul layers of FLOAT[2048, 2048] (128 MiB of seeded weights),
written as a legacy model with one sidecar data file (big.onnx + big.onnx_data, the form
transformers.js and ORT-web users ship) and as an archive (big.onnxz, by the onnxzip tool).

    /usr/bin/python3 js/bench/make_bench_model.py --cli build/src/cli/onnxzip --out build/js-bench
"""
import argparse
import os
import subprocess

import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(7)
    inits, nodes, last = [], [], "x"
    for i in range(8):
        w = (rng.standard_normal((2048, 2048), dtype=np.float32) / 45).astype(np.float32)
        inits.append(nh.from_array(w, f"layer{i}.weight"))
        nodes.append(h.make_node("MatMul", [last, f"layer{i}.weight"], [f"h{i}"]))
        nodes.append(h.make_node("Tanh", [f"h{i}"], [f"a{i}"]))
        last = f"a{i}"
    nodes.append(h.make_node("Identity", [last], ["y"]))
    g = h.make_graph(nodes, "big", [h.make_tensor_value_info("x", T.FLOAT, [1, 2048])],
                     [h.make_tensor_value_info("y", T.FLOAT, [1, 2048])], initializer=inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save_model(m, os.path.join(args.out, "big.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="big.onnx_data", size_threshold=1024)
    subprocess.run([args.cli, "convert", "--quiet", os.path.join(args.out, "big.onnx"),
                    os.path.join(args.out, "big.onnxz")], check=True)


if __name__ == "__main__":
    main()

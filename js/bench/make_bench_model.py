#!/usr/bin/python3
"""The bench's large model: 8 MatMul layers of FLOAT[2048, 2048] (128 MiB of seeded weights),
written as a legacy model with one sidecar data file (big.onnx + big.onnx_data, the form
transformers.js and ORT-web users ship) and as an archive (big.onnxz, by the onnxzip tool).
With --name warm --dim 256, the same model 64 times smaller (2 MiB: larger than the 1 MiB tail
read, so its entries are fetched by range as the big one's are), for the Chromium warm-up.

    /usr/bin/python3 js/bench/make_bench_model.py --cli build/src/cli/onnxzip --out build/js-bench
    /usr/bin/python3 js/bench/make_bench_model.py --cli build/src/cli/onnxzip --out build/js-bench --name warm --dim 256
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
    parser.add_argument("--name", default="big")
    parser.add_argument("--dim", type=int, default=2048)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(7)
    inits, nodes, last = [], [], "x"
    for i in range(8):
        w = (rng.standard_normal((args.dim, args.dim), dtype=np.float32) / 45).astype(np.float32)
        inits.append(nh.from_array(w, f"layer{i}.weight"))
        nodes.append(h.make_node("MatMul", [last, f"layer{i}.weight"], [f"h{i}"]))
        nodes.append(h.make_node("Tanh", [f"h{i}"], [f"a{i}"]))
        last = f"a{i}"
    nodes.append(h.make_node("Identity", [last], ["y"]))
    g = h.make_graph(nodes, args.name, [h.make_tensor_value_info("x", T.FLOAT, [1, args.dim])],
                     [h.make_tensor_value_info("y", T.FLOAT, [1, args.dim])], initializer=inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save_model(m, os.path.join(args.out, f"{args.name}.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location=f"{args.name}.onnx_data", size_threshold=1024)
    subprocess.run([args.cli, "convert", "--quiet", os.path.join(args.out, f"{args.name}.onnx"),
                    os.path.join(args.out, f"{args.name}.onnxz")], check=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What an open onnxzip.Archive holds (issue 30: "an open Python archive keeps the parsed model").

Writes an archive whose model entry is about 4.5 MB (4,600 inline initializers of 800 bytes, 50
external ones, one Identity node each), then, in this process: opens it, reads archive.model once
(the caller lets it go) and lists its keys, and prints the anonymous memory (RssAnon) the open
archive holds, after malloc_trim (what is held, not what malloc keeps for later), against the
model entry's size. Run it against the installed package:

    build/venv/bin/python bench/python_open_memory.py [--small 4600]
"""

import argparse
import ctypes
import gc
import os
import tempfile
import zipfile

import numpy as np
import onnx.helper as oh
import onnx.numpy_helper as nh

import onnxzip

_LIBC = ctypes.CDLL("libc.so.6")


def anonymous_kib():
    _LIBC.malloc_trim(0)
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    raise RuntimeError("no RssAnon in /proc/self/status")


def write_archive(path, small):
    rng = np.random.default_rng(0)
    inits = [nh.from_array(rng.standard_normal(200).astype(np.float32), f"layer{i}.small")
             for i in range(small)]
    inits += [nh.from_array(rng.standard_normal(4096).astype(np.float32), f"layer{i}.big")
              for i in range(50)]
    nodes = [oh.make_node("Identity", [t.name], [t.name + "_out"], doc_string="x" * 64)
             for t in inits]
    outputs = [oh.make_tensor_value_info(t.name + "_out", 1, None) for t in inits]
    model = oh.make_model(oh.make_graph(nodes, "g", [], outputs, initializer=inits),
                          opset_imports=[oh.make_opsetid("", 17)])
    onnxzip.save(model, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=4600, help="inline initializers")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "m.onnxz")
        write_archive(path, args.small)
        model_entry = zipfile.ZipFile(path).getinfo("__MODEL_PROTO").file_size
        with onnxzip.open(path) as warm:  # Imports and first-call costs before the measure.
            len(warm.model.graph.node)
            warm.keys()
        gc.collect()
        before = anonymous_kib()
        archive = onnxzip.open(path)
        len(archive.model.graph.node)
        keys = archive.keys()
        gc.collect()
        held = anonymous_kib() - before
        archive.close()
    print(f"model entry {model_entry / 1e6:.2f} MB, {len(keys)} tensors: the open archive holds "
          f"{held / 1e3:.2f} MB of anonymous memory, {held * 1e3 / model_entry:.2f}x the model "
          f"entry")


if __name__ == "__main__":
    main()

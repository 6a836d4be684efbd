"""Shared helpers for the onnxzip pytest suite. The suite tests the INSTALLED package: run it from
a folder that does not contain an `onnxzip/` directory (scripts/test.sh runs it from here)."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper  # noqa: F401 - used below; a test file run alone imports it nowhere else
import pytest


def make_model(initializers, *, opset=17, nodes=None, inputs=None, outputs=None):
    """A small valid model: one Identity per initializer unless nodes are given."""
    if nodes is None:
        nodes = [oh.make_node("Identity", [t.name], [t.name + "_out"]) for t in initializers]
        outputs = [oh.make_tensor_value_info(t.name + "_out", t.data_type if t.data_type else 1, None)
                   for t in initializers]
    graph = oh.make_graph(nodes, "g", inputs or [], outputs or [], initializer=initializers)
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)], producer_name="pytest")


def float_tensor(name, shape, seed=0):
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return onnx.numpy_helper.from_array(data, name), data


@pytest.fixture
def small_archive(tmp_path):
    """An archive with three initializers (two large, one under the threshold) and its arrays."""
    import onnxzip

    arrays = {
        "encoder.weight": np.arange(64 * 32, dtype=np.float32).reshape(64, 32),
        "encoder.bias": np.arange(300, dtype=np.int64),
        "tiny": np.array([1, 2, 3], dtype=np.int8),
    }
    model = make_model([onnx.numpy_helper.from_array(a, n) for n, a in arrays.items()])
    path = tmp_path / "model.onnxz"
    onnxzip.save(model, path)
    return path, arrays, model

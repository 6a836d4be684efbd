"""The conformance vectors' tensor records (spec/conformance/manifest.json, "tensors"): Python lists
and reads the same records as C++ (tests/conformance_test.cpp) and JS (conformance.test.mjs)."""

from __future__ import annotations

import hashlib
import json
import pathlib

import pytest

import onnxzip

CONFORMANCE = pathlib.Path(__file__).resolve().parents[2] / "spec" / "conformance"
VECTORS = [v for v in json.loads((CONFORMANCE / "manifest.json").read_text())["vectors"]
           if "tensors" in v]


def test_some_vector_lists_inline_tensors():
    assert any(t["inline"] for v in VECTORS for t in v["tensors"])


@pytest.mark.parametrize("vector", VECTORS, ids=[v["file"] for v in VECTORS])
def test_every_tensor_is_listed_and_read_by_its_record(vector):
    with onnxzip.open(CONFORMANCE / vector["file"]) as archive:
        records = []
        for info in archive.tensors:
            payload = archive.get_tensor(info).tobytes()
            records.append({"name": info.name, "site": info.site, "entry": info.entry,
                            "data_type": info.data_type, "dims": list(info.dims),
                            "size": info.size, "inline": info.inline,
                            "sha256": hashlib.sha256(payload).hexdigest()})
    assert records == vector["tensors"]

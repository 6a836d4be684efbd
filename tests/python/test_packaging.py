"""One version and one licence for the three faces: the C++ library, this package, the JS one."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re

import pytest

import onnxzip

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def test_the_version_is_the_cmake_projects_and_the_js_packages():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as file:
        cmake = re.search(r"project\(onnxzip VERSION ([0-9.]+)", file.read()).group(1)
    with open(os.path.join(ROOT, "js", "package.json"), encoding="utf-8") as file:
        js = json.load(file)["version"]
    assert onnxzip.__version__ == onnxzip._onnxzip.version == cmake == js


def test_the_installed_package_ships_the_mit_license():
    try:
        distribution = importlib.metadata.distribution("onnxzip")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("onnxzip is not installed (run from a source tree)")
    assert distribution.version == onnxzip.__version__
    assert distribution.metadata["License"] == "MIT"
    licenses = [f for f in distribution.files or [] if f.name == "LICENSE"]
    assert licenses, distribution.files
    with open(os.path.join(ROOT, "LICENSE"), encoding="utf-8") as file:
        assert licenses[0].read_text() == file.read()

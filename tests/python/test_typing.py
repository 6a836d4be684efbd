"""The package is typed: mypy --strict accepts it (and so a user's strictly typed script)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

import onnxzip

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


@pytest.mark.skipif(shutil.which("mypy") is None, reason="mypy is not installed")
def test_the_package_passes_mypy_strict(tmp_path):
    # It failed its own mypy with 11 errors; the stub covered only the private extension.
    # A copy of the installed package's sources: given the site-packages folder itself, mypy
    # would check every other package there as if it were ours.
    package = str(tmp_path / "src" / "onnxzip")
    shutil.copytree(os.path.dirname(onnxzip.__file__), package,
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    script = tmp_path / "user.py"
    script.write_text(
        "from typing import Any\n"
        "import numpy as np\n"
        "import onnxzip\n"
        "def first(path: str) -> 'np.ndarray[Any, Any]':\n"
        "    with onnxzip.open(path) as archive:\n"
        "        info: onnxzip.TensorInfo = archive.tensors[0]\n"
        "        array: 'np.ndarray[Any, Any]' = archive.get_tensor(info)\n"
        "        return array\n"
        "report: onnxzip.VerifyReport = onnxzip.verify('m.onnxz')\n"
        "ok: bool = report.ok and all(f.severity == 'warning' for f in report.findings)\n")
    run = subprocess.run(["mypy", "--config-file", os.path.join(ROOT, "pyproject.toml"),
                          # A cache under build/: numpy's stubs take minutes to analyze cold.
                          "--cache-dir", os.path.join(ROOT, "build", "mypy_cache"), package,
                          str(script)],
                         capture_output=True, text=True, cwd=tmp_path,
                         env=dict(os.environ, MYPYPATH=os.path.dirname(package)))
    assert run.returncode == 0, run.stdout + run.stderr

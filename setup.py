"""Builds onnxzip._onnxzip with this repository's CMake build (ONNXZIP_BUILD_PYTHON=ON).

The library's sources come from CMake, not from a list here: setup.py only configures, builds the
one target and copies the module into the package. Metadata is in pyproject.toml.

Environment: ONNXZIP_PYTHON_BUILD_DIR (the CMake build folder; default under setuptools' build_temp),
ONNXZIP_CMAKE_ARGS (extra configure arguments, split on spaces), CMAKE_BUILD_PARALLEL_LEVEL,
CMAKE_CXX_COMPILER_LAUNCHER (e.g. ccache) as CMake reads them. A build folder already configured
with ONNXZIP_BUILD_PYTHON=ON, as scripts/build.sh configures build/, is used as it is (unless
ONNXZIP_CMAKE_ARGS is given): only the module's target is brought up to date there, so the library
is not compiled a second time (scripts/test.sh installs the package that way).
"""

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        build_dir = Path(os.environ.get("ONNXZIP_PYTHON_BUILD_DIR") or Path(self.build_temp) / "cmake")
        build_dir = build_dir.resolve()
        build_dir.mkdir(parents=True, exist_ok=True)
        if os.environ.get("ONNXZIP_CMAKE_ARGS") or not configured_with_python(build_dir):
            self.configure(build_dir)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "_onnxzip"], check=True)
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = sorted(build_dir.glob("python/_onnxzip*.so"))
        if len(built) != 1 or not built[0].name.endswith(suffix):
            raise RuntimeError(
                f"expected one built module _onnxzip{suffix} in {build_dir}/python, found {built}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)

    def configure(self, build_dir: Path) -> None:
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython_EXECUTABLE={sys.executable}",
            "-DONNXZIP_BUILD_PYTHON=ON",
            "-DONNXZIP_BUILD_TESTS=OFF", "-DONNXZIP_BUILD_CLI=OFF", "-DONNXZIP_BUILD_BENCH=OFF",
            "-DONNXZIP_BUILD_FUZZ=OFF", "-DONNXZIP_INSTALL=OFF",
        ]
        if shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        configure += os.environ.get("ONNXZIP_CMAKE_ARGS", "").split()
        subprocess.run(configure, check=True)


def configured_with_python(build_dir: Path) -> bool:
    cache = build_dir / "CMakeCache.txt"
    return cache.is_file() and "ONNXZIP_BUILD_PYTHON:BOOL=ON" in cache.read_text(errors="replace")


setup(ext_modules=[CMakeExtension("onnxzip._onnxzip")], cmdclass={"build_ext": CMakeBuild})

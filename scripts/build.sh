#!/usr/bin/env bash
# Configures and builds onnxzip (library, CLI, Python extension module, tests, fuzz replay
# drivers, benchmarks) in build/. scripts/test.sh builds its g++ pass with this script, so the
# README's two commands share one configured build/: every cache variable either sets is set here
# (a compiler given by one and not the other made CMake drop the cache and rebuild everything).
# ONNXZIP_BUILD_BENCH=OFF leaves the benchmarks out (scripts/test.sh, which runs none of them).
# The Python package installs around the module built here (setup.py: ONNXZIP_PYTHON_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=g++ \
  -DONNXZIP_BUILD_PYTHON=ON -DPython_EXECUTABLE=/usr/bin/python3 \
  -DONNXZIP_BUILD_BENCH="${ONNXZIP_BUILD_BENCH:-ON}" >/dev/null
cmake --build build -j "$(nproc)"

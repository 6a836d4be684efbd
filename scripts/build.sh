#!/usr/bin/env bash
# Configures and builds onnxzip (library, CLI, tests, fuzz replay drivers, benchmarks) in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"

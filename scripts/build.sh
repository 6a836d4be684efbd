#!/usr/bin/env bash
# Configures and builds onnxzip (library, CLI, tests, fuzz replay drivers, benchmarks) in build/.
# scripts/test.sh builds its g++ pass with this script, so the README's two commands share one
# configured build/: every cache variable either sets is set here (a compiler given by one and not
# the other made CMake drop the cache and rebuild everything).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=g++ >/dev/null
cmake --build build -j "$(nproc)"

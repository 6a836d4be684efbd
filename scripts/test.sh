#!/usr/bin/env bash
# The whole test suite: formatting, then every test with g++ (Release, -Werror), then every test
# again with clang under AddressSanitizer and UndefinedBehaviorSanitizer. The multi-gigabyte tests
# (label `slow`) run in the g++ pass only: under the sanitizers they would double CI's time and
# check no logic the small tests do not.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

echo "== clang-format check"
mapfile -t sources < <(git ls-files '*.h' '*.cpp')
clang-format --dry-run -Werror "${sources[@]}"

echo "== g++ build and tests"
cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=g++ >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== clang AddressSanitizer + UndefinedBehaviorSanitizer build and tests"
cmake -G Ninja -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ \
  -DONNXZIP_SANITIZE=address,undefined -DONNXZIP_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE slow

#!/usr/bin/env bash
# The whole test suite: formatting, then every test with g++ (Release, -Werror), then the
# JavaScript package's tests, then the Python package's pytest suite against the installed
# package, then every C++ test again with clang under AddressSanitizer and
# UndefinedBehaviorSanitizer. The multi-gigabyte tests (label `slow`) run in the g++ pass only:
# under the sanitizers they would double CI's time and check no logic the small tests do not.
#
# ONNXZIP_TEST_LOAD=1 runs it all beside a CPU load on every core (stress-ng --cpu), as on a CI
# machine busy with other work: a test that depends on timing or on how threads interleave fails
# there first. At the end it prints each phase's wall and CPU time (scripts/phases.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
source scripts/phases.sh

if [[ ${ONNXZIP_TEST_LOAD:-0} != 0 ]]; then
  if ! command -v stress-ng >/dev/null; then
    echo "test.sh: ONNXZIP_TEST_LOAD needs stress-ng (scripts/install-deps.sh installs it)" >&2
    exit 1
  fi
  # The timeout only guards against a load left behind; the trap ends it with the suite.
  stress-ng --cpu "$jobs" --timeout 3h --quiet &
  load_pid=$!
  echo "== beside a CPU load: stress-ng --cpu $jobs (pid $load_pid)"
fi

trap 'phase_cleanup; [[ -z ${load_pid:-} ]] || kill "$load_pid" 2>/dev/null || true' EXIT

phase "clang-format check"
mapfile -t sources < <(git ls-files '*.h' '*.cpp')
clang-format --dry-run -Werror "${sources[@]}"

# The sanitizer build needs nothing of the others: it runs from here on, niced, beside them, on
# the cores they leave idle (tests waiting for the disk, a server, the browser). Its tests run last.
# It builds the benchmarks too, which nothing here runs, so that they keep compiling.
phase "clang ASan+UBSan configure"
cmake -G Ninja -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++ \
  -DONNXZIP_SANITIZE=address,undefined -DONNXZIP_BUILD_BENCH=ON >/dev/null
phase_background "clang ASan+UBSan build" build-asan/build.log cmake --build build-asan -j "$jobs"

# The g++ build builds the Python extension module too (the package installs around it, below),
# and no benchmark (the sanitizer build compiles them).
phase "g++ build"
ONNXZIP_BUILD_BENCH=OFF scripts/build.sh
phase "g++ tests"
ctest --test-dir build --output-on-failure -j "$jobs"

# The JavaScript package (js/): its TypeScript build and type check, then its tests -- units and
# every conformance vector, ONNX Runtime (node and web) on real models, Chromium -- which use the
# onnxzip tool just built for their fixtures.
phase "JavaScript package: tsc, type check, node --test (units, vectors, ORT, Chromium)"
(cd js && npm run --silent build && npm run --silent typecheck && node --test test/unit/ test/ort/ test/browser/)

# The Python package, installed the way users install it (README "Python"), into a venv under
# build/, around the extension module the g++ build made (setup.py reuses build/, where the module
# is up to date); pytest runs from tests/python so that it imports the installed package, not the
# source tree. The > 2 GiB test (marker `slow`, minutes and ~5 GiB of memory) is left out: run it
# with `cd tests/python && ../../build/venv/bin/python -m pytest -m slow`.
phase "Python package: install into build/venv"
/usr/bin/python3 -m venv --system-site-packages build/venv
ONNXZIP_PYTHON_BUILD_DIR="$PWD/build" build/venv/bin/pip install --no-build-isolation --no-index \
  --quiet .
phase "Python package: pytest against the installed package"
(cd tests/python && ../../build/venv/bin/python -m pytest -q -p no:cacheprovider -m "not slow" --durations=10)

phase "clang ASan+UBSan build: the rest, after the other phases"
if ! phase_wait "clang ASan+UBSan build"; then
  cat build-asan/build.log
  exit 1
fi
phase "clang ASan+UBSan tests"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE slow
phase_report

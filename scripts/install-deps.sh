#!/usr/bin/env bash
# Installs everything onnxzip needs to build, test, benchmark and run the main job on Debian 12,
# from Debian's packages only. libprotobuf, libonnx-dev and python3-onnx are test and benchmark
# oracles: the library itself never links them (the Python extension links libprotobuf only to read
# payloads in place from python3-protobuf's C++ messages, README "Python"). libssl-dev (libcrypto
# 3: SHA-256, ECDSA) and nlohmann-json3-dev (the JSON of __DIGESTS and __SIGNATURE) are the
# integrity layer's; python3-cryptography is its interop test's independent verifier.
# libexpat1-dev parses object stores' XML answers (s3://, src/io/xml_answer.cpp); python3-botocore
# is the SigV4 signer's oracle (tests/s3_sigv4_golden.py).
# python3-pybind11 builds the Python package
# (python/), python3-pytest tests it, python3-torch is its torch export path's test.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git clang libclang-rt-14-dev clang-format
  libboost-iostreams-dev libisal-dev libdeflate-dev zlib1g-dev libcli11-dev
  libssl-dev nlohmann-json3-dev python3-cryptography
  libgtest-dev libgmock-dev libbenchmark-dev
  libprotobuf-dev protobuf-compiler libonnx-dev python3 python3-onnx python3-numpy libonnx-testdata
  python3-venv python3-pip python3-setuptools python3-pybind11 python3-pytest python3-torch strace
  unzip zip p7zip-full zipalign ziptool
  libcurl4-openssl-dev nginx-light curl
  libexpat1-dev python3-botocore
  chromium
)
# The main job (scripts/main-job.sh) fetches its model from the npm registry.
command -v npm >/dev/null || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
sudo=()
if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
else
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ONNX Runtime for the interoperability tests (tests/archive_ort_test.cpp): the npm package
# onnxruntime-node, pinned by tests/interop/package-lock.json, bundles the CPU runtime. Its
# install script only fetches optional GPU binaries, so it is skipped (--ignore-scripts).
interop="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/interop"
if [[ -d "$interop/node_modules/onnxruntime-node" ]]; then
  echo "install-deps: onnxruntime-node present"
else
  if ! command -v npm >/dev/null 2>&1; then
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends npm
  fi
  (cd "$interop" && npm ci --ignore-scripts --no-audit --no-fund)
fi

# The JavaScript package (js/): its dev dependencies, pinned by js/package-lock.json (TypeScript,
# onnxruntime-node and -web for the tests, puppeteer-core to drive Debian's chromium, esbuild for
# the bundle size), and the Silero VAD model its tests run (npm registry, pinned sha512,
# build/models/js/).
js="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/js"
if [[ -d "$js/node_modules/onnxruntime-web" ]]; then
  echo "install-deps: js/node_modules present"
else
  (cd "$js" && npm ci --ignore-scripts --no-audit --no-fund)
fi
node "$js/scripts/fetch-models.mjs"

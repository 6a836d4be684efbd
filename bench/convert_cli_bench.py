#!/usr/bin/python3
"""`onnxzip convert` both ways against `cp`, as a user runs them: the CLI with default flags.

A 1 GiB model of 1,000 FLOAT tensors is written once, untimed, in a scratch folder under
ONNXZIP_BENCH_DIR, else TMPDIR, else /tmp (about 5 GiB free needed; removed at exit):
  ref/model.onnx + ref/model.onnx.data   as the reference onnx package lays it out (tensors back
                                         to back: offsets off every page boundary)
  model.onnxz                            onnxzip convert of it
  leg/model.onnx + leg/model.onnx.data   onnxzip convert model.onnxz back (--external-data:
                                         offsets on 4 KiB boundaries, the default)
Then, for ROUNDS rounds, each direction runs right after a `cp` of the 1 GiB data file (the
yardstick), with a hot cache; every output is removed and the file system synced (syncfs)
between runs, untimed. Printed: how cp copied (strace -c, when installed), the load, and per
direction the medians with their range and the median of the per-round ratios run / cp.

  bench/convert_cli_bench.py [--rounds N] [NAME=]ONNXZIP [[NAME=]ONNXZIP ...]

Several tools (a build before and after a change) run in the same rounds, each after its own cp.
On XFS or btrfs, where a plain cp shares extents instead of copying, ONNXZIP_BENCH_CP_NO_REFLINK=1
makes the yardstick `cp --reflink=never` (as in the C++ benches).
On a shared machine the neighbours' work lands in the figures; running the whole script under
`chrt -f 1` (root) keeps it out, cp included. Needs /usr/bin/python3 with numpy and onnx.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TENSORS = 1000
FLOATS = (1 << 30) // 4


def write_reference_model(folder):
    """model.onnx + model.onnx.data, tensors back to back as onnx.save_model writes them."""
    import numpy as np
    from onnx import TensorProto, helper, save_model

    os.makedirs(folder)
    rng = np.random.default_rng(7)
    inits, nodes, offset = [], [], 0
    with open(os.path.join(folder, "model.onnx.data"), "wb") as data:
        for i in range(TENSORS):
            count = FLOATS // TENSORS + (1 if i < FLOATS % TENSORS else 0)
            payload = rng.integers(0, 2**32, size=count, dtype=np.uint32).tobytes()
            data.write(payload)
            name = f"model.layers.{i // 4}.mlp.w{i % 4}"
            tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[count])
            tensor.data_location = TensorProto.EXTERNAL
            for key, value in (("location", "model.onnx.data"), ("offset", offset),
                               ("length", len(payload))):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, str(value)
            offset += len(payload)
            inits.append(tensor)
            nodes.append(helper.make_node("Mul", [f"x{i}", name], [f"x{i + 1}"]))
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x0", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info(f"x{TENSORS}", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    save_model(model, os.path.join(folder, "model.onnx"))


CP = ["cp", "--reflink=never"] if os.environ.get("ONNXZIP_BENCH_CP_NO_REFLINK") == "1" else ["cp"]


def cp_copy_method(plain, folder):
    """The data-moving system calls of one `cp`, counted by strace -c."""
    if shutil.which("strace") is None:
        return "unknown (strace is not installed)"
    trace = os.path.join(folder, "cp.strace")
    copy = os.path.join(folder, "cp_traced.bin")
    subprocess.run(["strace", "-f", "-c", "-o", trace] + CP + [plain, copy], check=True)
    os.remove(copy)
    calls = {}
    with open(trace) as lines:
        for line in lines:
            words = line.split()
            if words and words[-1] in ("copy_file_range", "sendfile", "read", "write", "ioctl"):
                calls[words[-1]] = int(words[3])  # % time, seconds, usecs/call, calls
    version = subprocess.run(["cp", "--version"], capture_output=True, text=True).stdout
    return f"{' '.join(CP)} ({version.split(chr(10))[0]}); strace -c counts {calls}"


def print_machine(folder):
    """Prints the kernel, the file system of the scratch `folder` and the load before a run."""
    file_system = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "-T", folder],
                                 capture_output=True, text=True).stdout.strip()
    print(f"kernel {os.uname().release}; scratch folder on {file_system or 'unknown'}")
    print(f"load before: {open('/proc/loadavg').read().strip()} ({os.cpu_count()} cores)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("tools", nargs="+", help="[NAME=]path of an onnxzip binary")
    args = parser.parse_args()
    tools = {}
    for spec in args.tools:
        name, _, path = spec.rpartition("=")
        tools[name or os.path.basename(os.path.dirname(os.path.abspath(path)))] = \
            os.path.abspath(path)

    root = os.environ.get("ONNXZIP_BENCH_DIR") or os.environ.get("TMPDIR") or "/tmp"
    work = tempfile.mkdtemp(prefix="onnxzip_convert_cli_bench.", dir=root)
    try:
        run(work, tools, args.rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(work, tools, rounds):
    first = next(iter(tools.values()))
    write_reference_model(os.path.join(work, "ref"))
    subprocess.run([first, "-q", "convert", f"{work}/ref/model.onnx", f"{work}/model.onnxz"],
                   check=True)
    os.makedirs(f"{work}/leg")
    subprocess.run([first, "-q", "convert", f"{work}/model.onnxz", f"{work}/leg/model.onnx",
                    "--external-data"], check=True)
    plain = f"{work}/ref/model.onnx.data"
    out = f"{work}/out"

    def directions(tool):
        return {
            ".onnxz -> legacy external data": [tool, "-q", "convert", f"{work}/model.onnxz",
                                               f"{out}/model.onnx", "--external-data"],
            "legacy (onnxzip's) -> .onnxz": [tool, "-q", "convert", f"{work}/leg/model.onnx",
                                             f"{out}/model.onnxz"],
            "legacy (onnx's) -> .onnxz": [tool, "-q", "convert", f"{work}/ref/model.onnx",
                                          f"{out}/model.onnxz"],
        }

    def timed(command):
        os.makedirs(out)
        subprocess.run(["sync", "-f", work], check=True)
        start = time.perf_counter()
        subprocess.run(command, check=True)
        seconds = time.perf_counter() - start
        shutil.rmtree(out)
        return seconds

    print(f"cp: {cp_copy_method(plain, work)}")
    print_machine(work)
    times, ratios = {}, {}
    for _ in range(rounds):
        for direction in directions(first):
            for name, tool in tools.items():
                yardstick = timed(CP + [plain, f"{out}/cp.bin"])
                seconds = timed(directions(tool)[direction])
                times.setdefault(("cp", direction), []).append(yardstick)
                times.setdefault((name, direction), []).append(seconds)
                ratios.setdefault((name, direction), []).append(seconds / yardstick)
    print(f"load after:  {open('/proc/loadavg').read().strip()}")
    print(f"\n{rounds} rounds; seconds as median [min..max]; ratio: median of run / the cp before "
          f"it [min..max]; goal: at most 1.25")
    median = statistics.median
    for direction in directions(first):
        yardstick = times[("cp", direction)]
        print(f"{direction}\n  {'cp':10} {median(yardstick):7.3f} s "
              f"[{min(yardstick):.3f}..{max(yardstick):.3f}]")
        for name in tools:
            seconds, ratio = times[(name, direction)], ratios[(name, direction)]
            print(f"  {name:10} {median(seconds):7.3f} s [{min(seconds):.3f}..{max(seconds):.3f}]"
                  f"   ratio {median(ratio):.3f} [{min(ratio):.3f}..{max(ratio):.3f}]")


if __name__ == "__main__":
    sys.exit(main())

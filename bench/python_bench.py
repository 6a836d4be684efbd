#!/usr/bin/env python3
"""The Python package against its peers, in one run (issue 12 "Evidence").

Reading (page cache warm, every file just written):
  onnxzip.open + get_tensor of all 1,000 tensors of a 1 GiB archive
    vs numpy.load(mmap_mode="r") of the same arrays as 1,000 .npy files   (goal: faster)
    vs numpy.load of them as one .npz (a zip too, but every array is read and copied)
    vs onnx.load of the legacy external-data model                        (goal: >= 100x faster)
Writing:
  onnxzip.save of a 1 GiB in-memory onnx.ModelProto         vs cp of the same bytes (goal <= 1.25x)
  onnxzip.ArchiveWriter streaming 1 GiB of numpy arrays      vs cp of the same bytes (goal <= 1.25x)
  with the peak memory above the process's baseline (VmHWM after resetting it through
  /proc/self/clear_refs; cp's is its maximum resident set, from /usr/bin/time) and the CPU time
  (user + system; cp's from /usr/bin/time), which a busy machine changes far less than the
  wall time.

Each figure is the median of --repetitions runs (default 3), the compared operations run
alternately so that a busy machine slows both alike, and each writer and each cp starts after
the scratch file system has written back its dirty pages (syncfs, untimed); the load average is
printed before and after. Files go to ONNXZIP_BENCH_DIR, else TMPDIR, else /tmp (about 5 GiB); on XFS or btrfs set
ONNXZIP_BENCH_CP_NO_REFLINK=1, so that cp copies instead of sharing extents. Run it against the
installed package:

    build/venv/bin/python bench/python_bench.py [--repetitions N] [--tensors 1000] [--mib 1024]
                                                [--only read|write|save]

--only save measures save() against cp alone (about a minute): the quick re-run on a quiet
machine.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnx.helper as oh
import onnx.numpy_helper as nh

import onnxzip

def status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


class PeakMemory:
    """Peak resident memory above the level at entry: the kernel's high-water mark (VmHWM),
    reset on entry through /proc/self/clear_refs, so that peaks inside C++ calls count too."""

    def __enter__(self):
        gc.collect()
        # Freed heap memory would be reused without counting; give it back to the kernel first.
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        self.baseline = status_kib("VmRSS") << 10
        return self

    def __exit__(self, *exc):
        self.peak = status_kib("VmHWM") << 10

    @property
    def grown(self) -> int:
        return max(0, self.peak - self.baseline)


def load_average() -> str:
    return "load average " + ", ".join(f"{load:.2f}" for load in os.getloadavg()) + \
        f" on {os.cpu_count()} CPUs"


def settle(folder: str) -> None:
    """Writes back the scratch file system's dirty pages (syncfs), outside any timing: each
    writer then starts as cp does, without the previous run's gigabyte still being written back
    beside it on this machine's two cores."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).syncfs(fd)
    finally:
        os.close(fd)


def timed(function):
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def cp_command():
    """cp, or under ONNXZIP_BENCH_CP_NO_REFLINK=1 `cp --reflink=never`: on XFS and btrfs a plain cp
    shares the source's extents and copies nothing, which is no yardstick for writing."""
    return ["cp", "--reflink=never"] if os.environ.get("ONNXZIP_BENCH_CP_NO_REFLINK") == "1" \
        else ["cp"]


def run_cp(source: str, target: str):
    """Seconds, peak RSS and CPU seconds (user + system) of `cp source target` (the target removed
    afterwards). Peak and CPU come from /usr/bin/time when installed (a child forked from this
    large process would report this process's size as its own), else they are reported as 0."""
    timer = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time") else None)
    command = cp_command() + [source, target]
    if timer:
        command = [timer, "-f", "%M %U %S", "-o", target + ".rss"] + command
    start = time.perf_counter()
    subprocess.run(command, check=True)
    seconds = time.perf_counter() - start
    os.remove(target)
    peak, cpu = 0, 0.0
    if timer:
        with open(target + ".rss") as rss:
            fields = rss.read().split()
        peak = int(fields[-3]) * 1024
        cpu = float(fields[-2]) + float(fields[-1])
        os.remove(target + ".rss")
    return seconds, peak, cpu


def cpu_seconds() -> float:
    """User + system CPU time of this process so far, all threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def how_cp_copies(source: str, target: str) -> str:
    if not shutil.which("strace"):
        return "strace not installed"
    trace = subprocess.run(["strace", "-f", "-c", "-e", "trace=copy_file_range,read,write,"
                            "sendfile,ioctl"] + cp_command() + [source, target],
                           capture_output=True, text=True, check=True).stderr
    os.remove(target)
    calls = {}
    for line in trace.splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[-1] in ("copy_file_range", "read", "write", "sendfile",
                                               "ioctl"):
            calls[fields[-1]] = int(fields[3])
    return ", ".join(f"{name} x{count}" for name, count in sorted(calls.items()))


def make_arrays(count: int, total_bytes: int):
    per_tensor = total_bytes // count // 4
    rng = np.random.default_rng(1)
    base = rng.standard_normal(per_tensor).astype(np.float32)
    # Distinct contents per tensor (no accidental sharing), cheaply.
    return {f"layers.{i}.weight": base + np.float32(i) for i in range(count)}


def make_model(arrays) -> onnx.ModelProto:
    initializers = [nh.from_array(a, n) for n, a in arrays.items()]
    nodes = [oh.make_node("Identity", [n], [n + "_out"]) for n in arrays]
    outputs = [oh.make_tensor_value_info(n + "_out", onnx.TensorProto.FLOAT, None) for n in arrays]
    graph = oh.make_graph(nodes, "bench", [], outputs, initializer=initializers)
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])


def median(values):
    return statistics.median(values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--tensors", type=int, default=1000)
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--only", choices=["read", "write", "save"],
                        help="run one part: reading, writing (streaming and save), or save alone")
    args = parser.parse_args()

    root = os.environ.get("ONNXZIP_BENCH_DIR") or os.environ.get("TMPDIR") or "/tmp"
    work = tempfile.mkdtemp(prefix="onnxzip-python-bench-", dir=root)
    try:
        return run(work, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)


class Row:
    """One writer against cp, run alternately: wall seconds, peak memory and CPU seconds. CPU time
    hardly depends on the machine's load; wall time on a shared machine does."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.times, self.peaks, self.cpus = [], [], []
        self.cp_times, self.cp_peaks, self.cp_cpus = [], [], []

    def measure(self, write, written: str, source: str, cp_target: str) -> None:
        settle(os.path.dirname(written))
        with PeakMemory() as memory:
            cpu = cpu_seconds()
            seconds, _ = timed(write)
            self.cpus.append(cpu_seconds() - cpu)
        self.times.append(seconds)
        self.peaks.append(memory.grown)
        os.remove(written)
        settle(os.path.dirname(cp_target))
        seconds, peak, cpu = run_cp(source, cp_target)
        self.cp_times.append(seconds)
        self.cp_peaks.append(peak)
        self.cp_cpus.append(cpu)

    def ratio(self) -> float:
        return median(self.times) / median(self.cp_times)


def run(work: str, args) -> int:
    reps = args.repetitions
    total = args.mib << 20
    reading = args.only in (None, "read")
    streaming = args.only in (None, "write")
    saving = args.only in (None, "write", "save")
    from google.protobuf.internal import api_implementation
    print(f"onnxzip {onnxzip.__version__} from {os.path.dirname(onnxzip.__file__)}; numpy "
          f"{np.__version__}; onnx {onnx.__version__}; python {sys.version.split()[0]}; "
          f"protobuf {api_implementation.Type()} implementation, save() "
          f"{'reads payloads in place' if onnxzip._onnxzip.message_bridge_available() else 'copies payloads'}")
    print(f"{args.tensors} float32 tensors, {total / (1 << 30):.2f} GiB, in {work}; "
          f"medians of {reps} repetitions; page cache warm")
    print(f"before: {load_average()}")

    arrays = make_arrays(args.tensors, total)
    names = list(arrays)
    archive = os.path.join(work, "model.onnxz")
    npy_dir = os.path.join(work, "npy")
    os.mkdir(npy_dir)
    npz = os.path.join(work, "model.npz")
    legacy_dir = os.path.join(work, "legacy")
    os.mkdir(legacy_dir)
    legacy = os.path.join(legacy_dir, "model.onnx")

    # --- Writing: ArchiveWriter streaming vs cp, save of an in-memory model vs cp ---
    def write_streaming(path):
        with onnxzip.ArchiveWriter(path) as writer:
            refs = [writer.add_tensor(n, a) for n, a in arrays.items()]
            model = make_model({})
            model.graph.initializer.extend(refs)
            writer.finish(model)

    write_streaming(archive)  # Also the reading benchmark's input and cp's; warms the cache.
    cp_target = os.path.join(work, "copy.onnxz")
    written = os.path.join(work, "written.onnxz")
    rows = []
    if streaming:
        row = Row("ArchiveWriter streaming")
        for _ in range(reps):
            row.measure(lambda: write_streaming(written), written, archive, cp_target)
        rows.append(row)

    model = make_model(arrays) if saving or reading else None
    if saving:
        row = Row("save(in-memory ModelProto)")
        for _ in range(reps):
            row.measure(lambda m=model: onnxzip.save(m, written), written, archive, cp_target)
        rows.append(row)

    mib = 1 << 20
    read_times = {}
    readers = []
    if reading:
        # --- The peers' files ---
        for name, array in arrays.items():
            np.save(os.path.join(npy_dir, name + ".npy"), array)
        np.savez(npz, **arrays)
        onnx.save_model(model, legacy, save_as_external_data=True, all_tensors_to_one_file=True,
                        location="model.onnx.data", size_threshold=1024)
    del model
    gc.collect()

    if reading:
        def read_onnxzip():
            with onnxzip.open(archive) as opened:
                return [opened.get_tensor(n) for n in names]

        def read_npy():
            return [np.load(os.path.join(npy_dir, n + ".npy"), mmap_mode="r") for n in names]

        def read_npz():
            with np.load(npz) as opened:
                return [opened[n] for n in names]

        def read_onnx():
            return onnx.load(legacy)

        readers = [("onnxzip.open + get_tensor x%d" % len(names), read_onnxzip),
                   ("numpy.load(mmap_mode='r') x%d .npy" % len(names), read_npy),
                   ("numpy.load of one .npz", read_npz),
                   ("onnx.load, external data", read_onnx)]
        read_times = {label: [] for label, _ in readers}
        read_peaks = {label: [] for label, _ in readers}
        for _ in range(reps):
            for label, reader in readers:
                with PeakMemory() as memory:
                    seconds, result = timed(reader)
                    del result
                read_times[label].append(seconds)
                read_peaks[label].append(memory.grown)
                gc.collect()

        print()
        print(f"{'reading':42} {'median s':>10} {'vs onnxzip':>11} {'peak MiB':>9}")
        base = median(read_times[readers[0][0]])
        for label, _ in readers:
            t = median(read_times[label])
            print(f"{label:42} {t:10.5f} {t / base:10.1f}x {max(read_peaks[label]) / mib:9.0f}")
    if rows:
        print()
        print(f"{'writing':42} {'median s':>10} {'vs cp':>11} {'peak MiB':>9} {'CPU s':>7} "
              f"{'vs cp':>6}")
    for row in rows:
        print(f"{row.label:42} {median(row.times):10.4f} {row.ratio():10.2f}x "
              f"{max(row.peaks) / mib:9.0f} {median(row.cpus):7.3f} "
              f"{median(row.cpus) / median(row.cp_cpus):5.2f}x   (runs: "
              + ", ".join(f"{t:.3f}" for t in row.times) + ")")
        paired = [t / c for t, c in zip(row.times, row.cp_times)]
        print(f"{'  cp of the same bytes':42} {median(row.cp_times):10.4f} {'':11} "
              f"{max(row.cp_peaks) / mib:9.0f} {median(row.cp_cpus):7.3f} {'':6}   (runs: "
              + ", ".join(f"{c:.3f}" for c in row.cp_times)
              + "; paired ratios: " + ", ".join(f"{r:.2f}" for r in paired) + ")")
    print()
    print(f"cp: {subprocess.run(['cp', '--version'], capture_output=True, text=True).stdout.splitlines()[0]}"
          f" run as `{' '.join(cp_command())}`; "
          f"system calls: {how_cp_copies(archive, cp_target)}")
    goals = []
    if reading:
        onnxzip_read = median(read_times[readers[0][0]])
        goals.append("open+get_tensor faster than .npy mmap: "
                     f"{'yes' if onnxzip_read < median(read_times[readers[1][0]]) else 'NO'}")
        goals.append(f">= 100x onnx.load: {median(read_times[readers[3][0]]) / onnxzip_read:.0f}x")
    for row in rows:
        goals.append(f"{row.label} <= 1.25x cp: {row.ratio():.2f}x")
    print("goals: " + "; ".join(goals))
    print(f"after: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

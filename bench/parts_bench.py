#!/usr/bin/python3
"""Writing one archive in parts (issue 34, spec §13) against one writer and `cp`.

A 4 GiB model of 64 FLOAT tensors of 64 MiB, written from memory by:
  single   one onnxzip.ArchiveWriter (add_tensor x 64, finish) in one process
  parts1   one PartWriter: begin_parts, the writer in its own process, finish_parts
  parts2   two PartWriters in two processes (32 tensors each), then finish_parts
  cp       `cp` of the finished archive (the same bytes; its source hot in the page cache)
Each writer process is forked and fills its arrays before the clock starts; the clock runs from
the start signal (for parts: from begin_parts) to the archive's rename. For ROUNDS rounds the four
run one after another, the order rotated each round; outputs are removed and the file system
synced between runs, untimed. Printed: the load, per contender the median with [min..max], and
per writer the median of its per-round ratio to cp and to single.

  ONNXZIP_BENCH_DIR=/big/folder bench/parts_bench.py [--rounds N] [--gib G]

Needs about 3 x G GiB free in the folder (default TMPDIR, else /tmp; removed at exit) and G GiB of
memory per writer set. On a shared machine run it when `uptime` shows a low load: the
neighbours' work lands in the figures. Needs the onnxzip package (numpy, onnx).
"""
import argparse
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnx.helper

import onnxzip

TENSOR_BYTES = 64 << 20


def tensors(count, first=0):
    """(name, array) of tensors first..first+count-1: distinct, cheap to make."""
    out = []
    for i in range(first, first + count):
        array = np.arange(TENSOR_BYTES // 4, dtype=np.uint32)
        array *= 2654435761 * (i + 1) & 0xFFFFFFFF
        out.append((f"layer.{i}.weight", array.view(np.float32)))
    return out


def model(initializers):
    return onnx.helper.make_model(onnx.helper.make_graph([], "g", [], [],
                                                         initializer=initializers))


def single_worker(path, count, ready, go, done):
    arrays = tensors(count)
    ready.send(True)
    go.recv()
    start = time.perf_counter()
    with onnxzip.ArchiveWriter(path) as writer:
        refs = [writer.add_tensor(name, array) for name, array in arrays]
        writer.finish(model(refs))
    done.send(time.perf_counter() - start)


def part_worker(part, first, count, ready, go, done):
    arrays = tensors(count, first)
    ready.send(True)
    token = go.recv()
    with onnxzip.PartWriter(token, part=part) as writer:
        for name, array in arrays:
            writer.add_tensor(name, array)
    done.send(writer.receipt())


def pipes():
    return multiprocessing.Pipe(duplex=False)


def run_single(path, count):
    (ready_r, ready_w), (go_r, go_w), (done_r, done_w) = pipes(), pipes(), pipes()
    process = multiprocessing.Process(target=single_worker,
                                      args=(path, count, ready_w, go_r, done_w))
    process.start()
    ready_r.recv()
    start = time.perf_counter()
    go_w.send(True)
    done_r.recv()
    elapsed = time.perf_counter() - start
    process.join()
    return elapsed


def run_parts(path, count, writers):
    per = count // writers
    plan = onnxzip.plan_parts([[(name, np.float32, shape) for name, shape in
                                tensors_meta(per, w * per)] for w in range(writers)])
    links, processes = [], []
    for w in range(writers):
        (ready_r, ready_w), (go_r, go_w), (done_r, done_w) = pipes(), pipes(), pipes()
        process = multiprocessing.Process(target=part_worker,
                                          args=(w, w * per, per, ready_w, go_r, done_w))
        process.start()
        links.append((ready_r, go_w, done_r))
        processes.append(process)
    for ready_r, _, _ in links:
        ready_r.recv()
    start = time.perf_counter()
    token = onnxzip.begin_parts(path, plan)
    for _, go_w, _ in links:
        go_w.send(token)
    receipts = [done_r.recv() for _, _, done_r in links]
    onnxzip.finish_parts(token, model(plan.references()), receipts)
    elapsed = time.perf_counter() - start
    for process in processes:
        process.join()
    return elapsed


def tensors_meta(count, first):
    """The names and shapes tensors() makes, without making them."""
    return [(f"layer.{i}.weight", (TENSOR_BYTES // 4,)) for i in range(first, first + count)]


def run_cp(source, path):
    start = time.perf_counter()
    subprocess.run(["cp", source, path], check=True)
    return time.perf_counter() - start


def settle(path):
    if os.path.exists(path):
        os.remove(path)
    os.sync()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gib", type=int, default=4)
    args = parser.parse_args()
    count = args.gib * (1 << 30) // TENSOR_BYTES
    root = os.environ.get("ONNXZIP_BENCH_DIR") or os.environ.get("TMPDIR") or "/tmp"
    work = tempfile.mkdtemp(prefix="onnxzip_parts_bench.", dir=root)
    multiprocessing.set_start_method("fork")
    try:
        reference = os.path.join(work, "reference.onnxz")
        run_single(reference, count)  # Untimed: cp's source, and a check of the bytes below.
        out = os.path.join(work, "out.onnxz")
        contenders = {
            "single": lambda: run_single(out, count),
            "parts1": lambda: run_parts(out, count, 1),
            "parts2": lambda: run_parts(out, count, 2),
            "cp": lambda: run_cp(reference, out),
        }
        file_system = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "-T", work],
                                     capture_output=True, text=True).stdout.strip()
        print(f"{args.gib} GiB, {count} tensors; scratch on {file_system}")
        print(f"load before: {open('/proc/loadavg').read().strip()} ({os.cpu_count()} cores)")
        times = {name: [] for name in contenders}
        names = list(contenders)
        for round_index in range(args.rounds):
            order = names[round_index % len(names):] + names[:round_index % len(names)]
            for name in order:
                settle(out)
                times[name].append(contenders[name]())
                if name.startswith("parts") and round_index == 0:
                    assert filecmp_equal(out, reference), f"{name}: not the single writer's bytes"
            settle(out)
        print(f"load after:  {open('/proc/loadavg').read().strip()}")
        for name, values in times.items():
            print(f"{name:7s} median {statistics.median(values):6.2f} s "
                  f"[{min(values):.2f}..{max(values):.2f}]  "
                  f"{args.gib / statistics.median(values):5.2f} GiB/s")
        for name in ("single", "parts1", "parts2"):
            to_cp = statistics.median(a / b for a, b in zip(times[name], times["cp"]))
            to_single = statistics.median(a / b for a, b in zip(times[name], times["single"]))
            print(f"{name:7s} / cp {to_cp:.2f}   / single {to_single:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def filecmp_equal(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(1 << 24), fb.read(1 << 24)
            if x != y:
                return False
            if not x:
                return True


if __name__ == "__main__":
    sys.exit(main())

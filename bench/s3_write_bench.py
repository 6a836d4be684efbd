#!/usr/bin/python3
"""Writing an archive into a bucket with the CLI against `aws s3 cp` of the same bytes.

A legacy model of TENSORS UINT8 tensors of 1 MiB of random bytes is made once, untimed, and
converted to model.onnxz locally (`onnxzip convert`), in a scratch folder under
ONNXZIP_BENCH_DIR, else TMPDIR, else /tmp (removed at exit). A moto S3 server (moto 5, with
signature checking on, as the tests run it: tests/support/s3_server.py, on the Python that has
moto and boto3, pyenv's by default) holds the bucket; both clients talk to moto directly (not
through the test proxy), on loopback, with the same part size and the same parts in flight:

  onnxzip  `onnxzip repack model.onnxz s3://bench/onnxzip.onnxz --part-size P
           --parts-in-flight C --overwrite`: reads the archive, checks every CRC-32 and writes the
           same bytes as one multipart upload (each part with its CRC-32, Complete with the
           object's);
  aws      `aws s3 cp model.onnxz s3://bench/aws.onnxz` with `aws configure set
           default.s3.multipart_chunksize P` and `default.s3.max_concurrent_requests C` in a
           temporary AWS_CONFIG_FILE (the yardstick: a plain upload of the file).

For ROUNDS rounds the two run alternately (which goes first alternates too). moto's cost per
request grows with the object, so only clients with the same request pattern compare: both make
1 + ceil(size / P) + 1 requests. Each object is checked against the file (boto3 head: size).

  bench/s3_write_bench.py [--rounds N] [--tensors N] [--part-size MiB] [--parts-in-flight N] ONNXZIP

Printed: how aws and moto ran, per client the median time with its range, the median of the
per-round ratios onnxzip / aws. The goal (issue 33) is a ratio of at most 1.0.
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "..", "tests", "support", "s3_server.py")
MOTO_PYTHON = os.environ.get("ONNXZIP_MOTO_PYTHON", "/root/.pyenv/shims/python3")
AWS = shutil.which("aws") or "/root/.pyenv/shims/aws"


def write_legacy_model(folder, tensors):
    """model.onnx + model.onnx.data: TENSORS UINT8 tensors of 1 MiB of random bytes."""
    import numpy as np
    from onnx import TensorProto, helper, save_model

    rng = np.random.default_rng(7)
    inits = []
    with open(os.path.join(folder, "model.onnx.data"), "wb") as data:
        for i in range(tensors):
            data.write(rng.bytes(1 << 20))
            tensor = TensorProto(name=f"w{i}", data_type=TensorProto.UINT8, dims=[1 << 20])
            tensor.data_location = TensorProto.EXTERNAL
            for key, value in (("location", "model.onnx.data"), ("offset", i << 20),
                               ("length", 1 << 20)):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, str(value)
            inits.append(tensor)
    graph = helper.make_graph([], "weights", [], [], inits)
    save_model(helper.make_model(graph, ir_version=8), os.path.join(folder, "model.onnx"))


def start_store(folder):
    state_file = os.path.join(folder, "state.json")
    log = open(os.path.join(folder, "moto.log"), "w")
    server = subprocess.Popen([MOTO_PYTHON, SERVER, state_file, "bench"], stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 180
    while time.time() < deadline:
        if os.path.exists(state_file):
            with open(state_file) as f:
                return server, json.load(f)
        if server.poll() is not None:
            sys.exit("the S3 server stopped: see " + log.name)
        time.sleep(0.1)
    sys.exit("the S3 server did not start")


def timed(command, env):
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def object_size(state, key):
    script = ("import boto3,sys;s=boto3.client('s3',endpoint_url=sys.argv[1],region_name="
              "'us-east-1',aws_access_key_id=sys.argv[2],aws_secret_access_key=sys.argv[3]);"
              "print(s.head_object(Bucket='bench',Key=sys.argv[4])['ContentLength'])")
    out = subprocess.run([MOTO_PYTHON, "-c", script, state["moto"], state["access_key_id"],
                          state["secret_access_key"], key], check=True, capture_output=True)
    return int(out.stdout)


def describe(label, times):
    return (f"{label:8s} median {statistics.median(times):7.3f} s  "
            f"range {min(times):.3f} .. {max(times):.3f} s  ({len(times)} runs)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("onnxzip")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tensors", type=int, default=256)
    parser.add_argument("--part-size", type=int, default=16, help="MiB")
    parser.add_argument("--parts-in-flight", type=int, default=4)
    args = parser.parse_args()

    base = os.environ.get("ONNXZIP_BENCH_DIR") or tempfile.gettempdir()
    folder = tempfile.mkdtemp(prefix="s3_write_bench.", dir=base)
    server = None
    try:
        write_legacy_model(folder, args.tensors)
        archive = os.path.join(folder, "model.onnxz")
        subprocess.run([args.onnxzip, "convert", os.path.join(folder, "model.onnx"), archive],
                       check=True)
        size = os.path.getsize(archive)
        server, state = start_store(folder)
        config = os.path.join(folder, "aws_config")
        env = dict(os.environ, AWS_ACCESS_KEY_ID=state["access_key_id"],
                   AWS_SECRET_ACCESS_KEY=state["secret_access_key"], AWS_REGION="us-east-1",
                   AWS_ENDPOINT_URL_S3=state["moto"], AWS_ENDPOINT_URL=state["moto"],
                   AWS_CONFIG_FILE=config,
                   AWS_SHARED_CREDENTIALS_FILE=os.path.join(folder, "none"))
        part = args.part_size << 20
        for key, value in (("default.s3.multipart_chunksize", f"{args.part_size}MB"),
                           ("default.s3.multipart_threshold", f"{args.part_size}MB"),
                           ("default.s3.max_concurrent_requests", str(args.parts_in_flight))):
            subprocess.run([AWS, "configure", "set", key, value], env=env, check=True)
        onnxzip_command = [args.onnxzip, "--quiet", "repack", archive, "s3://bench/onnxzip.onnxz",
                           "--part-size", f"{args.part_size}M", "--parts-in-flight",
                           str(args.parts_in_flight), "--overwrite"]
        aws_command = [AWS, "s3", "cp", "--only-show-errors", archive, "s3://bench/aws.onnxz"]
        aws_version = subprocess.run([AWS, "--version"], capture_output=True, text=True,
                                     env=env).stdout.strip()
        print(f"archive: {size} bytes ({args.tensors} tensors of 1 MiB); parts of {part} bytes, "
              f"{args.parts_in_flight} in flight; {-(-size // part)} parts")
        print(f"store: moto (signature checking on) at {state['moto']}, direct (no test proxy)")
        print(f"yardstick: {' '.join(aws_command)}  [{aws_version}]")
        with open(config) as f:
            print("  AWS_CONFIG_FILE: " + f.read().strip().replace("\n", "; "))
        print(f"onnxzip: {' '.join(onnxzip_command)}")
        print(f"load before: {os.getloadavg()}")
        times = {"onnxzip": [], "aws": []}
        ratios = []
        for round_number in range(args.rounds):
            order = ["onnxzip", "aws"] if round_number % 2 == 0 else ["aws", "onnxzip"]
            got = {}
            for name in order:
                got[name] = timed(onnxzip_command if name == "onnxzip" else aws_command, env)
                times[name].append(got[name])
            ratios.append(got["onnxzip"] / got["aws"])
        for key in ("onnxzip.onnxz", "aws.onnxz"):
            if object_size(state, key) != size:
                sys.exit(f"{key}: the object is not {size} bytes")
        print(f"load after: {os.getloadavg()}")
        print(describe("onnxzip", times["onnxzip"]))
        print(describe("aws", times["aws"]))
        print(f"ratio onnxzip / aws: median {statistics.median(ratios):.3f}  "
              f"range {min(ratios):.3f} .. {max(ratios):.3f}  (goal <= 1.0)")
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

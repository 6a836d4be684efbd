#!/usr/bin/python3
"""An edit of an archive in a bucket against a re-upload of it: requests, bytes and time.

An archive of TENSORS UINT8 tensors of 1 MiB of random bytes (1,000 MiB of payload by default) is
made once, untimed, with `onnxzip convert` of a legacy model (bench/remote_read_bench.py's
generator), in a scratch folder under ONNXZIP_BENCH_DIR, else TMPDIR, else /tmp (removed at
exit). The store is the tests' (tests/support/s3_server.py: moto with signature checking on,
behind the counting proxy), run by the Python that has moto and boto3 (ONNXZIP_MOTO_PYTHON, else
pyenv's); the archive is uploaded once by boto3, untimed.

For ROUNDS rounds, alternating, each timed from the shell:
  re-upload  `aws s3 cp ARCHIVE s3://bench/model.onnxz` (the aws CLI on pyenv's Python; its
             default multipart settings: 8 MiB parts, 10 at once), what changing the archive
             costs without an edit in the bucket;
  edit       `onnxzip edit s3://bench/model.onnxz --set-metadata round=N`: the tail read, the
             prefix copied inside the store (UploadPartCopy), the new tail uploaded, a
             conditional Complete.
Each run's requests and the body bytes sent and received by the client come from the proxy.

  build/venv/bin/python bench/bucket_edit_bench.py [--rounds N] [--tensors N] ONNXZIP

(a Python with numpy and onnx: the generator's; scripts/test.sh's venv has them).

Printed: per operation the median time with its range, the part of it spent outside moto (the
proxy times each request moto answers), moto's time by S3 operation, requests and bytes, and
the medians of the per-round ratios edit / the re-upload before it, whole and outside moto. The goal (issue 33 item 8) is at most 5 % of
the re-upload's time for a 1 GiB archive. moto's cost per request grows with the object (it
copies the source's bytes for a copied part and joins the parts at Complete, in Python), so the
edit's time on moto is an upper bound of what a store that copies without moving bytes takes.
"""
import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "..", "tests", "support", "s3_server.py")
KEY = "model.onnxz"


def legacy_generator():
    """remote_read_bench's write_legacy_model, one generator for both benches."""
    spec = importlib.util.spec_from_file_location("remote_read_bench",
                                                  os.path.join(HERE, "remote_read_bench.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def moto_python():
    for candidate in (os.environ.get("ONNXZIP_MOTO_PYTHON"), "/root/.pyenv/shims/python3",
                      os.path.expanduser("~/.pyenv/shims/python3")):
        if candidate and subprocess.run([candidate, "-c", "import moto.server, boto3"],
                                        capture_output=True).returncode == 0:
            return candidate
    sys.exit("no Python with moto 5 and boto3: set ONNXZIP_MOTO_PYTHON")


class Store:
    def __init__(self, folder, archive):
        state = os.path.join(folder, "state.json")
        self.log = open(os.path.join(folder, "server.log"), "wb")
        self.process = subprocess.Popen([moto_python(), SERVER, state, "bench",
                                         f"{KEY}={archive}"], stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 600
        while not os.path.exists(state):
            if self.process.poll() is not None or time.monotonic() > deadline:
                sys.exit("the S3 store did not start: see " + self.log.name)
            time.sleep(0.1)
        with open(state) as f:
            self.__dict__.update(json.load(f))

    def control(self, method, path):
        request = urllib.request.Request(self.endpoint + path, method=method)
        with urllib.request.urlopen(request) as answer:
            return json.loads(answer.read())

    def stop(self):
        self.process.kill()
        self.process.wait()


def timed(command, env):
    start = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    elapsed = time.monotonic() - start
    if done.returncode != 0:
        sys.exit(f"{command[0]} failed: {done.stderr}")
    return elapsed


def run(store, command, env):
    store.control("POST", "/__proxy/reset")
    seconds = timed(command, env)
    stats = store.control("GET", "/__proxy/stats")
    store_seconds = {}
    for line in stats["log"]:
        store_seconds[line["op"]] = store_seconds.get(line["op"], 0) + line.get("store_seconds", 0)
    return {"seconds": seconds, "requests": stats["requests"], "sent": stats["received"],
            "received": stats["bytes"], "ops": sorted(store_seconds),
            "store": sum(store_seconds.values()), "by_op": store_seconds}


def summary(name, runs, serial):
    """`serial`: the client sends one request at a time, so its time outside moto is the run's
    time less moto's (the aws CLI sends ten parts at once: moto's times overlap)."""
    seconds = [r["seconds"] for r in runs]
    client = [r["seconds"] - r["store"] for r in runs]
    last = runs[-1]
    by_op = ", ".join(f"{op} {statistics.median(r['by_op'][op] for r in runs):.2f} s"
                      for op in last["ops"])
    outside = (f"outside moto {statistics.median(client):.3f} s (range {min(client):.3f}-"
               f"{max(client):.3f}); " if serial else "")
    print(f"{name:10s} median {statistics.median(seconds):8.3f} s "
          f"(range {min(seconds):.3f}-{max(seconds):.3f}, {len(runs)} runs); {outside}"
          f"requests {last['requests']}; moto's time by operation (summed): {by_op}; "
          f"client sent {last['sent']:,} B, received {last['received']:,} B")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("onnxzip")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tensors", type=int, default=1000)
    args = parser.parse_args()
    base = os.environ.get("ONNXZIP_BENCH_DIR") or os.environ.get("TMPDIR") or "/tmp"
    folder = tempfile.mkdtemp(prefix="bucket_edit_bench.", dir=base)
    store = None
    try:
        generator = legacy_generator()
        generator.TENSORS = args.tensors
        generator.write_legacy_model(os.path.join(folder, "legacy"))
        archive = os.path.join(folder, KEY)
        subprocess.run([args.onnxzip, "convert", os.path.join(folder, "legacy", "model.onnx"),
                        archive], check=True, capture_output=True)
        shutil.rmtree(os.path.join(folder, "legacy"))
        store = Store(folder, archive)
        env = dict(os.environ, AWS_ACCESS_KEY_ID=store.access_key_id,
                   AWS_SECRET_ACCESS_KEY=store.secret_access_key, AWS_REGION="us-east-1",
                   AWS_ENDPOINT_URL_S3=store.endpoint, AWS_ENDPOINT_URL=store.endpoint,
                   AWS_CONFIG_FILE=os.path.join(folder, "none"),
                   AWS_SHARED_CREDENTIALS_FILE=os.path.join(folder, "none"))
        aws = shutil.which("aws", path="/root/.pyenv/shims:" + os.environ.get("PATH", ""))
        size = os.path.getsize(archive)
        print(f"archive: {size:,} bytes ({args.tensors} tensors of 1 MiB); store: moto behind "
              f"the test proxy; loadavg before: {os.getloadavg()}")
        uploads, edits, ratios = [], [], []
        for round_number in range(args.rounds):
            uploads.append(run(store, [aws, "s3", "cp", "--only-show-errors", archive,
                                       f"s3://bench/{KEY}"], env))
            edits.append(run(store, [args.onnxzip, "--quiet", "edit", f"s3://bench/{KEY}",
                                     "--set-metadata", f"round={round_number}"], env))
            ratios.append(edits[-1]["seconds"] / uploads[-1]["seconds"])
        summary("re-upload", uploads, serial=False)
        summary("edit", edits, serial=True)
        client_ratios = [(e["seconds"] - e["store"]) / u["seconds"]
                         for e, u in zip(edits, uploads)]
        print(f"edit outside moto / re-upload: median "
              f"{statistics.median(client_ratios) * 100:.2f} % (range "
              f"{min(client_ratios) * 100:.2f}-{max(client_ratios) * 100:.2f} %)")
        print(f"edit / re-upload: median {statistics.median(ratios) * 100:.2f} % "
              f"(range {min(ratios) * 100:.2f}-{max(ratios) * 100:.2f} %); bytes moved by the "
              f"client: {(edits[-1]['sent'] + edits[-1]['received']) / size * 100:.3f} % of a "
              f"re-upload's {uploads[-1]['sent']:,}; goal: at most 5 % of the time")
        print(f"loadavg after: {os.getloadavg()}")
    finally:
        if store:
            store.stop()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

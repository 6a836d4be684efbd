#!/usr/bin/python3
"""Reading a whole archive over HTTP with the CLI against `curl -o` of the same URL, on loopback.

An archive of 1,000 UINT8 tensors of 1 MiB of random bytes each (1,000 MiB of payload) is made
once, untimed, with `onnxzip convert` of a legacy model, in a scratch folder under
ONNXZIP_BENCH_DIR, else TMPDIR, else /tmp (about 2.5 GiB free needed; removed at exit). nginx
(/usr/sbin/nginx, Debian nginx-light) serves it on 127.0.0.1 at an ephemeral port, in the
foreground with its own configuration and logs in the scratch folder (as tests/support/
nginx_server.cpp runs it), plus `sendfile on; tcp_nopush on;` as Debian's stock nginx.conf has
them (--no-sendfile leaves nginx's default, off). nginx is stopped at exit, on error too.

For ROUNDS rounds, each whole-archive read runs right after a `curl -s -o` of the URL (the
yardstick), hot cache on the server's side: `onnxzip verify URL` (download into an unlinked file
in TMPDIR, then every CRC-32), `onnxzip extract URL DIR` and `onnxzip convert --external-data URL
OUT.onnx` (both write the legacy model's 1,000 MiB data file while they download: each payload
pwritten to its place as its range arrives, CRC-32 checked on the way). TMPDIR is set to the
scratch folder, so curl's output and onnxzip's files land on the same file system; outputs are
removed and the file system synced between runs, untimed. `onnxzip info URL` runs once per round. Each run's
requests and bytes come from nginx's access log; its memory from GNU time (%M, peak RSS, which
counts the pages of the mapped download) and from /proc/PID/status sampled every 20 ms (peak
RssAnon, which does not).

  bench/remote_read_bench.py [--rounds N] [--no-sendfile] ONNXZIP

Printed: how curl and nginx ran, the load before and after, per operation the medians with
their range, the median of the per-round ratios run / the curl before it, requests and bytes.
The goal (issue 23) is at least 90 % of curl's throughput: a ratio of at most 1.11.
"""
import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

TENSORS = 1000
TENSOR_BYTES = 1 << 20
NGINX = "/usr/sbin/nginx"


def write_legacy_model(folder):
    """model.onnx + model.onnx.data: 1,000 UINT8 tensors of 1 MiB of random bytes, back to back."""
    import numpy as np
    from onnx import TensorProto, helper, save_model

    os.makedirs(folder)
    rng = np.random.default_rng(7)
    inits, nodes = [], []
    with open(os.path.join(folder, "model.onnx.data"), "wb") as data:
        for i in range(TENSORS):
            data.write(rng.bytes(TENSOR_BYTES))
            name = f"model.layers.{i // 4}.mlp.w{i % 4}"
            tensor = TensorProto(name=name, data_type=TensorProto.UINT8, dims=[TENSOR_BYTES])
            tensor.data_location = TensorProto.EXTERNAL
            for key, value in (("location", "model.onnx.data"), ("offset", i * TENSOR_BYTES),
                               ("length", TENSOR_BYTES)):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, str(value)
            inits.append(tensor)
            nodes.append(helper.make_node("Add", [f"x{i}", name], [f"x{i + 1}"]))
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x0", TensorProto.UINT8, None)],
        [helper.make_tensor_value_info(f"x{TENSORS}", TensorProto.UINT8, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    save_model(model, os.path.join(folder, "model.onnx"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def accepts_connections(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


class Nginx:
    """nginx in the foreground on 127.0.0.1, its configuration and logs in `folder`."""

    def __init__(self, folder, root, sendfile):
        self.folder, self.process = folder, None
        self.log = os.path.join(folder, "access.log")
        self.sendfile = "sendfile on; tcp_nopush on;" if sendfile else "sendfile off;"
        os.makedirs(folder)
        for _ in range(5):  # The port may be taken between free_port() and nginx's bind.
            self.port = free_port()
            config = os.path.join(folder, "nginx.conf")
            with open(config, "w") as out:
                out.write(self.configuration(root))
            startup = os.path.join(folder, "startup.log")
            with open(startup, "a") as log:
                self.process = subprocess.Popen(
                    [NGINX, "-p", folder + "/", "-e", startup, "-c", config],
                    stdout=log, stderr=log)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and self.process.poll() is None:
                if accepts_connections(self.port):
                    return
                time.sleep(0.01)
            self.stop()
        raise RuntimeError(f"nginx did not start: {open(startup).read()}")

    def configuration(self, root):
        d = self.folder
        return "\n".join([
            "user root;" if os.geteuid() == 0 else "",  # Else workers run as nobody.
            "worker_processes 1;", "daemon off;", "master_process on;",
            f"pid {d}/nginx.pid;", f"error_log {d}/error.log warn;",
            "events { worker_connections 256; }",
            "http {",
            "  log_format counting '$request_method $uri \"$http_range\" $status $body_bytes_sent';",
            f"  access_log {self.log} counting;",
            f"  {self.sendfile}",
            *(f"  {kind}_temp_path {d}/{kind};"
              for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")),
            "  types { application/octet-stream onnxz; }",
            f"  server {{ listen 127.0.0.1:{self.port}; location /files/ {{ alias {root}/; }} }}",
            "}", ""])

    def url(self, name):
        return f"http://127.0.0.1:{self.port}/files/{name}"

    def log_size(self):
        return os.path.getsize(self.log) if os.path.exists(self.log) else 0

    def requests_since(self, offset):
        """(count, body bytes, ranges) of the requests logged after `offset`."""
        time.sleep(0.05)  # nginx logs a request when it ends, which may trail the client's exit.
        with open(self.log) as log:
            log.seek(offset)
            lines = log.read().splitlines()
        ranges = [line.split('"')[1] for line in lines]
        return len(lines), sum(int(line.split()[-1]) for line in lines), ranges

    def stop(self):
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()  # Fast shutdown; the master waits for its worker.
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def run_measured(command, env, folder):
    """Runs `command`; returns (seconds, peak RSS in KiB, peak sampled RssAnon in KiB).

    The peak RSS is GNU time's %M: its small process forks the command, whereas a child forked
    (or vforked) from this Python process would start its ru_maxrss at Python's size. RSS
    counts the mapped pages of a file; RssAnon, sampled from /proc every 20 ms, does not."""
    report = os.path.join(folder, "time.txt")
    start = time.perf_counter()
    process = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", report] + command,
                               stdout=subprocess.DEVNULL, env=env)
    peak_anon, done = [0], threading.Event()

    def sample():
        children = f"/proc/{process.pid}/task/{process.pid}/children"
        while not done.is_set():
            try:
                with open(children) as pids:
                    pid = pids.read().split()[0]
                with open(f"/proc/{pid}/status") as status:
                    for line in status:
                        if line.startswith("RssAnon:"):
                            peak_anon[0] = max(peak_anon[0], int(line.split()[1]))
            except (OSError, IndexError):
                pass
            done.wait(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        process.wait()
    finally:
        done.set()
        sampler.join()
    seconds = time.perf_counter() - start
    if process.returncode != 0:
        raise subprocess.CalledProcessError(process.returncode, command)
    with open(report) as peak:
        rss = int(peak.read().split()[-1])
    os.remove(report)
    return seconds, rss, peak_anon[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-sendfile", action="store_true",
                        help="leave nginx's sendfile off (its default; the tests' configuration)")
    parser.add_argument("tool", help="path of an onnxzip binary built with libcurl")
    args = parser.parse_args()
    for program in (NGINX, shutil.which("curl")):
        if program is None or not os.access(program, os.X_OK):
            sys.exit(f"remote_read_bench: needs {NGINX} (nginx-light) and curl")
    root = os.environ.get("ONNXZIP_BENCH_DIR") or os.environ.get("TMPDIR") or "/tmp"
    work = tempfile.mkdtemp(prefix="onnxzip_remote_read_bench.", dir=root)
    server = None
    try:
        write_legacy_model(os.path.join(work, "legacy"))
        os.makedirs(os.path.join(work, "root"))
        tool = os.path.abspath(args.tool)
        subprocess.run([tool, "-q", "convert", f"{work}/legacy/model.onnx",
                        f"{work}/root/model.onnxz"], check=True)
        shutil.rmtree(os.path.join(work, "legacy"))
        server = Nginx(os.path.join(work, "nginx"), os.path.join(work, "root"),
                       not args.no_sendfile)
        run(work, tool, server, args.rounds)
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


def run(work, tool, server, rounds):
    url = server.url("model.onnxz")
    size = os.path.getsize(f"{work}/root/model.onnxz")
    out = f"{work}/out"
    env = dict(os.environ, TMPDIR=work)  # onnxzip's download on the same file system as curl's.
    operations = {
        "verify": [tool, "-q", "verify", url],
        "extract": [tool, "-q", "extract", url, out],
        "convert --external": [tool, "-q", "convert", "--external-data", url, f"{out}/m.onnx"],
    }

    def timed(command):
        os.makedirs(out)
        subprocess.run(["sync", "-f", work], check=True)
        offset = server.log_size()
        seconds, rss, anon = run_measured(command, env, work)
        requests = server.requests_since(offset)
        shutil.rmtree(out)
        return seconds, rss, anon, requests

    curl = ["curl", "-s", "-o", f"{out}/curl.bin", url]
    version = subprocess.run(["curl", "--version"], capture_output=True, text=True).stdout
    nginx_version = subprocess.run([NGINX, "-v"], capture_output=True, text=True).stderr.strip()
    file_system = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "-T", work],
                                 capture_output=True, text=True).stdout.strip()
    print(f"archive: {TENSORS} tensors of {TENSOR_BYTES >> 20} MiB, {size:,} bytes, at {url}")
    print(f"server: {nginx_version}, 1 worker, {server.sendfile}")
    print(f"yardstick: {' '.join(curl[:4])} URL ({version.split(chr(10))[0]})")
    print(f"kernel {os.uname().release}; outputs and onnxzip's download (TMPDIR) on "
          f"{file_system or 'unknown'}, synced before each run")
    print(f"load before: {open('/proc/loadavg').read().strip()} ({os.cpu_count()} cores)")
    times, ratios, memory, traffic = {}, {}, {}, {}
    for _ in range(rounds):
        for name, command in operations.items():
            yardstick = timed(curl)
            result = timed(command)
            for key, (seconds, rss, anon, requests) in ((f"curl (before {name})", yardstick),
                                                        (name, result)):
                times.setdefault(key, []).append(seconds)
                memory.setdefault(key, []).append((rss, anon))
                traffic[key] = requests
            ratios.setdefault(name, []).append(result[0] / yardstick[0])
        info = timed([tool, "info", url])
        times.setdefault("info", []).append(info[0])
        memory.setdefault("info", []).append(info[1:3])
        traffic["info"] = info[3]
    print(f"load after:  {open('/proc/loadavg').read().strip()}")

    median = statistics.median
    print(f"\n{rounds} rounds; seconds as median [min..max]; ratio: median of run / the curl "
          f"before it [min..max]; goal: at most {1 / 0.9:.2f} (90 % of curl's throughput)")
    for key, seconds in times.items():
        line = f"  {key:24} {median(seconds):7.3f} s [{min(seconds):.3f}..{max(seconds):.3f}]"
        if key in ratios:
            r = ratios[key]
            line += (f"  {size / median(seconds) / 2**20:6.0f} MiB/s   ratio {median(r):.3f} "
                     f"[{min(r):.3f}..{max(r):.3f}]")
        elif key.startswith("curl"):
            line += f"  {size / median(seconds) / 2**20:6.0f} MiB/s"
        print(line)
    print("\nrequests per run (nginx access log, last round), bytes sent, peak memory "
          "(max over rounds)")
    for key, (count, sent, ranges) in traffic.items():
        rss = max(m[0] for m in memory[key])
        anon = max(m[1] for m in memory[key])
        ranges_text = ", ".join(ranges[:3]) + (f", ... ({len(set(ranges))} distinct)"
                                               if len(ranges) > 3 else "")
        anon_text = f"{anon / 1024:6.1f} MiB" if anon else "   (not sampled: too short)"
        print(f"  {key:24} {count:3} requests, {sent:>13,} bytes; RSS {rss / 1024:7.1f} MiB, "
              f"RssAnon {anon_text}; Range: {ranges_text or '-'}")


if __name__ == "__main__":
    sys.exit(main())

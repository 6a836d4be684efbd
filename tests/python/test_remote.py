"""Remote archives from Python: onnxzip.open / load / load_file of an http:// URL served by a
real nginx (started here as tests/support/nginx_server.cpp starts it, its access log counting the
requests), the request budget, results equal to the local ones, headers for private hubs, digest
checking over HTTP, and the GIL released during a slow transfer (tests/support/fault_proxy.py)."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import threading
import time

import numpy as np
import onnx
import pytest

import onnxzip
from conftest import make_model

NGINX = "/usr/sbin/nginx"
SUPPORT = pathlib.Path(__file__).resolve().parent.parent / "support"

pytestmark = pytest.mark.skipif(not os.access(NGINX, os.X_OK), reason="no nginx")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _accepts(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class Nginx:
    """nginx on 127.0.0.1 and an ephemeral port, serving `root` under /files/ (and /private/,
    which wants "Authorization: Bearer secret"), logging "$method $uri "$range" $status
    $bytes" a request a line."""

    def __init__(self, folder):
        self.root = folder / "root"
        self.root.mkdir()
        self.log = folder / "access.log"
        for _ in range(5):
            self.port = _free_port()
            config = folder / "nginx.conf"
            user = "user root;\n" if os.geteuid() == 0 else ""
            config.write_text(
                user +
                "worker_processes 1;\ndaemon off;\nmaster_process on;\n"
                f"pid {folder}/nginx.pid;\nerror_log {folder}/error.log warn;\n"
                "events { worker_connections 256; }\n"
                "http {\n"
                "  log_format counting '$request_method $uri \"$http_range\" $status "
                "$body_bytes_sent';\n"
                f"  access_log {self.log} counting;\n"
                + "".join(f"  {kind}_temp_path {folder}/{kind};\n"
                          for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
                + "  types { application/octet-stream onnxz; }\n"
                "  server {\n"
                f"    listen 127.0.0.1:{self.port};\n"
                f"    location /files/ {{ alias {self.root}/; }}\n"
                "    location /private/ {\n"
                "      if ($http_authorization != \"Bearer secret\") { return 401; }\n"
                f"      alias {self.root}/;\n"
                "    }\n"
                "  }\n"
                "}\n")
            startup = open(folder / "startup.log", "ab")
            self.process = subprocess.Popen(
                [NGINX, "-p", f"{folder}/", "-e", f"{folder}/startup.log", "-c", str(config)],
                stdout=startup, stderr=startup)
            startup.close()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and self.process.poll() is None:
                if _accepts(self.port):
                    self.forgotten = 0
                    return
                time.sleep(0.01)
            self.stop()
        raise RuntimeError("nginx did not start: " + (folder / "startup.log").read_text())

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def requests(self):
        """The requests since the last forget(): (method, uri, range, status, bytes) each."""
        time.sleep(0.05)  # nginx writes its log line after the response.
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        rows = []
        for line in lines[self.forgotten:]:
            method, uri, rest = line.split(" ", 2)
            _, range_, rest = rest.split('"', 2)
            status, sent = rest.split()
            rows.append((method, uri, range_, int(status), int(sent)))
        return rows

    def forget(self):
        self.forgotten += len(self.requests())

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="module")
def nginx(tmp_path_factory):
    server = Nginx(tmp_path_factory.mktemp("nginx"))
    yield server
    server.stop()


@pytest.fixture
def served(nginx, tmp_path):
    """An archive of two 2 MiB tensors, a 4 KiB one and an inline one, larger than the first
    request's 1 MiB tail, served by nginx: its local path, URL, arrays and model; the log
    forgotten so far."""
    rng = np.random.default_rng(7)
    arrays = {
        "encoder.weight": rng.standard_normal((1024, 512)).astype(np.float32),
        "encoder.bias": rng.integers(-9, 9, size=(1 << 18,), dtype=np.int64),
        "decoder.weight": rng.standard_normal((32, 32)).astype(np.float32),
        "tiny": np.array([1, 2, 3], dtype=np.int8),
    }
    model = make_model([onnx.numpy_helper.from_array(a, n) for n, a in arrays.items()])
    path = tmp_path / "model.onnxz"
    onnxzip.save(model, path)
    name = f"{os.getpid()}-{time.monotonic_ns()}.onnxz"
    shutil.copy(path, nginx.root / name)
    nginx.forget()
    return path, nginx.url("/files/" + name), arrays, model


@pytest.fixture(autouse=True)
def needs_http():
    if not onnxzip._onnxzip.http_available():
        pytest.skip("the extension was built without libcurl")


def test_open_keys_and_model_take_one_request_and_each_tensor_one(served, nginx):
    path, url, arrays, model = served
    with onnxzip.open(url) as archive:
        keys = archive.keys()
        info = archive.tensor_info("encoder.weight")
        stored = archive.model
        assert len(nginx.requests()) == 1  # The suffix request brought all of that.
        assert nginx.requests()[0][2].startswith("bytes=-")
        weight = archive.get_tensor("encoder.weight")
        assert len(nginx.requests()) == 2
    with onnxzip.open(path) as local:
        assert keys == local.keys()
        # Where the data starts is known once its local header is read, with the data.
        assert (info.offset, info.alignment) == (None, 0)
        assert info == dataclasses.replace(local.tensor_info("encoder.weight"), offset=None,
                                           alignment=0)
        assert stored == local.model
    np.testing.assert_array_equal(weight, arrays["encoder.weight"])
    assert not weight.flags.writeable
    assert weight.flags.owndata or weight.base is not None
    assert weight.ctypes.data % 64 == 0
    assert info.size == arrays["encoder.weight"].nbytes
    assert repr(archive) == f"<onnxzip.Archive {url!r}: closed>"


def test_get_tensors_of_adjacent_tensors_is_one_merged_request(served, nginx):
    _, url, arrays, _ = served
    with onnxzip.open(url) as archive:
        nginx.forget()
        tensors = archive.get_tensors(["encoder.weight", "encoder.bias", "tiny"])
        arrays = {k: v for k, v in arrays.items() if k != "decoder.weight"}
        requests = nginx.requests()
        with pytest.raises(KeyError, match="nope"):
            archive.get_tensors(["encoder.weight", "nope"])
        assert len(nginx.requests()) == 1  # Nothing read for an unknown name.
    assert len(requests) == 1, requests  # Both entries are adjacent; "tiny" is inline.
    # Merged: the weight and the part of the bias that the first request's tail did not bring.
    assert requests[0][4] > arrays["encoder.weight"].nbytes
    assert sorted(tensors) == sorted(arrays)
    for name, array in arrays.items():
        np.testing.assert_array_equal(tensors[name], array)
        assert tensors[name].dtype == array.dtype
    assert tensors["encoder.bias"].ctypes.data % 64 == 0


def test_remote_results_equal_local_ones(served, nginx):
    path, url, _, _ = served
    assert onnxzip.load(url) == onnxzip.load(path)
    loaded = nginx.requests()
    assert len(loaded) == 2, loaded  # The tail, then the payloads merged.
    assert onnxzip.load(url, load_external_data=False) == onnxzip.load(path,
                                                                       load_external_data=False)
    remote = onnxzip.load_file(url)
    local = onnxzip.load_file(path)
    assert remote.keys() == local.keys()
    for name in local:
        np.testing.assert_array_equal(remote[name], local[name])
    with onnxzip.open(url) as archive, onnxzip.open(path) as local_archive:
        assert archive.tensors == [dataclasses.replace(t, offset=None, alignment=0)
                                   for t in local_archive.tensors]
        assert archive.metadata() == local_archive.metadata()
        for name in local_archive.keys():
            np.testing.assert_array_equal(archive.get_tensor(name), local_archive.get_tensor(name))


def test_a_bigger_model_loads_in_parallel_groups(tmp_path, nginx):
    # 40 tensors of 4 MiB: 160 MiB, read as groups of 64 MiB, each one request.
    rng = np.random.default_rng(1)
    initializers = [onnx.numpy_helper.from_array(
        rng.integers(0, 255, size=(1 << 22,), dtype=np.uint8), f"t{i}") for i in range(40)]
    path = nginx.root / "big.onnxz"
    onnxzip.save(make_model(initializers), path)
    nginx.forget()
    remote = onnxzip.load_file(nginx.url("/files/big.onnxz"))
    requests = nginx.requests()
    assert len(requests) == 1 + 3, requests  # The tail, then ceil(160 / 64) ranges.
    with onnxzip.open(path) as local:
        for name in local.keys():
            np.testing.assert_array_equal(remote[name], local.get_tensor(name))
    path.unlink()


def test_headers_reach_a_private_hub_and_never_show(served, nginx):
    _, url, arrays, _ = served
    private = url.replace("/files/", "/private/")
    with pytest.raises(onnxzip.IOFailure, match="401") as refused:
        onnxzip.open(private, headers={"Authorization": "Bearer wrong"})
    assert "wrong" not in str(refused.value)
    with onnxzip.open(private + "?token=hidden",
                      headers={"Authorization": "Bearer secret"}) as archive:
        np.testing.assert_array_equal(archive.get_tensor("encoder.bias"), arrays["encoder.bias"])
        assert "secret" not in repr(archive) and "hidden" not in repr(archive)
        assert archive.path == private
        with pytest.raises(KeyError) as missing:
            archive.get_tensor("absent")
        assert "hidden" not in str(missing.value)
    with pytest.raises(onnxzip.InvalidArgumentError, match="line break") as bad:
        onnxzip.open(private, headers={"Authorization": "Bearer x\r\nX-Evil: 1"})
    assert "Evil" not in str(bad.value)
    with pytest.raises(onnxzip.InvalidArgumentError, match="URLs only"):
        onnxzip.open(served[0], headers={"A": "b"})


def test_a_missing_url_fails_with_its_status(nginx):
    with pytest.raises(onnxzip.NotFoundError, match="404"):
        onnxzip.open(nginx.url("/files/absent.onnxz"))


def test_check_digests_over_http(served, nginx, tmp_path):
    path, url, arrays, _ = served
    with pytest.raises(onnxzip.CorruptError, match="has no __DIGESTS entry"):
        onnxzip.open(url, check_digests=True)
    onnxzip.sign(path, digests_only=True)
    signed = nginx.root / "signed.onnxz"
    shutil.copy(path, signed)
    with onnxzip.open(nginx.url("/files/signed.onnxz"), check_digests=True) as archive:
        np.testing.assert_array_equal(archive.get_tensor("encoder.weight"),
                                      arrays["encoder.weight"])
    # A payload byte changed with its CRC-32 fixed: caught at the first get, naming the entry.
    from test_integrity import _change_payload_byte_fixing_crc
    _change_payload_byte_fixing_crc(signed, "encoder_weight")
    nginx.forget()
    with onnxzip.open(nginx.url("/files/signed.onnxz"), check_digests=True) as archive:
        np.testing.assert_array_equal(archive.get_tensor("encoder.bias"), arrays["encoder.bias"])
        with pytest.raises(onnxzip.CorruptError, match="entry 'encoder_weight': its SHA-256 is"):
            archive.get_tensor("encoder.weight")
        # Each read of a remote payload brings new bytes, so each is checked.
        with pytest.raises(onnxzip.CorruptError, match="entry 'encoder_weight'"):
            archive.get_tensors(["encoder.bias", "encoder.weight"])
    assert len(nginx.requests()) == 4  # open, bias, weight, both merged.
    signed.unlink()


def test_the_gil_is_released_during_a_slow_transfer(served, nginx, tmp_path):
    _, url, arrays, _ = served
    port_file = tmp_path / "port"
    proxy = subprocess.Popen(["/usr/bin/python3", str(SUPPORT / "fault_proxy.py"),
                              nginx.url(""), str(port_file)], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not port_file.exists():
            assert time.monotonic() < deadline, "the fault proxy did not start"
            time.sleep(0.01)
        name = url.rsplit("/", 1)[1]
        slow = f"http://127.0.0.1:{port_file.read_text()}/slow/{name}"
        with onnxzip.open(slow) as archive:  # The first request is not slowed.
            got = {}
            ticks = 0
            worker = threading.Thread(
                target=lambda: got.update(w=archive.get_tensor("encoder.weight")))
            started = time.monotonic()
            worker.start()
            while worker.is_alive():
                ticks += 1  # Runs only while the transfer does not hold the GIL.
                time.sleep(0.001)
            worker.join()
            assert time.monotonic() - started >= 1.4  # The transfer was slow...
            # ...and this thread kept running meanwhile: a transfer that held the GIL would let
            # it tick a few times at most. Not 1.5 s / 1 ms: on a busy machine a sleep of 1 ms
            # lasts longer.
            assert ticks >= 20
        np.testing.assert_array_equal(got["w"], arrays["encoder.weight"])
    finally:
        proxy.kill()
        proxy.wait()


def test_verify_convert_and_repack_take_a_url(served, nginx, tmp_path):
    # Were: "no such file" for a URL that open() and load() read.
    path, url, arrays, model = served
    private = url.replace("/files/", "/private/") + "?token=hidden"
    headers = {"Authorization": "Bearer secret"}
    report = onnxzip.verify(private, headers=headers)
    assert report.ok, report.findings
    assert report == onnxzip.verify(path)
    with pytest.raises(onnxzip.IOFailure, match="401") as refused:
        onnxzip.verify(private)
    assert "hidden" not in str(refused.value)

    legacy = tmp_path / "m.onnx"
    assert onnxzip.convert(private, legacy, headers=headers) == "onnxz"
    assert onnx.load(str(legacy)) == onnxzip.load(path)
    with pytest.raises(onnxzip.InvalidArgumentError, match="name the output .onnx"):
        onnxzip.convert(url, tmp_path / "m.onnxz")
    shutil.copy(legacy, nginx.root / "m.onnx")
    assert onnxzip.convert(nginx.url("/files/m.onnx"), tmp_path / "back.onnxz") == "legacy"
    assert onnxzip.load(tmp_path / "back.onnxz") == onnxzip.load(path)

    result = onnxzip.repack(private, tmp_path / "re.onnxz", headers=headers)
    assert result.dropped_entries == ()
    assert onnxzip.load(tmp_path / "re.onnxz") == onnxzip.load(path)
    with pytest.raises(onnxzip.InvalidArgumentError, match="URLs only"):
        onnxzip.repack(path, tmp_path / "x.onnxz", headers=headers)

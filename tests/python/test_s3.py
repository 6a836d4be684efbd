"""s3://bucket/key from Python: onnxzip.open / load / load_file of an object in moto's S3 server
(signature checking on) behind the counting proxy of tests/support/s3_server.py, uploaded by boto3;
results equal to the local ones, the request budget, and refusals that name the object without
the secret. Skipped where no Python has moto and boto3 (the server runs in that Python, which need
not be this one)."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import time
import urllib.request

import numpy as np
import onnx
import pytest

import onnxzip
from conftest import make_model

SUPPORT = pathlib.Path(__file__).resolve().parent.parent / "support"


def _moto_python():
    candidates = [os.environ.get("ONNXZIP_MOTO_PYTHON"), shutil.which("python3"),
                  os.path.expanduser("~/.pyenv/shims/python3"), "/root/.pyenv/shims/python3"]
    for candidate in candidates:
        if not candidate:
            continue
        try:
            if subprocess.run([candidate, "-c", "import moto.server, boto3"],
                              capture_output=True, timeout=60).returncode == 0:
                return candidate
        except (OSError, subprocess.TimeoutExpired):
            continue
    return None


MOTO_PYTHON = _moto_python()
pytestmark = pytest.mark.skipif(MOTO_PYTHON is None,
                                reason="no Python with moto 5 and boto3 (ONNXZIP_MOTO_PYTHON)")


class Store:
    """moto behind the counting proxy, with `uploads` ({key: path}) in bucket "models"."""

    def __init__(self, folder, uploads):
        state = folder / "state.json"
        log = open(folder / "server.log", "wb")
        self.process = subprocess.Popen(
            [MOTO_PYTHON, str(SUPPORT / "s3_server.py"), str(state), "models"]
            + [f"{key}={path}" for key, path in uploads.items()], stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and self.process.poll() is None:
            if state.exists():
                self.__dict__.update(json.loads(state.read_text()))
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("the S3 server did not start: " + (folder / "server.log").read_text())

    def _control(self, method, path):
        request = urllib.request.Request(self.endpoint + path, method=method)
        with urllib.request.urlopen(request) as answer:
            return json.loads(answer.read())

    def requests(self):
        return self._control("GET", "/__proxy/stats")["requests"]

    def reset(self):
        self._control("POST", "/__proxy/reset")

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("s3")
    rng = np.random.default_rng(3)
    arrays = {f"w{i}": rng.standard_normal((128, 128)).astype(np.float32) for i in range(40)}
    model = make_model([onnx.numpy_helper.from_array(a, n) for n, a in arrays.items()])
    path = folder / "model.onnxz"
    onnxzip.save(model, path)
    server = Store(folder, {"dir/model.onnxz": path})
    server.local = path
    server.arrays = arrays
    yield server
    server.stop()


@pytest.fixture
def aws_environment(store, monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", store.access_key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", store.secret_access_key)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", store.endpoint)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    store.reset()
    return store


def test_open_load_and_load_file_read_the_object(aws_environment):
    store = aws_environment
    with onnxzip.open("s3://models/dir/model.onnxz") as archive:
        assert store.requests() == 1  # Open, list and model: the first read.
        for name, array in store.arrays.items():
            np.testing.assert_array_equal(archive.get_tensor(name), array)
    tensors = onnxzip.load_file("s3://models/dir/model.onnxz")
    assert set(tensors) == set(store.arrays)
    for name, array in store.arrays.items():
        np.testing.assert_array_equal(tensors[name], array)
    remote = onnxzip.load("s3://models/dir/model.onnxz")
    local = onnxzip.load(store.local)
    assert remote.SerializeToString() == local.SerializeToString()


def test_refusals_name_the_object_and_never_the_secret(aws_environment, monkeypatch):
    with pytest.raises(onnxzip.NotFoundError) as missing:
        onnxzip.open("s3://models/absent.onnxz")
    assert "s3://models/absent.onnxz" in str(missing.value)
    assert "NoSuchKey" in str(missing.value)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-4567")
    with pytest.raises(onnxzip.IOFailure) as refused:
        onnxzip.open("s3://models/dir/model.onnxz")
    assert "SignatureDoesNotMatch" in str(refused.value)
    assert "wrong-secret-4567" not in str(refused.value)
    assert "wrong-secret-4567" not in repr(refused.value)

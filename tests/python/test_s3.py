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

    def set_environment(self, monkeypatch, folder):
        """The AWS variables a user sets for this store, and no config or credentials file
        (`folder`/none) that could override them."""
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", self.access_key_id)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", self.secret_access_key)
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", self.endpoint)
        monkeypatch.setenv("AWS_REGION", "us-east-1")
        monkeypatch.setenv("AWS_CONFIG_FILE", str(folder / "none"))
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(folder / "none"))

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
    store.set_environment(monkeypatch, tmp_path)
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


def _uploads_in_progress(store):
    """The keys of the uploads in bucket "models" not completed or aborted (boto3, in moto's
    Python)."""
    script = ("import boto3,sys;s=boto3.client('s3',endpoint_url=sys.argv[1],region_name="
              "'us-east-1',aws_access_key_id=sys.argv[2],aws_secret_access_key=sys.argv[3]);"
              "print(' '.join(u['Key'] for u in s.list_multipart_uploads(Bucket='models')"
              ".get('Uploads',[])))")
    out = subprocess.run([MOTO_PYTHON, "-c", script, store.endpoint, store.access_key_id,
                          store.secret_access_key], capture_output=True, check=True, text=True)
    return out.stdout.split()


def _object_bytes(store, key):
    script = ("import boto3,sys;s=boto3.client('s3',endpoint_url=sys.argv[1],region_name="
              "'us-east-1',aws_access_key_id=sys.argv[2],aws_secret_access_key=sys.argv[3]);"
              "sys.stdout.buffer.write(s.get_object(Bucket='models',Key=sys.argv[4])['Body']"
              ".read())")
    out = subprocess.run([MOTO_PYTHON, "-c", script, store.endpoint, store.access_key_id,
                          store.secret_access_key, key], capture_output=True)
    return out.stdout if out.returncode == 0 else None


def test_save_save_file_and_writer_upload_the_local_files_bytes(aws_environment, tmp_path):
    store = aws_environment
    model = onnxzip.load(store.local)
    options = onnxzip.S3Options(part_size=5 << 20, parts_in_flight=2)
    assert "secret" not in repr(onnxzip.S3Options(access_key_id="AKID", secret_access_key="secret"))
    onnxzip.save(model, "s3://models/saved.onnxz", s3=options)
    onnxzip.save(model, tmp_path / "saved.onnxz")
    assert _object_bytes(store, "saved.onnxz") == (tmp_path / "saved.onnxz").read_bytes()
    onnxzip.save_file(store.arrays, "s3://models/weights.onnxz")
    onnxzip.save_file(store.arrays, tmp_path / "weights.onnxz")
    assert _object_bytes(store, "weights.onnxz") == (tmp_path / "weights.onnxz").read_bytes()
    onnxzip.repack(store.local, "s3://models/repacked.onnxz")
    onnxzip.repack(store.local, tmp_path / "repacked.onnxz")
    assert _object_bytes(store, "repacked.onnxz") == (tmp_path / "repacked.onnxz").read_bytes()
    # An existing object is kept unless overwrite is asked for.
    with pytest.raises(onnxzip.IOFailure) as exists:
        onnxzip.save(model, "s3://models/saved.onnxz")
    assert "412 PreconditionFailed" in str(exists.value)
    onnxzip.save(model, "s3://models/saved.onnxz", s3=onnxzip.S3Options(overwrite=True))
    assert _uploads_in_progress(store) == []


def test_an_exception_inside_the_writer_aborts_the_upload(aws_environment):
    store = aws_environment
    with pytest.raises(RuntimeError, match="exporter failed"):
        with onnxzip.ArchiveWriter("s3://models/aborted.onnxz") as writer:
            writer.add_tensor("w", np.ones((3 << 20,), np.float32))  # 12 MiB, in the first part.
            raise RuntimeError("exporter failed")
    assert _uploads_in_progress(store) == []
    assert _object_bytes(store, "aborted.onnxz") is None


def test_verify_convert_and_repack_read_s3_objects(aws_environment, tmp_path):
    store = aws_environment
    remote = onnxzip.verify("s3://models/dir/model.onnxz")
    local = onnxzip.verify(store.local)
    assert remote.ok == local.ok and len(remote.findings) == len(local.findings)
    onnxzip.convert("s3://models/dir/model.onnxz", tmp_path / "remote.onnx")
    onnxzip.convert(store.local, tmp_path / "local.onnx")
    assert (tmp_path / "remote.onnx").read_bytes() == (tmp_path / "local.onnx").read_bytes()
    onnxzip.repack("s3://models/dir/model.onnxz", tmp_path / "remote.onnxz")
    onnxzip.repack(store.local, tmp_path / "local.onnxz")
    assert (tmp_path / "remote.onnxz").read_bytes() == (tmp_path / "local.onnxz").read_bytes()


def test_explicit_s3_options_override_the_environment(aws_environment, monkeypatch, tmp_path):
    """s3=onnxzip.S3Options(...) reaches the reads, the edits and signing: the environment's keys
    are wrong and it names no endpoint (nor do ~/.aws's files), the options give the store."""
    store = aws_environment
    if shutil.which("openssl") is None:
        pytest.skip("no openssl for the signing key")
    private, public = tmp_path / "key.pem", tmp_path / "key.pub.pem"
    subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out",
                    str(private)], check=True, capture_output=True)
    subprocess.run(["openssl", "ec", "-in", str(private), "-pubout", "-out", str(public)],
                   check=True, capture_output=True)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-4567")
    with pytest.raises(onnxzip.IOFailure):
        onnxzip.open("s3://models/dir/model.onnxz")
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3")
    s3 = onnxzip.S3Options(access_key_id=store.access_key_id,
                           secret_access_key=store.secret_access_key,
                           endpoint_url=store.endpoint, region="us-east-1")
    with pytest.raises(TypeError):
        onnxzip.open("s3://models/dir/model.onnxz", s3={"region": "us-east-1"})

    url = "s3://models/explicit/model.onnxz"
    local = tmp_path / "model.onnxz"
    shutil.copyfile(store.local, local)
    onnxzip.save(onnxzip.load(store.local), url, s3=onnxzip.S3Options(
        access_key_id=store.access_key_id, secret_access_key=store.secret_access_key,
        endpoint_url=store.endpoint, region="us-east-1", overwrite=True))
    onnxzip.save(onnxzip.load(store.local), local)
    with onnxzip.open(url, s3=s3) as archive:
        np.testing.assert_array_equal(archive.get_tensor("w3"), store.arrays["w3"])
    assert set(onnxzip.load_file(url, s3=s3)) == set(store.arrays)
    assert onnxzip.load(url, s3=s3).SerializeToString() == \
        onnxzip.load(local).SerializeToString()
    assert onnxzip.verify(url, s3=s3).loadable

    def set_license(model):
        onnx.helper.set_model_props(model, {"license": "MIT"})

    onnxzip.edit_model_properties(url, set_license, s3=s3)
    onnxzip.edit_model_properties(local, set_license)
    assert _object_bytes(store, "explicit/model.onnxz") == local.read_bytes()
    model = onnxzip.open(local).model
    model.doc_string = "replaced"
    onnxzip.replace_model(url, model, s3=s3)
    onnxzip.replace_model(local, model)
    assert _object_bytes(store, "explicit/model.onnxz") == local.read_bytes()
    assert onnxzip.sign(url, key=private, s3=s3).entries_read
    assert not onnxzip.sign(url, key=private, s3=s3).entries_read
    report = onnxzip.verify(url, public_key=public, s3=s3)
    assert report.loadable and report.signature == "verified", report
    assert _uploads_in_progress(store) == []

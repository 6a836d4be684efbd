"""Edits and signing of an archive in a bucket from Python (issue 33 item 6): onnxzip.edit_model,
edit_model_properties, replace_model and sign on s3://bucket/key give the object a local edit of
the same bytes gives, byte for byte, as an independent client (Debian's botocore) downloads it;
the prefix is copied inside the store, and a concurrent writer fails the edit."""

from __future__ import annotations

import io
import shutil
import subprocess
import zipfile

import numpy as np
import onnx
import pytest

import onnxzip
from conftest import make_model
from test_s3 import MOTO_PYTHON, Store

botocore_session = pytest.importorskip("botocore.session")
from botocore.config import Config  # noqa: E402

pytestmark = pytest.mark.skipif(MOTO_PYTHON is None,
                                reason="no Python with moto 5 and boto3 (ONNXZIP_MOTO_PYTHON)")

URL = "s3://models/edit/model.onnxz"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("s3edit")
    rng = np.random.default_rng(5)
    # 12 tensors of 512 KiB: 6 MiB before the model, copied inside the store.
    arrays = {f"w{i}": rng.standard_normal((512, 256)).astype(np.float32) for i in range(12)}
    model = make_model([onnx.numpy_helper.from_array(a, n) for n, a in arrays.items()])
    path = folder / "model.onnxz"
    onnxzip.save(model, path)
    server = Store(folder, {})
    server.original = path
    yield server
    server.stop()


@pytest.fixture
def s3(store, monkeypatch, tmp_path):
    store.set_environment(monkeypatch, tmp_path)
    client = botocore_session.get_session().create_client(
        "s3", endpoint_url=store.endpoint, region_name="us-east-1",
        aws_access_key_id=store.access_key_id, aws_secret_access_key=store.secret_access_key,
        config=Config(s3={"addressing_style": "path"}))
    client.put_object(Bucket="models", Key="edit/model.onnxz",
                      Body=store.original.read_bytes())
    store.reset()
    return client


def _object(s3):
    return s3.get_object(Bucket="models", Key="edit/model.onnxz")["Body"].read()


def _entries(data):
    """Names and bytes in file order; a signature's bytes left out (ECDSA signs with a random
    nonce: two signings of the same statement differ)."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return [(info.filename, b"" if info.filename == "__SIGNATURE" else archive.read(info))
                for info in sorted(archive.infolist(), key=lambda i: i.header_offset)]


def _assert_same_archive(data, local):
    """The object holds what the local edit wrote: the same bytes, or for a signed archive the
    same entries with a signature of its own, which verifies."""
    expected = local.read_bytes()
    if data == expected:
        return
    assert _entries(data) == _entries(expected)
    copy = local.parent / "object.onnxz"
    copy.write_bytes(data)
    assert onnxzip.verify(copy).ok


def _local_copy(store, tmp_path):
    local = tmp_path / "model.onnxz"
    shutil.copyfile(store.original, local)
    return local


def _set_license(model):
    model.metadata_props.add(key="license", value="MIT")


@pytest.fixture(scope="module")
def key_pem(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("no openssl tool for the signing key")
    path = tmp_path_factory.mktemp("keys") / "key.pem"
    subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out",
                    str(path)], check=True)
    return path


def _edits(key_pem):
    def rename_graph(model):
        model.graph.name = "renamed in the bucket"

    def replace(path):
        with onnxzip.open(path) as archive:
            model = onnx.ModelProto()
            model.CopyFrom(archive.model)
        model.doc_string = "replaced"
        return onnxzip.replace_model(path, model)

    return {
        "edit_model_properties": lambda p: onnxzip.edit_model_properties(p, _set_license),
        "edit_model": lambda p: onnxzip.edit_model(p, rename_graph),
        "replace_model": replace,
        "sign, then edit with the key": lambda p: (
            onnxzip.sign(p, key=key_pem),
            onnxzip.edit_model_properties(p, _set_license, key=key_pem))[-1],
    }


@pytest.mark.parametrize("kind", ["edit_model_properties", "edit_model", "replace_model",
                                  "sign, then edit with the key"])
def test_each_edit_gives_the_local_bytes(store, s3, tmp_path, key_pem, kind):
    edit = _edits(key_pem)[kind]
    local = _local_copy(store, tmp_path)
    remote_result = edit(URL)
    local_result = edit(str(local))
    _assert_same_archive(_object(s3), local)
    assert remote_result.model_size == local_result.model_size
    assert not remote_result.object_rewritten
    assert s3.list_multipart_uploads(Bucket="models").get("Uploads", []) == []


def test_sign_without_digests_reads_the_entries_and_says_so(store, s3, tmp_path, key_pem):
    local = _local_copy(store, tmp_path)
    remote = onnxzip.sign(URL, key=key_pem)
    assert remote.entries_read
    local_result = onnxzip.sign(str(local), key=key_pem)
    assert remote.entries == local_result.entries
    _assert_same_archive(_object(s3), local)
    again = onnxzip.sign(URL, key=key_pem)
    assert not again.entries_read


def test_a_concurrent_writer_fails_the_edit(store, s3):
    store._control("POST", "/__proxy/fault?kind=overwrite&op=complete")
    with pytest.raises(onnxzip.ChangedError) as raised:
        onnxzip.edit_model_properties(URL, _set_license)
    assert URL in str(raised.value)
    assert _object(s3) == b"written by another client meanwhile"
    assert s3.list_multipart_uploads(Bucket="models").get("Uploads", []) == []

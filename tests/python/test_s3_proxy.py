"""The test store's conditions and faults for edits in a bucket (tests/support/s3_server.py), checked
with an independent client (Debian's botocore): moto ignores If-Match on CompleteMultipartUpload and
x-amz-copy-source-if-match on UploadPartCopy, so the proxy checks them against the object's ETag,
and a concurrent writer and S3's 409 ConditionalRequestConflict are injected on request. The edits
of issue 33 rely on these answers being S3's; this is where they are shown to be."""

from __future__ import annotations

import pytest

from test_s3 import MOTO_PYTHON, Store

botocore_session = pytest.importorskip("botocore.session")
from botocore.config import Config  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402

pytestmark = pytest.mark.skipif(MOTO_PYTHON is None,
                                reason="no Python with moto 5 and boto3 (ONNXZIP_MOTO_PYTHON)")

KEY = "edit/object.bin"
# Every part but the last has at least 5 MiB, in moto as in S3: the copied prefix is that long.
PREFIX = 5 << 20
ORIGINAL = bytes(range(256)) * (PREFIX // 256 + 64)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("s3proxy")
    path = folder / "object.bin"
    path.write_bytes(ORIGINAL)
    server = Store(folder, {KEY: path})
    yield server
    server.stop()


@pytest.fixture
def s3(store):
    client = botocore_session.get_session().create_client(
        "s3", endpoint_url=store.endpoint, region_name="us-east-1",
        aws_access_key_id=store.access_key_id, aws_secret_access_key=store.secret_access_key,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    client.put_object(Bucket="models", Key=KEY, Body=ORIGINAL)
    store.reset()
    return client


def _control(store, path):
    return store._control("POST", path)


def _stats(store):
    return store._control("GET", "/__proxy/stats")


def _complete_with_if_match(s3, upload, parts, etag):
    """CompleteMultipartUpload with an If-Match header (this botocore has no parameter for it)."""
    def add_header(request, **kwargs):
        request.headers["If-Match"] = etag
    s3.meta.events.register_first("before-sign.s3.CompleteMultipartUpload", add_header)
    try:
        return s3.complete_multipart_upload(Bucket="models", Key=KEY, UploadId=upload,
                                            MultipartUpload={"Parts": parts})
    finally:
        s3.meta.events.unregister("before-sign.s3.CompleteMultipartUpload", add_header)


def _edit(s3, etag, copy_if_match=None, complete_if_match=None):
    """The requests of an edit in the bucket: a copy of the prefix, a new tail, Complete."""
    upload = s3.create_multipart_upload(Bucket="models", Key=KEY)["UploadId"]
    try:
        copied = s3.upload_part_copy(
            Bucket="models", Key=KEY, UploadId=upload, PartNumber=1,
            CopySource={"Bucket": "models", "Key": KEY}, CopySourceRange=f"bytes=0-{PREFIX - 1}",
            CopySourceIfMatch=copy_if_match or etag)
        tail = s3.upload_part(Bucket="models", Key=KEY, UploadId=upload, PartNumber=2,
                              Body=b"new tail")
        parts = [{"PartNumber": 1, "ETag": copied["CopyPartResult"]["ETag"]},
                 {"PartNumber": 2, "ETag": tail["ETag"]}]
        _complete_with_if_match(s3, upload, parts, complete_if_match or etag)
    except ClientError:
        s3.abort_multipart_upload(Bucket="models", Key=KEY, UploadId=upload)
        raise


def _body(s3):
    return s3.get_object(Bucket="models", Key=KEY)["Body"].read()


def _error(raised):
    return raised.value.response["Error"]["Code"], raised.value.response["ResponseMetadata"][
        "HTTPStatusCode"]


def test_an_edit_with_matching_etags_goes_through(store, s3):
    etag = s3.head_object(Bucket="models", Key=KEY)["ETag"]
    _edit(s3, etag)
    assert _body(s3) == ORIGINAL[:PREFIX] + b"new tail"
    log = _stats(store)["log"]
    assert [line["op"] for line in log] == ["head", "create", "copy", "part", "complete", "get"]
    assert log[2]["copy_source_range"] == f"bytes=0-{PREFIX - 1}"
    assert log[2]["copy_source_if_match"] == etag
    assert log[4]["if_match"] == etag


def test_complete_refuses_another_etag(store, s3):
    with pytest.raises(ClientError) as raised:
        _edit(s3, s3.head_object(Bucket="models", Key=KEY)["ETag"],
              complete_if_match='"0123456789abcdef0123456789abcdef"')
    assert _error(raised) == ("PreconditionFailed", 412)
    assert _body(s3) == ORIGINAL


def test_copy_refuses_another_etag(store, s3):
    with pytest.raises(ClientError) as raised:
        _edit(s3, s3.head_object(Bucket="models", Key=KEY)["ETag"],
              copy_if_match='"0123456789abcdef0123456789abcdef"')
    assert _error(raised) == ("PreconditionFailed", 412)
    assert _body(s3) == ORIGINAL


@pytest.mark.parametrize("op", ["copy", "complete"])
def test_a_concurrent_writer_fails_the_edit(store, s3, op):
    etag = s3.head_object(Bucket="models", Key=KEY)["ETag"]
    _control(store, f"/__proxy/fault?kind=overwrite&op={op}")
    with pytest.raises(ClientError) as raised:
        _edit(s3, etag)
    assert _error(raised) == ("PreconditionFailed", 412)
    assert _body(s3) == b"written by another client meanwhile"


def test_conflict_is_injected_on_complete_only(store, s3):
    etag = s3.head_object(Bucket="models", Key=KEY)["ETag"]
    _control(store, "/__proxy/fault?kind=conflict&op=complete")
    with pytest.raises(ClientError) as raised:
        _edit(s3, etag)
    assert _error(raised) == ("ConditionalRequestConflict", 409)
    assert _body(s3) == ORIGINAL
    assert s3.list_multipart_uploads(Bucket="models").get("Uploads", []) == []
    assert [line["fault"] for line in _stats(store)["log"] if line["fault"]] == ["conflict"]

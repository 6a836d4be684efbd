#!/usr/bin/python3
"""Golden values for tests/s3_sigv4_test.cpp, computed by botocore's S3SigV4Auth.

Prints JSON (tests/data/s3/sigv4_golden.json): each case's inputs and what botocore signs for
them: the encoded path, the canonical request, the string to sign, the signature and the headers
it adds. The test reads the inputs from that file and checks onnxzip's signer gives the same; when
botocore is importable (Debian's python3-botocore) it also re-runs this script and checks the file
is what botocore says today. Run: /usr/bin/python3 tests/s3_sigv4_golden.py > tests/data/s3/sigv4_golden.json
"""
import datetime
import hashlib
import json
import sys
from unittest import mock
from urllib.parse import quote

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

# Test keys only (the AWS documentation's example pair): nothing here is a real credential.
ACCESS_KEY = "AKIDEXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"

CASES = [
    {
        "name": "get_range_path_style_http",
        "method": "GET", "scheme": "http", "host": "127.0.0.1:9000",
        "path": "/models/resnet50.onnxz", "query": [],
        "headers": [["Range", "bytes=-1048576"]],
        "body": "", "unsigned_payload": False, "token": "",
        "region": "us-east-1", "time": "2026-11-27T10:48:17",
    },
    {
        "name": "head_unsigned_https_odd_key",
        "method": "HEAD", "scheme": "https", "host": "bucket.s3.eu-west-3.amazonaws.com",
        "path": "/dir one/mod\u00e8l+v2=(1)&x?y#z~*'!$,;:@[].onnxz", "query": [],
        "headers": [],
        "body": "", "unsigned_payload": True, "token": "",
        "region": "eu-west-3", "time": "2026-01-02T03:04:05",
    },
    {
        "name": "create_multipart_with_session_token",
        "method": "POST", "scheme": "https", "host": "s3.us-west-2.amazonaws.com",
        "path": "/bucket/a/b.onnxz", "query": [["uploads", ""]],
        "headers": [["Content-Type", "application/octet-stream"]],
        "body": "", "unsigned_payload": False,
        "token": "IQoJb3JpZ2luX2VjEXAMPLE/TOKEN+with=chars",
        "region": "us-west-2", "time": "2026-11-27T23:59:59",
    },
    {
        "name": "upload_part_with_checksum",
        "method": "PUT", "scheme": "http", "host": "localhost:4566",
        "path": "/bucket/model.onnxz",
        "query": [["uploadId", "2~abc/DEF+ghi=="], ["partNumber", "7"]],
        "headers": [["x-amz-checksum-crc32", "uGAwrg=="], ["Content-Length", "11"]],
        "body": "hello world", "unsigned_payload": False, "token": "",
        "region": "us-east-1", "time": "2026-06-30T12:00:00",
    },
    {
        "name": "upload_part_copy_sorted_copy_headers",
        "method": "PUT", "scheme": "https", "host": "s3.amazonaws.com",
        "path": "/dst/new.onnxz", "query": [["partNumber", "1"], ["uploadId", "u1"]],
        "headers": [
            ["x-amz-copy-source-range", "bytes=0-5242879"],
            ["x-amz-copy-source-if-match", "\"9b2cf535f27731c974343645a3985328\""],
            ["x-amz-copy-source", "/src/old%20model.onnxz"],
        ],
        "body": "", "unsigned_payload": True, "token": "session",
        "region": "us-east-1", "time": "2026-11-27T10:00:00",
    },
    {
        "name": "complete_if_none_match_spaces_in_value",
        "method": "POST", "scheme": "http", "host": "127.0.0.1:9000",
        "path": "/bucket/model.onnxz", "query": [["uploadId", "u 1"]],
        "headers": [["If-None-Match", "*"], ["X-Custom-Spaced", "  a   b \t c  "]],
        "body": "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part>"
                "</CompleteMultipartUpload>",
        "unsigned_payload": False, "token": "", "region": "auto", "time": "2026-03-04T05:06:07",
    },
    {
        "name": "upload_part_unsigned_payload_crc32_as_s3_client_sends",
        "method": "PUT", "scheme": "http", "host": "127.0.0.1:9000",
        "path": "/models/dir/new model.onnxz",
        "query": [["partNumber", "10000"], ["uploadId", "VXBsb2FkIElE+/=="]],
        "headers": [["x-amz-checksum-crc32", "DUoRhQ=="]],
        "body": "hello world", "unsigned_payload": True, "token": "",
        "region": "us-east-1", "time": "2026-11-27T13:45:00",
    },
    {
        "name": "complete_full_object_crc32_if_none_match",
        "method": "POST", "scheme": "https", "host": "s3.eu-central-1.amazonaws.com",
        "path": "/bucket.with.dots/model.onnxz", "query": [["uploadId", "abc"]],
        "headers": [["Content-Type", "application/xml"], ["x-amz-checksum-crc32", "AAAAAA=="],
                    ["x-amz-checksum-type", "FULL_OBJECT"], ["If-None-Match", "*"]],
        "body": "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\"e\"</ETag>"
                "<ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part></CompleteMultipartUpload>",
        "unsigned_payload": False, "token": "", "region": "eu-central-1",
        "time": "2026-11-27T13:46:00",
    },
    {
        "name": "list_unsorted_query",
        "method": "GET", "scheme": "http", "host": "127.0.0.1",
        "path": "/bucket",
        "query": [["prefix", "a b/\u00fc"], ["list-type", "2"], ["max-keys", "10"],
                  ["delimiter", "/"]],
        "headers": [], "body": "", "unsigned_payload": False, "token": "",
        "region": "ap-southeast-2", "time": "2026-12-31T00:00:00",
    },
]


class RecordingAuth(S3SigV4Auth):
    """S3SigV4Auth that keeps what add_auth computed along the way."""

    def __init__(self, *args):
        super().__init__(*args)
        self.seen = {}

    def canonical_request(self, request):
        self.seen["canonical_request"] = super().canonical_request(request)
        return self.seen["canonical_request"]

    def string_to_sign(self, request, canonical_request):
        self.seen["string_to_sign"] = super().string_to_sign(request, canonical_request)
        return self.seen["string_to_sign"]

    def signature(self, string_to_sign, request):
        self.seen["signature"] = super().signature(string_to_sign, request)
        return self.seen["signature"]


def sign(case):
    encoded_path = quote(case["path"], safe="/~")
    url = f"{case['scheme']}://{case['host']}{encoded_path}"
    request = AWSRequest(method=case["method"], url=url, data=case["body"].encode(),
                         params=case["query"] and [tuple(p) for p in case["query"]] or None)
    for name, value in case["headers"]:
        request.headers[name] = value
    request.context["client_config"] = Config(
        s3={"payload_signing_enabled": not case["unsigned_payload"]})
    credentials = Credentials(ACCESS_KEY, SECRET_KEY, case["token"] or None)
    auth = RecordingAuth(credentials, "s3", case["region"])
    now = datetime.datetime.strptime(case["time"], "%Y-%m-%dT%H:%M:%S")
    with mock.patch("botocore.auth.datetime") as fake:
        fake.datetime.utcnow.return_value = now
        auth.add_auth(request)
    added = {}
    for name in ("X-Amz-Date", "X-Amz-Content-SHA256", "X-Amz-Security-Token", "Authorization"):
        if name in request.headers:
            added[name] = request.headers[name]
    return {
        "encoded_path": encoded_path,
        "payload_sha256": hashlib.sha256(case["body"].encode()).hexdigest(),
        "canonical_request": auth.seen["canonical_request"],
        "string_to_sign": auth.seen["string_to_sign"],
        "signature": auth.seen["signature"],
        "added_headers": added,
    }


def main():
    out = {"access_key_id": ACCESS_KEY, "secret_access_key": SECRET_KEY, "cases": []}
    for case in CASES:
        out["cases"].append({"input": case, "botocore": sign(case)})
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

"""An S3 store for the object-storage tests: moto's server with signature checking on, behind a
small proxy that counts requests and bytes and injects the faults moto does not produce.

Run by the Python that has moto 5 and boto3 (not Debian's /usr/bin/python3; see
tests/support/s3_server.h for how the tests find it):

    python3 s3_server.py STATE_FILE BUCKET [KEY=PATH ...]

Starts moto on 127.0.0.1 (an ephemeral port), creates an IAM user with an access key allowed
everything, switches moto's authentication on (POST /moto-api/reset-auth: from then on every
request must be signed by that key), creates BUCKET and uploads each PATH as KEY with boto3 (an
independent client). Then starts the proxy on 127.0.0.1 and writes STATE_FILE, one JSON line:
{"endpoint": proxy URL, "moto": moto URL, "access_key_id": ..., "secret_access_key": ...}.
Runs until killed.

The proxy forwards every request unchanged (Host included, so signatures still match) and
answers these itself:
  GET  /__proxy/stats          {"requests": N, "bytes": body bytes sent to clients, "log": [...]}
                               (each logged request with its "received" body bytes)
                               for the requests forwarded since the last reset;
  POST /__proxy/reset          forgets them and any fault still pending (the tests of a suite
                               share one store: what one test left must not reach the next);
  POST /__proxy/put?key=KEY&path=PATH
                               boto3 uploads the local file PATH as KEY (not counted);
  POST /__proxy/get?key=KEY&path=PATH
                               boto3 downloads KEY to the local file PATH (not counted);
  GET  /__proxy/uploads        the keys of the multipart uploads in progress in the bucket
                               (boto3's ListMultipartUploads);
  POST /__proxy/fault?kind=K&count=N[&op=OP]
                               the next N forwarded requests (of operation OP when given:
                               get, head, create, part, copy, complete, abort, list, put,
                               delete) get fault K:
                                 slowdown  503 with S3's SlowDown XML (the request not forwarded);
                                 region    301 PermanentRedirect to eu-west-3, as S3 answers a
                                           request signed for the bucket's wrong region;
                                 reset     the answer's body cut after half and the connection
                                           closed;
                                 cut       half the request's body read, then the connection
                                           closed without an answer (not forwarded: a reset
                                           mid-upload);
                                 error200  200 with S3's InternalError XML (not forwarded), as
                                           S3 answers a CompleteMultipartUpload that failed late;
                                 conflict  409 ConditionalRequestConflict (the request not
                                           forwarded), as S3 answers a conditional Complete that
                                           raced another write of the key;
                                 overwrite the request's object (its copy source for a copy)
                                           replaced by other bytes, through boto3, just before
                                           the request is forwarded: a concurrent writer;
                                 lost      the request forwarded and moto's answer dropped: the
                                           connection closed without an answer (a connection
                                           lost after the store acted).
  Conditions moto ignores are checked here, against the object's ETag as moto reports it (HEAD
  through boto3, signed by the test key), and the request is then not forwarded: on
  CompleteMultipartUpload, `If-None-Match: *` answers 412 PreconditionFailed when the object
  exists, and `If-Match: ETAG` when the object has another ETag (404 NoSuchKey when there is
  none, as S3 answers); x-amz-copy-source-if-match on UploadPartCopy likewise for the source.
The stats count "received" too: body bytes clients sent. Each log line names the operation,
the conditional and copy headers the request carried and, once moto answered, the seconds moto
took ("store_seconds"), for the benches.
"""
import http.client
import http.server
import json
import socketserver
import sys
import threading
import time
import urllib.parse

import boto3
import moto.server

STATE_FILE, BUCKET = sys.argv[1], sys.argv[2]
UPLOADS = [arg.split("=", 1) for arg in sys.argv[3:]]

PERMANENT_REDIRECT = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>PermanentRedirect'
                      b"</Code><Message>The bucket you are attempting to access must be addressed "
                      b"using the specified endpoint.</Message><Endpoint>s3.eu-west-3.amazonaws.com"
                      b"</Endpoint><Region>eu-west-3</Region></Error>")
CONFLICT = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>ConditionalRequestConflict'
            b"</Code><Message>A conflicting operation occurred. If using PutObject you can retry "
            b"the request. If using multipart upload you should initiate another "
            b"CreateMultipartUpload request and re-upload each part.</Message></Error>")
PRECONDITION_FAILED = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>PreconditionFailed'
                       b"</Code><Message>At least one of the pre-conditions you specified did not "
                       b"hold</Message><Condition>If-Match</Condition></Error>")
INTERNAL_ERROR = (b'<?xml version="1.0" encoding="UTF-8"?>\n\n<Error><Code>InternalError</Code>'
                  b"<Message>We encountered an internal error. Please try again.</Message></Error>")
NO_SUCH_KEY = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchKey</Code>'
               b"<Message>The specified key does not exist.</Message></Error>")
SLOWDOWN = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
            b"<Message>Please reduce your request rate.</Message></Error>")

lock = threading.Lock()
stats = {"requests": 0, "bytes": 0, "received": 0, "log": []}
faults = []  # Pending faults, one per request, in order: (kind, operation or None).
store = None  # A boto3 client of moto, for the checks and the concurrent writer.


def start_moto():
    server = moto.server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return f"http://{host}:{port}"


def set_up_store(moto_url):
    anonymous = {"endpoint_url": moto_url, "region_name": "us-east-1",
                 "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
    iam = boto3.client("iam", **anonymous)
    iam.create_user(UserName="onnxzip")
    iam.put_user_policy(UserName="onnxzip", PolicyName="all", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
    key = iam.create_access_key(UserName="onnxzip")["AccessKey"]
    connection = http.client.HTTPConnection(urllib.parse.urlsplit(moto_url).netloc)
    connection.request("POST", "/moto-api/reset-auth",
                       body=b"0")
    answer = connection.getresponse()
    answer.read()
    if answer.status != 200:
        raise RuntimeError(f"reset-auth answered {answer.status}")
    s3 = boto3.client("s3", endpoint_url=moto_url, region_name="us-east-1",
                      aws_access_key_id=key["AccessKeyId"],
                      aws_secret_access_key=key["SecretAccessKey"])
    global store
    store = s3
    s3.create_bucket(Bucket=BUCKET)
    for name, path in UPLOADS:
        s3.upload_file(path, BUCKET, name)
    return key


def operation_of(method, path, headers):
    """The S3 operation of a request, by its method, query and headers."""
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(path).query,
                                        keep_blank_values=True))
    if method == "POST" and "uploads" in query:
        return "create"
    if method == "POST" and "uploadId" in query:
        return "complete"
    if method == "PUT" and "partNumber" in query:
        return "copy" if "x-amz-copy-source" in headers else "part"
    if method == "DELETE" and "uploadId" in query:
        return "abort"
    if method == "GET" and ("uploads" in query or "list-type" in query):
        return "list"
    return {"GET": "get", "HEAD": "head", "PUT": "put", "DELETE": "delete"}.get(method, method)


def take_fault(operation):
    """The first pending fault for `operation`, removed from the list; None when there is none."""
    for index, (kind, wanted) in enumerate(faults):
        if wanted is None or wanted == operation:
            del faults[index]
            return kind
    return None


def bucket_and_key(path):
    """Bucket and key of a path-style request path, or of a copy source ("/bucket/key")."""
    parts = urllib.parse.unquote(urllib.parse.urlsplit(path).path).lstrip("/").split("/", 1)
    return parts[0], parts[1] if len(parts) > 1 else ""


def current_etag(bucket, key):
    """The ETag moto reports for the object now, or None when there is no such key."""
    try:
        return store.head_object(Bucket=bucket, Key=key)["ETag"]
    except store.exceptions.ClientError as error:
        if error.response["Error"]["Code"] in ("404", "NoSuchKey"):
            return None
        raise


def overwrite(path, headers):
    """A concurrent writer: the request's object (a copy's source) replaced by other bytes."""
    source = headers.get("x-amz-copy-source")
    bucket, key = bucket_and_key(source if source else path)
    store.put_object(Bucket=bucket, Key=key, Body=b"written by another client meanwhile")


def failed_condition(operation, path, headers):
    """(status, body) when a condition moto ignores does not hold, else None."""
    if operation == "complete" and headers.get("If-None-Match") == "*":
        if current_etag(*bucket_and_key(path)) is not None:
            return 412, PRECONDITION_FAILED
    if operation == "complete" and headers.get("If-Match"):
        etag = current_etag(*bucket_and_key(path))
        if etag is None:
            return 404, NO_SUCH_KEY
        if etag != headers["If-Match"]:
            return 412, PRECONDITION_FAILED
    if operation == "copy" and headers.get("x-amz-copy-source-if-match"):
        etag = current_etag(*bucket_and_key(headers["x-amz-copy-source"]))
        if etag is None:
            return 404, NO_SUCH_KEY
        if etag != headers["x-amz-copy-source-if-match"]:
            return 412, PRECONDITION_FAILED
    return None


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    upstream = None

    def log_message(self, *args):
        pass

    def _reply(self, status, body, content_type="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _admin(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/__proxy/stats":
            with lock:
                body = json.dumps(stats).encode()
            self._reply(200, body)
        elif url.path == "/__proxy/reset":
            with lock:
                stats.update(requests=0, bytes=0, received=0, log=[])
                faults.clear()
            self._reply(200, b"{}")
        elif url.path in ("/__proxy/put", "/__proxy/get"):
            # boto3, the independent client: a local file uploaded as KEY, or KEY downloaded.
            query = dict(urllib.parse.parse_qsl(url.query))
            if url.path == "/__proxy/put":
                store.upload_file(query["path"], BUCKET, query["key"])
            else:
                store.download_file(BUCKET, query["key"], query["path"])
            self._reply(200, b"{}")
        elif url.path == "/__proxy/uploads":
            listing = store.list_multipart_uploads(Bucket=BUCKET)
            body = json.dumps([upload["Key"] for upload in listing.get("Uploads", [])]).encode()
            self._reply(200, body)
        elif url.path == "/__proxy/fault":
            query = dict(urllib.parse.parse_qsl(url.query))
            with lock:
                faults.extend([(query["kind"], query.get("op"))] * int(query.get("count", "1")))
            self._reply(200, b"{}")
        else:
            self._reply(404, b"{}")

    def _forward(self):
        if self.path.startswith("/__proxy/"):
            length = int(self.headers.get("Content-Length", "0"))
            self.rfile.read(length)
            return self._admin()
        length = int(self.headers.get("Content-Length", "0"))
        operation = operation_of(self.command, self.path, self.headers)
        with lock:
            fault = take_fault(operation)
        if fault == "cut":
            with lock:
                stats["requests"] += 1
                stats["log"].append({"method": self.command, "path": self.path, "op": operation,
                                     "range": "", "fault": "cut"})
            self.rfile.read(length // 2)
            self.close_connection = True
            return
        body = self.rfile.read(length) if length else None
        with lock:
            stats["requests"] += 1
            stats["received"] += length
            entry = {
                "method": self.command, "path": self.path, "op": operation,
                "range": self.headers.get("Range", ""), "fault": fault or "",
                "if_match": self.headers.get("If-Match", ""),
                "if_none_match": self.headers.get("If-None-Match", ""),
                "copy_source_range": self.headers.get("x-amz-copy-source-range", ""),
                "copy_source_if_match": self.headers.get("x-amz-copy-source-if-match", ""),
                "received": length}
            stats["log"].append(entry)
        if fault == "slowdown":
            return self._reply(503, SLOWDOWN, "application/xml")
        if fault == "region":
            return self._reply(301, PERMANENT_REDIRECT, "application/xml")
        if fault == "error200":
            return self._reply(200, INTERNAL_ERROR, "application/xml")
        if fault == "conflict":
            return self._reply(409, CONFLICT, "application/xml")
        if fault == "overwrite":
            overwrite(self.path, self.headers)
        refusal = failed_condition(operation, self.path, self.headers)
        if refusal is not None:
            return self._reply(refusal[0], refusal[1], "application/xml")
        started = time.monotonic()
        connection = http.client.HTTPConnection(self.upstream)
        connection.putrequest(self.command, self.path, skip_host=True,
                              skip_accept_encoding=True)
        for name, value in self.headers.items():
            connection.putheader(name, value)
        connection.endheaders(body)
        answer = connection.getresponse()
        data = answer.read()
        with lock:
            entry["store_seconds"] = time.monotonic() - started
        if fault == "lost":
            self.close_connection = True
            return
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(name, value)
        # A HEAD's answer has no body but tells the object's length.
        length = answer.getheader("Content-Length", "0") if self.command == "HEAD" else len(data)
        self.send_header("Content-Length", str(length))
        if fault == "reset":
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            with lock:
                stats["bytes"] += len(data) // 2
            return
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
            with lock:
                stats["bytes"] += len(data)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward


class ThreadingServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def main():
    moto_url = start_moto()
    key = set_up_store(moto_url)
    Proxy.upstream = urllib.parse.urlsplit(moto_url).netloc
    proxy = ThreadingServer(("127.0.0.1", 0), Proxy)
    state = {"endpoint": f"http://127.0.0.1:{proxy.server_address[1]}", "moto": moto_url,
             "access_key_id": key["AccessKeyId"], "secret_access_key": key["SecretAccessKey"]}
    with open(STATE_FILE + ".tmp", "w") as out:
        out.write(json.dumps(state) + "\n")
    import os
    os.rename(STATE_FILE + ".tmp", STATE_FILE)
    proxy.serve_forever()


if __name__ == "__main__":
    main()

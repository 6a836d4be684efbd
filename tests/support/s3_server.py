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
                               for the requests forwarded since the last reset;
  POST /__proxy/reset          forgets them and any fault still pending (the tests of a suite
                               share one store: what one test left must not reach the next);
  POST /__proxy/fault?kind=K&count=N[&match=TEXT]
                               the next N forwarded requests (with TEXT in "METHOD PATH",
                               when given) get fault K:
                                 slowdown  503 with S3's SlowDown XML (the request not forwarded);
                                 region    301 PermanentRedirect to eu-west-3, as S3 answers a
                                           request signed for the bucket's wrong region;
                                 reset     the answer's body cut after half and the connection
                                           closed;
                                 cut       half the request's body read, then the connection
                                           closed without an answer (not forwarded: a reset
                                           mid-upload);
                                 error200  200 with S3's InternalError XML (not forwarded), as
                                           S3 answers a CompleteMultipartUpload that failed late.

It also enforces what moto ignores on CompleteMultipartUpload (POST ?uploadId=...): with
`If-None-Match: *` it answers 412 PreconditionFailed when the object exists, and with
`If-Match: ETAG` when the object is absent or has another ETag (checked with a HeadObject of its
own, signed by the test key); the request is then not forwarded.
"""
import http.client
import http.server
import json
import socketserver
import sys
import threading
import urllib.parse

import boto3
import moto.server

STATE_FILE, BUCKET = sys.argv[1], sys.argv[2]
UPLOADS = [arg.split("=", 1) for arg in sys.argv[3:]]

PERMANENT_REDIRECT = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>PermanentRedirect'
                      b"</Code><Message>The bucket you are attempting to access must be addressed "
                      b"using the specified endpoint.</Message><Endpoint>s3.eu-west-3.amazonaws.com"
                      b"</Endpoint><Region>eu-west-3</Region></Error>")
INTERNAL_ERROR = (b'<?xml version="1.0" encoding="UTF-8"?>\n\n<Error><Code>InternalError</Code>'
                  b"<Message>We encountered an internal error. Please try again.</Message></Error>")
PRECONDITION_FAILED = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>PreconditionFailed'
                       b"</Code><Message>At least one of the pre-conditions you specified did not"
                       b" hold</Message><Condition>If-None-Match</Condition></Error>")
SLOWDOWN = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
            b"<Message>Please reduce your request rate.</Message></Error>")

lock = threading.Lock()
stats = {"requests": 0, "bytes": 0, "log": []}
faults = []  # Pending faults, one per request, in order: (kind, text the request must hold).
store = None  # A boto3 client of moto, for the proxy's own checks.


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
    s3.create_bucket(Bucket=BUCKET)
    for name, path in UPLOADS:
        s3.upload_file(path, BUCKET, name)
    global store
    store = s3
    return key


def current_etag(path):
    """The ETag of the object a path-style PATH names, None when there is none."""
    bucket, _, key = urllib.parse.unquote(urllib.parse.urlsplit(path).path).lstrip("/").partition("/")
    try:
        return store.head_object(Bucket=bucket, Key=key)["ETag"]
    except store.exceptions.ClientError:
        return None


def failed_condition(method, path, headers):
    """Whether a CompleteMultipartUpload's If-None-Match / If-Match does not hold."""
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
    if method != "POST" or "uploadId" not in query:
        return False
    if headers.get("If-None-Match") == "*":
        return current_etag(path) is not None
    if headers.get("If-Match"):
        return current_etag(path) != headers.get("If-Match")
    return False


def take_fault(method, path, only=None):
    """The first pending fault this request meets (of kind `only`, when given), taken off."""
    with lock:
        for index, (kind, match) in enumerate(faults):
            if match and match not in f"{method} {path}":
                continue
            if only is not None and kind != only:
                return None
            del faults[index]
            return kind
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
                stats.update(requests=0, bytes=0, log=[])
                faults.clear()
            self._reply(200, b"{}")
        elif url.path == "/__proxy/fault":
            query = dict(urllib.parse.parse_qsl(url.query))
            with lock:
                faults.extend([(query["kind"], query.get("match", ""))] * int(query.get("count", "1")))
            self._reply(200, b"{}")
        else:
            self._reply(404, b"{}")

    def _forward(self):
        if self.path.startswith("/__proxy/"):
            length = int(self.headers.get("Content-Length", "0"))
            self.rfile.read(length)
            return self._admin()
        length = int(self.headers.get("Content-Length", "0"))
        if take_fault(self.command, self.path, "cut"):
            with lock:
                stats["requests"] += 1
                stats["log"].append({"method": self.command, "path": self.path, "range": "",
                                     "fault": "cut"})
            self.rfile.read(length // 2)
            self.close_connection = True
            return
        body = self.rfile.read(length) if length else None
        fault = take_fault(self.command, self.path)
        with lock:
            stats["requests"] += 1
            stats["log"].append({"method": self.command, "path": self.path,
                                 "range": self.headers.get("Range", ""), "fault": fault or ""})
        if fault == "slowdown":
            return self._reply(503, SLOWDOWN, "application/xml")
        if fault == "region":
            return self._reply(301, PERMANENT_REDIRECT, "application/xml")
        if fault == "error200":
            return self._reply(200, INTERNAL_ERROR, "application/xml")
        if failed_condition(self.command, self.path, self.headers):
            return self._reply(412, PRECONDITION_FAILED, "application/xml")
        connection = http.client.HTTPConnection(self.upstream)
        connection.putrequest(self.command, self.path, skip_host=True,
                              skip_accept_encoding=True)
        for name, value in self.headers.items():
            connection.putheader(name, value)
        connection.endheaders(body)
        answer = connection.getresponse()
        data = answer.read()
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

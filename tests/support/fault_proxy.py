#!/usr/bin/python3
"""A fault-injecting HTTP proxy for the remote-archive tests (tests/http_source_test.cpp,
tests/python/test_remote.py).

Usage: fault_proxy.py UPSTREAM PORT_FILE
Listens on 127.0.0.1 (an ephemeral port, written to PORT_FILE) and forwards GET /FAULT/NAME to
UPSTREAM/files/NAME with the request's Range and If-* headers, answering with a fault:
  ok         no fault;
  503once    503 to the first request for the name, then none;
  reset      the first request's body cut after half of it (the connection closed), then none;
  badrange   every 206 answered with a Content-Range one byte off;
  long       every body one byte longer than its Content-Range (Content-Length counting it);
  stall      the first request's body stops after half of it and the connection is held open;
  etag       every answer after the first carries another ETag (If-Range ignored);
  slow       every answer after the first for the name waits 1.5 s before its body (a slow
             transfer, for the Python tests that another thread runs meanwhile).
It runs until killed.
"""
import http.client
import http.server
import sys
import threading
import time
import urllib.parse

UPSTREAM = urllib.parse.urlsplit(sys.argv[1])
seen = {}
lock = threading.Lock()


def first_time(key):
    with lock:
        count = seen.get(key, 0)
        seen[key] = count + 1
        return count == 0


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        _, fault, name = self.path.split("/", 2)
        connection = http.client.HTTPConnection(UPSTREAM.hostname, UPSTREAM.port)
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() in ("range", "if-range", "if-match", "if-unmodified-since")}
        if fault == "etag" and not first_time(("etag-headers", name)):
            headers = {k: v for k, v in headers.items() if k.lower() == "range"}
        connection.request("GET", "/files/" + name, headers=headers)
        answer = connection.getresponse()
        body = answer.read()
        status = answer.status
        out = {k: v for k, v in answer.getheaders()
               if k.lower() in ("content-range", "etag", "last-modified", "content-type")}
        if fault == "503once" and first_time(("503", name)):
            status, body, out = 503, b"", {}
        if fault == "badrange" and "Content-Range" in out:
            unit, rest = out["Content-Range"].split(" ")
            span, total = rest.split("/")
            first, last = (int(x) for x in span.split("-"))
            out["Content-Range"] = "%s %d-%d/%s" % (unit, first + 1, last + 1, total)
        if fault == "etag" and not first_time(("etag", name)):
            out["ETag"] = '"changed"'
        if fault == "long":
            body = body + b"x"
        cut = None
        if fault in ("reset", "stall") and first_time((fault, name)) and len(body) > 1:
            cut = len(body) // 2
        if fault == "slow" and not first_time(("slow", name)):
            time.sleep(1.5)
        self.send_response(status)
        for key, value in out.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if cut is None:
            self.wfile.write(body)
            return
        self.wfile.write(body[:cut])
        self.wfile.flush()
        if fault == "stall":
            time.sleep(30)
        self.close_connection = True


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
with open(sys.argv[2] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
server.serve_forever()

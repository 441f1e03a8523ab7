#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""An HTTP/1.1 origin server and a raw HTTP client for the http_proxy tests
(standard library only).

    python3 http_target.py serve --port-file F [--lifetime S]

serves on 127.0.0.1 (HTTP/1.1, keep-alive):
  GET  /hello     "hello through http_proxy\\n" with Content-Length
  GET  /chunked   a chunked response: "chunk-one\\n" then "chunk-two\\n"
  GET  /close     a response framed by closing the connection
  GET  /slow      the /hello answer after --slow-ms milliseconds
  GET  /headers   the request head as received, as the body
  GET  /stats     "connections=N" (TCP connections accepted so far)
  POST /echo      the request body (Content-Length or chunked) as the
                  body, with X-Body-Length and X-Was-Chunked headers
  HEAD any        the GET head without a body

    python3 http_target.py send --port P [--hex DATA | --repeat ...]

sends raw bytes to 127.0.0.1:P and prints the first line of the answer (with
--all: its whole head)
(or "closed" when the connection closed without one). Request shapes:
  --line-bytes N     GET http://127.0.0.1:1/ with an N-byte path
  --header-bytes N   a request with one N-byte header value
  --headers N        a request with N small header fields
  --raw TEXT         TEXT with \\r and \\n escapes
The server exits after --lifetime seconds or when its parent goes away.
"""

import argparse
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HELLO = b"hello through http_proxy\n"


class Counter:
    def __init__(self):
        self.lock = threading.Lock()
        self.n = 0

    def inc(self):
        with self.lock:
            self.n += 1


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, slow_ms):
        super().__init__(addr, Handler)
        self.connections = Counter()
        self.slow_ms = slow_ms

    def process_request(self, request, client_address):
        self.connections.inc()
        super().process_request(request, client_address)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send_body(self, body, ctype="text/plain", extra=None):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        if self.path == "/hello":
            self.send_body(HELLO)
        elif self.path == "/slow":
            time.sleep(self.server.slow_ms / 1000.0)
            self.send_body(HELLO)
        elif self.path == "/stats":
            self.send_body(b"connections=%d\n" % self.server.connections.n)
        elif self.path == "/headers":
            head = self.requestline + "\r\n" + str(self.headers)
            self.send_body(head.encode("latin-1"))
        elif self.path == "/chunked":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if self.command != "HEAD":
                for part in (b"chunk-one\n", b"chunk-two\n"):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.write(b"0\r\n\r\n")
        elif self.path == "/close":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(b"framed by close\n")
            self.close_connection = True
        else:
            self.send_error(404)

    def read_chunked(self):
        body = b""
        while True:
            line = self.rfile.readline(1024)
            size = int(line.split(b";")[0].strip(), 16)
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass
                return body
            body += self.rfile.read(size)
            self.rfile.readline(16)

    def do_POST(self):
        if self.path != "/echo":
            self.send_error(404)
            return
        chunked = "chunked" in self.headers.get("Transfer-Encoding", "")
        if chunked:
            body = self.read_chunked()
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_body(body, "application/octet-stream",
                       {"X-Body-Length": str(len(body)),
                        "X-Was-Chunked": "yes" if chunked else "no"})


def serve(args):
    srv = Server(("127.0.0.1", 0), args.slow_ms)
    port = srv.server_address[1]
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % port)
    os.rename(tmp, args.port_file)
    parent = os.getppid()
    deadline = time.time() + args.lifetime
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    while time.time() < deadline and os.getppid() == parent:
        time.sleep(0.2)
    srv.shutdown()


def request_bytes(args):
    if args.raw is not None:
        return args.raw.replace("\\r", "\r").replace("\\n", "\n").encode(
            "latin-1")
    head = "GET http://127.0.0.1:1/%s HTTP/1.1\r\n" % ("p" * args.line_bytes)
    head += "Host: 127.0.0.1:1\r\n"
    if args.header_bytes:
        head += "X-Big: %s\r\n" % ("v" * args.header_bytes)
    for i in range(args.headers):
        head += "X-%d: %d\r\n" % (i, i)
    return (head + "\r\n").encode("latin-1")


def send(args):
    data = request_bytes(args)
    s = socket.create_connection(("127.0.0.1", args.port), timeout=5)
    try:
        s.sendall(data)
    except OSError:
        pass  # the proxy may answer and close before reading everything
    got = b""
    want = b"\r\n\r\n" if args.all else b"\n"
    try:
        while want not in got:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    except OSError:
        pass
    s.close()
    if args.all:  # the whole head
        print(got.split(b"\r\n\r\n")[0].decode("latin-1") if got else "closed")
        return
    line = got.split(b"\r\n")[0].decode("latin-1") if got else "closed"
    print(line)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    sv = sub.add_parser("serve")
    sv.add_argument("--port-file", required=True)
    sv.add_argument("--lifetime", type=float, default=120.0)
    sv.add_argument("--slow-ms", type=int, default=1500)
    sd = sub.add_parser("send")
    sd.add_argument("--port", type=int, required=True)
    sd.add_argument("--raw")
    sd.add_argument("--all", action="store_true",
                    help="print the whole response head, not its first line")
    sd.add_argument("--line-bytes", type=int, default=1)
    sd.add_argument("--header-bytes", type=int, default=0)
    sd.add_argument("--headers", type=int, default=0)
    args = ap.parse_args()
    if args.cmd == "serve":
        serve(args)
    else:
        send(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

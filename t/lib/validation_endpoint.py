#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""A remote validation endpoint on 127.0.0.1 for the tests (standard
library only), speaking the wire format of docs/user-guide/remote-validation.md.

POST /       JSON {"protocol","agent","host","port","username","password"}:
             username starting "allow" -> 200, "deny" -> 403, "unauth" ->
             401, "err" -> 500, "slow" -> 200 after --slow-ms, "reset" ->
             the connection is reset without an answer, "bigbody" -> 200
             with a 64 KiB body; anything else 403.
POST /slow   every answer after --slow-ms (then as for /)
POST /fail   500 for everyone
POST /reset  the connection is reset for everyone
GET /stats   one line: "requests=N connections=M open=K bad=B auth=VALUE",
             where connections counts the connections that carried a POST
             (so a GET /stats is not one), open those of them still open,
             bad counts bodies that were not the
             wire format, and auth is the last Authorization header seen
             ("-" when none)
GET /agents  one line: the "agent" of every request, in order, comma-
             separated, "-" for null (which agent reached the endpoint)
GET /reset-stats  zeroes the counters (and the agents)

HTTP/1.1 with keep-alive, one thread per connection; https with
--tls-cert and --tls-key (a handshake that fails, for a client that does
not trust the certificate, is dropped quietly). It writes its port to
--port-file, and exits after --lifetime seconds or when the process that
started it goes away."""
import argparse
import http.server
import json
import os
import socket
import ssl
import struct
import sys
import threading
import time

LOCK = threading.Lock()
STATS = {"requests": 0, "connections": 0, "open": 0, "bad": 0, "auth": "-"}
AGENTS = []  # the agent of every request, None for null
KEYS = {"protocol", "agent", "host", "port", "username", "password"}


def valid_body(d):
    return (isinstance(d, dict) and set(d) == KEYS and d["protocol"] == "tcp"
            and (d["agent"] is None or isinstance(d["agent"], str))
            and isinstance(d["host"], str) and isinstance(d["port"], int)
            and isinstance(d["username"], str)
            and isinstance(d["password"], str))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    slow_ms = 1000

    def log_message(self, fmt, *args):
        pass  # nothing on stderr: the bodies hold passwords

    def setup(self):
        super().setup()
        self.counted = False

    def finish(self):
        try:
            super().finish()
        finally:
            with LOCK:
                if self.counted:
                    STATS["open"] -= 1

    def reply(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def reset(self):
        # SO_LINGER 0: close sends a RST, not a FIN.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                   struct.pack("ii", 1, 0))
        self.close_connection = True
        try:
            self.connection.close()
        except OSError:
            pass

    def do_GET(self):
        if self.path == "/stats":
            with LOCK:
                line = "requests=%d connections=%d open=%d bad=%d auth=%s\n" % (
                    STATS["requests"], STATS["connections"], STATS["open"],
                    STATS["bad"], STATS["auth"])
            self.reply(200, line.encode())
        elif self.path == "/agents":
            with LOCK:
                line = ",".join(a if isinstance(a, str) else "-"
                                for a in AGENTS) + "\n"
            self.reply(200, line.encode())
        elif self.path == "/reset-stats":
            with LOCK:
                STATS.update(requests=0, connections=0, bad=0, auth="-")
                del AGENTS[:]
            self.reply(200, b"ok\n")
        else:
            self.reply(404)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n) if 0 <= n <= 65536 else b""
        try:
            d = json.loads(raw)
        except ValueError:
            d = None
        with LOCK:
            STATS["requests"] += 1
            if not self.counted:
                self.counted = True
                STATS["connections"] += 1
                STATS["open"] += 1
            STATS["auth"] = self.headers.get("Authorization", "-")
            AGENTS.append(d.get("agent") if isinstance(d, dict) else None)
            if not valid_body(d):
                STATS["bad"] += 1
        user = d.get("username", "") if isinstance(d, dict) else ""
        if self.path == "/reset" or user.startswith("reset"):
            return self.reset()
        if self.path == "/fail" or user.startswith("err"):
            return self.reply(500, b"failing on purpose\n")
        if self.path == "/slow" or user.startswith("slow"):
            time.sleep(self.slow_ms / 1000.0)
        if user.startswith("bigbody"):
            return self.reply(200, b"x" * 65536)
        if user.startswith("allow") or user.startswith("slow"):
            return self.reply(200, b"allowed\n")
        if user.startswith("unauth"):
            return self.reply(401, b"unauthorized\n")
        return self.reply(403, b"denied\n")


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that gave up (a timeout test) is no error here


def watch_parent(lifetime):
    parent = os.getppid()
    end = time.monotonic() + lifetime
    while time.monotonic() < end and os.getppid() == parent:
        time.sleep(0.2)
    os._exit(0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--slow-ms", type=int, default=1000)
    ap.add_argument("--lifetime", type=int, default=300)
    ap.add_argument("--tls-cert", help="serve https with this PEM chain")
    ap.add_argument("--tls-key", help="... and this key")
    a = ap.parse_args()
    Handler.slow_ms = a.slow_ms
    srv = Server(("127.0.0.1", a.port), Handler)
    if a.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls_cert, a.tls_key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    port = srv.server_address[1]
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.rename(tmp, a.port_file)
    else:
        print(port, flush=True)
    threading.Thread(target=watch_parent, args=(a.lifetime,),
                     daemon=True).start()
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())

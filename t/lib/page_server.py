#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A static page server for the browser tests through the tunnel
(t/integration/tunnel_browser.sh, tunnel_relay3.sh); standard library only.

    python3 page_server.py DIR PORT_FILE LOG

serves the files of DIR on 127.0.0.1 (a free port, written to PORT_FILE
once listening) with one thread a connection (256 waiting at most), and
appends "METHOD PATH" to LOG for each request. A path under /hang is never
answered: it is logged as "GET PATH", held until the other end closes
(120 s at most), then logged as "closed PATH". Serves 300 s at most.
"""
import functools
import http.server
import os
import sys
import time

LIFETIME = 300  # seconds
HANG_MAX = 120  # seconds a /hang request is held at most


def main():
    root, port_file, log = sys.argv[1], sys.argv[2], sys.argv[3]

    def note(line):
        with open(log, "a") as f:
            f.write(line + "\n")

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, fmt, *args):
            note("%s %s" % (self.command, self.path))

        def do_GET(self):
            if not self.path.startswith("/hang"):
                return super().do_GET()
            note("GET %s" % self.path)
            self.connection.settimeout(HANG_MAX)
            try:
                while self.connection.recv(1):
                    pass
            except OSError:
                pass
            note("closed %s" % self.path)
            self.close_connection = True

    class Server(http.server.ThreadingHTTPServer):
        request_queue_size = 256
        daemon_threads = True

    srv = Server(("127.0.0.1", 0), functools.partial(Handler, directory=root))
    with open(port_file + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(port_file + ".tmp", port_file)
    srv.timeout = 0.5
    end = time.monotonic() + LIFETIME
    while time.monotonic() < end:
        srv.handle_request()


if __name__ == "__main__":
    main()

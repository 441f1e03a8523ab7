#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A test double of an admin listener serving GET /v1/status as
docs/operations.md ("Seeing what runs", issue 28) describes it, with a
tunnel_server's agents panel, and admin_api's GET /v1/agents: what
proxyhostctl status and agent list read (t/integration/ctl_status.sh).
The host's own part runs against a real proxyhost there; this plays a
tunnel_server's agents panel until that module fills one.

status_fake.py --port-file F --token-file F [--version V] [--rows N]
    [--mode ok|off|error] [--log F] [--lifetime S]

--rows is [admin] status_rows (the page size); --mode off answers every
/v1/status 404 "status page off: set [admin] token_file", error 500;
--log gets one line per request (method, path). One request per
connection (HTTP/1.0, closed after the answer), as the admin listener.
"""
import argparse
import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

AGENT_COLS = ["agent", "log_id", "connections", "streams", "capabilities",
              "rtt_ms", "connected_s", "node"]
# Connected agents: edge-1 and edge-3 (on two nodes) and one the store
# does not list; edge-2 is in the store but not connected.
AGENT_ROWS = [
    ["edge-1", "agent-5a1c7f0e", 2, 1, "open_result,flow_control", 3, 61, "n1"],
    ["stranger", "agent-0b9d2e44", 1, 0, "", None, 5, "n1"],
    ["edge-3", "agent-77aa01cd", 1, 0, "open_result", 12, 3600, "n2"],
]
STORE_AGENTS = ["edge-1", "edge-2", "edge-3"]


def panels(version, rows, offset=0, limit=None, key=None):
    limit = limit or rows
    agents = [r for r in AGENT_ROWS if key is None or r[0] == key]
    page = agents[offset:offset + limit]
    return [
        {"instance": "proxyhost", "module": "proxyhost", "panels": [
            {"name": "process", "title": "Process",
             "fields": {"version": version, "abi": "1.7",
                        "config": "/etc/proxyhost/proxyhost.ini",
                        "uptime_s": 75, "ready": "yes", "ready_reasons": "",
                        "last_reload": "", "last_reload_result": "",
                        "open_fds": 17, "rss_bytes": 8650752},
             "tables": [{"name": "modules",
                         "columns": ["instance", "module", "version"],
                         "rows": [["fakeaz", "fakeaz", version],
                                  ["admin_api", "admin_api", version],
                                  ["tunnel_server", "tunnel_server", version]],
                         "offset": 0, "more": False}]}]},
        {"instance": "tunnel_server", "module": "tunnel_server", "panels": [
            {"name": "agents", "title": "Connected agents",
             "fields": {"connected": len(AGENT_ROWS), "streams": 1},
             "tables": [{"name": "agents", "columns": AGENT_COLS,
                         "rows": page, "offset": offset,
                         "more": offset + limit < len(agents)}]}]},
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--version", default="0.1.0")
    ap.add_argument("--rows", type=int, default=50)
    ap.add_argument("--mode", default="ok", choices=["ok", "off", "error"])
    ap.add_argument("--log")
    ap.add_argument("--lifetime", type=float, default=120)
    a = ap.parse_args()
    token = open(a.token_file).read().strip()

    class H(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def answer(self, code, body, ctype="application/json"):
            data = body.encode() if isinstance(body, str) else body
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

        def error(self, code, name, msg):
            self.answer(code, json.dumps({"error": {"code": name,
                                                    "message": msg}}))

        def do_GET(self):
            if a.log:
                with open(a.log, "a") as f:
                    f.write("GET %s\n" % self.path)
            u = urllib.parse.urlsplit(self.path)
            if self.headers.get("Authorization") != "Bearer " + token:
                return self.error(401, "unauthorized", "admin token required")
            if u.path == "/v1/agents":
                items = [{"name": n, "owner": "alice", "enabled": True,
                          "created_at": 1700000000, "updated_at": 1700000000}
                         for n in STORE_AGENTS]
                return self.answer(200, json.dumps(
                    {"items": items, "more": False, "next_after": None}))
            if u.path != "/v1/status" and not u.path.startswith("/v1/status/"):
                return self.answer(404, "not found\n", "text/plain")
            if a.mode == "off":
                return self.answer(404, "status page off: set [admin] "
                                   "token_file\n", "text/plain")
            if a.mode == "error":
                return self.error(500, "internal", "status failed")
            q = urllib.parse.parse_qs(u.query)
            try:
                offset = int(q.pop("offset", ["0"])[0])
                limit = int(q.pop("limit", [str(a.rows)])[0])
                key = q.pop("key", [None])[0]
                if q or not 0 <= offset <= 10**9 or not 1 <= limit <= a.rows:
                    raise ValueError
            except ValueError:
                return self.error(400, "bad_request", "bad query")
            parts = [p for p in u.path.split("/")[3:]]
            doc = panels(a.version, a.rows, offset, limit, key)
            if parts:
                doc = [i for i in doc if i["instance"] == parts[0]]
                for i in doc:
                    if len(parts) > 1:
                        i["panels"] = [p for p in i["panels"]
                                       if p["name"] == parts[1]]
                    for p in i["panels"]:
                        if len(parts) > 2:
                            p["tables"] = [t for t in p["tables"]
                                           if t["name"] == parts[2]]
                found = doc and all(i["panels"] for i in doc) and (
                    len(parts) < 3 or doc[0]["panels"][0]["tables"])
                if not found or len(parts) > 3:
                    return self.error(404, "not_found",
                                      "no status at %s" % u.path)
            self.answer(200, json.dumps({"status_version": 1,
                                         "instances": doc}))

    srv = HTTPServer(("127.0.0.1", 0), H)
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.rename(a.port_file + ".tmp", a.port_file)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    time.sleep(a.lifetime)


if __name__ == "__main__":
    main()

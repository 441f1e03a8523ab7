#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Checks one /metrics scrape of a local proxy for series it cannot have
and for names outside the prefix scheme of docs/operations.md.

metrics_lint.py METRICS.txt MAX_LINES MODULE...
metrics_lint.py --seed-labels METRICS.txt...   (any role's scrape: only the
                                                seed-label rule below)

- at most MAX_LINES lines;
- every family name is a seed name (tunnelmesh_*, the list below), one of
  the host's own proxyhost_* names, proxyhost_stream_* (the stream metrics
  shared by frontends and connectors), proxyhost_frontend_* (shared by
  the frontends), proxyhost_tls_* (shared by the roles that re-read TLS
  files, modules/lib/tls_reload.c), proxyhost_<module>_* for a MODULE
  given, or process_* (the standard process metrics, process_metrics);
- no component other than "client" (a local proxy is the client);
- the seed's families (tunnelmesh_*) carry only the seed's labels
  (TM-OBS-10..17, TM-TEST-18: component, stage, result, error_class,
  protocol, scope, cache, open_mode, and a histogram's le), and every
  one but error_class (a bounded enum of the project's) only the seed's
  values;
- tunnelmesh_stream_open_total: one result per error_class (ok: success,
  forbidden: rejected, timeout: timeout, the others: failure);
- tunnelmesh_stream_stage_duration_seconds: no stage a local proxy does
  not record (remote_validation, selection, relay), ttfb only success,
  authorization only success or rejected (remote_validation only when the
  remote_validation module is given, and then success, failure or
  rejected).
Prints each problem; exits 1 on one."""
import re
import sys

SEED = {
    "tunnelmesh_stream_stage_duration_seconds", "tunnelmesh_stream_open_total",
    "tunnelmesh_stream_queue_wait_seconds",
    "tunnelmesh_stream_window_stall_seconds",
    "tunnelmesh_stream_backpressure_total",
    "tunnelmesh_authorization_cache_requests_total",
    "tunnelmesh_authorization_revision",
    "tunnelmesh_authorization_revision_poll_total",
    "tunnelmesh_remote_validation_cache_requests_total",
}
HOST = {
    "proxyhost_build_info", "proxyhost_modules", "proxyhost_module_threads",
    "proxyhost_reloads_total", "proxyhost_bus_deliveries_total",
    "proxyhost_bus_dropped_total", "proxyhost_mailbox_full_total",
    "proxyhost_thread_queue_full_total",
    "proxyhost_admin_connections_closed_total",
    "proxyhost_admin_logins_total",
}
RESULT_OF = {"ok": "success", "forbidden": "rejected", "timeout": "timeout"}
STAGE_RESULTS = {"ttfb": {"success"}, "authorization": {"success", "rejected"},
                 "remote_validation": {"success", "failure", "rejected"}}
NOT_LOCAL = {"remote_validation", "selection", "relay"}
SEED_LABELS = {"component", "stage", "result", "error_class", "protocol",
               "scope", "cache", "open_mode", "le"}
SEED_VALUES = {"component": {"client", "server", "agent"},
               "stage": {"socks5_handshake", "remote_validation",
                         "authorization", "selection", "relay", "queue",
                         "dns", "connect", "open", "ttfb"},
               "result": {"success", "failure", "timeout", "rejected"},
               "protocol": {"tcp", "udp", "http", "websocket"},
               "scope": {"local", "remote"},
               "cache": {"hit", "miss", "shared", "bypass"},
               "open_mode": {"strict", "legacy"}}


def seed_label_problems(line, labels):
    """A tunnelmesh_* sample's labels outside the seed's sets."""
    if not line.startswith("tunnelmesh_"):
        return []
    out = ["label %r not allowed: %s" % (k, line) for k in labels
           if k not in SEED_LABELS]
    out += ["%s=%r not allowed: %s" % (k, v, line)
            for k, v in labels.items()
            if k in SEED_VALUES and v not in SEED_VALUES[k]]
    return out


def seed_labels_only(paths):
    problems = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f.read().splitlines():
                if line and not line.startswith("#"):
                    labels = dict(re.findall(
                        r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"', line))
                    problems += seed_label_problems(line, labels)
    for p in problems[:50]:
        print("problem:", p)
    return 1 if problems else 0


def in_scheme(name, modules):
    if name in SEED or name in HOST or name.startswith("process_"):
        return True
    if name.startswith(("proxyhost_stream_", "proxyhost_frontend_",
                        "proxyhost_tls_")):
        return True
    return any(name.startswith("proxyhost_%s_" % m) for m in modules)


def main(argv):
    if len(argv) > 2 and argv[1] == "--seed-labels":
        return seed_labels_only(argv[2:])
    path, max_lines, modules = argv[1], int(argv[2]), argv[3:]
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    problems = []
    if len(lines) > max_lines:
        problems.append("%d lines, more than %d" % (len(lines), max_lines))
    for line in lines:
        if line.startswith("# TYPE "):
            name = line.split()[2]
            if not in_scheme(name, modules):
                problems.append("%s is outside the prefix scheme" % name)
        if line.startswith("#") or not line:
            continue
        labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"', line))
        problems += seed_label_problems(line, labels)
        comp = labels.get("component")
        if comp is not None and comp != "client":
            problems.append("component %r: %s" % (comp, line))
        if line.startswith("tunnelmesh_stream_open_total{"):
            want = RESULT_OF.get(labels.get("error_class"), "failure")
            if labels.get("result") != want:
                problems.append("impossible pair: %s" % line)
        if line.startswith("tunnelmesh_stream_stage_duration_seconds"):
            stage, result = labels.get("stage"), labels.get("result")
            local = stage == "remote_validation" and \
                "remote_validation" in modules
            if stage in NOT_LOCAL and not local:
                problems.append("stage not recorded locally: %s" % line)
            elif result not in STAGE_RESULTS.get(stage, {result}):
                problems.append("impossible stage result: %s" % line)
    for p in problems[:50]:
        print("problem:", p)
    print("lines:", len(lines))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""Samples gateways' snapshot views for t/integration/cp_e2e.sh and checks
what the samples show (CP-4-1, CP-4-6, CP-3-9, CP-1-28).

    cp_views.py sample OUT SECONDS STOPFILE [--redis PORT --cluster C] NAME=PORT...

appends one JSON line per sample to OUT (every ~50 ms, until STOPFILE
exists or SECONDS passed): the time, each gateway's /readyz status and
GET /v1/cp/view, and with --redis, read after the views: whether each
gateway's session key exists and the owner of every proxy a view holds.

    cp_views.py check OUT CHECK [ARGS...]

prints "RESULT <0|1> <name>" lines (0: passed) and "VALUE <name> <v>":
  disjoint            no proxy in two gateways' views in any sample, but
                      as draining: a proxy moving through the drain
                      (rebalancing, issue 23 item 4) is in its old
                      owner's view, draining, until that one's next
                      snapshot
  disjoint-usable     no proxy usable by two gateways in any sample (a
                      live view, before the proxy's usable_until, not
                      draining)
  ready NAME...       every sample of these gateways is /readyz 200
  expiry NAME...      a gateway is not ready only once its view's
                      valid_until (or stale deadline) passed, or the last
                      usable_until of its proxies that are not draining
                      (it can serve no more: issue 23 item 4), and it
                      kept its view (the same version) meanwhile
  moved FROM TO LEASES  every proxy of FROM's last view (LEASES: a JSON
                      file {proxy: lease_until_ms} read from Redis after
                      FROM died) shows up in TO's view only once FROM's
                      session is gone from Redis and TO owns it there, and
                      in a view generated after the old lease ended
Every wait is bounded; the gateways are on 127.0.0.1.
"""
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request


def now_ms():
    return int(time.time() * 1000)


def get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%s%s" % (port, path),
                                    timeout=2) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""
    except OSError:
        return 0, b""


def redis(port, cmds):
    """Runs commands (lists of words) in one redis-cli; one answer line each."""
    text = "".join(" ".join(c) + "\n" for c in cmds)
    try:
        out = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port)],
                             input=text.encode(), capture_output=True,
                             timeout=3).stdout.decode()
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = out.split("\n")
    return lines[:len(cmds)] if len(lines) >= len(cmds) else None


def sample(argv):
    out, seconds, stop = argv[0], float(argv[1]), argv[2]
    rest = argv[3:]
    rport = cluster = None
    gws = []
    while rest:
        a = rest.pop(0)
        if a == "--redis":
            rport = rest.pop(0)
        elif a == "--cluster":
            cluster = rest.pop(0)
        else:
            name, port = a.split("=", 1)
            gws.append((name, port))
    end = time.monotonic() + seconds
    with open(out, "a") as f:
        while time.monotonic() < end and not os.path.exists(stop):
            s = {"t": now_ms(), "gw": {}}
            for name, port in gws:
                rs, _ = get(port, "/readyz")
                vs, body = get(port, "/v1/cp/view")
                view = None
                if vs == 200:
                    try:
                        view = json.loads(body)
                    except ValueError:
                        view = None
                s["gw"][name] = {"ready": rs, "view": view}
            if rport:
                p = "ph:cp:{%s}:" % cluster
                ids = sorted({x["proxy_id"] for g in s["gw"].values()
                              if g["view"] for x in g["view"]["proxies"]})
                cmds = [["EXISTS", p + "w:%s:session" % n] for n, _ in gws]
                cmds += [["HGET", p + "owner:" + i, "worker"] for i in ids]
                ans = redis(rport, cmds)
                if ans is not None:
                    s["sessions"] = {n: ans[k] == "1"
                                     for k, (n, _) in enumerate(gws)}
                    s["owner"] = {i: ans[len(gws) + k]
                                  for k, i in enumerate(ids)}
            f.write(json.dumps(s) + "\n")
            f.flush()
            time.sleep(0.05)


def result(ok, name):
    print("RESULT %d %s" % (0 if ok else 1, name), flush=True)


def value(name, v):
    print("VALUE %s %s" % (name, v), flush=True)


def ids(view):
    return {p["proxy_id"] for p in view["proxies"]} if view else set()


def serving_until(view):
    """The last instant a proxy of view can take a stream (0: none)."""
    return max([min(p["usable_until_ms"], p["expires_at_ms"])
                for p in view["proxies"] if not p.get("draining")] or [0])


def check(argv):
    samples = [json.loads(line) for line in open(argv[0]) if line.strip()]
    what, args = argv[1], argv[2:]
    value("samples", len(samples))
    if what in ("disjoint", "disjoint-usable"):
        # disjoint: every proxy a view lists but draining ones;
        # disjoint-usable: only those
        # a gateway may choose at that sample (a live view, before the
        # proxy's usable_until, on the view's own clock, not draining).
        bad = None
        for s in samples:
            seen = {}
            for name, g in s["gw"].items():
                v = g["view"]
                if what == "disjoint":
                    mine = {p["proxy_id"] for p in v["proxies"]
                            if not p.get("draining")} if v else set()
                elif v and v["live"]:
                    mine = {p["proxy_id"] for p in v["proxies"]
                            if v["now_ms"] < p["usable_until_ms"]
                            and not p.get("draining")}
                else:
                    mine = set()
                for p in mine:
                    if p in seen and bad is None:
                        bad = "%s in %s and %s at %d" % (p, seen[p], name, s["t"])
                    seen[p] = name
        if bad:
            value("overlap", bad)
        result(bad is None and samples, "CP-4-1 no proxy %s two gateways "
               "in any of %d samples" % ("in the views of" if what == "disjoint"
                                         else "usable by", len(samples)))
    elif what == "ready":
        for name in args:
            notready = [s["t"] for s in samples if s["gw"][name]["ready"] != 200]
            if notready:
                value("not_ready_" + name, "%d samples, first at %d" %
                      (len(notready), notready[0]))
            result(samples and not notready, "CP-1-28 %s ready (/readyz 200) in "
                   "every one of %d samples" % (name, len(samples)))
    elif what == "expiry":
        for name in args:
            early, versions, saw_ready, saw_not = [], set(), 0, 0
            for s in samples:
                g = s["gw"][name]
                v = g["view"]
                if v and v["held"]:
                    versions.add(v["version"])
                if g["ready"] == 200:
                    saw_ready += 1
                    continue
                saw_not += 1
                until = min(v["valid_until_ms"], v["stale_deadline_ms"],
                            serving_until(v)) if v else 0
                # The view's own clock, read in the same request.
                if v and v["held"] and v["now_ms"] < until:
                    early.append(s["t"])
            result(saw_not and not early, "CP-3-9 %s not ready only once its "
                   "view's valid_until passed (%d ready, %d not ready samples)" %
                   (name, saw_ready, saw_not))
            result(len(versions) == 1, "CP-3-14 %s kept the same view meanwhile "
                   "(versions %s)" % (name, sorted(versions)))
    elif what == "moved":
        src, dst, leases = args[0], args[1], json.load(open(args[2]))
        first = {}
        early, unfenced = [], []
        for s in samples:
            v = s["gw"][dst]["view"]
            for p in ids(v) & set(leases):
                if "sessions" not in s:
                    unfenced.append("%s at %d: no Redis answer" % (p, s["t"]))
                elif s["sessions"].get(src) or s["owner"].get(p) != dst:
                    unfenced.append("%s at %d: session %s, owner %s" % (
                        p, s["t"], s["sessions"].get(src), s["owner"].get(p)))
                if p not in first:
                    first[p] = v["generated_at_ms"]
                    if v["generated_at_ms"] < leases[p]:
                        early.append("%s: view of %d, lease until %d" % (
                            p, v["generated_at_ms"], leases[p]))
        for x in (early + unfenced)[:5]:
            value("violation", x)
        result(set(first) == set(leases), "CP-4-6 every proxy of %s (%s) moved "
               "to %s" % (src, ",".join(sorted(leases)), dst))
        result(not unfenced, "CP-4-6 %s held them only once %s's session had "
               "expired in Redis and %s owned them there" % (dst, src, dst))
        result(not early, "CP-4-6 ... in a snapshot generated after %s's lease "
               "ended (never two owners)" % src)
    else:
        print("unknown check " + what, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in ("sample", "check"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    (sample if sys.argv[1] == "sample" else check)(sys.argv[2:])

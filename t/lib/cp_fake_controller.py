# SPDX-License-Identifier: BSD-2-Clause
"""cp_fake_controller.py GEN_DIR PORT_FILE EVENTS SCENARIO [CERT_DIR]: a scriptable
WorkerControlPlane (and CheckerControlPlane) on Debian's python3-grpcio (stubs generated at test
time into GEN_DIR) for t/integration/cp_gateway.sh. A double: it injects
the faults a real controller must never produce on demand. Plaintext on
127.0.0.1, or mTLS with CERT_DIR's server.pem/.key and ca.pem (client
certificates required; t/unit/cp/cp_grpc_certs.sh makes them), a port picked by the kernel and written to PORT_FILE. Every call
it gets is one line in EVENTS (flushed), for the shell to read:

  REGISTER <worker> <instance> <zone> [<the peer's URI SAN, mTLS>]
  WATCH <session> <last_version>
  ACK <version> ACCEPTED|REJECTED <reason number>
  RUNTIME <sequence> <snapshot_version> <epoch> <counters>
  OUTCOMES <session> <sequence> <outcomes> <digest>   one per batch read
  OUTCALL <session> <batches> <status> <acknowledged>  one per call's end

A batch's digest is SHA-256 over it packed with worker_id and session_id
empty (docs/api/controlplane.md#digest; deterministic serialization), so a
resend of the same batch shows the same digest.

Scenarios:
  ok            a valid full snapshot, the stream stays open
  bad_checksum  a valid v1; after its ACK a v2 with a wrong checksum
  expired       a valid v1; after its ACK a v2 whose valid_until passed
  identity      a valid v1; after its ACK a v2 for another worker
  delta         full v1; after its ACK a delta to v2; after that ACK a
                delta on a base the worker does not hold (it must reopen)
  stream_end    a valid snapshot, then the stream ends after its ACK
  short         a valid snapshot valid for 3 s (the test then kills us)
  fatal_<code>  RegisterWorker fails with invalid_argument,
                permission_denied or failed_precondition
For t/integration/cp_outcomes.sh (ReportOutcomes; max_runtime_counters
50 so that batches are small; the snapshot as in ok):
  oc_ack_all    every call acknowledged up to its last batch
  oc_ack_none   the first call answers OK acknowledging nothing (0), the
                later ones everything (the same batches come again)
  oc_unavailable  the first call fails UNAVAILABLE, the later ones are
                acknowledged (retried in the same session)
  oc_failed_precondition  the first call fails FAILED_PRECONDITION (a
                replaced session), the later ones are acknowledged
For t/integration/gateway_drain.sh (issue 22 item 14: the streams
through a proxy that leaves the view end after a bounded drain), with a
pool: CP_FAKE_POOL="pA:UPORT:TPORT pB:..." gives each proxy (an
http_connect upstream on 127.0.0.1:UPORT, group g<id>) and a rule r<id>
sending 127.0.0.1:TPORT to it (round_robin, REJECT); CP_FAKE_TRIGGER
names a file the test creates to make the controller act:
  drain_revoke  once the trigger exists, every ReportRuntime answer names
                pA in revoke_proxy_ids (CP-4-7); the view stays
  drain_remove  once the trigger exists, a v2 without pA (CP-4-2: pA was
                extracted, it leaves the view; its rule stays, with no
                candidate)
  drain_stale   max_stale_age 4 s, a new full snapshot every second while
                the controller lives (the test kills it: CP-3-18)
  drain_expire  the proxies' expires_at 6 s after the one snapshot
                (usable_until 5 s), never refreshed (CP-3-5, CP-4-6)
The snapshots' checksum is t/lib/cp_checksum.py's (written from the
protocol document, not from the C code).
For t/integration/cp_checker.sh, the CheckerControlPlane (issue 26): the
tasks are the lines of the file CP_FAKE_TASKS (one JSON object each:
task_id, proxy_id, tier, protocol, host, port, user, pass, target,
target_group, echo_url, nonce, deadline_ms from now), streamed as they are
appended; more events:

  CREGISTER <checker> <instance> <zone> <max_concurrency> <tiers,> [<URI SAN>]
  CWATCH <session>
  TASK <session> <task_id>                            one per task sent
  OBS <session> <sequence> <observations> <digest>    one per batch read
  OB <session> <task_id> <tier> <status> <reason> <anonymity> <egress_ip>
                                                      one per observation
  OBCALL <session> <status> <acknowledged>            one per call's end

Scenarios (the first call of the kind named fails, the later ones work):
  chk_ok          tasks as they come, every batch acknowledged
  chk_stale       the first WatchCheckTasks fails FAILED_PRECONDITION
  chk_unavailable the first ReportObservations fails UNAVAILABLE
  chk_fence       the first ReportObservations fails ALREADY_EXISTS
  chk_ack_none    the first ReportObservations acknowledges nothing
CP_FAKE_PORT=N: listen on port N (a controller back on its port after an
outage, t/integration/cp_gateway.sh), not one the kernel picks."""
import hashlib
import json
import os
import sys
import threading
import time
from concurrent import futures

sys.path.insert(0, sys.argv[1])
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grpc  # noqa: E402
import cp_checksum  # noqa: E402
from controlplane.v1 import controlplane_pb2 as pb  # noqa: E402
from controlplane.v1 import controlplane_pb2_grpc as pbg  # noqa: E402

PORT_FILE, EVENTS, SCENARIO = sys.argv[2], sys.argv[3], sys.argv[4]
CERTS = sys.argv[5] if len(sys.argv) > 5 else None
CLUSTER = "c1"
POOL = [x.split(":") for x in os.environ.get("CP_FAKE_POOL", "").split()]
TRIGGER = os.environ.get("CP_FAKE_TRIGGER", "")
# CP_FAKE_PORT: listen there (a controller back on its port after an
# outage), not on a port the kernel picks.
FIXED_PORT = int(os.environ.get("CP_FAKE_PORT", "0"))
SESSION_N = [0]
OC_CALLS = [0]
ev_lock = threading.Condition()
acks = []
log = open(EVENTS, "a", encoding="ascii")


def event(line):
    with ev_lock:
        log.write(line + "\n")
        log.flush()
        ev_lock.notify_all()


def wait_acks(n, ctx, limit=30.0):
    """Until n ACKs arrived (bounded), while the call lives."""
    end = time.time() + limit
    with ev_lock:
        while len(acks) < n and time.time() < end and ctx.is_active():
            ev_lock.wait(0.1)
    return len(acks) >= n


def ts_of(t):
    return (t.seconds, t.nanos) if t.ByteSize() or t.seconds else None


def as_dict(m):
    def proxy(p):
        return {"proxy_id": p.proxy_id, "protocol": p.protocol,
                "host": p.host, "port": p.port, "groups": list(p.groups),
                "zone": p.zone, "capacity": p.capacity, "weight": p.weight,
                "expires_at": (p.expires_at.seconds, p.expires_at.nanos),
                "usable_until": (p.usable_until.seconds,
                                 p.usable_until.nanos),
                "secret_ref": p.secret_ref,
                "credential_version": p.credential_version,
                "draining": p.draining, "health": p.health}
    def rule(r):
        return {"rule_id": r.rule_id, "host_pattern": r.host_pattern,
                "port_min": r.port_min, "port_max": r.port_max,
                "client_identity": r.client_identity,
                "listener": r.listener, "target_group": r.target_group,
                "strategy": r.strategy, "on_unavailable": r.on_unavailable,
                "wait_timeout": None, "sticky_key": r.sticky_key}
    return {"version": m.version, "ownership_epoch": m.ownership_epoch,
            "valid_until": (m.valid_until.seconds, m.valid_until.nanos),
            "routing": [rule(r) for r in m.routing],
            "proxies": [proxy(p) for p in m.proxies],
            "credentials": []}


def triggered():
    return bool(TRIGGER) and os.path.exists(TRIGGER)


def new_snapshot(worker, session, version, valid_s):
    """An empty snapshot generated now, valid valid_s seconds, and now."""
    now = int(time.time())
    m = pb.WorkerSnapshot(version=version, ownership_epoch=1,
                          cluster_id=CLUSTER, worker_id=worker,
                          session_id=session)
    m.generated_at.seconds = now
    m.valid_until.seconds = now + valid_s
    return m, now


def pool_snapshot(worker, session, version, valid_s, without=()):
    """The CP_FAKE_POOL proxies, but those in without, and their rules."""
    m, now = new_snapshot(worker, session, version, valid_s)
    for pid, uport, tport in POOL:
        # The rule stays: without its proxy it has no candidate.
        m.routing.add(rule_id="r" + pid, host_pattern="127.0.0.1",
                      port_min=int(tport), port_max=int(tport),
                      target_group="g" + pid, strategy="round_robin",
                      on_unavailable=pb.ON_UNAVAILABLE_REJECT)
        if pid in without:
            continue
        p = m.proxies.add(proxy_id=pid,
                          protocol=pb.UPSTREAM_PROTOCOL_HTTP_CONNECT,
                          host="127.0.0.1", port=int(uport),
                          groups=["g" + pid], zone="z1", capacity=10,
                          weight=1)
        life = 6 if SCENARIO == "drain_expire" else 3600
        p.expires_at.seconds = now + life
        p.usable_until.seconds = now + life - 1
    m.checksum = bytes.fromhex(cp_checksum.checksum(as_dict(m)))
    return m


def snapshot(worker, session, version, valid_s, capacity=1):
    if POOL:
        return pool_snapshot(worker, session, version, valid_s)
    m, now = new_snapshot(worker, session, version, valid_s)
    p = m.proxies.add(proxy_id="p1", protocol=pb.UPSTREAM_PROTOCOL_HTTP_CONNECT,
                      host="192.0.2.10", port=3128, groups=["g"], zone="z1",
                      capacity=capacity, weight=1)
    p.expires_at.seconds = now + 3600
    p.usable_until.seconds = now + 3500
    m.checksum = bytes.fromhex(cp_checksum.checksum(as_dict(m)))
    return m


class Controller(pbg.WorkerControlPlaneServicer):
    def RegisterWorker(self, req, ctx):
        peer = ctx.auth_context().get("x509_subject_alternative_name", [])
        uris = [x.decode() for x in peer if x.startswith(b"spiffe://")]
        event(" ".join(["REGISTER", req.worker_id, req.instance_id,
                        req.zone] + uris))
        if SCENARIO.startswith("fatal_"):
            code = getattr(grpc.StatusCode, SCENARIO[6:].upper())
            ctx.abort(code, "the fake controller refuses")
        SESSION_N[0] += 1
        r = pb.RegisterWorkerResponse(session_id="s%d" % SESSION_N[0],
                                      ownership_epoch=1,
                                      protocol_version=pb.PROTOCOL_VERSION_V1,
                                      max_runtime_counters=(
                                          50 if SCENARIO.startswith("oc_")
                                          else 100))
        r.max_stale_age.seconds = 4 if SCENARIO == "drain_stale" else 600
        r.session_ttl.seconds = 30
        r.runtime_interval.nanos = 200 * 1000 * 1000
        return r

    def WatchSnapshots(self, req, ctx):
        event("WATCH %s %d" % (req.session_id, req.last_version))
        w, s = req.worker_id, req.session_id
        base = len(acks)
        if SCENARIO in ("bad_checksum", "expired", "identity"):
            yield pb.WatchSnapshotsResponse(snapshot=snapshot(w, s, 1, 60))
            if not wait_acks(base + 1, ctx):
                return
            bad = snapshot(w, s, 2, 60)
            if SCENARIO == "bad_checksum":
                bad.checksum = bytes(32)
            elif SCENARIO == "identity":
                bad = snapshot("w9", s, 2, 60)
            else:
                bad.valid_until.seconds = int(time.time()) - 10
            yield pb.WatchSnapshotsResponse(snapshot=bad)
        elif SCENARIO == "delta" and req.last_version == 0:
            yield pb.WatchSnapshotsResponse(snapshot=snapshot(w, s, 1, 60))
            if not wait_acks(base + 1, ctx):
                return
            full2 = snapshot(w, s, 2, 60, capacity=2)
            d = pb.SnapshotDelta(base_version=1, version=2, ownership_epoch=1,
                                 checksum=full2.checksum)
            d.generated_at.CopyFrom(full2.generated_at)
            d.valid_until.CopyFrom(full2.valid_until)
            d.upserted_proxies.add().CopyFrom(full2.proxies[0])
            yield pb.WatchSnapshotsResponse(delta=d)
            if not wait_acks(base + 2, ctx):
                return
            d.base_version, d.version = 99, 3
            yield pb.WatchSnapshotsResponse(delta=d)
        elif SCENARIO == "delta":
            # The reopened stream: a full snapshot first (CP-2-2).
            yield pb.WatchSnapshotsResponse(snapshot=snapshot(w, s, 3, 60))
        elif SCENARIO in ("drain_remove", "drain_stale"):
            yield pb.WatchSnapshotsResponse(snapshot=snapshot(w, s, 1, 60))
            v, end = 1, time.time() + 120
            while ctx.is_active() and time.time() < end:
                if not wait_acks(base + v, ctx):
                    return
                if SCENARIO == "drain_stale":
                    time.sleep(1.0)
                    v += 1
                    yield pb.WatchSnapshotsResponse(
                        snapshot=snapshot(w, s, v, 60))
                elif triggered():
                    v += 1
                    event("REMOVED pA v%d" % v)
                    yield pb.WatchSnapshotsResponse(
                        snapshot=pool_snapshot(w, s, v, 60,
                                               without=("pA",)))
                    break
                else:
                    time.sleep(0.1)
        elif SCENARIO == "short":
            yield pb.WatchSnapshotsResponse(snapshot=snapshot(w, s, 1, 3))
        else:
            yield pb.WatchSnapshotsResponse(snapshot=snapshot(w, s, 1, 60))
            if SCENARIO == "stream_end":
                wait_acks(base + 1, ctx)
                return
        end = time.time() + 60
        while ctx.is_active() and time.time() < end:
            time.sleep(0.1)

    def AcknowledgeSnapshot(self, req, ctx):
        res = "ACCEPTED" if req.result == pb.ACK_RESULT_ACCEPTED else "REJECTED"
        with ev_lock:
            acks.append(req)
        event("ACK %d %s %d" % (req.version, res, req.reject_reason))
        return pb.AcknowledgeSnapshotResponse()

    def ReportRuntime(self, req, ctx):
        event("RUNTIME %d %d %d %d" % (req.report_sequence,
                                       req.snapshot_version,
                                       req.ownership_epoch, len(req.counters)))
        r = pb.ReportRuntimeResponse()
        r.session_expires_at.seconds = int(time.time()) + 30
        if SCENARIO == "drain_revoke" and triggered():
            r.revoke_proxy_ids.append("pA")
        return r

    def ReportOutcomes(self, it, ctx):
        with ev_lock:
            OC_CALLS[0] += 1
            n_call = OC_CALLS[0]
        last, n, session = 0, 0, "-"
        for b in it:
            c = pb.ReportOutcomesRequest()
            c.CopyFrom(b)
            c.worker_id, c.session_id = "", ""
            digest = hashlib.sha256(
                c.SerializeToString(deterministic=True)).hexdigest()
            event("OUTCOMES %s %d %d %s" % (b.session_id, b.sequence,
                                            len(b.outcomes), digest))
            last, n, session = b.sequence, n + 1, b.session_id
        fail = {"oc_unavailable": grpc.StatusCode.UNAVAILABLE,
                "oc_failed_precondition":
                    grpc.StatusCode.FAILED_PRECONDITION}.get(SCENARIO)
        if fail is not None and n_call == 1:
            event("OUTCALL %s %d %s 0" % (session, n, fail.name))
            ctx.abort(fail, "the fake controller refuses")
        if SCENARIO == "oc_ack_none" and n_call == 1:
            last = 0
        event("OUTCALL %s %d OK %d" % (session, n, last))
        return pb.ReportOutcomesResponse(acknowledged_sequence=last)


CHK_CALLS = {"watch": 0, "report": 0}
TASKS = os.environ.get("CP_FAKE_TASKS", "")


def task_of(d):
    t = pb.CheckTask(task_id=d["task_id"], proxy_id=d["proxy_id"],
                     tier=d["tier"], protocol=d.get("protocol", 1),
                     host=d.get("host", "127.0.0.1"), port=d["port"],
                     target=d.get("target", ""),
                     target_group=d.get("target_group", ""),
                     echo_url=d.get("echo_url", ""),
                     nonce=d.get("nonce", ""))
    if d.get("user"):
        t.credential.username = d["user"]
        t.credential.password = d.get("pass", "")
    ms = int(time.time() * 1000) + int(d.get("deadline_ms", 5000))
    t.deadline.seconds, t.deadline.nanos = ms // 1000, (ms % 1000) * 1000000
    return t


class Checkers(pbg.CheckerControlPlaneServicer):
    def RegisterChecker(self, req, ctx):
        peer = ctx.auth_context().get("x509_subject_alternative_name", [])
        uris = [x.decode() for x in peer if x.startswith(b"spiffe://")]
        event(" ".join(["CREGISTER", req.checker_id, req.instance_id,
                        req.zone, str(req.max_concurrency),
                        ",".join(str(t) for t in req.tiers) or "-"] + uris))
        SESSION_N[0] += 1
        r = pb.RegisterCheckerResponse(session_id="s%d" % SESSION_N[0],
                                       protocol_version=pb.PROTOCOL_VERSION_V1)
        r.session_ttl.seconds = 30
        return r

    def WatchCheckTasks(self, req, ctx):
        event("CWATCH %s" % req.session_id)
        with ev_lock:
            CHK_CALLS["watch"] += 1
            n = CHK_CALLS["watch"]
        if SCENARIO == "chk_stale" and n == 1:
            ctx.abort(grpc.StatusCode.FAILED_PRECONDITION, "stale session")
        sent, end = 0, time.time() + 120
        while ctx.is_active() and time.time() < end:
            lines = []
            if TASKS and os.path.exists(TASKS):
                with open(TASKS, encoding="ascii") as f:
                    lines = [x for x in f.read().splitlines() if x.strip()]
            for line in lines[sent:]:

                d = json.loads(line)
                event("TASK %s %s" % (req.session_id, d["task_id"]))
                yield task_of(d)
            sent = max(sent, len(lines))
            time.sleep(0.05)

    def ReportObservations(self, it, ctx):
        with ev_lock:
            CHK_CALLS["report"] += 1
            n_call = CHK_CALLS["report"]
        last, session = 0, "-"
        for b in it:
            c = pb.ReportObservationsRequest()
            c.CopyFrom(b)
            c.checker_id, c.session_id = "", ""
            digest = hashlib.sha256(
                c.SerializeToString(deterministic=True)).hexdigest()
            event("OBS %s %d %d %s" % (b.session_id, b.sequence,
                                       len(b.observations), digest))
            for o in b.observations:
                event("OB %s %s %d %d %s %d %s" % (
                    b.session_id, o.task_id, o.tier, o.status,
                    o.reason or "-", o.anonymity, o.egress_ip or "-"))
            last, session = b.sequence, b.session_id
        fail = {"chk_unavailable": grpc.StatusCode.UNAVAILABLE,
                "chk_fence": grpc.StatusCode.ALREADY_EXISTS}.get(SCENARIO)
        if fail is not None and n_call == 1:
            event("OBCALL %s %s 0" % (session, fail.name))
            ctx.abort(fail, "the fake controller refuses")
        if SCENARIO == "chk_ack_none" and n_call == 1:
            last = 0
        event("OBCALL %s OK %d" % (session, last))
        return pb.ReportObservationsResponse(acknowledged_sequence=last)


def main():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    pbg.add_WorkerControlPlaneServicer_to_server(Controller(), server)
    pbg.add_CheckerControlPlaneServicer_to_server(Checkers(), server)
    if CERTS:
        def read(n):
            with open(os.path.join(CERTS, n), "rb") as f:
                return f.read()
        creds = grpc.ssl_server_credentials(
            [(read("server.key"), read("server.pem"))],
            root_certificates=read("ca.pem"), require_client_auth=True)
        port = server.add_secure_port("127.0.0.1:%s" % FIXED_PORT, creds)
    else:
        port = server.add_insecure_port("127.0.0.1:%s" % FIXED_PORT)
    server.start()
    with open(PORT_FILE + ".tmp", "w", encoding="ascii") as f:
        f.write("%d\n" % port)
    os.rename(PORT_FILE + ".tmp", PORT_FILE)
    server.wait_for_termination(timeout=300)


if __name__ == "__main__":
    main()

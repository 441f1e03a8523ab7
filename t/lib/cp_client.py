#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""A worker's side of the WorkerControlPlane API for t/integration/controller.sh,
on Debian's python3-grpcio with stubs generated at test time.

    cp_client.py GEN PORT SCENARIO DIR [ARGS...]

prints one "RESULT <0|1> <name>" line per check (0: passed) and, for
values the shell needs, "VALUE <name> <value>". Every wait has a deadline.
"""
import hashlib
import os
import struct
import sys
import threading
import time

GEN, PORT, SCENARIO, DIR = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
ARGS = sys.argv[5:]
sys.path.insert(0, GEN)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__))))
import grpc  # noqa: E402
from controlplane.v1 import controlplane_pb2 as pb  # noqa: E402
from controlplane.v1 import controlplane_pb2_grpc as rpc  # noqa: E402
import cp_checksum  # noqa: E402  (t/lib/cp_checksum.py: an independent checksum)
import cp_py  # noqa: E402  (t/lib/cp_py.py)
from cp_py import code_of, result, value  # noqa: E402

SC = grpc.StatusCode
TIMEOUT = 10


def channel(cert=None, key=None, ca=None):
    return cp_py.channel(PORT, cert, key, ca)


def register(stub, worker="w1", instance="i1", cluster="c1"):
    return code_of(lambda: stub.RegisterWorker(pb.RegisterWorkerRequest(
        cluster_id=cluster, worker_id=worker, instance_id=instance, zone="z1",
        supported_protocol_version=pb.PROTOCOL_VERSION_V1), timeout=TIMEOUT))


def first_snapshot(stub, worker, session, timeout=TIMEOUT):
    it = stub.WatchSnapshots(pb.WatchSnapshotsRequest(
        worker_id=worker, session_id=session), timeout=timeout)
    try:
        for m in it:
            return SC.OK, m.snapshot, it
    except grpc.RpcError as e:
        return e.code(), None, it
    return SC.OK, None, it


def ack(stub, worker, session, snap, accepted=True, checksum=None):
    return code_of(lambda: stub.AcknowledgeSnapshot(pb.AcknowledgeSnapshotRequest(
        worker_id=worker, session_id=session, version=snap.version,
        ownership_epoch=snap.ownership_epoch,
        checksum=snap.checksum if checksum is None else checksum,
        result=pb.ACK_RESULT_ACCEPTED if accepted else pb.ACK_RESULT_REJECTED,
        reject_reason=0 if accepted else pb.REJECT_REASON_MALFORMED),
        timeout=TIMEOUT))


def runtime(stub, worker, session, seq, snap, counters=(), observed_ms=None):
    req = pb.ReportRuntimeRequest(
        worker_id=worker, session_id=session, report_sequence=seq,
        snapshot_version=snap.version, ownership_epoch=snap.ownership_epoch,
        counters=[pb.ProxyCounter(proxy_id=p, active=a, reserved=r)
                  for p, a, r in counters])
    # Fixed by default: replays are byte-equal.
    req.observed_at.FromMilliseconds(
        1764600000000 + seq if observed_ms is None else observed_ms)
    return code_of(lambda: stub.ReportRuntime(req, timeout=TIMEOUT))


def batch(worker, session, seq, proxy="p1", n=1):
    b = pb.ReportOutcomesRequest(worker_id=worker, session_id=session,
                                 sequence=seq)
    for _ in range(n):
        o = b.outcomes.add(proxy_id=proxy, stage=pb.OUTCOME_STAGE_DIAL,
                           result=pb.OUTCOME_RESULT_SUCCESS, rule_id="r1")
        o.latency.FromMilliseconds(5)
        o.observed_at.FromMilliseconds(1764600000000 + seq)
    return b


def outcomes(stub, batches):
    return code_of(lambda: stub.ReportOutcomes(iter(batches), timeout=TIMEOUT))


def wait_owned(stub, worker, session, want, tries=40):
    """Opens streams until the snapshot carries `want` proxies (the assign
    runs every assign_interval): bounded by tries."""
    snap = None
    for _ in range(tries):
        code, snap, it = first_snapshot(stub, worker, session)
        it.cancel()
        if code != SC.OK or snap is None:
            return code, snap
        if len(snap.proxies) >= want:
            return code, snap
        threading.Event().wait(0.25)
    return SC.OK, snap


def _ts(m, field):
    if not m.HasField(field):
        return None
    t = getattr(m, field)
    return (t.seconds, t.nanos)


def snapshot_checksum(snap):
    """cp_checksum.checksum over the message, as raw bytes."""
    d = {"version": snap.version, "ownership_epoch": snap.ownership_epoch,
         "valid_until": _ts(snap, "valid_until"),
         "routing": [{"rule_id": r.rule_id, "host_pattern": r.host_pattern,
                      "port_min": r.port_min, "port_max": r.port_max,
                      "client_identity": r.client_identity,
                      "listener": r.listener, "target_group": r.target_group,
                      "strategy": r.strategy,
                      "on_unavailable": r.on_unavailable,
                      "wait_timeout": _ts(r, "wait_timeout"),
                      "sticky_key": r.sticky_key} for r in snap.routing],
         "proxies": [{"proxy_id": x.proxy_id, "protocol": x.protocol,
                      "host": x.host, "port": x.port, "groups": list(x.groups),
                      "zone": x.zone, "capacity": x.capacity,
                      "weight": x.weight,
                      "expires_at": _ts(x, "expires_at"),
                      "usable_until": _ts(x, "usable_until"),
                      "secret_ref": x.secret_ref,
                      "credential_version": x.credential_version,
                      "draining": x.draining} for x in snap.proxies],
         "credentials": [{"secret_ref": c.secret_ref,
                          "credential_version": c.credential_version,
                          "username": c.username, "password": c.password}
                         for c in snap.credentials]}
    return bytes.fromhex(cp_checksum.checksum(d))


def flow():
    stub = rpc.WorkerControlPlaneStub(channel())
    password = ARGS[0]
    code, reg = register(stub)
    result(code == SC.OK and len(reg.session_id) == 32,
           "CP-1-7 RegisterWorker answers a new 128-bit session id")
    if code != SC.OK:
        return
    result(reg.protocol_version == pb.PROTOCOL_VERSION_V1 and
           reg.runtime_interval.ToMilliseconds() * 2 < reg.session_ttl.ToMilliseconds(),
           "CP-7-4 RegisterWorker: protocol v1, runtime_interval < session_ttl / 2")
    s = reg.session_id
    code, _ = register(stub, cluster="other")
    result(code == SC.INVALID_ARGUMENT or code == SC.FAILED_PRECONDITION or
           code == SC.PERMISSION_DENIED,
           "CP-8-2 RegisterWorker for another cluster is refused (%s)" % code)
    code, _ = code_of(lambda: stub.RegisterWorker(pb.RegisterWorkerRequest(
        cluster_id="c1", worker_id="w1", instance_id="i1", zone="z1",
        supported_protocol_version=7), timeout=TIMEOUT))
    result(code in (SC.FAILED_PRECONDITION, SC.INVALID_ARGUMENT),
           "CP-7-4 an unknown protocol version is refused (%s)" % code)
    code, snap = wait_owned(stub, "w1", s, 2)
    result(code == SC.OK and snap is not None,
           "CP-1-14 WatchSnapshots sends a full snapshot")
    if snap is None:
        return
    value("checksum", snap.checksum.hex())
    ids = sorted(p.proxy_id for p in snap.proxies)
    result(ids == ["p1", "p2"], "CP-1-16 the snapshot carries the owned proxies (%s)" % ids)
    creds = {c.secret_ref: c for c in snap.credentials}
    result("upstream-a" in creds and creds["upstream-a"].username == "alice" and
           creds["upstream-a"].password == password,
           "CP-1-18 credentials from secrets_dir, deduplicated")
    result(snap.checksum == snapshot_checksum(snap),
           "CP-1-19 the checksum verifies (independent Python implementation)")
    result(snap.worker_id == "w1" and snap.session_id == s and snap.cluster_id == "c1",
           "CP-3-7 the snapshot names the cluster, worker and session")
    result(all(p.usable_until.ToMilliseconds() < p.expires_at.ToMilliseconds()
               for p in snap.proxies) and snap.HasField("valid_until"),
           "CP-3-5 usable_until before expires_at, valid_until set")
    # ACK of a triple never issued
    code, _ = ack(stub, "w1", s, snap, checksum=b"\x01" * 32)
    result(code == SC.FAILED_PRECONDITION,
           "CP-1-8 ACK of a triple never issued: FAILED_PRECONDITION (%s)" % code)
    code, _ = runtime(stub, "w1", s, 1, snap)
    result(code == SC.FAILED_PRECONDITION,
           "CP-1-10 runtime before a positive ACK: FAILED_PRECONDITION (%s)" % code)
    code, _ = ack(stub, "w1", s, snap)
    result(code == SC.OK, "CP-2-3 ACK of the issued snapshot accepted (%s)" % code)
    code, r = runtime(stub, "w1", s, 1, snap, [("p1", 1, 0)])
    result(code == SC.OK and r.HasField("session_expires_at"),
           "CP-2-9 ReportRuntime accepted, session_expires_at (%s)" % code)
    code, _ = runtime(stub, "w1", s, 1, snap, [("p1", 1, 0)])
    result(code == SC.OK, "CP-2-10 the same report again: idempotent replay (%s)" % code)
    code, _ = runtime(stub, "w1", s, 1, snap, [("p1", 2, 0)])
    result(code == SC.ALREADY_EXISTS,
           "CP-2-10 same sequence, other content: ALREADY_EXISTS (%s)" % code)
    code, _ = runtime(stub, "w1", s, 2, snap, [])
    result(code == SC.OK, "CP-2-14 an empty report (all zero) accepted (%s)" % code)
    code, _ = runtime(stub, "w1", s, 1, snap, [("p1", 1, 0)])
    result(code == SC.ABORTED, "CP-2-9 a smaller sequence: ABORTED (%s)" % code)
    code, _ = code_of(lambda: stub.ReportRuntime(pb.ReportRuntimeRequest(
        worker_id="w1", session_id=s, report_sequence=3,
        snapshot_version=snap.version + 1, ownership_epoch=snap.ownership_epoch),
        timeout=TIMEOUT))
    result(code == SC.FAILED_PRECONDITION,
           "CP-2-13 a version ahead of the ACK baseline: FAILED_PRECONDITION (%s)" % code)
    # Sequences order reports, observed_at never does (CP-2-11): a later
    # sequence observed long before the last one is taken, a smaller one
    # observed after it is not.
    code, _ = runtime(stub, "w1", s, 3, snap, [], observed_ms=1000000000000)
    result(code == SC.OK,
           "CP-2-11 a larger sequence observed earlier than the last: accepted (%s)" % code)
    code, _ = runtime(stub, "w1", s, 2, snap, [], observed_ms=1764700000000)
    result(code == SC.ABORTED,
           "CP-2-11 a smaller sequence observed later than the last: ABORTED (%s)" % code)
    # outcomes
    code, r = outcomes(stub, [batch("w1", s, 1), batch("w1", s, 2)])
    result(code == SC.OK and r.acknowledged_sequence == 2,
           "CP-1-30 ReportOutcomes: two batches, acknowledged_sequence 2 (%s)" % code)
    code, r = outcomes(stub, [batch("w1", s, 2)])
    result(code == SC.OK and r.acknowledged_sequence == 2,
           "CP-5-12 the same batch again: replay accepted (%s)" % code)
    code, _ = outcomes(stub, [batch("w1", s, 2, proxy="p2")])
    result(code == SC.ALREADY_EXISTS,
           "CP-5-13 same sequence, other digest: ALREADY_EXISTS (%s)" % code)
    code, _ = outcomes(stub, [batch("w1", s, 1)])
    result(code == SC.ABORTED, "CP-5-14 a smaller sequence: ABORTED (%s)" % code)
    code, _ = outcomes(stub, [batch("w1", s, 10 + i) for i in range(17)])
    result(code == SC.RESOURCE_EXHAUSTED,
           "CP-5-9 17 batches in one call: RESOURCE_EXHAUSTED (%s)" % code)
    code, _ = outcomes(stub, [batch("w1", s, 40), batch("w2", s, 41)])
    result(code in (SC.FAILED_PRECONDITION, SC.INVALID_ARGUMENT),
           "CP-1-29 the identity changed inside the stream: refused (%s)" % code)
    # issue 23 item 7: a negative ACK is an ACK too (CP-1-8): one of a
    # triple never issued is refused and leaves the runtime fence open
    code, _ = ack(stub, "w1", s, snap, accepted=False, checksum=b"\x02" * 32)
    result(code == SC.FAILED_PRECONDITION,
           "CP-1-8 a negative ACK of a triple never issued: FAILED_PRECONDITION "
           "(issue 23 item 7) (%s)" % code)
    code, _ = runtime(stub, "w1", s, 4, snap)
    result(code == SC.OK, "CP-1-8 ... and the runtime fence stays open (%s)" % code)
    # negative ACK closes the runtime fence
    code, _ = ack(stub, "w1", s, snap, accepted=False)
    result(code == SC.OK, "CP-1-10 a negative ACK is accepted (%s)" % code)
    code, _ = runtime(stub, "w1", s, 5, snap)
    result(code == SC.FAILED_PRECONDITION,
           "CP-1-10 runtime after a negative ACK: FAILED_PRECONDITION (%s)" % code)
    # stale session while the old Watch is live
    it = stub.WatchSnapshots(pb.WatchSnapshotsRequest(worker_id="w1", session_id=s),
                             timeout=TIMEOUT * 2)
    got = []
    ended = threading.Event()

    def drain():
        try:
            for m in it:
                got.append(m)
        except grpc.RpcError as e:
            got.append(e.code())
        ended.set()
    threading.Thread(target=drain, daemon=True).start()
    for _ in range(100):
        if got:
            break
        threading.Event().wait(0.05)
    code, reg2 = register(stub, instance="i2")
    result(code == SC.OK and reg2.session_id != s,
           "CP-2-1 a new registration replaces the session")
    ended.wait(TIMEOUT)
    result(ended.is_set() and got and got[-1] == SC.FAILED_PRECONDITION,
           "CP-2-8 the old session's live stream ends FAILED_PRECONDITION (%s)" %
           (got[-1] if got else None))
    code, _ = runtime(stub, "w1", s, 6, snap)
    result(code == SC.FAILED_PRECONDITION,
           "CP-2-8 a report of the replaced session: FAILED_PRECONDITION (%s)" % code)
    code, _, it = first_snapshot(stub, "w1", s)
    result(code == SC.FAILED_PRECONDITION,
           "CP-1-35 CP-2-8 WatchSnapshots of the replaced session: FAILED_PRECONDITION (%s)" % code)
    value("session", reg2.session_id)


def apply_delta(held, d):
    """The full snapshot a delta on `held` stands for, by the rules of
    docs/protocol/controlplane-snapshots.md: proxies in id order, the
    credentials of held that the proxies still name."""
    new = pb.WorkerSnapshot()
    new.CopyFrom(held)
    new.version, new.ownership_epoch = d.version, d.ownership_epoch
    new.generated_at.CopyFrom(d.generated_at)
    new.valid_until.CopyFrom(d.valid_until)
    if d.routing_replaced:
        del new.routing[:]
        new.routing.extend(d.routing)
    px = {p.proxy_id: p for p in held.proxies}
    for r in d.removed_proxy_ids:
        px.pop(r, None)
    for p in d.upserted_proxies:
        px[p.proxy_id] = p
    del new.proxies[:]
    new.proxies.extend(px[k] for k in sorted(px))
    refs = {(p.secret_ref, p.credential_version) for p in new.proxies if p.secret_ref}
    keep = [c for c in held.credentials if (c.secret_ref, c.credential_version) in refs]
    del new.credentials[:]
    new.credentials.extend(keep)
    new.checksum = d.checksum
    return new


def delta():
    """Deltas (CP-1-2, CP-3-15): after an accepted ACK the next snapshot
    comes as a delta on it, which applies to exactly the checksum it
    declares; after a snapshot left unacknowledged, full snapshots again.
    ARGS: the proxyhostctl command that changes the pool."""
    import queue
    import subprocess
    stub = rpc.WorkerControlPlaneStub(channel())
    code, reg = register(stub, instance="i7")
    if code != SC.OK:
        result(False, "delta: RegisterWorker (%s)" % code)
        return
    s = reg.session_id
    it = stub.WatchSnapshots(pb.WatchSnapshotsRequest(worker_id="w1", session_id=s),
                             timeout=60)
    msgs = queue.Queue()

    def drain():
        try:
            for m in it:
                msgs.put(m)
        except grpc.RpcError as e:
            msgs.put(e.code())
    threading.Thread(target=drain, daemon=True).start()

    def change(capacity):
        subprocess.run(ARGS + ["proxy", "update", "p2", "--capacity", str(capacity)],
                       stdout=subprocess.DEVNULL, check=True, timeout=TIMEOUT)

    def cap_of(snap, pid="p2"):
        return next((p.capacity for p in snap.proxies if p.proxy_id == pid), None)

    # Phase 1: every message acknowledged; deltas must apply exactly.
    held, acked = None, None
    deltas = bad = 0
    changed = False
    for _ in range(200):  # bounded: messages, each within TIMEOUT
        try:
            m = msgs.get(timeout=TIMEOUT)
        except queue.Empty:
            break
        if not isinstance(m, pb.WatchSnapshotsResponse):
            break
        if m.HasField("delta"):
            d = m.delta
            if acked is None or d.base_version != acked.version:
                bad += 1
                break
            held = apply_delta(acked, d)
            deltas += 1
            if snapshot_checksum(held) != d.checksum:
                bad += 1
                break
        else:
            held = m.snapshot
        code, _ = ack(stub, "w1", s, held)
        if code != SC.OK:
            bad += 1
            break
        acked = held
        if len(held.proxies) >= 2 and not changed:
            change(7)
            changed = True
        elif changed and cap_of(held) == 7:
            break
    result(deltas >= 1 and bad == 0 and acked is not None and cap_of(acked) == 7,
           "CP-3-15 after an accepted ACK the change comes as a delta on it (%d deltas)" % deltas)
    result(bad == 0, "CP-3-16 every delta applies to its declared checksum and is ACKed "
           "(independent Python implementation)")
    # Phase 2: nothing acknowledged any more.
    change(8)
    first, later, full_after = None, 0, True
    for _ in range(200):
        try:
            m = msgs.get(timeout=TIMEOUT)
        except queue.Empty:
            break
        if not isinstance(m, pb.WatchSnapshotsResponse):
            break
        if first is None:
            first = m
            change(9)
            continue
        later += 1
        if m.HasField("delta"):
            full_after = False
            break
        if cap_of(m.snapshot) == 9:
            break
    result(first is not None and later >= 1 and full_after,
           "CP-3-15 after a snapshot left unacknowledged: full snapshots (%d)" % later)
    value("deltas", deltas)
    it.cancel()


def call_register():
    """One RegisterWorker: its status code name."""
    cert, key, ca = (ARGS + [None, None, None])[:3]
    stub = rpc.WorkerControlPlaneStub(channel(cert, key, ca))
    worker = ARGS[3] if len(ARGS) > 3 else "w1"
    code, _ = register(stub, worker=worker)
    value("code", code.name)


def unavailable():
    stub = rpc.WorkerControlPlaneStub(channel())
    code, _ = register(stub, instance="i9")
    value("code", code.name)


def hold():
    """Registers, opens a Watch and an outcome stream that never
    half-closes, and holds both until the server ends them."""
    stub = rpc.WorkerControlPlaneStub(channel())
    code, reg = register(stub, worker="w3", instance="i3")
    if code != SC.OK:
        value("code", code.name)
        return
    it = stub.WatchSnapshots(pb.WatchSnapshotsRequest(
        worker_id="w3", session_id=reg.session_id), timeout=30)
    gate = threading.Event()

    def held():
        yield batch("w3", reg.session_id, 1)
        gate.wait(30)
    fut = stub.ReportOutcomes.future(held(), timeout=30)
    try:
        for m in it:
            value("checksum", m.snapshot.checksum.hex())
            value("started", 1)
            break
        for _ in it:
            pass
        value("ended", "OK")
    except grpc.RpcError as e:
        value("ended", e.code().name)
    gate.set()
    fut.cancel()


def replace():
    """A live Watch of w4's session, then a new registration of w4: how
    the old stream ended, waiting at most ARGS[0] seconds for it."""
    wait = float(ARGS[0]) if ARGS else TIMEOUT
    stub = rpc.WorkerControlPlaneStub(channel())
    code, reg = register(stub, worker="w4", instance="i4")
    if code != SC.OK:
        value("code", code.name)
        return
    it = stub.WatchSnapshots(pb.WatchSnapshotsRequest(
        worker_id="w4", session_id=reg.session_id), timeout=120)
    got, first, ended = [], threading.Event(), threading.Event()

    def drain():
        try:
            for m in it:
                got.append(m)
                first.set()
        except grpc.RpcError as e:
            got.append(e.code())
        first.set()
        ended.set()
    threading.Thread(target=drain, daemon=True).start()
    first.wait(TIMEOUT)
    value("first", "snapshot" if got and not isinstance(got[0], SC) else "none")
    code, _ = register(stub, worker="w4", instance="i5")
    value("register", code.name)
    ended.wait(wait)
    last = got[-1] if got else None
    value("ended", last.name if ended.is_set() and isinstance(last, SC) else "no")
    it.cancel()


def nul():
    """Issue 22 item 12: an id with a NUL byte inside is refused, never
    read as the part before the NUL (protobuf-c's C strings stop there)."""
    stub = rpc.WorkerControlPlaneStub(channel())
    code, _ = register(stub, worker="w1\x00w2", instance="i-nul")
    result(code == SC.INVALID_ARGUMENT,
           "issue 22 item 12 worker_id w1<NUL>w2 is refused, not registered as w1 (%s)" % code)
    code, _ = register(stub, worker="w1", instance="i-nul", cluster="c1\x00other")
    result(code == SC.INVALID_ARGUMENT,
           "issue 22 item 12 cluster_id c1<NUL>other is refused, not taken as c1 (%s)" % code)
    code, reg = register(stub, worker="w8", instance="i8")
    result(code == SC.OK, "a worker without NUL bytes registers (%s)" % code)
    if code != SC.OK:
        return
    s = reg.session_id
    code, _, it = first_snapshot(stub, "w8", s + "\x00junk", timeout=5)
    it.cancel()
    result(code == SC.INVALID_ARGUMENT,
           "issue 22 item 12 WatchSnapshots with session_id <session><NUL>junk is refused (%s)" % code)
    code, _ = code_of(lambda: stub.ReportRuntime(pb.ReportRuntimeRequest(
        worker_id="w8", session_id=s, report_sequence=1,
        counters=[pb.ProxyCounter(proxy_id="p1\x00p2", active=1)]),
        timeout=TIMEOUT))
    result(code == SC.INVALID_ARGUMENT,
           "issue 22 item 12 a nested string (a counter's proxy_id p1<NUL>p2) is refused (%s)" % code)
    code, _ = outcomes(stub, [batch("w8", s, 1, proxy="p1\x00p2")])
    result(code == SC.INVALID_ARGUMENT,
           "issue 22 item 12 an outcome's proxy_id p1<NUL>p2 is refused (%s)" % code)


class Stream:
    """A WatchSnapshots stream drained by a thread: msgs, then its end
    (a StatusCode) in `end` once `ended` is set."""

    def __init__(self, stub, worker, session):
        self.msgs, self.end = [], None
        self.first, self.ended = threading.Event(), threading.Event()
        self.it = stub.WatchSnapshots(pb.WatchSnapshotsRequest(
            worker_id=worker, session_id=session), timeout=120)
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        try:
            for m in self.it:
                self.msgs.append(m)
                self.first.set()
            self.end = SC.OK
        except grpc.RpcError as e:
            self.end = e.code()
        self.first.set()
        self.ended.set()


def redis_commands(port):
    import subprocess
    out = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", port, "INFO", "stats"],
                         capture_output=True, text=True, timeout=TIMEOUT).stdout
    for line in out.splitlines():
        if line.startswith("total_commands_processed:"):
            return int(line.split(":")[1])
    return -1


def redis_rate(port, seconds=2.0):
    """Redis's commands a second over a window."""
    c0, t0 = redis_commands(port), time.monotonic()
    threading.Event().wait(seconds)
    c1 = redis_commands(port)
    return (c1 - c0) / (time.monotonic() - t0) if c0 >= 0 and c1 >= 0 else -1


def watch_once():
    """Issue 22 item 11: one WatchSnapshots stream per session, a new one
    replaces the old, so many streams cost Redis what one does.
    ARGS: the Redis port, the number of extra streams, how many times the
    Redis commands a second with one stream they may cost."""
    rport, extra, bound = ARGS[0], int(ARGS[1]), float(ARGS[2])
    stub = rpc.WorkerControlPlaneStub(channel())
    code, reg = register(stub, worker="w6", instance="i6")
    if code != SC.OK:
        result(False, "watch_once: RegisterWorker (%s)" % code)
        return
    s = reg.session_id
    a = Stream(stub, "w6", s)
    a.first.wait(TIMEOUT)
    result(bool(a.msgs), "the first stream gets its snapshot")
    b = Stream(stub, "w6", s)
    b.first.wait(TIMEOUT)
    a.ended.wait(TIMEOUT)
    result(a.ended.is_set() and a.end == SC.ABORTED,
           "issue 22 item 11 a second WatchSnapshots of the session ends the first ABORTED (%s)" % a.end)
    result(bool(b.msgs) and not b.ended.is_set(),
           "issue 22 item 11 ... and the second carries on with its snapshot")
    one = redis_rate(rport)
    more = [b] + [Stream(stub, "w6", s) for _ in range(extra)]
    for _ in range(TIMEOUT * 10):  # until all but one ended: bounded
        if sum(1 for x in more if x.ended.is_set()) >= extra:
            break
        threading.Event().wait(0.1)
    live = [x for x in more if not x.ended.is_set()]
    aborted = sum(1 for x in more if x.end == SC.ABORTED)
    result(len(live) == 1 and aborted == extra,
           "issue 22 item 11 %d more streams of the session: one stays, %d end ABORTED (%d did)" %
           (extra, extra, aborted))
    if live:
        live[0].first.wait(TIMEOUT)
    result(len(live) == 1 and bool(live[0].msgs), "the stream that stays has its snapshot")
    many = redis_rate(rport)
    result(one > 0 and many < one * bound,
           "issue 22 item 11 Redis commands a second with %d streams opened: %.0f, "
           "with one: %.0f (under %.1f times)" % (extra + 2, many, one, bound))
    for x in more:
        x.it.cancel()


def lease_move():
    """Issue 22 item 13: worker wa owns the pool, then only registers again
    every second and never ACKs or reports; wb ACKs and reports. Once
    wa's lease ends its proxies go to wb, and wa's snapshot drops them.
    ARGS: the cluster id."""
    cluster = ARGS[0]
    stub = rpc.WorkerControlPlaneStub(channel())
    code, reg = register(stub, worker="wa", instance="ia", cluster=cluster)
    if code != SC.OK:
        result(False, "lease_move: RegisterWorker (%s)" % code)
        return
    code, snap = wait_owned(stub, "wa", reg.session_id, 2)
    result(code == SC.OK and snap is not None and len(snap.proxies) == 2,
           "wa, alone, owns both proxies (no ACK)")
    code, regb = register(stub, worker="wb", instance="ib", cluster=cluster)
    sb = regb.session_id
    wb = Stream(stub, "wb", sb)
    acked, seen, seq, got = None, 0, 0, None
    last_reg = time.monotonic()
    for _ in range(600):  # bounded: 600 x 0.1 s
        if time.monotonic() - last_reg >= 1.0:
            code, reg = register(stub, worker="wa", instance="ia", cluster=cluster)
            last_reg = time.monotonic()
        while seen < len(wb.msgs):
            m = wb.msgs[seen]
            seen += 1
            held = apply_delta(acked, m.delta) if m.HasField("delta") else m.snapshot
            if ack(stub, "wb", sb, held)[0] == SC.OK:
                acked = held
        if acked is not None:
            seq += 1
            runtime(stub, "wb", sb, seq, acked)
            if sorted(p.proxy_id for p in acked.proxies) == ["p1", "p2"]:
                got = acked
                break
        if wb.ended.is_set():
            break
        threading.Event().wait(0.1)
    result(got is not None,
           "issue 22 item 13 the proxies of wa (registering again every second, "
           "never ACKing) went to wb once wa's lease ended")
    code, snap, it = first_snapshot(stub, "wa", reg.session_id)
    it.cancel()
    result(code == SC.OK and snap is not None and len(snap.proxies) == 0,
           "issue 22 item 13 ... and wa's snapshot no longer carries them (%s, %s)" %
           (code, None if snap is None else len(snap.proxies)))
    wb.it.cancel()


def raw_conns(n):
    """n raw TCP connections to the controller that never send a byte."""
    import socket
    out = []
    for _ in range(n):
        c = socket.create_connection(("127.0.0.1", int(PORT)), timeout=TIMEOUT)
        out.append(c)
    return out


def closed_by_peer(c, wait):
    """Whether the peer closes c within wait seconds (EOF or reset)."""
    import socket
    c.settimeout(wait)
    try:
        return c.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def still_open(c):
    """c not closed by the peer yet (nothing read, no EOF): no waiting."""
    import socket
    c.settimeout(0.0)  # a socket with a timeout would poll for it first
    try:
        c.recv(1, socket.MSG_PEEK)
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False


def idle_conn():
    """Issue 22 item 10: a TCP connection that never sends a ClientHello
    (nor anything else) is closed once grpc.handshake_timeout passed.
    ARGS: how long to wait for it at most (seconds; the bound plus slack,
    well below gRPC's default of 120 s)."""
    c = raw_conns(1)[0]
    result(closed_by_peer(c, float(ARGS[0])),
           "issue 22 item 10 a connection that never sends a byte is closed after "
           "grpc.handshake_timeout (waited at most %s s)" % ARGS[0])
    c.close()


def conn_cap():
    """Issue 22 item 10: at most CAP connections without a call yet; one
    more is closed at once; a worker's connection that carried a call is
    not counted. ARGS: cert, key, CA of worker w1, CAP, the longest wait
    (seconds)."""
    cert, key, ca, cap, wait = ARGS[0], ARGS[1], ARGS[2], int(ARGS[3]), float(ARGS[4])
    stub = rpc.WorkerControlPlaneStub(channel(cert, key, ca))
    code, _ = register(stub)
    result(code == SC.OK, "worker w1 registers over mTLS (%s)" % code)
    raws = raw_conns(cap)
    extra = raw_conns(1)[0]
    closed = closed_by_peer(extra, wait)
    result(closed and all(still_open(c) for c in raws),
           "issue 22 item 10 with %d connections that sent nothing, one more is closed "
           "while those are still open" % cap)
    code, _ = register(stub)
    result(code == SC.OK,
           "issue 22 item 10 ... while w1's authenticated connection carries on (%s)" % code)
    result(all(closed_by_peer(c, wait) for c in raws),
           "issue 22 item 10 the %d are closed after grpc.handshake_timeout" % cap)
    stub2 = rpc.WorkerControlPlaneStub(channel(cert, key, ca))
    code, _ = register(stub2, instance="i2")
    result(code == SC.OK, "then a new connection of w1 registers (%s)" % code)
    for c in raws + [extra]:
        c.close()


def withheld():
    """Issue 23 item 6: p1 and p3 owned by w1, p3's secret file missing:
    the snapshot carries p1 only (p3 is withheld, never delivered without
    its credentials)."""
    stub = rpc.WorkerControlPlaneStub(channel())
    code, reg = register(stub)
    result(code == SC.OK, "withheld: RegisterWorker (%s)" % code)
    if code != SC.OK:
        return
    code, snap = wait_owned(stub, "w1", reg.session_id, 1)
    ids = sorted(p.proxy_id for p in snap.proxies) if snap else []
    result(code == SC.OK and ids == ["p1"],
           "CP-1-18 a proxy whose secret file is missing is not delivered (%s)" % ids)
    value("proxies", ",".join(ids))


def clock():
    """CP-2-12 (t/integration/cp_redis_time.sh): one worker's session, its
    snapshot once it carries a proxy, the ACK and a runtime report; prints
    the times the shell compares with Redis's TIME, in Unix ms: the
    report's session_expires_at and the session TTL, the first proxy's
    expires_at (its ownership lease) and the snapshot's valid_until."""
    stub = rpc.WorkerControlPlaneStub(channel())
    code, reg = register(stub)
    result(code == SC.OK, "clock: RegisterWorker (%s)" % code)
    if code != SC.OK:
        return
    s = reg.session_id
    code, snap = wait_owned(stub, "w1", s, 1)
    n = len(snap.proxies) if snap is not None else 0
    result(code == SC.OK and n >= 1,
           "clock: the snapshot carries the owned proxy (%s, %d)" % (code, n))
    if snap is None:
        return
    code, _ = ack(stub, "w1", s, snap)
    result(code == SC.OK, "clock: the snapshot acknowledged (%s)" % code)
    code, r = runtime(stub, "w1", s, 1, snap, [("p1", 1, 0)] if n else [])
    result(code == SC.OK and r.HasField("session_expires_at"),
           "clock: ReportRuntime answers a session expiry (%s)" % code)
    if code != SC.OK:
        return
    value("session_ttl_ms", reg.session_ttl.ToMilliseconds())
    value("session_expires_ms", r.session_expires_at.ToMilliseconds())
    value("valid_until_ms", snap.valid_until.ToMilliseconds())
    if n:
        value("lease_expires_ms", snap.proxies[0].expires_at.ToMilliseconds())


{"hold": hold, "flow": flow, "clock": clock, "withheld": withheld, "delta": delta, "register": call_register,
 "once": unavailable, "replace": replace, "nul": nul,
 "watch_once": watch_once, "lease_move": lease_move, "idle_conn": idle_conn,
 "conn_cap": conn_cap}[SCENARIO]()

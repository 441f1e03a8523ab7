#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""A checker's side of the CheckerControlPlane for t/integration/cp_checker.sh
(issue 26, CP-1-3, CP-6-1, CP-6-2), on Debian's python3-grpcio with stubs
generated at test time.

    cp_checker.py GEN PORT SCENARIO DIR [ARGS...]

prints one "RESULT <0|1> <name>" line per check (0: passed) and "VALUE
<name> <value>" lines for the shell. Every wait has a deadline.
"""
import hashlib
import os
import queue
import sys
import threading
import time

GEN, PORT, SCENARIO, DIR = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
ARGS = sys.argv[5:]
sys.path.insert(0, GEN)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grpc  # noqa: E402
from controlplane.v1 import controlplane_pb2 as pb  # noqa: E402
from controlplane.v1 import controlplane_pb2_grpc as rpc  # noqa: E402
import cp_py  # noqa: E402  (t/lib/cp_py.py)
from cp_py import code_of, result, value  # noqa: E402

SC = grpc.StatusCode
TIMEOUT = 10
CLUSTER = "c1"


def channel(cert=None, key=None, ca=None):
    return cp_py.channel(PORT, cert, key, ca)


def register(stub, cid, conc=2, tiers=(), cluster=CLUSTER):
    return code_of(lambda: stub.RegisterChecker(pb.RegisterCheckerRequest(
        cluster_id=cluster, checker_id=cid, instance_id="i-" + cid, zone="z1",
        max_concurrency=conc, tiers=list(tiers),
        supported_protocol_version=pb.PROTOCOL_VERSION_V1), timeout=TIMEOUT))


def now_ms():
    return int(time.time() * 1000)


class Watch:
    """A WatchCheckTasks stream read by a thread into a queue."""

    def __init__(self, stub, cid, session):
        self.q = queue.Queue()
        self.code = None
        self.it = stub.WatchCheckTasks(pb.WatchCheckTasksRequest(
            checker_id=cid, session_id=session), timeout=120)
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        try:
            for m in self.it:
                self.q.put((now_ms(), m))
            self.code = SC.OK
        except grpc.RpcError as e:
            self.code = e.code()
        self.q.put(None)

    def get(self, timeout):
        try:
            return self.q.get(timeout=timeout)
        except queue.Empty:
            return False  # nothing in time (None: the stream ended)

    def end(self):
        self.it.cancel()

    def ended(self, timeout):
        self.t.join(timeout)
        return self.code


def key(t):
    return "%s/%d/%s" % (t.proxy_id, t.tier, t.target_group)


def obs(t, status=pb.HEALTH_STATUS_OK, task_id=None):
    o = pb.HealthObservation(task_id=task_id or t.task_id, proxy_id=t.proxy_id,
                             tier=t.tier, status=status,
                             target_group=t.target_group)
    o.latency.FromMilliseconds(3)
    o.observed_at.FromMilliseconds(now_ms())
    if t.tier == pb.CHECK_TIER_EGRESS:
        o.egress_ip = "127.0.0.1"
        o.anonymity = pb.ANONYMITY_ELITE
    return o


def batch(cid, session, seq, tasks, status=pb.HEALTH_STATUS_OK):
    return pb.ReportObservationsRequest(checker_id=cid, session_id=session, sequence=seq,
                                        observations=[obs(t, status) for t in tasks])


def report(stub, batches):
    return code_of(lambda: stub.ReportObservations(iter(batches), timeout=TIMEOUT))


def digest(b):
    c = pb.ReportObservationsRequest()
    c.CopyFrom(b)
    c.checker_id = ""
    c.session_id = ""
    return hashlib.sha256(c.SerializeToString()).hexdigest()


def take(w, n, timeout):
    """Up to n tasks within timeout seconds."""
    got, end = [], time.time() + timeout
    while len(got) < n and time.time() < end:
        m = w.get(max(0.01, end - time.time()))
        if m is None:
            break
        if m:
            got.append(m[1])
    return got


def flow():
    """Register, tasks with deadlines, max_concurrency, the fences."""
    deadline_ms = int(ARGS[0])
    stub = rpc.CheckerControlPlaneStub(channel())
    code, _ = register(stub, "k1", conc=0)
    result(code == SC.INVALID_ARGUMENT, "CP-6-1 max_concurrency 0 is refused (%s)" % code)
    code, _ = register(stub, "k1", conc=9)
    result(code == SC.INVALID_ARGUMENT,
           "CP-6-1 max_concurrency above max_checker_concurrency is refused (%s)" % code)
    code, _ = register(stub, "k1", cluster="other")
    result(code == SC.INVALID_ARGUMENT, "CP-1-3 another cluster_id is refused (%s)" % code)
    code, _ = register(stub, "k1", tiers=[7])
    result(code == SC.INVALID_ARGUMENT, "CP-1-3 an unknown tier is refused (%s)" % code)
    code, reg = register(stub, "k1", conc=2)
    result(code == SC.OK and len(reg.session_id) == 32 and reg.session_ttl.seconds > 0,
           "CP-1-3 RegisterChecker: a session with a TTL (%s)" % code)
    if code != SC.OK:
        return
    s = reg.session_id
    bad = Watch(stub, "k1", "0" * 32)
    result(bad.ended(TIMEOUT) == SC.FAILED_PRECONDITION,
           "CP-6-2 WatchCheckTasks with a session not current: FAILED_PRECONDITION (%s)" % bad.code)
    w = Watch(stub, "k1", s)
    got = take(w, 2, TIMEOUT)
    t0 = now_ms()
    result(len(got) == 2, "CP-6-1 the checker gets tasks (%d)" % len(got))
    if len(got) < 2:
        return
    ok_dl = all(t.HasField("deadline") and
                0 < t.deadline.ToMilliseconds() - t0 <= deadline_ms + 500 for t in got)
    result(ok_dl, "CP-6-2 every task has a deadline within task_deadline")
    result(all(t.host == "127.0.0.1" and t.port > 0 and t.protocol != 0 for t in got),
           "CP-6-2 every task names the proxy's protocol, host and port")
    extra = take(w, 1, min(1.0, deadline_ms / 3000.0))
    result(not extra, "CP-6-1 never more than max_concurrency (2) tasks outstanding")
    b1 = batch("k1", s, 1, got)
    code, r = report(stub, [b1])
    result(code == SC.OK and r.acknowledged_sequence == 1,
           "CP-6-2 ReportObservations accepted (%s)" % code)
    code, r = report(stub, [b1])
    result(code == SC.OK and r is not None and r.acknowledged_sequence == 1,
           "CP-6-2 the same batch again is a replay: OK (%s)" % code)
    b1x = batch("k1", s, 1, got, pb.HEALTH_STATUS_FAILED)
    result(digest(b1) != digest(b1x), "(the two batches differ)")
    code, _ = report(stub, [b1x])
    result(code == SC.ALREADY_EXISTS,
           "CP-6-2 the same sequence with other content: ALREADY_EXISTS (%s)" % code)
    # more tasks come now that those are answered
    more = take(w, 2, TIMEOUT)
    result(len(more) >= 1, "CP-6-1 answered tasks make room for new ones (%d)" % len(more))
    fake = pb.ReportObservationsRequest(checker_id="k1", session_id=s, sequence=3,
                                        observations=[obs(more[0] if more else got[0],
                                                          task_id="feedfacefeedface")])
    code, r = report(stub, [fake])
    result(code == SC.OK, "CP-6-2 a batch naming a task never given is fenced like any (%s)" % code)
    code, _ = report(stub, [batch("k1", s, 2, more)])
    result(code == SC.ABORTED, "CP-6-2 a smaller sequence: ABORTED (%s)" % code)
    code, _ = report(stub, [batch("k1", "1" * 32, 4, more)])
    result(code == SC.FAILED_PRECONDITION,
           "CP-6-2 a session not current: FAILED_PRECONDITION (%s)" % code)
    code, _ = report(stub, [batch("k1", s, 4, more)])
    result(code == SC.OK, "CP-6-2 the checker answers its new tasks (%s)" % code)
    w2 = Watch(stub, "k1", s)
    result(w.ended(TIMEOUT) == SC.ABORTED,
           "CP-6-2 a newer stream of the session replaces the older: ABORTED (%s)" % w.code)
    code, reg2 = register(stub, "k1", conc=2)
    result(code == SC.OK and reg2.session_id != s, "CP-1-3 the checker registers again (%s)" % code)
    result(w2.ended(TIMEOUT) == SC.FAILED_PRECONDITION,
           "CP-1-3 a new registration ends the old session's stream: FAILED_PRECONDITION (%s)" % w2.code)
    code, _ = report(stub, [batch("k1", s, 5, more)])
    result(code == SC.FAILED_PRECONDITION,
           "CP-6-2 the replaced session's report: FAILED_PRECONDITION (%s)" % code)


def missed():
    """A task whose deadline passes unanswered goes to another checker; the
    late answer is dropped (counted)."""
    deadline_ms = int(ARGS[0])
    stub = rpc.CheckerControlPlaneStub(channel())
    code, ra = register(stub, "k2", conc=1)
    result(code == SC.OK, "missed: k2 registers (%s)" % code)
    wa = Watch(stub, "k2", ra.session_id)
    got = take(wa, 1, TIMEOUT)
    result(len(got) == 1, "missed: k2 gets a task (%d)" % len(got))
    if not got:
        return
    t = got[0]
    code, rb = register(stub, "k3", conc=8)
    wb = Watch(stub, "k3", rb.session_id)
    end = time.time() + TIMEOUT + deadline_ms / 1000.0
    seen, seq = None, 0
    while time.time() < end and seen is None:
        m = wb.get(0.2)
        if m is None:
            break
        if not m:
            continue
        tk = m[1]
        seq += 1
        if key(tk) == key(t):
            seen = m[0]
        else:  # k3 answers the others at once
            report(stub, [batch("k3", rb.session_id, seq, [tk])])
    result(seen is not None and seen >= t.deadline.ToMilliseconds() - 50,
           "CP-6-2 the missed task went to another checker after its deadline")
    code, _ = report(stub, [batch("k2", ra.session_id, 1, [t])])
    result(code == SC.OK, "missed: k2's late batch is fenced (%s)" % code)
    more = take(wa, 1, 1.0)
    result(not more or key(more[0]) != key(t),
           "CP-6-2 the late checker does not get that item back at once")
    wa.end()
    wb.end()


def split():
    """Two checkers split the work: each (proxy, tier) to one at a time."""
    secs = float(ARGS[0])
    stub = rpc.CheckerControlPlaneStub(channel())
    ws, sess = {}, {}
    for cid in ("k4", "k5"):
        code, r = register(stub, cid, conc=4)
        result(code == SC.OK, "split: %s registers (%s)" % (cid, code))
        sess[cid] = r.session_id
        ws[cid] = Watch(stub, cid, r.session_id)
    count = {"k4": 0, "k5": 0}
    out = {}  # key -> checker holding it
    both = []
    seqs = {"k4": 0, "k5": 0}
    end = time.time() + secs
    pend = {"k4": [], "k5": []}
    while time.time() < end:
        for cid, w in ws.items():
            m = w.get(0.02)
            if not m:
                continue
            tk = m[1]
            k = key(tk)
            if k in out and out[k] != cid:
                both.append(k)
            out[k] = cid
            count[cid] += 1
            pend[cid].append(tk)
        for cid in ws:
            if pend[cid]:
                seqs[cid] += 1
                report(stub, [batch(cid, sess[cid], seqs[cid], pend[cid])])
                for tk in pend[cid]:
                    out.pop(key(tk), None)
                pend[cid] = []
    result(count["k4"] > 0 and count["k5"] > 0,
           "CP-6-2 two checkers split the work (%d, %d tasks)" % (count["k4"], count["k5"]))
    result(not both, "CP-6-2 no (proxy, tier) is out at two checkers at once (%s)" % both[:3])
    value("split_tasks", count["k4"] + count["k5"])
    for w in ws.values():
        w.end()


def hold():
    """Registers and takes tasks, never answers; killed by the shell."""
    cid = ARGS[0]
    stub = rpc.CheckerControlPlaneStub(channel())
    code, r = register(stub, cid, conc=int(ARGS[1]))
    value("register", code.name)
    w = Watch(stub, cid, r.session_id)
    end = time.time() + 60
    while time.time() < end:
        m = w.get(0.2)
        if m is None:
            value("ended", w.code.name)
            break
        if m:
            value("task", key(m[1]))


def takeover():
    """Answers everything for ARGS[1] seconds, printing each task's key and
    when it came; with ARGS[2] (a file of keys, once it exists) it stops
    as soon as every key in it came, but not before ARGS[3] seconds (0):
    a missed task comes back first in turn, so the other items' tasks
    (TARGET ones spaced by target_host_interval) may come after it."""
    cid, secs = ARGS[0], float(ARGS[1])
    want_file = ARGS[2] if len(ARGS) > 2 else None
    at_least = time.time() + (float(ARGS[3]) if len(ARGS) > 3 else 0)
    seen = set()
    stub = rpc.CheckerControlPlaneStub(channel())
    code, r = register(stub, cid, conc=8)
    value("register", code.name)
    w = Watch(stub, cid, r.session_id)
    value("started", now_ms())
    end, seq = time.time() + secs, 0
    while time.time() < end:
        m = w.get(0.2)
        if m is None:
            break
        if m:
            seq += 1
            t = m[1]
            seen.add(key(t))
            value("task", "%s %d" % (key(t), m[0]))
            if t.HasField("credential"):
                value("cred", "%s %s" % (t.proxy_id, t.credential.username))
            if t.tier == pb.CHECK_TIER_EGRESS:
                value("egress", "%s %s" % (t.nonce, t.echo_url))
            if t.tier == pb.CHECK_TIER_TARGET:
                value("target", "%s %s %d" % (t.target_group, t.target, m[0]))
            report(stub, [batch(cid, r.session_id, seq, [m[1]])])
        if want_file and os.path.exists(want_file):
            want = set(open(want_file).read().split())
            if want and want <= seen and time.time() >= at_least:
                break
    w.end()


def ident():
    """mTLS: ARGS cert key ca checker_id method (checker|worker)."""
    cert, key_, ca, cid, method = ARGS[:5]
    ch = channel(cert or None, key_ or None, ca)
    if method == "worker":
        stub = rpc.WorkerControlPlaneStub(ch)
        code, _ = code_of(lambda: stub.RegisterWorker(pb.RegisterWorkerRequest(
            cluster_id=CLUSTER, worker_id=cid, instance_id="i1", zone="z1",
            supported_protocol_version=pb.PROTOCOL_VERSION_V1), timeout=TIMEOUT))
    else:
        stub = rpc.CheckerControlPlaneStub(ch)
        code, r = register(stub, cid)
        if code == SC.OK and method == "checker_watch":
            w = Watch(stub, cid, r.session_id)
            got = take(w, 1, TIMEOUT)
            code = SC.OK if got else SC.UNKNOWN
            w.end()
    value("code", code.name)


{"flow": flow, "missed": missed, "split": split, "hold": hold,
 "takeover": takeover, "ident": ident}[SCENARIO]()

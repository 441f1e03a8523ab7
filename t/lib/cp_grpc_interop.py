# SPDX-License-Identifier: BSD-2-Clause
"""cp_grpc_interop.py GEN_DIR PORT MODE [CERT_DIR]: calls every
WorkerControlPlane RPC of t/lib/cp_echo_server with Debian's python3-grpcio
(stubs generated at test time into GEN_DIR) and prints one
result line per check. MODE is "plain" or "mtls"; with
mtls, CERT_DIR holds ca.pem, worker.pem/.key (spiffe://example.org/prod/
worker/w1) and other.pem/.key (signed by another CA). Each check prints
"RESULT 0|1 NAME" (0: passed) for the shell's TAP counter."""
import sys

sys.path.insert(0, sys.argv[1])
import grpc  # noqa: E402
from controlplane.v1 import controlplane_pb2 as pb  # noqa: E402
from controlplane.v1 import controlplane_pb2_grpc as pbg  # noqa: E402

port, mode = sys.argv[2], sys.argv[3]
certs = sys.argv[4] if len(sys.argv) > 4 else None
target = "127.0.0.1:" + port
n = 0


def ok(cond, name):
    global n
    n += 1
    print("RESULT %d %s [%s]" % (0 if cond else 1, name, mode))
    sys.stdout.flush()


def read(name):
    with open(certs + "/" + name, "rb") as f:
        return f.read()


def channel(cert=None):
    if mode == "plain":
        return grpc.insecure_channel(target)
    if cert is None:
        creds = grpc.ssl_channel_credentials(root_certificates=read("ca.pem"))
    else:
        creds = grpc.ssl_channel_credentials(
            root_certificates=read("ca.pem"),
            private_key=read(cert + ".key"),
            certificate_chain=read(cert + ".pem"))
    return grpc.secure_channel(target, creds)


def code_of(fn):
    try:
        fn()
        return grpc.StatusCode.OK
    except grpc.RpcError as e:
        return e.code()


ch = channel("worker")
stub = pbg.WorkerControlPlaneStub(ch)
T = 10  # seconds: a safety bound on each call, never asserted

r = stub.RegisterWorker(pb.RegisterWorkerRequest(
    cluster_id="c1", worker_id="w1", instance_id="i1", zone="z1",
    supported_protocol_version=pb.PROTOCOL_VERSION_V1), timeout=T)
ok(len(r.session_id) == 32 and r.ownership_epoch == 1
   and r.protocol_version == pb.PROTOCOL_VERSION_V1
   and r.session_ttl.seconds == 30 and r.max_runtime_counters == 512,
   "CP-1-2 RegisterWorker (unary) answers a session")

msgs = list(stub.WatchSnapshots(pb.WatchSnapshotsRequest(
    worker_id="w1", session_id=r.session_id), timeout=T))
ok(len(msgs) == 2 and msgs[0].WhichOneof("payload") == "snapshot"
   and msgs[0].snapshot.version == 1 and len(msgs[0].snapshot.checksum) == 32
   and msgs[1].WhichOneof("payload") == "delta"
   and msgs[1].delta.base_version == 1 and msgs[1].delta.version == 2,
   "CP-1-14 WatchSnapshots (server stream) sends a snapshot then a delta")

a = stub.AcknowledgeSnapshot(pb.AcknowledgeSnapshotRequest(
    worker_id="w1", session_id=r.session_id, version=2, ownership_epoch=1,
    checksum=b"\0" * 32, result=pb.ACK_RESULT_ACCEPTED), timeout=T)
ok(isinstance(a, pb.AcknowledgeSnapshotResponse),
   "CP-1-8 AcknowledgeSnapshot (unary) answers")

rt = stub.ReportRuntime(pb.ReportRuntimeRequest(
    worker_id="w1", session_id=r.session_id, report_sequence=1,
    snapshot_version=2, ownership_epoch=1,
    counters=[pb.ProxyCounter(proxy_id="p1", active=1)]), timeout=T)
ok(rt.session_expires_at.seconds > 0,
   "CP-1-9 ReportRuntime (unary) answers session_expires_at")


def batches():
    for seq in (1, 2, 3):
        yield pb.ReportOutcomesRequest(
            worker_id="w1", session_id=r.session_id, sequence=seq,
            outcomes=[pb.Outcome(proxy_id="p1",
                                 stage=pb.OUTCOME_STAGE_DIAL,
                                 result=pb.OUTCOME_RESULT_SUCCESS)])


o = stub.ReportOutcomes(batches(), timeout=T)
ok(o.acknowledged_sequence == 3,
   "CP-1-29 ReportOutcomes (client stream) acknowledges the last batch")

unk = ch.unary_unary("/controlplane.v1.WorkerControlPlane/NoSuchMethod")
ok(code_of(lambda: unk(b"", timeout=T)) == grpc.StatusCode.UNIMPLEMENTED,
   "an unknown method is UNIMPLEMENTED")
ch.close()

if mode == "mtls":
    ch = channel("worker")
    stub = pbg.WorkerControlPlaneStub(ch)
    c = code_of(lambda: stub.RegisterWorker(pb.RegisterWorkerRequest(
        cluster_id="c1", worker_id="w2", instance_id="i1",
        supported_protocol_version=pb.PROTOCOL_VERSION_V1), timeout=T))
    ok(c == grpc.StatusCode.PERMISSION_DENIED,
       "CP-8-2 a worker_id other than the certificate's is PERMISSION_DENIED")
    ch.close()
    for who, name in ((None, "no client certificate"),
                      ("other", "a certificate from another CA")):
        ch = channel(who)
        stub = pbg.WorkerControlPlaneStub(ch)
        c = code_of(lambda: stub.RegisterWorker(pb.RegisterWorkerRequest(
            cluster_id="c1", worker_id="w1"), timeout=T))
        ok(c == grpc.StatusCode.UNAVAILABLE,
           "CP-8-1 %s is refused at the handshake (UNAVAILABLE)" % name)
        ch.close()

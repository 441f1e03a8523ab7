# SPDX-License-Identifier: BSD-2-Clause
"""What the Python control-plane clients of the tests share (t/lib/cp_client.py,
a worker; t/lib/cp_checker.py, a checker): the RESULT and VALUE lines the
shell reads, a channel (plaintext, or mTLS with a client certificate) and a
call's status code. Import it after grpc is importable."""
import grpc

SC = grpc.StatusCode


def result(ok, name):
    print("RESULT %d %s" % (0 if ok else 1, name), flush=True)


def value(name, v):
    print("VALUE %s %s" % (name, v), flush=True)


def channel(port, cert=None, key=None, ca=None):
    target = "127.0.0.1:%s" % port
    if not ca:
        return grpc.insecure_channel(target)
    rd = lambda p: open(p, "rb").read() if p else None  # noqa: E731
    creds = grpc.ssl_channel_credentials(rd(ca), rd(key), rd(cert))
    return grpc.secure_channel(target, creds)


def code_of(fn):
    """(status code, the call's answer or None)."""
    try:
        return SC.OK, fn()
    except grpc.RpcError as e:
        return e.code(), None

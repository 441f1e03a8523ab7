#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""A scriptable TunnelMesh peer for tests (standard library only).

    tm_peer.py --as client --url ws://127.0.0.1:P/tunnel --token-file F \\
               --script '[{"op":"open","host":"127.0.0.1","port":80},
                          {"op":"expect_result","sid":1,"accepted":true},
                          {"op":"send","sid":1,"data":"GET / HTTP/1.0\\r\\n\\r\\n"},
                          {"op":"expect_data","sid":1,"contains":"200 OK"}]'
    tm_peer.py --as server --listen 127.0.0.1:0 --port-file F --answer ok \\
               --serve echo --stay
    tm_peer.py --as agent --url ws://127.0.0.1:P/agent --token T --serve dial

It speaks raw WebSocket (RFC 6455: the handshake, masking from the client,
binary messages, fragmented messages on read, ping/pong, close frames)
and, in the binary messages, the frames of modules/tunnel_common/proto/tm_proto.h
(the authority; docs/protocol/tunnel.md explains them): a 10-byte header
type u8, flags u8, stream_id u32, length u32 (big-endian), then payload.

Roles. client and agent are WebSocket clients (--url); server is a
WebSocket server (--listen) that accepts up to --max-conns connections.
Any role may open streams (op "open") and answer the peer's opens (the
--answer policy); the role only picks the side of the handshake and the
defaults: an agent sends AGENT_METADATA once connected (unless
--no-metadata; --metadata-no-caps leaves the "capabilities" field out, as
an old agent), a server answers AGENT_METADATA with the intersection of
its --caps (unless --no-metadata-ack).

Capabilities (--caps: all, none, or a comma list of open_result,
flow_control, fair_writer). A client offers the subprotocols its caps
allow (--offer: auto, none, or a literal header value); a server picks as
tm_subproto_select does (--subproto: select, none (an old server), or a
literal name to send whatever was offered). The connection's caps are
those of the chosen name (none: legacy); an agent's become those of the
METADATA_ACK when one arrives. --force-caps overrides both.

Answers to OPEN_STREAM (--answer): ok, fail:STAGE:CODE (OPEN_RESULT
accepted=false when strict, RESET when legacy), reset, never, late:MS (ok
after MS milliseconds), manual (the script's "answer" op). Modifiers:
--dup-result (OPEN_RESULT twice), --oversized-result (an OPEN_RESULT past
1 KiB), --result-json TEXT (this payload instead), --data-before-result
(one DATA frame before the OPEN_RESULT). An accepted stream is then served
(--serve): echo, sink, bytes:N (N bytes then FIN), reset:N:CODE (N
bytes, then, once they all left, RESET with CODE: a target failing
mid-stream), hold (nothing), or dial (connect to host:port over TCP and
relay; the failure maps to stage/code as an agent's would).

The script (--script JSON or --script-file F) is a list of steps run in
order on connection "conn" (default 0); each wait is bounded by its
"timeout_ms" (default --timeout). Steps:
  open {sid?, host, port, agent?, window?, trace?, trace_len?}
                                               OPEN_STREAM (sid: next id;
                                               trace: the trace field's text,
                                               trace_len: a lying length)
  expect_result {sid, accepted?, stage?, code?, stage_not?, code_not?,
                 open_mode? (absent in the result: "strict")}
  expect_no_result {sid, ms}                   nothing within ms
  open_burst {n, host, port, first_sid?}       n OPEN_STREAMs at once
  expect_burst_answers {first_sid, n}          each answered, conn up
  send {sid, data|hex|size, fin?, ignore_window?}
  expect_data {sid, data|contains|size, fin?}  bytes received on sid
  expect_reset {sid}   expect_open {count?}   expect_close {}
  expect_metadata {ack?}  expect_pong {}  expect_goaway {}
  expect_event {ev, ...fields}                 any event seen so far or later
  expect_no_event {ev, ms, ...fields}          none within ms
  answer {sid, result: "ok"|"fail:STAGE:CODE"|"reset"}
  frame {type, flags?, sid?, hex|json|text|size, length?}  any frame
  raw {hex}                                    one binary WS message as is
  ws {opcode, hex?}                            one raw WS frame
  fragmented {sid, data|size, parts?}          one DATA frame in fragments
  window_update {sid, inc}  reset {sid, code}  ping {}  goaway {last?}
  metadata {agent_id?, caps?: [...]|null, ack?}
  stop_reading {}  resume_reading {}  sleep {ms}  mark {name}
  wait_conn {n}  close {code?, reason?}
Events go to stdout, one JSON object a line with "ev" (listening,
handshake, frame, open, open_result, data, fin, reset, window_update,
violation, metadata, goaway, ping, pong, ws_close, closed, step, fail,
done). Exit status: 0 when every step passed, 1 when one failed (a "fail"
event says why), 2 for bad usage.
"""

import argparse
import base64
import hashlib
import json
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
import urllib.parse

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
HDR = struct.Struct(">BBII")
HEADER_LEN = 10
MAX_PAYLOAD = 65536
OPEN_RESULT_MAX = 1024

TYPES = {
    "OPEN_STREAM": 0x01, "OPEN_RESULT": 0x02, "DATA": 0x03,
    "WINDOW_UPDATE": 0x04, "RESET": 0x05, "PING": 0x06, "PONG": 0x07,
    "GOAWAY": 0x08, "AGENT_METADATA": 0x09, "AGENT_METADATA_ACK": 0x0a,
}
NAMES = {v: k for k, v in TYPES.items()}
CONNECTION_TYPES = {0x06, 0x07, 0x08, 0x09, 0x0a}
FIN = 0x01
STAGES = ["none", "authorization", "selection", "relay", "queue", "dns",
          "connect", "policy", "protocol"]
CODES = ["ok", "forbidden", "agent_offline", "queue_full", "timeout",
         "network_unreachable", "host_unreachable", "connection_refused",
         "unsupported_capability", "internal_error"]
CAP_OPEN, CAP_FLOW, CAP_FAIR, CAP_TRACE = 1, 2, 4, 8
CAP_NAMES = {CAP_OPEN: "stream_open_result.v1",
             CAP_FLOW: "stream_flow_control.v1",
             CAP_FAIR: "stream_fair_writer.v1",
             CAP_TRACE: "stream_trace.v1"}
# The trace field of OPEN_STREAM (stream_trace.v1) comes only with the
# full combination; "all" leaves it out (a peer that does not know it),
# --caps ...,trace asks for it.
SUB_TRACE = "tunnelmesh.v1.open-result.flow-control.trace"
SUB_FULL = "tunnelmesh.v1.open-result.flow-control"
SUB_OPEN = "tunnelmesh.v1.open-result"
SUB_BASE = "tunnelmesh.v1"
SUBPROTOS = [(SUB_TRACE, CAP_OPEN | CAP_FLOW | CAP_TRACE),
             (SUB_FULL, CAP_OPEN | CAP_FLOW), (SUB_OPEN, CAP_OPEN),
             (SUB_BASE, 0)]
MAX_HANDSHAKE = 16384
KEEP_BYTES = 4 << 20  # bytes kept per stream for expect_data; more is counted

out_lock = threading.Lock()


def emit(**ev):
    with out_lock:
        sys.stdout.write(json.dumps(ev, sort_keys=True) + "\n")
        sys.stdout.flush()


def caps_list(caps):
    return [CAP_NAMES[b] for b in (CAP_OPEN, CAP_FLOW, CAP_FAIR, CAP_TRACE)
            if caps & b]


def caps_from_names(names):
    rev = {v: k for k, v in CAP_NAMES.items()}
    c = 0
    for n in names or []:
        c |= rev.get(n, 0)  # unknown names are ignored (TM-PROTO-19)
    return c


def parse_caps(text):
    if text in ("all", ""):
        return CAP_OPEN | CAP_FLOW | CAP_FAIR
    if text == "none":
        return 0
    short = {"open_result": CAP_OPEN, "flow_control": CAP_FLOW,
             "fair_writer": CAP_FAIR, "trace": CAP_TRACE}
    c = 0
    for part in text.split(","):
        if part not in short:
            raise SystemExit("tm_peer: unknown capability " + part)
        c |= short[part]
    return c


def subproto_offer(caps):
    names = [n for n, need in SUBPROTOS if need and (caps & need) == need]
    return ", ".join(names + [SUB_BASE])


def subproto_select(offer, caps):
    for name in [p.strip() for p in offer.split(",") if p.strip()]:
        for n, need in SUBPROTOS:
            if n == name and (caps & need) == need:
                return n
    return None


def subproto_caps(name):
    if not name:
        return 0
    for n, need in SUBPROTOS:
        if n == name:
            return need
    return -1


def open_result_json(accepted, stage, code, retryable=False, retry_ms=0,
                     window=0):
    r = {"accepted": accepted, "stage": stage, "code": code,
         "retryable": retryable, "retry_after_ms": retry_ms}
    if window:
        r["window"] = window
    return json.dumps(r, separators=(",", ":")).encode()


def encode_open_stream(window, host, port, agent, protocol=1, trace=None,
                       trace_len=None):
    """trace: the optional trace field's bytes (text) after the agent;
    trace_len: its length byte when it must lie (a framing test)."""
    h, a = host.encode(), agent.encode()
    p = (struct.pack(">IBHB", window, protocol, port, len(h)) + h +
         struct.pack(">B", len(a)) + a)
    if trace is not None:
        t = trace.encode()
        p += struct.pack(">B", len(t) if trace_len is None else trace_len) + t
    return p


def decode_open_stream(p):
    if len(p) < 8:
        return None
    window, proto, port, hl = struct.unpack(">IBHB", p[:8])
    if hl < 1 or len(p) < 8 + hl + 1:
        return None
    host = p[8:8 + hl]
    al = p[8 + hl]
    end = 9 + hl + al
    if len(p) < end or al > 64:
        return None
    trace = ""
    if len(p) > end:  # the optional trace field (issue 24 item 10)
        tl = p[end]
        if tl < 1 or tl > 64 or len(p) != end + 1 + tl:
            return None
        trace = p[end + 1:].decode("ascii", "replace")
    return {"window": window, "protocol": proto, "port": port,
            "host": host.decode("ascii", "replace"),
            "agent": p[9 + hl:end].decode("ascii", "replace"),
            "trace": trace}


class Closed(Exception):
    pass


class WS:
    """One WebSocket connection: whole messages in and out."""

    def __init__(self, sock, is_client, rest=b"", max_message=1 << 21):
        self.sock = sock
        self.is_client = is_client
        self.buf = bytearray(rest)
        self.wlock = threading.Lock()
        self.max_message = max_message
        self.closed = False
        # Cleared: nothing more is read from the socket (its buffers fill
        # and the sender sees TCP backpressure); checked before each recv.
        self.reading = threading.Event()
        self.reading.set()

    def _read(self, n):
        while len(self.buf) < n:
            self.reading.wait()
            if not select.select([self.sock], [], [], 0.1)[0]:
                continue
            if not self.reading.is_set():
                continue
            chunk = self.sock.recv(65536)
            if not chunk:
                raise Closed("eof")
            self.buf += chunk
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data

    def send_frame(self, opcode, payload, fin=True):
        b0 = (0x80 if fin else 0) | opcode
        n = len(payload)
        mbit = 0x80 if self.is_client else 0
        if n < 126:
            head = struct.pack(">BB", b0, mbit | n)
        elif n < 65536:
            head = struct.pack(">BBH", b0, mbit | 126, n)
        else:
            head = struct.pack(">BBQ", b0, mbit | 127, n)
        if self.is_client:
            key = os.urandom(4)
            payload = _mask_fast(payload, key)
            head += key
        with self.wlock:
            self.sock.sendall(head + payload)

    def send(self, payload):
        self.send_frame(0x2, payload)

    def recv_frame(self):
        b0, b1 = self._read(2)
        n = b1 & 0x7f
        if n == 126:
            n = struct.unpack(">H", self._read(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self._read(8))[0]
        if n > self.max_message:
            raise Closed("message too big")
        key = self._read(4) if b1 & 0x80 else None
        data = self._read(n)
        if key:
            data = _mask_fast(data, key)
        return b0 & 0x80, b0 & 0x0f, data

    def recv_message(self):
        """("binary"|"text", bytes) or ("close", code, reason); fragments
        are joined; pings are answered here."""
        parts, first_op = [], None
        while True:
            fin, op, data = self.recv_frame()
            if op == 0x9:
                self.send_frame(0xA, data)
                continue
            if op == 0xA:
                continue
            if op == 0x8:
                code = struct.unpack(">H", data[:2])[0] if len(data) >= 2 else 1005
                if not self.closed:
                    self.closed = True
                    try:
                        self.send_frame(0x8, struct.pack(">H", code))
                    except OSError:
                        pass
                return ("close", code, data[2:].decode("utf-8", "replace"))
            if op in (0x1, 0x2):
                first_op = op
                parts = [data]
            elif op == 0x0:
                parts.append(data)
            else:
                raise Closed("bad opcode %d" % op)
            if sum(len(p) for p in parts) > self.max_message:
                raise Closed("message too big")
            if fin:
                return ("binary" if first_op == 0x2 else "text", b"".join(parts))

    def close(self, code=1000, reason=""):
        if not self.closed:
            self.closed = True
            try:
                self.send_frame(0x8, struct.pack(">H", code) + reason.encode())
            except OSError:
                pass


def _mask_fast(data, key):
    n = len(data)
    k = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "big") ^ int.from_bytes(k, "big")).to_bytes(n, "big")


def read_head(sock):
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(4096)
        if not chunk:
            raise Closed("eof in handshake")
        buf += chunk
        if len(buf) > MAX_HANDSHAKE:
            raise Closed("handshake too long")
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        k = k.strip().lower()
        headers[k] = (headers[k] + ", " + v.strip()) if k in headers else v.strip()
    return lines[0], headers, rest


def client_handshake(args):
    u = urllib.parse.urlsplit(args.url)
    if u.scheme != "ws":
        raise SystemExit("tm_peer: only ws:// URLs")
    sock = socket.create_connection((u.hostname, u.port or 80), timeout=args.timeout)
    sock.settimeout(None)
    key = base64.b64encode(os.urandom(16)).decode()
    offer = subproto_offer(args.caps) if args.offer == "auto" else args.offer
    req = ["GET %s HTTP/1.1" % (u.path or "/"), "Host: %s" % u.netloc,
           "Upgrade: websocket", "Connection: Upgrade",
           "Sec-WebSocket-Key: " + key, "Sec-WebSocket-Version: 13"]
    if offer != "none":
        req.append("Sec-WebSocket-Protocol: " + offer)
    token = args.token
    if args.token_file:
        with open(args.token_file) as f:
            token = f.read().strip()
    if token:
        req.append("Authorization: Bearer " + token)
    sock.sendall(("\r\n".join(req) + "\r\n\r\n").encode())
    status, headers, rest = read_head(sock)
    parts = status.split(" ", 2)
    code = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    if code != 101:
        emit(ev="handshake", ok=False, status=code)
        raise Closed("handshake refused: %d" % code)
    want = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
    if headers.get("sec-websocket-accept") != want:
        emit(ev="handshake", ok=False, status=code, why="bad accept")
        raise Closed("bad Sec-WebSocket-Accept")
    sub = headers.get("sec-websocket-protocol")
    caps = subproto_caps(sub)
    emit(ev="handshake", ok=True, status=101, subprotocol=sub, offer=offer,
         caps=caps_list(max(caps, 0)), known=caps >= 0)
    return WS(sock, True, rest, args.max_message), sub, max(caps, 0)


def server_handshake(sock, args):
    status, headers, rest = read_head(sock)
    path = status.split(" ")[1] if len(status.split(" ")) > 1 else ""
    offer = headers.get("sec-websocket-protocol", "")
    auth = headers.get("authorization", "")
    bearer = auth[7:] if auth.lower().startswith("bearer ") else ""
    ev = {"ev": "handshake", "path": path, "offer": offer,
          "bearer": bool(bearer)}
    if args.print_bearer:
        ev["bearer_text"] = bearer
    if args.expect_bearer is not None and bearer != args.expect_bearer:
        sock.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n"
                     b"Connection: close\r\n\r\n")
        ev.update(ok=False, status=401)
        emit(**ev)
        raise Closed("bad bearer")
    if args.subproto == "select":
        sub = subproto_select(offer, args.caps)
        if offer and sub is None:
            sock.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            ev.update(ok=False, status=400)
            emit(**ev)
            raise Closed("nothing acceptable offered")
    elif args.subproto == "none":
        sub = None
    else:
        sub = args.subproto
    key = headers.get("sec-websocket-key", "")
    acc = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
    resp = ["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket",
            "Connection: Upgrade", "Sec-WebSocket-Accept: " + acc]
    if sub:
        resp.append("Sec-WebSocket-Protocol: " + sub)
    sock.sendall(("\r\n".join(resp) + "\r\n\r\n").encode())
    caps = max(subproto_caps(sub), 0)
    ev.update(ok=True, status=101, subprotocol=sub, caps=caps_list(caps))
    emit(**ev)
    return WS(sock, False, rest, args.max_message), sub, caps


class Stream:
    def __init__(self, sid, opener):
        self.sid = sid
        self.opener = opener      # we opened it
        self.state = "opening"
        self.result = None
        self.rx = bytearray()
        self.rx_bytes = 0
        self.fin_in = False
        self.reset_in = None
        self.send_win = None      # None: not flow-controlled
        self.recv_left = None
        self.pending = 0
        self.outq = bytearray()
        self.fin_out = False
        self.fin_sent = False
        self.target = None        # --serve dial socket
        self.req = None


class Conn:
    """One TunnelMesh connection over a WS: the reader thread, a writer
    thread for DATA (windows), the answer policy, and waits for steps."""

    def __init__(self, idx, ws, caps, args):
        self.idx, self.ws, self.args = idx, ws, args
        self.caps = args.force_caps if args.force_caps is not None else caps
        self.cv = threading.Condition()
        self.streams = {}
        self.next_sid = 1
        self.events = []
        self.closed = False
        self.reading = ws.reading
        self.opens_in = 0

    # --- helpers -----------------------------------------------------
    def strict(self):
        return bool(self.caps & CAP_OPEN)

    def flow(self):
        return bool(self.caps & CAP_FLOW) and bool(self.caps & CAP_OPEN)

    def note(self, **ev):
        ev["conn"] = self.idx
        emit(**ev)
        with self.cv:
            self.events.append(ev)
            self.cv.notify_all()

    def frame(self, ftype, sid, payload=b"", flags=0, length=None):
        n = len(payload) if length is None else length
        try:
            self.ws.send(HDR.pack(ftype, flags, sid, n) + payload)
        except OSError as e:
            raise Closed(str(e))

    def wait(self, pred, timeout_ms):
        end = time.monotonic() + timeout_ms / 1000.0
        with self.cv:
            while not pred():
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self.cv.wait(min(left, 0.2))
            return True

    # --- the reader ----------------------------------------------------
    def start(self):
        threading.Thread(target=self.reader, daemon=True).start()
        threading.Thread(target=self.writer, daemon=True).start()
        if self.args.role == "agent" and not self.args.no_metadata:
            self.send_metadata(self.args.agent_id,
                               None if self.args.metadata_no_caps
                               else caps_list(self.args.caps), ack=False)

    def reader(self):
        why = "eof"
        try:
            while True:
                m = self.ws.recv_message()
                if m[0] == "close":
                    self.note(ev="ws_close", code=m[1], reason=m[2])
                    break
                if m[0] == "text":
                    self.note(ev="violation", what="text_message")
                    continue
                self.on_message(m[1])
        except (Closed, OSError) as e:
            why = str(e)
        with self.cv:
            self.closed = True
            for st in self.streams.values():
                if st.target:
                    try:
                        st.target.close()
                    except OSError:
                        pass
            self.cv.notify_all()
        self.note(ev="closed", why=why)

    def on_message(self, msg):
        if len(msg) < HEADER_LEN:
            self.note(ev="violation", what="short_frame", len=len(msg))
            return
        t, flags, sid, n = HDR.unpack(msg[:HEADER_LEN])
        p = msg[HEADER_LEN:]
        if n != len(p):
            self.note(ev="violation", what="bad_length", type=t, sid=sid)
            return
        name = NAMES.get(t, "UNKNOWN")
        if self.args.trace or t != TYPES["DATA"]:
            self.note(ev="frame", type=name, code=t, flags=flags, sid=sid, len=n)
        if t not in NAMES:
            return  # unknown frames are ignored
        if (t in CONNECTION_TYPES) != (sid == 0):
            self.note(ev="violation", what="wrong_stream_zero", type=name, sid=sid)
            return
        getattr(self, "on_" + name.lower())(sid, flags, p)

    def on_open_stream(self, sid, flags, p):
        req = decode_open_stream(p)
        if req is None:
            self.note(ev="violation", what="bad_open_stream", sid=sid)
            return
        with self.cv:
            dup = sid in self.streams
            st = self.streams.get(sid) or Stream(sid, False)
            self.streams[sid] = st
            st.req = req
            self.opens_in += 1
            if self.flow():
                st.send_win = req["window"]
        if dup:
            self.note(ev="violation", what="duplicate_stream_id", sid=sid)
        self.note(ev="open", sid=sid, **req)
        if not self.strict():
            st.state = "open"
        ans = self.args.answer
        if ans.startswith("late:"):
            ms = int(ans[5:])
            threading.Timer(ms / 1000.0, self.answer, (sid, "ok")).start()
        elif ans not in ("never", "manual"):
            if ans == "ok" and self.args.serve == "dial":
                threading.Thread(target=self.dial, args=(st,), daemon=True).start()
            else:
                self.answer(sid, ans)

    def answer(self, sid, how):
        st = self.streams.get(sid)
        if st is None or self.closed:
            return
        try:
            if how == "ok":
                if self.args.data_before_result:
                    self.frame(TYPES["DATA"], sid, b"early")
                st.state = "open"
                if self.flow():
                    st.recv_left = self.args.window
                if self.strict():
                    if self.args.result_json:
                        payload = self.args.result_json.encode()
                    else:
                        payload = open_result_json(
                            True, "connect", "ok",
                            window=self.args.window if self.flow() else 0)
                    if self.args.oversized_result:
                        payload = payload[:-1] + b',"pad":"' + b"x" * 1100 + b'"}'
                    for _ in range(2 if self.args.dup_result else 1):
                        self.frame(TYPES["OPEN_RESULT"], sid, payload)
                self.note(ev="answered", sid=sid, result="ok")
                self.serve(st)
            elif how.startswith("fail:"):
                _, stage, code = how.split(":", 2)
                st.state = "failed"
                if self.strict():
                    self.frame(TYPES["OPEN_RESULT"], sid, open_result_json(
                        False, stage, code, retryable=code in (
                            "timeout", "queue_full", "host_unreachable",
                            "agent_offline"), retry_ms=0))
                else:
                    cnum = CODES.index(code) if code in CODES else 9
                    self.frame(TYPES["RESET"], sid, bytes([cnum]))
                self.note(ev="answered", sid=sid, result=how)
            elif how == "reset":
                st.state = "reset"
                self.frame(TYPES["RESET"], sid, bytes([9]))
                self.note(ev="answered", sid=sid, result="reset")
        except Closed:
            pass

    def dial(self, st):
        req = st.req
        try:
            s = socket.create_connection((req["host"], req["port"]),
                                         timeout=self.args.dial_timeout)
            s.settimeout(None)
        except socket.gaierror:
            return self.answer(st.sid, "fail:dns:host_unreachable")
        except socket.timeout:
            return self.answer(st.sid, "fail:connect:timeout")
        except ConnectionRefusedError:
            return self.answer(st.sid, "fail:connect:connection_refused")
        except OSError:
            return self.answer(st.sid, "fail:connect:host_unreachable")
        st.target = s
        self.answer(st.sid, "ok")

    def serve(self, st):
        mode = self.args.serve
        if mode.startswith("bytes:"):
            self.queue_data(st, b"x" * int(mode[6:]), fin=True)
        elif mode.startswith("reset:"):
            _, n, code = mode.split(":", 2)
            self.queue_data(st, b"x" * int(n), fin=False)
            threading.Thread(target=self.reset_when_sent, args=(st, code),
                             daemon=True).start()
        elif mode == "dial" and st.target:
            threading.Thread(target=self.pump_target, args=(st,), daemon=True).start()

    def reset_when_sent(self, st, code):
        """--serve reset: RESET with code once the queued bytes left (a
        bounded wait: the peer's lifetime)."""
        with self.cv:
            while st.outq and not self.closed and st.state == "open":
                self.cv.wait(0.2)
            if self.closed or st.state != "open":
                return
            st.state = "reset"
        try:
            self.frame(TYPES["RESET"], st.sid, bytes([CODES.index(code)]))
        except Closed:
            return
        self.note(ev="reset_sent", sid=st.sid, code=code)

    def pump_target(self, st):
        try:
            while True:
                chunk = st.target.recv(16384)
                if not chunk:
                    break
                self.queue_data(st, chunk, fin=False, wait_room=True)
        except OSError:
            pass
        self.queue_data(st, b"", fin=True)

    def on_open_result(self, sid, flags, p):
        st = self.streams.get(sid)
        try:
            r = json.loads(p.decode()) if len(p) <= OPEN_RESULT_MAX else None
        except ValueError:
            r = None
        if st is None or not st.opener:
            self.note(ev="violation", what="result_for_unknown_stream", sid=sid)
            return
        if r is None or not isinstance(r, dict):
            self.note(ev="violation", what="bad_open_result", sid=sid, len=len(p))
            return
        with self.cv:
            if st.state != "opening":
                dup = True
            else:
                dup = False
                st.result = r
                st.state = "open" if r.get("accepted") else "failed"
                if r.get("accepted") and self.flow():
                    # absent: the protocol's initial window (issue 24 item 5)
                    st.send_win = int(r.get("window", 262144))
            self.cv.notify_all()
        if dup:
            self.note(ev="violation", what="duplicate_open_result", sid=sid)
            return
        self.note(ev="open_result", sid=sid, accepted=r.get("accepted"),
                  stage=r.get("stage"), code=r.get("code"),
                  retryable=r.get("retryable"), window=r.get("window", 0),
                  open_mode=r.get("open_mode", "strict"))

    def on_data(self, sid, flags, p):
        st = self.streams.get(sid)
        if st is None:
            self.note(ev="violation", what="data_unknown_stream", sid=sid)
            return
        if st.state == "opening":
            self.note(ev="violation", what="data_while_opening", sid=sid)
        if st.fin_in:
            self.note(ev="violation", what="data_after_fin", sid=sid)
        update = 0
        with self.cv:
            st.rx_bytes += len(p)
            if len(st.rx) < KEEP_BYTES:
                st.rx += p[:KEEP_BYTES - len(st.rx)]
            if flags & FIN:
                st.fin_in = True
            if st.recv_left is not None:
                st.recv_left -= len(p)
                if st.recv_left < 0:
                    over = True
                    st.recv_left = 0
                else:
                    over = False
                if not self.args.no_window_update:
                    st.pending += len(p)
                    if st.pending >= self.args.window_threshold:
                        update, st.pending = st.pending, 0
                        st.recv_left += update
            else:
                over = False
            self.cv.notify_all()
        if over:
            self.note(ev="violation", what="window_overrun", sid=sid)
        if self.args.trace:
            self.note(ev="data", sid=sid, len=len(p), fin=bool(flags & FIN))
        if flags & FIN:
            self.note(ev="fin", sid=sid, bytes=st.rx_bytes)
        if self.args.serve == "echo" and not st.opener and p:
            self.queue_data(st, p, fin=False)
        if self.args.serve == "echo" and not st.opener and flags & FIN:
            self.queue_data(st, b"", fin=True)
        if st.target:
            try:
                if p:
                    st.target.sendall(p)
                if flags & FIN:
                    st.target.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        if update:
            try:
                self.frame(TYPES["WINDOW_UPDATE"], sid, struct.pack(">I", update))
            except Closed:
                pass

    def on_window_update(self, sid, flags, p):
        inc = struct.unpack(">I", p)[0] if len(p) == 4 else None
        self.note(ev="window_update", sid=sid, inc=inc)
        if not inc:
            self.note(ev="violation", what="zero_window_update", sid=sid)
            return
        st = self.streams.get(sid)
        with self.cv:
            if st is not None and st.send_win is not None:
                st.send_win += inc
            self.cv.notify_all()

    def on_reset(self, sid, flags, p):
        code = CODES[p[0]] if len(p) == 1 and p[0] < len(CODES) else "internal_error"
        st = self.streams.get(sid)
        with self.cv:
            if st is not None:
                st.reset_in = code
                st.state = "reset"
                if st.target:
                    try:
                        st.target.close()
                    except OSError:
                        pass
            self.cv.notify_all()
        self.note(ev="reset", sid=sid, code=code)

    def on_ping(self, sid, flags, p):
        self.note(ev="ping", len=len(p))
        if not self.args.no_pong:
            self.frame(TYPES["PONG"], 0, p)

    def on_pong(self, sid, flags, p):
        self.note(ev="pong", len=len(p))

    def on_goaway(self, sid, flags, p):
        last = struct.unpack(">I", p)[0] if len(p) == 4 else None
        self.note(ev="goaway", last=last)

    def _metadata(self, p, ack):
        try:
            m = json.loads(p.decode())
        except ValueError:
            self.note(ev="violation", what="bad_metadata", ack=ack)
            return None
        has = isinstance(m, dict) and "capabilities" in m
        caps = caps_from_names(m.get("capabilities") if has else [])
        self.note(ev="metadata", ack=ack, agent_id=m.get("agent_id"),
                  version=m.get("version"), has_caps=has,
                  capabilities=caps_list(caps))
        return caps

    def on_agent_metadata(self, sid, flags, p):
        caps = self._metadata(p, False)
        if caps is None or self.args.no_metadata_ack:
            return
        # The agent's link: the intersection decides (TM-PROTO-18), not
        # the subprotocol; fair_writer stays this side's own.
        both = caps & self.args.caps
        if self.args.force_caps is None:
            self.caps = (both & (CAP_OPEN | CAP_FLOW)) | (self.args.caps & CAP_FAIR)
        self.send_metadata(None, caps_list(both), ack=True)

    def on_agent_metadata_ack(self, sid, flags, p):
        caps = self._metadata(p, True)
        if caps is not None and self.args.force_caps is None:
            self.caps = (caps & self.args.caps & (CAP_OPEN | CAP_FLOW)) | \
                (self.args.caps & CAP_FAIR)

    def send_metadata(self, agent_id, caps, ack):
        m = {}
        if not ack:
            m["agent_id"] = agent_id or "tm_peer"
            m["version"] = "tm_peer"
        if caps is not None:
            m["capabilities"] = caps
        self.frame(TYPES["AGENT_METADATA_ACK" if ack else "AGENT_METADATA"], 0,
                   json.dumps(m).encode())

    # --- the writer ------------------------------------------------------
    def queue_data(self, st, data, fin, wait_room=False):
        with self.cv:
            if wait_room:
                while len(st.outq) > (1 << 20) and not self.closed and \
                        st.state not in ("reset", "failed"):
                    self.cv.wait(0.2)
            st.outq += data
            if fin:
                st.fin_out = True
            self.cv.notify_all()

    def writer(self):
        maxp = self.args.max_payload
        rr = 0
        while True:
            item = None
            with self.cv:
                while item is None:
                    if self.closed:
                        return
                    order = list(self.streams.values())
                    rr = (rr + 1) % max(len(order), 1)
                    for st in order[rr:] + order[:rr]:
                        if st.state != "open" or st.fin_sent:
                            continue
                        n = min(len(st.outq), maxp)
                        if st.send_win is not None:
                            n = min(n, st.send_win)
                        if n > 0 or (st.fin_out and not st.outq):
                            data = bytes(st.outq[:n])
                            del st.outq[:n]
                            if st.send_win is not None:
                                st.send_win -= n
                            fin = st.fin_out and not st.outq
                            if fin:
                                st.fin_sent = True
                            item = (st.sid, data, fin)
                            self.cv.notify_all()
                            break
                    if item is None:
                        self.cv.wait(0.2)
            try:
                self.frame(TYPES["DATA"], item[0], item[1], FIN if item[2] else 0)
            except Closed:
                return


def payload_of(step):
    if "hex" in step:
        return bytes.fromhex(step["hex"])
    if "json" in step:
        return json.dumps(step["json"]).encode()
    if "text" in step:
        return step["text"].encode()
    if "data" in step:
        return step["data"].encode()
    if "size" in step:
        return b"x" * int(step["size"])
    return b""


def run_step(i, step, conns, args):
    op = step["op"]
    tmo = int(step.get("timeout_ms", args.timeout * 1000))
    if op == "wait_conn":
        n = int(step.get("n", 1))
        end = time.monotonic() + tmo / 1000.0
        while len(conns) < n and time.monotonic() < end:
            time.sleep(0.05)
        return len(conns) >= n, "connections: %d" % len(conns)
    if op == "sleep":
        time.sleep(int(step.get("ms", 100)) / 1000.0)
        return True, ""
    if op == "mark":
        emit(ev="mark", name=step.get("name", str(i)))
        return True, ""
    ci = int(step.get("conn", 0))
    end = time.monotonic() + tmo / 1000.0
    while len(conns) <= ci and time.monotonic() < end:
        time.sleep(0.05)
    if len(conns) <= ci:
        return False, "no connection %d" % ci
    c = conns[ci]
    sid = step.get("sid")
    st = c.streams.get(sid) if sid is not None else None
    if op == "open":
        with c.cv:
            sid = int(step.get("sid", c.next_sid))
            c.next_sid = max(c.next_sid, sid + 1)
            st = Stream(sid, True)
            c.streams[sid] = st
            if not c.strict():
                st.state = "open"
            if c.flow():
                st.recv_left = int(step.get("window", args.window))
        win = int(step.get("window", args.window)) if c.flow() else 0
        c.frame(TYPES["OPEN_STREAM"], sid, encode_open_stream(
            win, step["host"], int(step["port"]), step.get("agent", args.open_agent),
            trace=step.get("trace"), trace_len=step.get("trace_len")))
        emit(ev="opened", conn=ci, sid=sid, host=step["host"], port=step["port"])
        return True, ""
    if op == "open_burst":
        # n OPEN_STREAMs back to back, sids first, first+2, ... (one
        # "burst" event, not one per open)
        n, first = int(step["n"]), int(step.get("first_sid", c.next_sid))
        win = int(step.get("window", args.window)) if c.flow() else 0
        payload = encode_open_stream(win, step["host"], int(step["port"]),
                                     step.get("agent", args.open_agent))
        with c.cv:
            for k in range(n):
                sid = first + 2 * k
                st = Stream(sid, True)
                if not c.strict():
                    st.state = "open"
                if c.flow():
                    st.recv_left = win
                c.streams[sid] = st
            c.next_sid = max(c.next_sid, first + 2 * n)
        for k in range(n):
            c.frame(TYPES["OPEN_STREAM"], first + 2 * k, payload)
        emit(ev="burst", conn=ci, first_sid=first, n=n)
        return True, ""
    if op == "expect_burst_answers":
        # every stream of the burst answered on its own (an OPEN_RESULT or
        # a RESET) with the connection up; the answers by code in one event
        n, first = int(step["n"]), int(step["first_sid"])
        sts = [c.streams.get(first + 2 * k) for k in range(n)]
        if any(x is None for x in sts):
            return False, "not a burst's streams"
        c.wait(lambda: c.closed or all(
            x.result is not None or x.reset_in is not None for x in sts), tmo)
        codes = {}
        for x in sts:
            k = ("result:%s" % (x.result or {}).get("code")
                 if x.result is not None else
                 "reset:%s" % x.reset_in if x.reset_in is not None else "none")
            codes[k] = codes.get(k, 0) + 1
        emit(ev="burst_answers", conn=ci, codes=codes, closed=c.closed)
        if c.closed:
            return False, "the connection closed: %r" % codes
        return codes.get("none", 0) == 0, "unanswered: %r" % codes
    if op in ("send", "expect_result", "expect_no_result", "expect_data",
              "expect_reset", "answer", "window_update", "reset") and sid is None:
        return False, "step needs a sid"
    if op == "expect_result":
        if st is None:
            return False, "unknown stream"
        if not c.wait(lambda: st.result is not None or c.closed or st.reset_in, tmo):
            return False, "no OPEN_RESULT"
        r = st.result or {}
        if "open_mode" in step and r.get("open_mode", "strict") != step["open_mode"]:
            return False, "open_mode: got %r want %r" % (
                r.get("open_mode", "strict"), step["open_mode"])
        for k in ("accepted", "stage", "code"):
            if k in step and r.get(k) != step[k]:
                return False, "%s: got %r want %r" % (k, r.get(k), step[k])
            # "stage_not"/"code_not": any answer but that one (a dial that
            # was tried, whatever the network made of it)
            if k + "_not" in step and r.get(k) == step[k + "_not"]:
                return False, "%s: got %r" % (k, r.get(k))
        return st.result is not None, "no OPEN_RESULT (reset %s)" % st.reset_in
    if op == "expect_no_result":
        got = c.wait(lambda: st is not None and st.result is not None,
                     int(step.get("ms", 500)))
        return not got, "an OPEN_RESULT arrived"
    if op == "send":
        if st is None:
            return False, "unknown stream"
        data = payload_of(step)
        if step.get("ignore_window") or step.get("raw"):
            maxp = args.max_payload
            for off in range(0, max(len(data), 1), maxp):
                chunk = data[off:off + maxp]
                last = off + maxp >= len(data)
                c.frame(TYPES["DATA"], sid, chunk,
                        FIN if (last and step.get("fin")) else 0)
            return True, ""
        c.queue_data(st, data, bool(step.get("fin")))
        if step.get("wait", True):
            ok = c.wait(lambda: not st.outq or c.closed or st.reset_in, tmo)
            return ok and not st.outq, "send did not drain (window?)"
        return True, ""
    if op == "expect_data":
        if st is None:
            return False, "unknown stream"
        want = step.get("data")
        has = step.get("contains")
        size = step.get("size")

        def done():
            if c.closed or st.reset_in:
                return True
            if step.get("fin") and not st.fin_in:
                return False
            if want is not None:
                return st.rx_bytes >= len(want)
            if has is not None:
                return has.encode() in st.rx
            if size is not None:
                return st.rx_bytes >= int(size)
            return st.rx_bytes > 0
        c.wait(done, tmo)
        if step.get("fin") and not st.fin_in:
            return False, "no FIN (%d bytes)" % st.rx_bytes
        if want is not None and bytes(st.rx[:len(want)]) != want.encode():
            return False, "got %r" % bytes(st.rx[:200])
        if has is not None and has.encode() not in st.rx:
            return False, "got %r" % bytes(st.rx[:200])
        if size is not None and st.rx_bytes < int(size):
            return False, "got %d bytes" % st.rx_bytes
        return True, ""
    if op == "expect_reset":
        ok = c.wait(lambda: st is not None and st.reset_in is not None, tmo)
        if ok and "code" in step and st.reset_in != step["code"]:
            return False, "reset code %s" % st.reset_in
        return ok, "no RESET"
    if op == "expect_open":
        n = int(step.get("count", 1))
        return c.wait(lambda: c.opens_in >= n, tmo), "opens: %d" % c.opens_in
    if op == "expect_close":
        return c.wait(lambda: c.closed, tmo), "still connected"
    if op in ("expect_metadata", "expect_pong", "expect_goaway", "expect_event"):
        ev = {"expect_metadata": "metadata", "expect_pong": "pong",
              "expect_goaway": "goaway"}.get(op, step.get("ev"))
        fields = {k: v for k, v in step.items()
                  if k not in ("op", "ev", "conn", "timeout_ms")}

        def seen():
            return any(e.get("ev") == ev and all(e.get(k) == v for k, v in fields.items())
                       for e in c.events)
        return c.wait(seen, tmo), "no %s event like %r" % (ev, fields)
    if op == "expect_no_event":
        ev = step.get("ev")
        fields = {k: v for k, v in step.items()
                  if k not in ("op", "ev", "conn", "timeout_ms", "ms")}
        got = c.wait(lambda: any(
            e.get("ev") == ev and all(e.get(k) == v for k, v in fields.items())
            for e in c.events), int(step.get("ms", 500)))
        return not got, "a %s event arrived" % ev
    if op == "answer":
        c.answer(sid, step.get("result", "ok"))
        return True, ""
    if op == "frame":
        t = step["type"]
        t = TYPES[t] if isinstance(t, str) else int(t)
        p = payload_of(step)
        c.frame(t, int(step.get("sid", 0)), p, int(step.get("flags", 0)),
                step.get("length"))
        return True, ""
    if op == "raw":
        c.ws.send(bytes.fromhex(step["hex"]))
        return True, ""
    if op == "ws":
        c.ws.send_frame(int(step["opcode"]), bytes.fromhex(step.get("hex", "")))
        return True, ""
    if op == "fragmented":
        # One DATA frame as a WebSocket message in `parts` fragments (a
        # binary frame, continuations, the last with FIN), a ping between
        # the first two (control frames may interleave: RFC 6455 5.4).
        if st is None:
            return False, "unknown stream"
        msg = HDR.pack(TYPES["DATA"], 0, sid, len(payload_of(step))) + payload_of(step)
        n = max(2, int(step.get("parts", 3)))
        cut = [len(msg) * i // n for i in range(n + 1)]
        for i in range(n):
            c.ws.send_frame(0x2 if i == 0 else 0x0, msg[cut[i]:cut[i + 1]], fin=(i == n - 1))
            if i == 0:
                c.ws.send_frame(0x9, b"tm")
        return True, ""
    if op == "window_update":
        c.frame(TYPES["WINDOW_UPDATE"], sid, struct.pack(">I", int(step["inc"])))
        return True, ""
    if op == "reset":
        code = step.get("code", "internal_error")
        c.frame(TYPES["RESET"], sid, bytes([CODES.index(code) if code in CODES else 9]))
        if st:
            st.state = "reset"
        return True, ""
    if op == "ping":
        c.frame(TYPES["PING"], 0, os.urandom(8))
        return True, ""
    if op == "goaway":
        c.frame(TYPES["GOAWAY"], 0, struct.pack(">I", int(step.get("last", 0))))
        return True, ""
    if op == "metadata":
        caps = step.get("caps", caps_list(args.caps))
        c.send_metadata(step.get("agent_id", args.agent_id), caps,
                        bool(step.get("ack")))
        return True, ""
    if op == "stop_reading":
        c.reading.clear()
        return True, ""
    if op == "resume_reading":
        c.reading.set()
        return True, ""
    if op == "close":
        c.ws.close(int(step.get("code", 1000)), step.get("reason", ""))
        return True, ""
    return False, "unknown op " + op


def run_script(steps, conns, args):
    for i, step in enumerate(steps):
        try:
            ok, why = run_step(i, step, conns, args)
        except (Closed, OSError) as e:
            ok, why = False, "connection: %s" % e
        except (KeyError, ValueError, TypeError) as e:
            ok, why = False, "bad step: %r" % e
        emit(ev="step", n=i, op=step.get("op"), ok=ok)
        if not ok:
            emit(ev="fail", n=i, op=step.get("op"), why=why)
            return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--as", dest="role", required=True,
                    choices=["client", "agent", "server"])
    ap.add_argument("--url")
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--port-file")
    ap.add_argument("--max-conns", type=int, default=8)
    ap.add_argument("--token")
    ap.add_argument("--token-file")
    ap.add_argument("--expect-bearer")
    ap.add_argument("--print-bearer", action="store_true")
    ap.add_argument("--caps", default="all", type=parse_caps)
    ap.add_argument("--force-caps", type=parse_caps)
    ap.add_argument("--offer", default="auto")
    ap.add_argument("--subproto", default="select")
    ap.add_argument("--agent-id", default="tm_peer")
    ap.add_argument("--open-agent", default="")
    ap.add_argument("--no-metadata", action="store_true")
    ap.add_argument("--metadata-no-caps", action="store_true")
    ap.add_argument("--no-metadata-ack", action="store_true")
    ap.add_argument("--answer", default="ok")
    ap.add_argument("--dup-result", action="store_true")
    ap.add_argument("--oversized-result", action="store_true")
    ap.add_argument("--result-json")
    ap.add_argument("--data-before-result", action="store_true")
    ap.add_argument("--serve", default="echo")
    ap.add_argument("--dial-timeout", type=float, default=5.0)
    ap.add_argument("--window", type=int, default=262144)
    ap.add_argument("--window-threshold", type=int, default=131072)
    ap.add_argument("--no-window-update", action="store_true")
    ap.add_argument("--no-pong", action="store_true")
    ap.add_argument("--max-payload", type=int, default=16384)
    ap.add_argument("--max-message", type=int, default=HEADER_LEN + MAX_PAYLOAD + 1024)
    ap.add_argument("--script")
    ap.add_argument("--script-file")
    ap.add_argument("--stay", action="store_true",
                    help="after the script, serve until killed or --lifetime")
    ap.add_argument("--lifetime", type=float, default=300.0)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--trace", action="store_true", help="an event per DATA frame")
    args = ap.parse_args()
    if args.window < 1 or args.window_threshold < 1:
        ap.error("windows are at least 1")
    try:
        steps = json.loads(args.script) if args.script else []
        if args.script_file:
            with open(args.script_file) as f:
                steps = json.load(f)
    except ValueError as e:
        ap.error("script: %s" % e)
    if not isinstance(steps, list):
        ap.error("the script is a JSON list of steps")
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    # Never outlive the test that started us.
    killer = threading.Timer(args.lifetime, lambda: os._exit(3))
    killer.daemon = True
    killer.start()
    parent = os.getppid()

    def watch_parent():
        while True:
            time.sleep(1)
            if os.getppid() != parent:
                os._exit(3)
    threading.Thread(target=watch_parent, daemon=True).start()

    conns = []
    if args.role == "server":
        host, _, port = args.listen.rpartition(":")
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((host or "127.0.0.1", int(port)))
        ls.listen(64)
        bound = ls.getsockname()[1]
        if args.port_file:
            tmp = args.port_file + ".tmp"
            with open(tmp, "w") as f:
                f.write("%d\n" % bound)
            os.rename(tmp, args.port_file)
        emit(ev="listening", port=bound)

        def acceptor():
            while len(conns) < args.max_conns:
                s, _ = ls.accept()
                try:
                    ws, sub, caps = server_handshake(s, args)
                except (Closed, OSError):
                    s.close()
                    continue
                c = Conn(len(conns), ws, caps, args)
                c.start()
                conns.append(c)
        threading.Thread(target=acceptor, daemon=True).start()
    else:
        if not args.url:
            ap.error("--url is required for a client or an agent")
        try:
            ws, sub, caps = client_handshake(args)
        except (Closed, OSError) as e:
            emit(ev="fail", why="connect: %s" % e)
            sys.stdout.flush()
            os._exit(1)
        c = Conn(0, ws, caps, args)
        conns.append(c)
        c.start()
    ok = run_script(steps, conns, args)
    emit(ev="done", ok=ok)
    if ok and args.stay:
        end = time.monotonic() + args.lifetime
        while time.monotonic() < end:
            if args.role != "server" and conns[0].closed:
                break
            time.sleep(0.2)
    sys.stdout.flush()
    os._exit(0 if ok else 1)


if __name__ == "__main__":
    main()

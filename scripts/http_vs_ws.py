#!/usr/bin/env python3
"""HTTP batch vs WebSocket submit round trips against one running hub (scripts/bench-http.sh, part 1).

    http_vs_ws.py PORT ROOM ROUNDTRIPS HUB_PID LABEL JSON_OUT

One client process, one room, the same kind of batch both ways (one `set` of Bob's hairColor, tag 1
of the tutorial seed, to a value other than the current one, at the room's head so nothing is
transformed):
- WebSocket: `submit` on one connection (user bench-ws), timed from sending the frame to having the
  `ack` (frames already waiting, the `history` after each ack and the `ops` of the HTTP writes, are
  read before the clock starts; any that arrive meanwhile are skipped by a byte check);
- HTTP: `POST /v1/rooms/ROOM/batches?user=bench-http` on one keep-alive connection, timed from sending
  the request to having the whole 200 and its body.
Both clients are the same hand-written code on raw blocking sockets (TCP_NODELAY, one 64 KiB recv
buffer, one json.loads of the answer inside the timing), so the client's overhead is the same order
both ways; it is in the figures (an upper bound of the hub's part).

Phase 1 (the headline): ROUNDTRIPS of each, alternating (WS, HTTP, HTTP, WS, ...) so both see the same
hub, room and machine state. Phase 2: ROUNDTRIPS of each in turn (all WS, then all HTTP), for the
hub's CPU per request (user + system from /proc, 10 ms ticks), the client's own CPU per request, and
the CPU of every process on the machine together meanwhile (/proc/*/stat; % of one core, of 200%).
"""
import base64, json, os, select, socket, sys, time

from bench_common import cpu_seconds, machine_cpu_since, process_times, summary, table

port, room, n, hub_pid, label, json_out = (int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
                                           sys.argv[5], sys.argv[6])
COLORS = ["black", "brown", "blonde", "red", "gray", "white"]
WARMUP = 300


class Conn:
    """A blocking TCP connection to the hub with a receive buffer."""

    def __init__(self):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()

    def fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the hub closed the connection")
        self.buf += chunk

    def readable_now(self):
        return bool(self.buf) or bool(select.select([self.sock], [], [], 0)[0])

    def head(self):
        """Reads up to the end of an HTTP header block; returns (status line, {lower name: value})."""
        while (end := self.buf.find(b"\r\n\r\n")) < 0:
            self.fill()
        lines = self.buf[:end].decode("latin-1").split("\r\n")
        del self.buf[:end + 4]
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return lines[0], headers

    def take(self, count):
        while len(self.buf) < count:
            self.fill()
        data = bytes(self.buf[:count])
        del self.buf[:count]
        return data


class WS(Conn):
    def __init__(self, path):
        super().__init__()
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        status, _ = self.head()
        assert status.split()[1] == "101", status

    def send(self, text):
        payload = text.encode()
        size = len(payload)
        header = bytes([0x81, 0x80 | size]) if size < 126 else bytes([0x81, 0xFE]) + size.to_bytes(2, "big")
        mask = os.urandom(4)
        masked = (int.from_bytes(payload, "big") ^ int.from_bytes((mask * (size // 4 + 1))[:size], "big")).to_bytes(size, "big")
        self.sock.sendall(header + mask + masked)

    def frame(self):
        """The next text frame's payload (pings answered, nothing fragmented from this hub)."""
        while True:
            first, second = self.take(2)
            size = second & 0x7F
            if size == 126:
                size = int.from_bytes(self.take(2), "big")
            elif size == 127:
                size = int.from_bytes(self.take(8), "big")
            payload = self.take(size)
            opcode = first & 0x0F
            if opcode == 0x1:
                return payload
            if opcode == 0x8:
                raise ConnectionError(f"closed by the hub: {payload!r}")
            if opcode == 0x9:
                mask = os.urandom(4)
                self.sock.sendall(bytes([0x8A, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))


class HTTP(Conn):
    def post(self, path, body):
        data = body.encode()
        self.sock.sendall((f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                           f"Content-Length: {len(data)}\r\n\r\n").encode() + data)
        status, headers = self.head()
        length = headers.get("content-length")
        assert length is not None, (status, headers)   # this hub always sends one
        return int(status.split()[1]), self.take(int(length))


ws = WS(f"/v1/rooms/{room}")
ws.send(json.dumps({"type": "hello", "protocol": 1, "user": "bench-ws"}))
welcome = json.loads(ws.frame())
assert welcome["type"] == "welcome", welcome
head = welcome["rev"]
http = HTTP()
seq = 0
key = 0
batches_path = f"/v1/rooms/{room}/batches?user=bench-http"


def ops(i):
    return [{"op": "set", "tag": 1, "field": "hairColor", "value": COLORS[i % len(COLORS)]}]


def ws_submit():
    global seq, head
    seq += 1
    message = json.dumps({"type": "submit", "seq": seq, "base": head, "ops": ops(seq + key)})
    while ws.readable_now():          # the previous history frame and ops of HTTP writes: not ours to time
        ws.frame()
    start = time.perf_counter_ns()
    ws.send(message)
    while True:
        payload = ws.frame()
        if payload.startswith(b'{"type":"ack"') or payload.startswith(b'{"type":"error"'):
            reply = json.loads(payload)
            break
    took = time.perf_counter_ns() - start
    assert reply["type"] == "ack" and reply["seq"] == seq, reply
    head = reply["rev"]
    return took


def http_batch():
    global key, head
    key += 1
    body = json.dumps({"base": head, "key": f"k{key}", "ops": ops(seq + key)})
    start = time.perf_counter_ns()
    status, answer = http.post(batches_path, body)
    reply = json.loads(answer)
    took = time.perf_counter_ns() - start
    assert status == 200 and "rev" in reply, (status, reply)
    head = reply["rev"]
    while ws.readable_now():          # the WebSocket's ops frames of these writes, untimed, so they never pile up
        ws.frame()
    return took


for i in range(WARMUP):
    ws_submit()
    http_batch()

# Phase 1: alternating, the order swapped every pair.
times = {"ws": [], "http": []}
for i in range(n):
    if i % 2 == 0:
        times["ws"].append(ws_submit())
        times["http"].append(http_batch())
    else:
        times["http"].append(http_batch())
        times["ws"].append(ws_submit())

# Phase 2: in turn, for CPU per request.
cpu = {}
turn = {"ws": [], "http": []}
for kind, call in (("ws", ws_submit), ("http", http_batch)):
    hub0, client0, wall0, procs0 = cpu_seconds(hub_pid), time.process_time(), time.perf_counter(), process_times()
    for _ in range(n):
        turn[kind].append(call())
    hub1, client1, wall1, machine = cpu_seconds(hub_pid), time.process_time(), time.perf_counter(), machine_cpu_since(procs0)
    cpu[kind] = {"requests": n, "seconds": round(wall1 - wall0, 3),
                 "requestsPerSecond": round(n / (wall1 - wall0)),
                 "hubCPUSeconds": round(hub1 - hub0, 2), "hubCPUMicrosPerRequest": round((hub1 - hub0) * 1e6 / n, 1),
                 "hubCPUPercent": round(100 * (hub1 - hub0) / (wall1 - wall0)),
                 "clientCPUMicrosPerRequest": round((client1 - client0) * 1e6 / n, 1),
                 "machineCPUPercent": round(100 * machine / (wall1 - wall0))}

ms = lambda values: summary([v / 1e6 for v in values])
out = {"label": label, "room": room, "roundTrips": n, "warmup": WARMUP, "head": head,
       "alternating": {k: ms(v) for k, v in times.items()}, "inTurn": {k: ms(v) for k, v in turn.items()}, "cpu": cpu}
out["ratioP50"] = round(out["alternating"]["http"]["p50"] / out["alternating"]["ws"]["p50"], 2)
out["ratioP50InTurn"] = round(out["inTurn"]["http"]["p50"] / out["inTurn"]["ws"]["p50"], 2)
rows = []
for mode, stats in (("alternating", out["alternating"]), ("in turn", out["inTurn"])):
    for kind in ("ws", "http"):
        s = stats[kind]
        row = [label, mode, "WS submit→ack" if kind == "ws" else "HTTP POST→200", s["count"],
               f'{s["p50"]:.3f}', f'{s["p99"]:.3f}', f'{s["mean"]:.3f}', f'{s["max"]:.2f}']
        if mode == "in turn":
            row += [cpu[kind]["requestsPerSecond"], cpu[kind]["hubCPUMicrosPerRequest"], f'{cpu[kind]["hubCPUPercent"]}%',
                    cpu[kind]["clientCPUMicrosPerRequest"], f'{cpu[kind]["machineCPUPercent"]}%']
        else:
            row += ["", "", "", "", ""]
        rows.append(row)
print(table(["store", "order", "round trip", "n", "p50 ms", "p99 ms", "mean ms", "max ms", "req/s", "hub µs/req",
             "hub CPU", "client µs/req", "machine CPU"], rows))
print(f'{label}: HTTP p50 / WS p50 = {out["ratioP50"]}x alternating, {out["ratioP50InTurn"]}x in turn (target ≤ 2x)')
with open(json_out, "w") as f:
    json.dump(out, f, indent=1)

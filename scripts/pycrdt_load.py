#!/usr/bin/env python3
# The Yjs side of issue 8's side-by-side benchmark: `peoplekeeper-bench load`'s workload against a Yjs
# sync server (pycrdt-websocket, scripts/pycrdt_server.py). N clients join one room with the y-protocols
# sync handshake (pycrdt's create_sync_message / handle_sync_message); W of them (the first) make Yjs Map
# sets `map["hairColor:<tag>"] = "<colour>@<writer>/<seq>@"` at --rate each (paced, as in the Swift
# tool: the writers take turns evenly, writer w's k-th update is due at start + (k + w/W) / rate) or,
# with --rate 0, each as soon as its previous update was handed to the socket. Every receiver records
# (writer, seq, receipt time) for each incoming update and applies it to its own pycrdt Doc; at the end
# every Doc must equal a fresh joiner's.
#
#   .build/bench-venv/bin/python scripts/pycrdt_load.py --url ws://127.0.0.1:PORT [--clients 100]
#       [--writers 1] [--rate 10] [--seconds 10] [--verifiers -1] [--connect-rate 2000] [--room NAME]
#       [--server-pid PID] [--json FILE] [--label NAME]
#
# Latency runs from when an update was due on the pacing schedule (rate 0: when it was sent) to its
# receipt at each other client, so a server that falls behind is charged for the wait. Deliveries are
# updates received by clients other than their writer (pycrdt-websocket also echoes each update to its
# writer; those are counted apart, as `echoes`). Server CPU is utime + stime of --server-pid (/proc) over
# the measured part (first update to last delivery), RSS is read before connecting, after everyone
# joined and at the end; clientCPUSeconds is this process's own CPU over the same part. The JSON has the
# keys of `peoplekeeper-bench load --json`, plus clientCPUSeconds, echoes, reordered (receipts not in a
# writer's order), pacingLagMillis (how late this process sent a paced update) and updatesWithoutValue.
#
# An update is identified by its Yjs id, not by the value string: writer w's Doc has client id w + 1
# and each set is one struct, so set number s is clock s, read from the update's header. The server
# re-encodes what it applied, and a set that lost to a concurrent set of the same key (two writers) is
# integrated as deleted, its content dropped: its value string is gone from the broadcast
# (updatesWithoutValue counts those at one receiver) but its id is there.
#
# All clients are in this one process on one asyncio loop. To keep it light each connection is a bare
# asyncio.Protocol (no task or future per message): websockets builds the opening handshake's request and
# the client's (masked) frames, and the server's frames (unmasked, never fragmented by websockets) are
# cut from the stream here, as websockets' own generator-based parser cost about as much CPU per message
# as the server under test. Exit status 1 if any check failed.
import argparse
import array
import asyncio
import json
import os
import random
import re
import resource
import sys
import time
from urllib.parse import urlsplit

from pycrdt import Doc, Map, create_sync_message, create_update_message, handle_sync_message, write_var_uint
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.uri import parse_uri
from websockets.utils import accept_key

COLOURS = ("black", "brown", "blonde", "red", "white", "gray")
PEOPLE = 200  # tags 1...200, like the hub's bench rooms
MARK = re.compile(rb"@(\d+)/(\d+)@")
SYNC, STEP1, STEP2, UPDATE = 0, 0, 1, 2
now = time.perf_counter


def percentiles(values) -> dict:
    if not values:
        return {"p50": 0.0, "p99": 0.0, "max": 0.0, "samples": 0}
    ordered = sorted(values)
    n = len(ordered)
    return {"p50": ordered[min(n - 1, int(n * 0.5))] * 1e3, "p99": ordered[min(n - 1, int(n * 0.99))] * 1e3,
            "max": ordered[-1] * 1e3, "samples": n}


class Proc:
    """The server process, read from /proc."""

    def __init__(self, pid: int):
        self.pid = pid
        self.tick = os.sysconf("SC_CLK_TCK")

    def cpu_seconds(self) -> float:
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / self.tick  # utime, stime (fields 14 and 15)

    def rss_kib(self) -> int:
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Run:
    def __init__(self, args):
        self.args = args
        self.finishing = False
        self.writers = args.writers
        self.due = [array.array("d") for _ in range(args.writers)]  # due[w][seq]: when it was due
        self.latencies = array.array("d")
        self.deliveries = 0
        self.echoes = 0
        self.joined = 0
        self.failed = 0
        self.lag = array.array("d")  # send time - due time, paced runs
        self.clients: list[Client] = []


class Client(asyncio.Protocol):
    """One Yjs client: the WebSocket opening handshake, the sync handshake, then updates in and
    (writers) out."""

    def __init__(self, run: Run, index: int, uri, keeps_doc: bool):
        self.run = run
        self.index = index
        self.writer = index if index < run.writers else -1
        self.request = ClientProtocol(uri).connect()  # no extensions offered: nothing is compressed
        self.accept = accept_key(self.request.headers["Sec-WebSocket-Key"]).encode()
        self.open = False
        self.buffer = b""
        self.transport = None
        self.connect_start = 0.0
        self.joined_at = None
        self.closed = False
        self.problems: list[str] = []
        self.received = [bytearray() for _ in range(run.writers)]  # times (writer, seq) arrived
        self.last_seq = [-1] * run.writers
        self.reordered = 0
        self.doc = None
        self.map = None
        self.seq = 0
        self.rng = random.Random(index)
        self.writable = asyncio.Event()
        self.writable.set()
        self._outgoing = None
        self._local = False
        self.marks = 0 if index == run.args.clients - 1 else None  # updates without a value string
        if keeps_doc or self.writer >= 0:
            # Writer w's Yjs client id is w + 1, so an update's (client, clock) is (writer + 1, seq).
            self.doc = Doc(client_id=self.writer + 1) if self.writer >= 0 else Doc()
            self.map = self.doc.get("people", type=Map)
        if self.writer >= 0:
            self.doc.observe(self._on_transaction)

    # asyncio.Protocol

    def connection_made(self, transport):
        self.transport = transport
        transport.write(self.request.serialize())

    def data_received(self, data: bytes):
        at = now()
        if self.buffer:
            data = self.buffer + data
            self.buffer = b""
        if not self.open:
            end = data.find(b"\r\n\r\n")
            if end < 0:
                self.buffer = data
                return
            head = data[:end]
            if not head.startswith(b"HTTP/1.1 101") or self.accept not in head:
                self.problems.append(f"handshake failed: {head[:200]!r}")
                self.transport.close()
                return
            self.open = True
            self.start_sync()
            data = data[end + 4:]
        # Server frames: unmasked, and pycrdt-websocket / websockets never fragment a message.
        i, n = 0, len(data)
        while n - i >= 2:
            b0, length = data[i], data[i + 1] & 0x7F
            h = 2
            if length == 126:
                if n - i < 4:
                    break
                length, h = int.from_bytes(data[i + 2:i + 4], "big"), 4
            elif length == 127:
                if n - i < 10:
                    break
                length, h = int.from_bytes(data[i + 2:i + 10], "big"), 10
            if n - i < h + length:
                break
            payload = data[i + h:i + h + length]
            i += h + length
            opcode = b0 & 0x0F
            if opcode == 2 and b0 & 0x80:
                self._message(payload, at)
            elif opcode == 9:  # ping
                self._write(Frame(Opcode.PONG, payload))
            elif opcode == 8:  # close
                if not self.run.finishing:
                    self.problems.append(f"closed by the server: {payload[:2].hex()} {payload[2:]!r}")
                self._write(Frame(Opcode.CLOSE, payload[:2]))
                self.transport.close()
                return
            elif opcode != 10:
                self.problems.append(f"unexpected frame: opcode {opcode}, fin {b0 >> 7}")
        if i < n:
            self.buffer = data[i:]

    def connection_lost(self, exc):
        self.closed = True
        if self.joined_at is None:
            self.run.failed += 1
        elif not self.run.finishing:
            self.problems.append(f"connection lost: {exc or 'closed by the server'}")

    def pause_writing(self):
        self.writable.clear()

    def resume_writing(self):
        self.writable.set()

    # Messages

    def _message(self, data: bytes, at: float):
        if data[0] != SYNC:
            return  # awareness
        kind = data[1]
        if kind == UPDATE:
            # The update after its length; then its header: clients, structs of the first, its id, clock.
            off = 2
            while data[off] & 0x80:
                off += 1
            off += 1
            update = data[off:]
            fields, pos = [], 0
            while len(fields) < 4 and pos < len(update):
                value = shift = 0
                while True:
                    byte = update[pos]
                    pos += 1
                    value |= (byte & 0x7F) << shift
                    if byte < 0x80:
                        break
                    shift += 7
                fields.append(value)
                if fields[0] != 1:
                    break  # no structs (a deletion only), or several clients' structs
            if self.marks is not None and MARK.search(update) is None:
                self.marks += 1
            if len(fields) == 4 and fields[1] == 1:
                client, clock = fields[2], fields[3]
                self._received(client - 1, clock, at)
                if self.doc is not None:
                    self.doc.apply_update(update)
            elif self.doc is not None:
                # Several sets in one update (not seen from pycrdt-websocket, which sends one update per
                # transaction): what the Doc newly has, by its state vector.
                before = state_vector(self.doc.get_state())
                self.doc.apply_update(update)
                for c, end in state_vector(self.doc.get_state()).items():
                    for k in range(before.get(c, 0), end):
                        self._received(c - 1, k, at)
            elif fields and fields[0] != 0:
                self.problems.append(f"an update with several sets in it, header {fields} (use --verifiers -1)")
        elif kind == STEP1:
            # The server's state; answer with what it lacks (a fresh client: nothing).
            self.send(handle_sync_message(data[1:], self.doc if self.doc is not None else EMPTY_DOC))
        elif kind == STEP2:
            if self.doc is not None:
                handle_sync_message(data[1:], self.doc)
            if self.joined_at is None:
                self.joined_at = at
                self.run.joined += 1

    def _received(self, w: int, s: int, at: float):
        """Writer w's set number s (its Doc's clock) arrived."""
        run = self.run
        if w == self.writer:
            run.echoes += 1
            return
        if not 0 <= w < run.writers or s >= len(run.due[w]):
            self.problems.append(f"an update from client {w + 1} clock {s} that no writer made")
            return
        seen = self.received[w]
        if s >= len(seen):
            seen.extend(bytes(s - len(seen) + 4096))
        if seen[s]:
            seen[s] = 2
        else:
            seen[s] = 1
            run.deliveries += 1
            run.latencies.append(at - run.due[w][s])
        if s != self.last_seq[w] + 1:
            self.reordered += 1
        if s > self.last_seq[w]:
            self.last_seq[w] = s

    def _write(self, frame: Frame):
        if not self.transport.is_closing():
            self.transport.write(frame.serialize(mask=True))

    def send(self, message: bytes):
        self._write(Frame(Opcode.BINARY, message))

    # The server sends its sync step 1 as soon as we are in; we answer it (above) and send ours.

    def start_sync(self):
        self.send(create_sync_message(self.doc if self.doc is not None else EMPTY_DOC))

    # Writing

    def _on_transaction(self, event):
        if self._local:
            self._outgoing = event.update

    def act(self, due: float):
        w, s = self.writer, self.seq
        self.seq += 1
        self.run.due[w].append(due)
        tag = self.rng.randrange(PEOPLE) + 1
        self._local = True
        self.map[f"hairColor:{tag}"] = f"{COLOURS[self.rng.randrange(len(COLOURS))]}@{w}/{s}@"
        self._local = False
        if not self._outgoing.startswith(bytes([1, 1, w + 1]) + write_var_uint(s)):
            self.problems.append(f"set {s} made an update that is not one struct at clock {s}")
        self.send(create_update_message(self._outgoing))


def state_vector(encoded: bytes) -> dict:
    """A Yjs state vector (varuint count, then client / clock pairs) as a dict."""
    values, value, shift = [], 0, 0
    for byte in encoded:
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            values.append(value)
            value = shift = 0
    return dict(zip(values[1::2], values[2::2]))


EMPTY_DOC = Doc()


async def connect(run: Run, client: Client, host: str, port: int):
    loop = asyncio.get_running_loop()
    client.connect_start = now()
    try:
        await loop.create_connection(lambda: client, host, port)
    except OSError as error:
        client.problems.append(f"connect failed: {error}")
        run.failed += 1
        return
    # The rest (the opening handshake's response, both sync steps) happens in data_received.


async def wait_until(condition, timeout: float, idle: float | None = None, progress=None) -> bool:
    """Polls every 2 ms; gives up after `timeout`, or after `idle` seconds without `progress()` moving."""
    start = now()
    last, last_change = (progress() if progress else None), start
    while not condition():
        t = now()
        if t - start > timeout:
            return False
        if progress is not None:
            value = progress()
            if value != last:
                last, last_change = value, t
            elif idle is not None and t - last_change > idle:
                return False
        await asyncio.sleep(0.002)
    return True


async def main(args) -> int:
    parts = urlsplit(args.url)
    host, port = parts.hostname, parts.port or 80
    room = args.room or f"bench-{os.getpid()}-{int(time.time())}"
    uri = parse_uri(f"ws://{host}:{port}/{room}")
    run = Run(args)
    server = Proc(args.server_pid) if args.server_pid else None
    rss_before = server.rss_kib() if server else None
    verifiers = args.clients if args.verifiers < 0 else args.verifiers
    keeps = set(range(args.writers, min(args.clients, args.writers + verifiers)))
    run.clients = [Client(run, i, uri, i in keeps) for i in range(args.clients)]

    # Join, paced so the listen backlog is not overrun.
    join_start = now()
    tasks = []
    for i, client in enumerate(run.clients):
        if args.connect_rate > 0:
            due = join_start + i / args.connect_rate
            if due > now():
                await asyncio.sleep(due - now())
        tasks.append(asyncio.create_task(connect(run, client, host, port)))
    await asyncio.gather(*tasks)
    ok = await wait_until(lambda: run.joined + run.failed >= args.clients, 60 + args.clients / 200)
    join_seconds = now() - join_start
    if not ok or run.failed:
        hung = [c.index for c in run.clients if c.joined_at is None]
        print(f"pycrdt_load: {len(hung)} of {args.clients} clients did not finish the sync handshake "
              f"within {join_seconds:.1f} s ({run.failed} failed); first: {hung[:10]}", file=sys.stderr)
        for c in run.clients[:3]:
            if c.problems:
                print(f"  client {c.index}: {c.problems[:3]}", file=sys.stderr)
        return 1
    rss_joined = server.rss_kib() if server else None

    # Load.
    writers = run.clients[: args.writers]
    cpu_before = server.cpu_seconds() if server else None
    own_before = own_cpu_seconds()
    start = now()
    end = start + args.seconds
    if writers and args.rate > 0:
        interval = 1.0 / (args.rate * len(writers))
        event = 0
        while True:
            due = start + event * interval
            if due >= end:
                break
            t = now()
            if due > t:
                await asyncio.sleep(due - t)
                t = now()
            run.lag.append(t - due)
            writers[event % len(writers)].act(due)
            event += 1
    elif writers:
        async def flat_out(writer: Client):
            while (t := now()) < end:
                writer.act(t)
                if not writer.writable.is_set():
                    await writer.writable.wait()
                else:
                    await asyncio.sleep(0)
        await asyncio.gather(*(flat_out(w) for w in writers))
    else:
        await asyncio.sleep(args.seconds)
    sent = sum(len(d) for d in run.due)
    expected = sent * (args.clients - 1)

    # Drain: every other client has every update (or nothing has arrived for 30 s).
    drained = await wait_until(lambda: run.deliveries >= expected, 600, idle=30,
                               progress=lambda: run.deliveries)
    elapsed = now() - start
    cpu = server.cpu_seconds() - cpu_before if server else None
    own_cpu = own_cpu_seconds() - own_before
    rss_end = server.rss_kib() if server else None

    # Checks: exactly once, and every Doc equal to a fresh joiner's.
    problems: list[str] = []
    if not drained:
        problems.append(f"{expected - run.deliveries} of {expected} deliveries missing after the drain")
    for c in run.clients:
        for w in range(args.writers):
            if w == c.writer:
                continue
            seen = c.received[w]
            count = len(run.due[w])
            missing = seen[:count].count(0) + max(0, count - len(seen))
            if missing:
                c.problems.append(f"missed {missing} of writer {w}'s {count} updates")
            if seen.count(2):
                c.problems.append(f"got some of writer {w}'s updates more than once")
        problems += [f"client {c.index}: {p}" for p in c.problems[:3]]
    check = Client(run, args.clients, uri, True)
    await connect(run, check, host, port)
    await wait_until(lambda: check.joined_at is not None, 30)
    converged = check.joined_at is not None
    compared = 0
    if not converged:
        problems.append("the check client did not finish the sync handshake")
    else:
        truth = check.map.to_py()
        if len(truth) == 0 and sent:
            problems.append("the room's map is empty")
        for c in run.clients:
            if c.map is None:
                continue
            compared += 1
            if c.map.to_py() != truth:
                converged = False
                if len(problems) < 50:
                    problems.append(f"client {c.index}'s map differs from the room's")
    run.finishing = True
    for c in run.clients + [check]:
        if c.transport is not None:
            c.transport.close()
    await asyncio.sleep(0.05)

    join_times = [c.joined_at - c.connect_start for c in run.clients if c.joined_at is not None]
    out = {
        "label": args.label or "pycrdt", "peer": "pycrdt-websocket", "clients": args.clients, "rooms": 1,
        "writers": args.writers, "rate": args.rate, "seconds": args.seconds, "mix": "set",
        "elapsedSeconds": elapsed, "requests": sent, "revisions": sent, "deliveries": run.deliveries,
        "deliveriesPerSecond": run.deliveries / elapsed,
        "latencyMillis": percentiles(run.latencies),
        "joinSeconds": join_seconds,
        "connectMillis": {k: v for k, v in percentiles(join_times).items() if k != "samples"},
        "problems": problems, "converged": converged, "comparedClients": compared,
        "clientCPUSeconds": own_cpu, "echoes": run.echoes,
        "reordered": sum(c.reordered for c in run.clients),
        "updatesWithoutValue": run.clients[-1].marks,
        "pacingLagMillis": {k: v for k, v in percentiles(run.lag).items() if k != "samples"},
    }
    if cpu is not None:
        out["serverCPUSeconds"] = cpu
        out["serverCPUMicrosPerDelivery"] = cpu * 1e6 / run.deliveries if run.deliveries else 0.0
        out["deliveriesPerServerCPUSecond"] = run.deliveries / cpu if cpu > 0 else 0.0
    if server:
        out["serverRSSKiB"] = {"before": rss_before, "joined": rss_joined, "end": rss_end}
        out["serverRSSKiBPerConnection"] = (rss_joined - rss_before) / args.clients
    print(table(out))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2, sort_keys=True)
    return 0 if not problems and converged else 1


def table(r: dict) -> str:
    def ms(d):
        return f"{d['p50']:.2f} / {d['p99']:.2f} / {d['max']:.2f} ms"
    rows = [
        ("run", f"{r['label']}: {r['clients']} clients, 1 room, {r['writers']} writers at "
                f"{'%g/s' % r['rate'] if r['rate'] else 'full speed'} each, "
                f"{r['seconds']:g} s, Yjs map sets"),
        ("updates", f"{r['requests']}"),
        ("deliveries", f"{r['deliveries']} ({r['deliveriesPerSecond']:.0f} /s)"),
        ("latency p50 / p99 / max", ms(r["latencyMillis"])),
        ("join", f"{r['joinSeconds']:.2f} s for all; each {ms(r['connectMillis'])}"),
    ]
    if "serverCPUSeconds" in r:
        rows.append(("server CPU", f"{r['serverCPUSeconds']:.3f} s = {r['serverCPUMicrosPerDelivery']:.2f} µs / delivery "
                                   f"({r['deliveriesPerServerCPUSecond']:.0f} deliveries per CPU-second)"))
        rss = r["serverRSSKiB"]
        rows.append(("server RSS", f"{rss['before']} KiB before, {rss['joined']} joined, {rss['end']} end; "
                                   f"{r['serverRSSKiBPerConnection']:.1f} KiB per connection"))
    rows.append(("client CPU", f"{r['clientCPUSeconds']:.3f} s (this process; pacing lag p50 / p99 "
                               f"{r['pacingLagMillis']['p50']:.2f} / {r['pacingLagMillis']['p99']:.2f} ms)"))
    if not r["problems"] and r["converged"]:
        rows.append(("checks", f"every client got every update once ({r['reordered']} out of order); "
                               f"{r['comparedClients']} docs equal the room's"))
    else:
        rows.append(("checks", "FAILED: " + "; ".join(r["problems"][:5]) + ("" if r["converged"] else "; docs differ")))
    return "\n".join(f"{k:<26}{v}" for k, v in rows)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description="Yjs load generator for pycrdt-websocket (issue 8)")
    p.add_argument("--url", default="ws://127.0.0.1:1234", help="the server, ws://HOST:PORT")
    p.add_argument("--clients", type=int, default=100, help="clients in all, in one room")
    p.add_argument("--writers", type=int, default=1, help="clients that write (the first ones)")
    p.add_argument("--rate", type=float, default=10.0,
                   help="updates per second per writer; 0: the next as soon as the previous was sent")
    p.add_argument("--seconds", type=float, default=10.0, help="seconds of load")
    p.add_argument("--verifiers", type=int, default=-1,
                   help="receivers that apply every update to a Doc (-1: all); the others only check (writer, seq)")
    p.add_argument("--connect-rate", type=float, default=2000.0, help="new connections per second (0: all at once)")
    p.add_argument("--room", help="room name (default: a fresh one)")
    p.add_argument("--server-pid", type=int, help="PID of the server, for its CPU time and memory (/proc)")
    p.add_argument("--json", help="write the result as JSON to this file")
    p.add_argument("--label", help="a name for the run in the output")
    a = p.parse_args()
    if not (1 <= a.clients and 0 <= a.writers <= a.clients and a.rate >= 0 and a.seconds > 0):
        p.error("need clients >= 1, 0 <= writers <= clients, rate >= 0, seconds > 0")
    sys.exit(asyncio.run(main(a)))

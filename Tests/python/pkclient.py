"""An independent PeopleKeeper protocol-1 client for the hub's integration tests.

Written from shared/spec/PROTOCOL.md and SEMANTICS.md only (not from the hub's code). It keeps a local
copy of the room's model, applying `welcome.people`, `ack.ops`, `ops.ops`, `undone.ops` and `redone.ops`
as they arrive (ops as applied carry resolved indices: they are applied as they are), and checks that
revisions arrive on each connection one by one, in order.

Only the standard library and `websockets` (sync client) are used.
"""

from __future__ import annotations

import collections
import copy
import json
import os
import socket
import struct
import time
from typing import Any, Iterable

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect as ws_connect

DEFAULT_TIMEOUT = 5.0
QUIET = 0.2  # how long "nothing more arrives" is watched for

# Vocabularies (v1) in vocabulary order.
HAIR_COLORS = ["black", "brown", "blonde", "red", "gray", "white"]
HAIR_LENGTHS = ["bald", "short", "medium", "long"]
EYE_COLORS = ["black", "brown", "blue", "green", "gray", "hazel"]
FACIAL_HAIR = ["mustache", "beard", "goatee", "sideburns", "stubble"]
TOPICS = ["sports", "music", "movies", "books", "travel", "food", "art", "weather", "politics", "technology"]
SET_FIELDS = ("facialHair", "likes", "dislikes")


class ProtocolViolation(AssertionError):
    """The hub sent something the contract rules out (a gap in revisions, a malformed reply, ...)."""


# ----------------------------------------------------------------------------------------------------
# The model, applied locally
# ----------------------------------------------------------------------------------------------------

def person(tag: int, name: str = "Kim", **fields: Any) -> dict:
    """A complete wire person (every field is required on insert)."""
    p = {"tag": tag, "name": name, "hairColor": "black", "hairLength": "short", "eyeColor": "brown",
         "glasses": False, "facialHair": [], "likes": [], "dislikes": []}
    p.update(fields)
    return p


def _index_of(people: list, tag: int) -> int:
    for i, p in enumerate(people):
        if p["tag"] == tag:
            return i
    raise ProtocolViolation(f"an op as applied names tag {tag}, which is not in the local model "
                            f"{[p['tag'] for p in people]}")


def apply_text(name: str, edits: list) -> str:
    """retain / insert / delete over Unicode scalar values; what the edits do not reach is retained."""
    out, pos = [], 0
    for e in edits:
        if "retain" in e:
            n = e["retain"]
            if pos + n > len(name):
                raise ProtocolViolation(f"text retain past the end: {edits!r} on {name!r}")
            out.append(name[pos:pos + n])
            pos += n
        elif "insert" in e:
            out.append(e["insert"])
        elif "delete" in e:
            n = e["delete"]
            if pos + n > len(name):
                raise ProtocolViolation(f"text delete past the end: {edits!r} on {name!r}")
            pos += n
        else:
            raise ProtocolViolation(f"unknown text edit {e!r}")
    out.append(name[pos:])
    return "".join(out)


def apply_op(people: list, op: dict) -> None:
    kind = op["op"]
    if kind == "insert":
        at = max(0, min(op["at"], len(people)))
        people.insert(at, copy.deepcopy(op["person"]))
    elif kind == "remove":
        del people[_index_of(people, op["tag"])]
    elif kind == "move":
        i = _index_of(people, op["tag"])
        p = people.pop(i)
        to = max(0, min(op["to"], len(people)))  # clamp to 0...count-1 of the list with the person
        people.insert(to, p)
    elif kind == "set":
        people[_index_of(people, op["tag"])][op["field"]] = op["value"]
    elif kind == "facialHair":
        p = people[_index_of(people, op["tag"])]
        s = set(p["facialHair"])
        (s.add if op["present"] else s.discard)(op["style"])
        p["facialHair"] = [x for x in FACIAL_HAIR if x in s]
    elif kind == "preference":
        p = people[_index_of(people, op["tag"])]
        likes, dislikes = set(p["likes"]), set(p["dislikes"])
        likes.discard(op["topic"])
        dislikes.discard(op["topic"])
        if op["value"] == "like":
            likes.add(op["topic"])
        elif op["value"] == "dislike":
            dislikes.add(op["topic"])
        p["likes"] = [t for t in TOPICS if t in likes]
        p["dislikes"] = [t for t in TOPICS if t in dislikes]
    elif kind == "text":
        p = people[_index_of(people, op["tag"])]
        p["name"] = apply_text(p["name"], op["edits"])
    else:
        raise ProtocolViolation(f"unknown op as applied: {op!r}")


def apply_ops(people: list, ops: Iterable[dict]) -> list:
    for op in ops:
        apply_op(people, op)
    return people


def norm(people: list) -> list:
    """A comparable form of a people list: sets compared as sets (the hub sends them in vocabulary
    order, but the contract says to compare them as sets)."""
    out = []
    for p in people:
        q = dict(p)
        for f in SET_FIELDS:
            q[f] = sorted(q.get(f, []))
        out.append(q)
    return out


def by_tag(people: list, tag: int) -> dict:
    return people[_index_of(people, tag)]


def tags(people: list) -> list:
    return [p["tag"] for p in people]


def norm_users(users: list) -> list:
    """Presence users as a sorted multiset (one entry per connection, order not specified)."""
    return sorted((json.dumps(u, sort_keys=True) for u in users))


# ----------------------------------------------------------------------------------------------------
# The connection
# ----------------------------------------------------------------------------------------------------

def upgrade_request(port: int, path: str, origin: str | None = None) -> bytes:
    """The bytes of a WebSocket upgrade request for `path` (with an `Origin` header if given)."""
    import base64
    key = base64.b64encode(os.urandom(16)).decode()
    return (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            + (f"Origin: {origin}\r\n" if origin else "") + "\r\n").encode()


def upgrade_answer(port: int, path: str, origin: str | None = None) -> tuple[int, str]:
    """A WebSocket upgrade on a plain socket: the status of the hub's answer (0: none) and, for a
    refusal, its body (read to the end: a refused upgrade's socket is closed after the answer)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(upgrade_request(port, path, origin))
        answer = b""
        while not answer.startswith(b"HTTP/1.1 101"):
            chunk = s.recv(4096)
            if not chunk:
                break
            answer += chunk
    text = answer.decode("utf-8", "replace")
    status = int(text.split(" ", 2)[1]) if text.startswith("HTTP/") else 0
    return status, text.split("\r\n\r\n", 1)[1] if "\r\n\r\n" in text else ""


def raw_upgrade(port: int, path: str, *, rcvbuf: int | None = None) -> socket.socket:
    """A WebSocket handshake on a plain socket (for frames no client library will send); returns the
    socket after the 101. `rcvbuf` shrinks its receive buffer first (a reader that falls behind)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    s.sendall(upgrade_request(port, path))
    response = b""
    while b"\r\n\r\n" not in response:
        response += s.recv(1)
    assert b" 101 " in response.split(b"\r\n")[0], response
    return s


class TLSWebSocket:
    """A `wss://` connection read and written on the caller's thread only (websockets' sans-I/O
    protocol over an `ssl` socket), with text messages in and out.

    Not websockets' sync client: that one reads on a thread of its own while the caller writes, so one
    OpenSSL connection is used by two threads at once, which OpenSSL does not allow. Over TLS 1.3 (the
    session tickets a server sends after its handshake are read as the caller writes its upgrade
    request), under load, 15 of 12,000 connections never sent the request (the socket's counters
    showed the client's TLS handshake written and nothing after it; the hub's lws log, the handshake
    done and no request read) and waited for an answer until their timeout; 12,000 handshakes of this
    client beside them had none."""

    def __init__(self, url: str, context, timeout: float = DEFAULT_TIMEOUT):
        from websockets.client import ClientProtocol
        from websockets.uri import parse_uri
        uri = parse_uri(url)
        self.timeout = timeout
        raw = socket.create_connection((uri.host, uri.port), timeout=timeout)
        self.sock = context.wrap_socket(raw, server_hostname=uri.host)
        self.protocol = ClientProtocol(uri)
        self._events: list = []
        self.protocol.send_request(self.protocol.connect())
        self._flush()
        response = self._next_event()
        if self.protocol.handshake_exc is not None:
            self.close()
            raise self.protocol.handshake_exc
        self.response = response

    def _flush(self) -> None:
        for data in self.protocol.data_to_send():
            if data:
                self.sock.sendall(data)

    def _next_event(self):
        """The protocol's next event, reading from the socket until there is one."""
        deadline = time.monotonic() + self.timeout
        while not self._events:
            self._events.extend(self.protocol.events_received())
            if self._events:
                break
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no message from the hub in time")
            self.sock.settimeout(left)
            data = self.sock.recv(65536)
            if data:
                self.protocol.receive_data(data)
                continue
            self.protocol.receive_eof()
            self._events.extend(self.protocol.events_received())
            if not self._events:
                raise ConnectionClosed(self.protocol.close_rcvd, self.protocol.close_sent)
        return self._events.pop(0)

    def send(self, text: str) -> None:
        self.protocol.send_text(text.encode())
        self._flush()

    def recv(self) -> str:
        """The next text message (control frames are answered by the protocol and skipped)."""
        from websockets.frames import Opcode
        while True:
            event = self._next_event()
            if getattr(event, "opcode", None) is Opcode.TEXT:
                return event.data.decode()
            if getattr(event, "opcode", None) is Opcode.CLOSE:
                raise ConnectionClosed(self.protocol.close_rcvd, self.protocol.close_sent)
            self._flush()  # a pong for a ping

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> "TLSWebSocket":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class HubClient:
    """One WebSocket connection to a room.

    Every received frame is parsed, processed (local model, revision, history, presence) and queued by
    type. `take(type)` pops the oldest unconsumed frame of that type, reading more as needed; an `error`
    frame that arrives while waiting for something else fails the wait at once.
    """

    def __init__(self, url: str, *, compression: str | None = "deflate", name: str = "", open_timeout=5.0):
        self.url = url
        self.name = name
        self.ws = ws_connect(url, compression=compression, max_size=None, open_timeout=open_timeout,
                             close_timeout=2, ping_interval=None, legacy=True)
        self.queues: dict[str, collections.deque] = collections.defaultdict(collections.deque)
        self.log: list[dict] = []        # every frame received, in order
        self.raw: list[str | bytes] = []  # the same, as received
        self.people: list | None = None
        self.rev: int | None = None
        self.session: str | None = None
        self.user: str | None = None
        self.welcome: dict | None = None
        self.history: dict | None = None
        self.presence: list | None = None
        self.tag_block: tuple[int, int] | None = None
        self.next_tag: int | None = None
        self.seq = 0
        self.ping_seq = 0
        self.closed_code: int | None = None
        self.sent: list[dict] = []      # submits sent through submit()
        self.replayed: list[dict] = []  # replies to resent seqs, for revisions already applied

    # -- plumbing --------------------------------------------------------------------------------------

    def __repr__(self):
        return f"<HubClient {self.name or self.user} {self.url}>"

    def send(self, obj: dict) -> None:
        self.ws.send(json.dumps(obj, ensure_ascii=False))

    def send_raw(self, data: str | bytes) -> None:
        self.ws.send(data)

    def close(self) -> None:
        try:
            self.ws.close()
        except Exception:
            pass

    def _read(self, timeout: float) -> dict:
        try:
            raw = self.ws.recv(timeout=timeout)
        except ConnectionClosed as e:
            self.closed_code = e.rcvd.code if e.rcvd else None
            raise
        self.raw.append(raw)
        if isinstance(raw, bytes):
            raise ProtocolViolation(f"{self}: the hub sent a binary frame: {raw[:80]!r}")
        try:
            msg = json.loads(raw)
        except ValueError:
            raise ProtocolViolation(f"{self}: the hub sent a frame that is not JSON: {raw[:200]!r}")
        if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
            raise ProtocolViolation(f"{self}: the hub sent a frame that is not a typed object: {raw[:200]!r}")
        self.log.append(msg)
        self._process(msg)
        self.queues[msg["type"]].append(msg)
        return msg

    def _new_rev(self, msg: dict) -> None:
        if self.rev is not None and msg["type"] != "ops" and msg["rev"] <= self.rev:
            # a reply replayed for a resent seq: that revision is already in the model
            self.replayed.append(msg)
            return
        if self.rev is not None and msg["rev"] != self.rev + 1:
            raise ProtocolViolation(f"{self}: revision {msg['rev']} arrived after {self.rev} "
                                    f"(revisions must reach each connection one by one, in order): {msg}")
        if self.people is not None:
            apply_ops(self.people, msg["ops"])
        self.rev = msg["rev"]

    def _process(self, msg: dict) -> None:
        t = msg["type"]
        if t == "welcome":
            self.welcome = msg
            self.session = msg["session"]
            self.user = msg["user"]
            if "people" in msg:
                self.people = copy.deepcopy(msg["people"])
                self.rev = msg["rev"]
            elif self.rev is None:
                raise ProtocolViolation(f"{self}: a welcome without people to a hello without since: {msg}")
            # else: a catch-up; the missed revisions follow as ops frames from `since` (self.rev) on
            self.history = msg["history"]
            self.presence = msg["presence"]
            self.tag_block = (msg["tags"]["from"], msg["tags"]["to"])
            self.next_tag = msg["tags"]["from"]
        elif t == "ack":
            if msg["ops"]:
                self._new_rev(msg)
            elif self.rev is not None and msg["rev"] != self.rev:
                raise ProtocolViolation(f"{self}: a no-change ack must be at the current revision "
                                        f"{self.rev}: {msg}")
        elif t == "ops":
            self._new_rev(msg)
        elif t in ("undone", "redone", "restored"):
            if "rev" in msg:
                self._new_rev(msg)
            elif msg["ops"]:
                raise ProtocolViolation(f"{self}: {t} without rev must have ops []: {msg}")
        elif t == "history":
            self.history = {k: v for k, v in msg.items() if k != "type"}
        elif t == "presence":
            self.presence = msg["users"]

    # -- waiting ---------------------------------------------------------------------------------------

    def take(self, mtype: str, timeout: float = DEFAULT_TIMEOUT, *, allow_error: bool = False) -> dict:
        """The oldest unconsumed frame of type `mtype` (reading more frames until one arrives)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.queues[mtype]:
                return self.queues[mtype].popleft()
            if mtype != "error" and not allow_error and self.queues["error"]:
                err = self.queues["error"].popleft()
                raise AssertionError(f"{self}: waiting for {mtype!r}, got an error: {err}")
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{self}: no {mtype!r} frame within {timeout}s; "
                                     f"last frames: {self.log[-6:]}")
            try:
                self._read(left)
            except TimeoutError:
                pass

    def take_error(self, timeout: float = DEFAULT_TIMEOUT) -> dict:
        err = self.take("error", timeout)
        assert isinstance(err.get("code"), str) and isinstance(err.get("message"), str), err
        return err

    def pump(self, quiet: float = QUIET) -> list[dict]:
        """Read until nothing arrives for `quiet` seconds; returns what arrived (also queued)."""
        got = []
        while True:
            try:
                got.append(self._read(quiet))
            except TimeoutError:
                return got

    def raw_of(self, msg: dict) -> str:
        """The frame text a parsed message came from."""
        for i, m in enumerate(self.log):
            if m is msg:
                return self.raw[i]
        raise KeyError(msg)

    def mark(self) -> int:
        """A position in the log of received frames, for expect_nothing(since=...)."""
        return len(self.log)

    def expect_nothing(self, *types: str, quiet: float = QUIET, since: int | None = None,
                       barrier: bool = False) -> None:
        """No frame of these types arrives (nor, with `since`, has arrived since that mark). With
        `barrier`, a ping round trip marks the end (frames on one connection arrive in order); else
        `quiet` seconds of silence."""
        start = self.mark() if since is None else since
        if barrier:
            assert self.is_open(), f"{self}: closed (code {self.closed_code})"
        else:
            self.pump(quiet)
        bad = [m for m in self.log[start:] if m["type"] in types]
        assert not bad, f"{self}: unexpected frame(s): {bad}"

    def discard(self, *types: str) -> None:
        for t in types:
            self.queues[t].clear()

    def expect_history(self, timeout: float = DEFAULT_TIMEOUT, **fields) -> dict:
        """Consume history frames until one has exactly these fields (missing optional labels included:
        pass undoLabel=None to require its absence)."""
        seen = []
        deadline = time.monotonic() + timeout
        while True:
            left = max(0.01, deadline - time.monotonic())
            try:
                h = self.take("history", left, allow_error=True)
            except AssertionError:
                raise AssertionError(f"{self}: no history frame with {fields} within {timeout}s; "
                                     f"history frames seen: {seen}")
            seen.append(h)
            if all(h.get(k) == v for k, v in fields.items()):
                return h

    def sync(self, rev: int, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Read until the local model has reached revision `rev`."""
        deadline = time.monotonic() + timeout
        while self.rev is None or self.rev < rev:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{self}: still at revision {self.rev}, waiting for {rev}; "
                                     f"last frames: {self.log[-6:]}")
            try:
                self._read(left)
            except TimeoutError:
                pass

    def wait_closed(self, timeout: float = DEFAULT_TIMEOUT) -> int | None:
        """Read until the hub closes the connection; returns the close code it sent (its reason is
        kept as `close_reason`)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{self}: still open after {timeout}s; last frames: {self.log[-6:]}")
            try:
                self._read(left)
            except TimeoutError:
                pass
            except ConnectionClosed as e:
                self.close_reason = e.rcvd.reason if e.rcvd else None
                return e.rcvd.code if e.rcvd else None

    def is_open(self) -> bool:
        """Ping round trip: True if a pong with our seq comes back."""
        self.ping_seq += 1000
        s = self.ping_seq
        try:
            self.send({"type": "ping", "seq": s})
            while True:
                pong = self.take("pong", allow_error=True)
                if pong.get("seq") == s:
                    return True
        except (ConnectionClosed, AssertionError):
            return False

    # -- requests --------------------------------------------------------------------------------------

    def hello(self, user: str, *, expect_welcome: bool = True, people: list | None = None, **extra) -> dict | None:
        """Send hello. With `since`, pass the `people` the client had at that revision (the hub may
        then leave `people` out and replay the missed revisions)."""
        msg = {"type": "hello", "protocol": 1, "user": user, "client": "pytest/1"}
        msg.update(extra)
        if "since" in extra:
            self.people = copy.deepcopy(people) if people is not None else None
            self.rev = extra["since"]
        self.send(msg)
        if not expect_welcome:
            return None
        w = self.take("welcome")
        assert w["user"] == user, w
        assert w["role"] in ("editor", "viewer"), w
        return w

    def new_tag(self) -> int:
        assert self.next_tag is not None and self.next_tag <= self.tag_block[1]
        t = self.next_tag
        self.next_tag += 1
        return t

    def submit(self, ops: list, *, base: int | None = None, label: str | None = None, seq: int | None = None,
               coalesce: str | None = None) -> int:
        if seq is None:
            self.seq += 1
            seq = self.seq
        else:
            self.seq = max(self.seq, seq)
        msg = {"type": "submit", "seq": seq, "base": self.rev if base is None else base, "ops": ops}
        if label is not None:
            msg["label"] = label
        if coalesce is not None:
            msg["coalesce"] = coalesce
        self.sent.append(msg)
        self.send(msg)
        return seq

    def edit(self, ops: list, **kw) -> dict:
        """submit, then the ack for it (checked: same seq)."""
        seq = self.submit(ops, **kw)
        ack = self.take("ack")
        assert ack["seq"] == seq, ack
        return ack

    def _undo_redo(self, kind: str, scope: int | None, seq: int | None) -> dict:
        if seq is None:
            self.seq += 1
            seq = self.seq
        msg = {"type": kind, "seq": seq}
        if scope is not None:
            msg["scope"] = scope
        self.send(msg)
        reply = self.take("undone" if kind == "undo" else "redone")
        assert reply["seq"] == seq, reply
        assert isinstance(reply["ops"], list) and isinstance(reply["skipped"], list), reply
        return reply

    def undo(self, scope: int | None = None, seq: int | None = None) -> dict:
        return self._undo_redo("undo", scope, seq)

    def redo(self, scope: int | None = None, seq: int | None = None) -> dict:
        return self._undo_redo("redo", scope, seq)

    def timeline(self, **request) -> dict:
        """`log` (HISTORY §4: `before`, `limit`, `tag` as keywords), then its answer: a page of the room's
        timeline as the hub gives this user."""
        self.send({"type": "log", **request})
        return self.take("log")

    def blame(self, tag: int) -> dict:
        """`blame` (HISTORY §5), then its answer: who last wrote each part of the person `tag`."""
        self.send({"type": "blame", "tag": tag})
        return self.take("blame")

    # -- raw frames ------------------------------------------------------------------------------------

    def send_frame_slowly(self, payload: bytes, *, opcode: int = 0x1, chunk: int = 128 * 1024,
                          delay: float = 0.05, between=None) -> None:
        """Write ONE masked WebSocket frame straight to the socket, a chunk at a time, calling
        `between()` after each chunk (the library must not send on this connection meanwhile)."""
        n = len(payload)
        header = bytes([0x80 | opcode])
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)
        full = (mask * (n // 4 + 1))[:n]
        masked = (int.from_bytes(payload, "big") ^ int.from_bytes(full, "big")).to_bytes(n, "big")
        sock: socket.socket = self.ws.socket
        sock.sendall(header + mask)
        for i in range(0, n, chunk):
            sock.sendall(masked[i:i + chunk])
            if between is not None:
                between()
            if delay:
                time.sleep(delay)

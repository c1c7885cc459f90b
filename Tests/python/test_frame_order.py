"""What the hub writes, in what order, around WebSocket control frames (RFC 6455), on raw sockets.

The hub writes a connection's messages as soon as its turn of the event loop ends, except where
libwebsockets must go first: a ping it answers is owed its pong before what the frames around it led
to, and after the peer's close frame nothing more is written. Autobahn's cases 5.6, 5.19 and 7.1.4
(`make conformance`) check the same against an echo server; these check the hub itself, in `make test`.
"""
from __future__ import annotations

import json
import socket
import struct
import time

from pkclient import raw_upgrade
from test_hostile import ws_frame


def read_frame(s: socket.socket) -> tuple[int, bytes]:
    """One server frame (unmasked, unfragmented as the hub writes them): (opcode, payload)."""
    def exactly(n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = s.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        return data
    b0, b1 = exactly(2)
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack("!H", exactly(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", exactly(8))[0]
    return b0 & 0x0F, exactly(n)


def frames_until(s: socket.socket, done, timeout: float = 5.0) -> list[tuple[int, bytes]]:
    """Frames read until `done(frames)` holds, or the peer closes the socket, or `timeout`."""
    frames: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + timeout
    s.settimeout(0.2)
    while time.monotonic() < deadline and not done(frames):
        try:
            frames.append(read_frame(s))
        except socket.timeout:
            continue
        except (ConnectionError, OSError):
            break
    return frames


def text(obj: dict) -> bytes:
    return json.dumps(obj).encode()


def messages(frames) -> list[dict]:
    return [json.loads(p) for op, p in frames if op == 0x1]


def joined(hub, room: str, user: str) -> socket.socket:
    s = raw_upgrade(hub.port, f"/v1/rooms/{room}")
    s.sendall(ws_frame(text({"type": "hello", "protocol": 1, "user": user})))
    frames = frames_until(s, lambda f: any(m.get("type") == "welcome" for m in messages(f)))
    assert any(m.get("type") == "welcome" for m in messages(frames)), frames
    return s


def test_a_ping_between_the_fragments_of_a_message_is_answered_before_the_message(hub, room):
    """A `ping` message in two fragments with a ping control frame between them, in one write: the pong
    control frame comes before the `pong` message the fragments make (Autobahn 5.6)."""
    s = joined(hub, room, "ann")
    body = text({"type": "ping", "seq": 7})
    s.sendall(ws_frame(body[:5], fin=False) + ws_frame(b"are you there", opcode=0x9)
              + ws_frame(body[5:], opcode=0x0))
    frames = frames_until(s, lambda f: any(m.get("type") == "pong" for m in messages(f)))
    order = [("pong frame", p) if op == 0xA else ("message", json.loads(p)["type"]) for op, p in frames
             if op == 0xA or (op == 0x1 and json.loads(p)["type"] == "pong")]
    assert order == [("pong frame", b"are you there"), ("message", "pong")], frames
    s.close()


def test_nothing_is_written_after_the_peer_s_close_frame(hub, room):
    """A close frame and then a `ping` message in one write: the hub answers the close and nothing else;
    the message after the close is not answered (Autobahn 7.1.4)."""
    s = joined(hub, room, "ann")
    s.sendall(ws_frame(struct.pack("!H", 1000), opcode=0x8) + ws_frame(text({"type": "ping", "seq": 8})))
    frames = frames_until(s, lambda f: any(op == 0x8 for op, _ in f))
    assert any(op == 0x8 for op, _ in frames), frames
    time.sleep(0.3)
    frames += frames_until(s, lambda f: False, timeout=0.5)
    assert not any(m.get("type") == "pong" for m in messages(frames)), frames
    s.close()

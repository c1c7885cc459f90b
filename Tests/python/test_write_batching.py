"""Messages that wait in a connection's send queue go to the socket framed together, several per write
(issue 8). What a client receives must stay a clean sequence of RFC 6455 frames: every frame final,
unmasked, no reserved bits, text, each one JSON message, in order, none lost or repeated, also when the
kernel takes only part of a write (a reader with a tiny receive buffer that stops reading) and lws keeps
the rest."""
import json
import socket
import time

from pkclient import HAIR_COLORS, apply_ops, norm, person, raw_upgrade


def _read_frames(s: socket.socket, until_rev: int, timeout: float = 20.0) -> list[dict]:
    """Reads server frames from a raw socket, checking each header, until an `ops` frame with
    `until_rev` arrives; returns the decoded messages in order."""
    buffer = b""
    messages: list[dict] = []
    deadline = time.monotonic() + timeout
    s.settimeout(0.5)
    while True:
        assert time.monotonic() < deadline, f"no ops with rev {until_rev}; got {len(messages)} messages"
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            continue
        assert chunk, "the hub closed the connection"
        buffer += chunk
        while len(buffer) >= 2:
            first, second = buffer[0], buffer[1]
            assert first & 0x80, "a frame that is not final"
            assert first & 0x70 == 0, "reserved bits set"
            assert second & 0x80 == 0, "a server frame must not be masked"
            length, offset = second & 0x7F, 2
            if length == 126:
                if len(buffer) < 4:
                    break
                length, offset = int.from_bytes(buffer[2:4], "big"), 4
                assert length >= 126, "a 2-byte length where 7 bits would do"
            elif length == 127:
                if len(buffer) < 10:
                    break
                length, offset = int.from_bytes(buffer[2:10], "big"), 10
            if len(buffer) < offset + length:
                break
            opcode = first & 0x0F
            payload, buffer = buffer[offset:offset + length], buffer[offset + length:]
            if opcode == 0x9:  # a ping from the hub
                continue
            assert opcode == 0x1, f"opcode {opcode}"
            message = json.loads(payload.decode("utf-8"))
            messages.append(message)
            if message.get("type") == "ops" and message.get("rev") == until_rev:
                return messages


def _hello(s: socket.socket, user: str) -> None:
    import os
    hello = json.dumps({"type": "hello", "protocol": 1, "user": user}).encode()
    mask = os.urandom(4)
    assert len(hello) < 126
    s.sendall(bytes([0x81, 0x80 | len(hello)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(hello)))


def test_a_reader_that_falls_behind_gets_every_frame_whole_and_in_order(hub_factory, room):
    """A reader with a 4 KiB receive buffer stops reading while a teammate makes 300 edits of mixed
    sizes (frames from under 126 bytes to about 50 KB, so batched writes, writes the kernel takes in
    part, and messages too big to batch all happen); then it reads everything: the frames are clean,
    the revisions run without a gap, and applying them to its welcome gives the writer's model."""
    h = hub_factory({"limits": {"sendQueueMessages": 1000, "sendQueueBytes": 8 * 1024 * 1024,
                                "opsPerSecond": 100000}})
    writer = h.join(room, "W")
    tag = writer.new_tag()
    writer.edit([{"op": "insert", "at": 0, "person": person(tag, "Kim")}])
    sloth = raw_upgrade(h.port, f"/v1/rooms/{room}", rcvbuf=4096)
    _hello(sloth, "sloth")
    time.sleep(0.3)  # its welcome is on the way; from now on it does not read
    last = None
    for i in range(300):
        if i % 50 == 49:
            # 200 sets in one batch: an ops frame of about 50 KB.
            ops = [{"op": "set", "tag": tag, "field": "name", "value": "y" * 190 + f"{i}-{k}"} for k in range(200)]
        elif i % 10 == 9:
            ops = [{"op": "set", "tag": tag, "field": "name", "value": "z" * 150 + f"{i}-{k}"} for k in range(20)]
        else:
            ops = [{"op": "set", "tag": tag, "field": "hairColor", "value": HAIR_COLORS[i % len(HAIR_COLORS)]}]
        last = writer.edit(ops)
    messages = _read_frames(sloth, last["rev"])
    sloth.close()
    welcome = next(m for m in messages if m["type"] == "welcome")
    people = [dict(p) for p in welcome["people"]]
    revs = [m["rev"] for m in messages if m["type"] == "ops"]
    assert revs == list(range(welcome["rev"] + 1, last["rev"] + 1)), "revisions lost, repeated or out of order"
    for message in messages:
        if message["type"] == "ops":
            people = apply_ops(people, message["ops"])
    writer.sync(last["rev"])
    assert norm(people) == norm(writer.people)

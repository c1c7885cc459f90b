"""too-large: a frame over limits.maxMessageBytes (default 1 MiB) is refused, the sender's connection
stays usable, and the other users keep working while it arrives and after."""

from __future__ import annotations

import json
import os
import threading
import time

from pkclient import by_tag

MIB = 1024 * 1024


def set_op(tag, field, value):
    return {"op": "set", "tag": tag, "field": field, "value": value}


def big_submit(size: int, seq: int = 1, compressible: bool = False) -> bytes:
    """A well-formed submit of exactly `size` bytes, padded with a field the hub ignores (`pad`; a label
    takes at most 200 bytes since session 23)."""
    head = {"type": "submit", "seq": seq, "base": 0, "ops": [set_op(1, "name", "Huge")], "pad": ""}
    empty = len(json.dumps(head).encode())
    pad = size - empty
    if compressible:
        filler = "a" * pad
    else:
        filler = os.urandom(pad // 2 + 1).hex()[:pad]
    frame = json.dumps(dict(head, pad=filler)).encode()
    assert len(frame) == size
    return frame


def _edits_meanwhile(b, c, a, done: threading.Event, colours):
    """B edits until `done`; each edit must be acked and reach C. Returns how many were acked before
    `done` was set."""
    during = 0
    while not done.is_set():
        ack = b.edit([set_op(2, "hairColor", next(colours))])
        c.sync(ack["rev"])
        assert by_tag(c.people, 2)["hairColor"] == ack["ops"][0]["value"]
        if not done.is_set():
            during += 1
        time.sleep(0.03)        # stay well under limits.opsPerSecond (100)
    return during


def test_2mib_frame_is_too_large_while_others_keep_working(hub, room):
    """The 2 MiB frame is written slowly (16 chunks over ~1 s); meanwhile B's edits are acked and
    broadcast. Then A gets too-large, nothing of it is applied, and A's connection still works."""
    b = hub.join(room, "B")
    c = hub.join(room, "C")
    a = hub.connect(room, "A", compression=None)
    a.hello("A")
    payload = big_submit(2 * MIB)
    done, failure = threading.Event(), []

    def sender():
        try:
            a.send_frame_slowly(payload, chunk=128 * 1024, delay=0.06)
        except Exception as e:  # noqa: BLE001
            failure.append(e)
        finally:
            done.set()

    t = threading.Thread(target=sender, daemon=True)
    t.start()
    colours = iter(["red", "gray", "white", "black", "blonde", "brown"] * 50)
    during = _edits_meanwhile(b, c, a, done, colours)
    t.join(15)
    assert not t.is_alive(), "writing the 2 MiB frame did not finish"
    assert not failure, failure
    assert during >= 3, f"only {during} edits were acked while the big frame was arriving"

    err = a.take_error()
    assert err["code"] == "too-large", err
    assert not err.get("fatal", False)
    a.sync(b.rev)                            # A received every one of B's revisions meanwhile
    assert a.is_open()
    ack = a.edit([set_op(3, "glasses", False)], seq=2)
    assert ack["ops"] == [set_op(3, "glasses", False)]
    for x in (b, c):
        x.sync(ack["rev"])
    # after it too, B's edits go through
    ack = b.edit([set_op(2, "eyeColor", "gray")])
    for x in (a, c):
        x.sync(ack["rev"])
        assert by_tag(x.people, 1)["name"] == "Ann"          # the big submit was not applied
        assert x.people == b.people


def test_2mib_frame_in_one_write_with_concurrent_edits(hub, room):
    b = hub.join(room, "B")
    c = hub.join(room, "C")
    a = hub.connect(room, "A", compression=None)
    a.hello("A")
    done = threading.Event()
    result = {}

    def editor():
        try:
            result["during"] = _edits_meanwhile(b, c, a, done, iter(["red", "gray"] * 500))
        except Exception as e:  # noqa: BLE001
            result["error"] = e

    t = threading.Thread(target=editor, daemon=True)
    t.start()
    time.sleep(0.1)
    a.send_raw(big_submit(2 * MIB).decode())
    err = a.take_error()
    assert err["code"] == "too-large", err
    done.set()
    t.join(10)
    assert "error" not in result, result
    a.sync(b.rev)
    assert a.is_open()
    assert a.edit([set_op(3, "glasses", False)], seq=2)["rev"] == b.rev + 1
    assert by_tag(a.people, 1)["name"] == "Ann"


def test_compressed_2mib_message_is_too_large(hub_factory, room):
    """With permessage-deflate (opt-in: transport.permessageDeflate) the 2 MiB message is a few KiB on
    the wire; the limit is on the message."""
    hub = hub_factory({"transport": {"permessageDeflate": True}})
    b = hub.join(room, "B")
    a = hub.connect(room, "A", compression="deflate")
    a.hello("A")
    assert "permessage-deflate" in (a.ws.response.headers.get("Sec-WebSocket-Extensions") or ""), \
        "the hub did not negotiate permessage-deflate (transport.permessageDeflate: true)"
    a.send_raw(big_submit(2 * MIB, compressible=True).decode())
    err = a.take_error()
    assert err["code"] == "too-large", err
    assert a.is_open()
    ack = b.edit([set_op(2, "glasses", True)])
    a.sync(ack["rev"])
    assert by_tag(a.people, 1)["name"] == "Ann"


def test_max_message_bytes_boundary(hub_factory, room):
    """limits.maxMessageBytes: 1024: a frame of exactly 1024 bytes is accepted, 1025 is too-large;
    before hello as well as after."""
    h = hub_factory({"limits": {"maxMessageBytes": 1024}})
    b = h.join(room, "B")
    a = h.connect(room, "A", compression=None)
    a.send_raw(json.dumps({"type": "ping", "seq": 1, "pad": "x" * 2000}))
    assert a.take_error()["code"] == "too-large"
    a.hello("A")
    a.send_raw(big_submit(1025, seq=1).decode())
    assert a.take_error()["code"] == "too-large"
    a.send_raw(big_submit(1024, seq=2).decode())
    ack = a.take("ack")
    assert ack["seq"] == 2 and ack["ops"] == [set_op(1, "name", "Huge")]
    b.sync(ack["rev"])
    assert by_tag(b.people, 1)["name"] == "Huge"

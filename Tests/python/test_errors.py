"""Every error code that open auth mode can provoke (PROTOCOL: error codes and parse order).

After each error: the offender's connection stays open (a ping is answered) unless the error is fatal,
and the other users in the room keep working (a submit of theirs is acked and broadcast to the rest).
`unauthorized` and `forbidden` need token auth (not built): not tested here.
"""

from __future__ import annotations

import json
import time

import pytest
from websockets.exceptions import ConnectionClosed

from conftest import SEED
from pkclient import by_tag, norm, person


def set_op(tag, field, value):
    return {"op": "set", "tag": tag, "field": field, "value": value}


class Room:
    """Two bystanders B and C in a room, to show the room still works after someone's error."""

    def __init__(self, hub, room):
        self.hub, self.room = hub, room
        self.b = hub.join(room, "B")
        self.c = hub.join(room, "C")
        self.colours = iter(["red", "gray", "white", "black", "blonde"] * 20)

    def still_works(self, *others):
        """B edits: acked, and broadcast to C (and to every client in `others`)."""
        everyone = (self.b, self.c, *others)
        top = max(x.rev or 0 for x in everyone)
        for x in everyone:
            x.sync(top)          # catch up first, so the base is current and rev numbers line up
        ack = self.b.edit([set_op(2, "hairColor", next(self.colours))])
        assert ack["ops"], ack
        for x in (self.c, *others):
            x.sync(ack["rev"])
            assert by_tag(x.people, 2)["hairColor"] == ack["ops"][0]["value"]
        return ack


def assert_error(client, code, seq=None, *, seq_optional=False):
    err = client.take_error()
    assert err["code"] == code, err
    assert not err.get("fatal", False), err
    if seq is not None:
        if seq_optional:
            assert err.get("seq") in (None, seq), err
        else:
            assert err.get("seq") == seq, err
    return err


# -- bad-json -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["{nope", "", "[1,", '{"type":"submit"', "\u00e9t\u00e9",
                                  '{"type":"ping","seq":1,"x":"a\nb"}', '{"type":"ping",}', "{'type':'ping'}",
                                  '{"type":"ping"} {"type":"ping"}', "NaN"],
                         ids=["brace", "empty", "open-array", "unclosed", "word", "raw-newline-in-string",
                              "trailing-comma", "single-quotes", "two-objects", "NaN"])
def test_bad_json_after_hello(hub, room, text):
    r = Room(hub, room)
    x = hub.join(room, "X")
    x.send_raw(text)
    assert_error(x, "bad-json")
    assert x.is_open()
    r.still_works(x)


def test_deeply_nested_json_is_refused_and_the_hub_survives(hub, room):
    r = Room(hub, room)
    x = hub.join(room, "X")
    x.send_raw("[" * 100_000 + "]" * 100_000)
    err = x.take_error()
    assert err["code"] in ("bad-json", "bad-message"), err
    x.send_raw('{"type":"ping","seq":1,"x":' + "{\"a\":" * 50_000 + "1" + "}" * 50_000 + "}")
    err = x.take_error()
    assert err["code"] in ("bad-json", "bad-message"), err
    assert x.is_open()
    r.still_works(x)
    assert hub.alive()


def test_bad_json_before_hello_then_hello_works(hub, room):
    r = Room(hub, room)
    x = hub.connect(room)
    x.send_raw("{{{")
    assert_error(x, "bad-json")
    x.hello("X")
    r.still_works(x)


def test_invalid_utf8_in_a_text_frame(hub, room):
    """A text frame whose bytes are not UTF-8. RFC 6455 §8.1 says the receiver fails the connection
    (close 1007); the project's PROTOCOL.md ("how this hub reads JSON") says invalid UTF-8 is bad-json,
    which would leave it open. Either is accepted here (see the report); what must hold in both: the
    hub answers one way or the other, and the other users' connections keep working."""
    r = Room(hub, room)
    x = hub.join(room, "X")
    # build the text frame by hand (the library refuses to send one)
    x.send_frame_slowly(b'{"type":"ping","seq":1,"x":"\xff\xfe"}', opcode=0x1, delay=0)
    try:
        err = x.take_error()
    except ConnectionClosed as e:
        assert e.rcvd is not None and e.rcvd.code == 1007, e
    else:
        assert err["code"] == "bad-json", err
        assert x.is_open()
    r.still_works()


def test_invalid_utf8_in_a_binary_frame_after_hello_is_bad_message(hub, room):
    r = Room(hub, room)
    x = hub.join(room, "X")
    x.send_raw(b"\xff\xfe\x00")
    assert_error(x, "bad-message")
    assert x.is_open()
    r.still_works(x)


# -- not-hello ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("frame", [
    json.dumps({"type": "submit", "seq": 1, "base": 0, "ops": []}),
    json.dumps({"type": "ping", "seq": 1}),
    json.dumps({"type": "undo", "seq": 1}),
    json.dumps({"type": "presence", "viewing": 1}),
    b'{"type":"ping","seq":1}',                 # binary
    b"\x00\x01\x02",                            # binary, not JSON
], ids=["submit", "ping", "undo", "presence", "binary-json", "binary-bytes"])
def test_not_hello(hub, room, frame):
    r = Room(hub, room)
    x = hub.connect(room)
    x.send_raw(frame)
    assert_error(x, "not-hello")
    x.expect_nothing("welcome", "ack", "pong")
    x.hello("X")                               # the connection is still usable
    r.still_works(x)
    assert x.edit([set_op(1, "glasses", True)])["ops"]


# -- bad-message: hello's protocol --------------------------------------------------------------------

@pytest.mark.parametrize("hello", [
    {"type": "hello", "protocol": 1},
    {"type": "hello", "protocol": 1, "user": 7},
    {"type": "hello", "protocol": 1, "user": "X", "since": "3"},
    {"type": "hello", "user": "X"},
    {"type": "hello", "protocol": "1", "user": "X"},
    {"type": "hello", "protocol": 1.5, "user": "X"},
    {"type": "hello", "protocol": None, "user": "X"},
], ids=["no-user", "user-number", "since-string", "no-protocol", "protocol-string", "protocol-fraction",
        "protocol-null"])
def test_hello_of_the_wrong_shape_is_bad_message(hub, room, hello):
    r = Room(hub, room)
    x = hub.connect(room)
    x.send(hello)
    assert_error(x, "bad-message")
    x.hello("X")
    r.still_works(x)


@pytest.mark.parametrize("protocol", [2, 0, 99])
def test_unsupported_protocol_is_fatal(hub, room, protocol):
    r = Room(hub, room)
    x = hub.connect(room)
    x.send({"type": "hello", "protocol": protocol, "user": "X"})
    err = x.take_error()
    assert err["code"] == "unsupported-protocol", err
    assert err.get("fatal") is True, err
    x.wait_closed()
    assert not [m for m in x.log if m["type"] == "welcome"], x.log
    r.still_works()


# -- bad-message after hello --------------------------------------------------------------------------

BAD_ENVELOPES = {
    "submit-missing-seq": {"type": "submit", "base": 0, "ops": [set_op(1, "glasses", True)]},
    "submit-string-seq": {"type": "submit", "seq": "7", "base": 0, "ops": [set_op(1, "glasses", True)]},
    "submit-fraction-seq": {"type": "submit", "seq": 7.5, "base": 0, "ops": [set_op(1, "glasses", True)]},
    "submit-missing-base": {"type": "submit", "seq": 7, "ops": [set_op(1, "glasses", True)]},
    "submit-string-base": {"type": "submit", "seq": 7, "base": "0", "ops": [set_op(1, "glasses", True)]},
    "submit-missing-ops": {"type": "submit", "seq": 7, "base": 0},
    "submit-ops-object": {"type": "submit", "seq": 7, "base": 0, "ops": {"op": "set"}},
    "submit-ops-null": {"type": "submit", "seq": 7, "base": 0, "ops": None},
    "undo-missing-seq": {"type": "undo"},
    "redo-string-seq": {"type": "redo", "seq": "7"},
    "missing-type": {"seq": 7, "base": 0, "ops": []},
    "unknown-type": {"type": "dance", "seq": 7},
    "huge-number-seq": "HUGE",
    "array": [1, 2, 3],
    "string": "hello",
}


@pytest.mark.parametrize("name", list(BAD_ENVELOPES))
def test_bad_message_envelope(hub, room, name):
    r = Room(hub, room)
    x = hub.join(room, "X")
    frame = BAD_ENVELOPES[name]
    if frame == "HUGE":
        x.send_raw('{"type":"submit","seq":1e400,"base":0,"ops":[]}')
    else:
        x.send(frame)
    assert_error(x, "bad-message")
    x.expect_nothing("ack", "undone", "redone", barrier=True)
    r.still_works(x)
    # the session still works
    x.sync(r.b.rev)
    assert x.edit([set_op(1, "glasses", True)], seq=100)["ops"]
    r.c.sync(x.rev)
    assert by_tag(r.c.people, 1)["glasses"] is True


def test_second_hello_is_bad_message_and_session_goes_on(hub, room):
    r = Room(hub, room)
    x = hub.join(room, "X")
    session = x.session
    x.edit([set_op(1, "hairColor", "red")])                  # seq 1
    x.send({"type": "hello", "protocol": 1, "user": "X"})
    assert_error(x, "bad-message")
    x.send({"type": "hello", "protocol": 1, "user": "Someone-else"})
    assert_error(x, "bad-message")
    x.expect_nothing("welcome", barrier=True)
    ack = x.edit([set_op(1, "hairColor", "gray")])           # seq 2, same session
    assert ack["seq"] == 2 and ack["ops"]
    assert x.session == session
    r.still_works(x)


def test_binary_frame_after_hello_is_bad_message(hub, room):
    r = Room(hub, room)
    x = hub.join(room, "X")
    x.send_raw(json.dumps({"type": "submit", "seq": 1, "base": 0, "ops": [set_op(1, "glasses", True)]}).encode())
    assert_error(x, "bad-message", 1, seq_optional=True)
    x.expect_nothing("ack", barrier=True)
    r.still_works(x)
    assert by_tag(r.c.people, 1)["glasses"] is False         # the binary submit was not applied


def test_seq_not_above_last_is_bad_message(hub, room):
    r = Room(hub, room)
    x = hub.join(room, "X")
    assert x.edit([set_op(1, "hairColor", "red")], seq=5)["rev"] == 1
    x.send({"type": "submit", "seq": 3, "base": 1, "ops": [set_op(1, "hairColor", "gray")]})
    assert_error(x, "bad-message", 3, seq_optional=True)
    x.send({"type": "undo", "seq": 4})
    assert_error(x, "bad-message", 4, seq_optional=True)
    x.expect_nothing("ack", "undone", barrier=True)
    # seq 5 again is a resend: its reply, not an error
    x.send({"type": "submit", "seq": 5, "base": 0, "ops": [set_op(1, "hairColor", "red")]})
    assert x.take("ack")["rev"] == 1
    assert x.edit([set_op(1, "hairColor", "white")], seq=6)["rev"] == 2
    r.still_works(x)
    assert by_tag(r.c.people, 1)["hairColor"] == "white"


def test_base_rules_are_bad_message(hub, room):
    r = Room(hub, room)
    x = hub.join(room, "X")
    x.edit([set_op(1, "hairColor", "red")])                  # rev 1
    x.edit([set_op(1, "hairColor", "gray")])                 # rev 2
    # newer than the hub's revision
    x.send({"type": "submit", "seq": 3, "base": 50, "ops": [set_op(1, "hairColor", "white")]})
    assert_error(x, "bad-message", 3, seq_optional=True)
    # older than this session's previous ack
    x.send({"type": "submit", "seq": 4, "base": 1, "ops": [set_op(1, "hairColor", "white")]})
    assert_error(x, "bad-message", 4, seq_optional=True)
    x.expect_nothing("ack", barrier=True)
    assert x.edit([set_op(1, "hairColor", "white")], seq=5)["rev"] == 3
    r.still_works(x)


# -- invalid-op ---------------------------------------------------------------------------------------

def _long_name(n):
    return "x" * n


INVALID_BATCHES = {
    "unknown-op": [{"op": "explode", "tag": 1}],
    "unknown-enum": [set_op(1, "hairColor", "purple")],
    "unknown-field": [set_op(1, "height", "tall")],
    "glasses-not-bool": [set_op(1, "glasses", "yes")],
    "missing-value": [{"op": "set", "tag": 1, "field": "hairColor"}],
    "absent-tag": [set_op(999, "hairColor", "red")],
    "unknown-style": [{"op": "facialHair", "tag": 1, "style": "mullet", "present": True}],
    "unknown-topic": [{"op": "preference", "tag": 1, "topic": "knitting", "value": "like"}],
    "bad-preference": [{"op": "preference", "tag": 1, "topic": "art", "value": "love"}],
    "text-past-end": [{"op": "text", "tag": 1, "edits": [{"retain": 4}, {"insert": "!"}]}],
    "text-delete-past-end": [{"op": "text", "tag": 1, "edits": [{"retain": 2}, {"delete": 5}]}],
    "text-zero-retain": [{"op": "text", "tag": 1, "edits": [{"retain": 0}, {"insert": "!"}]}],
    "text-empty-insert": [{"op": "text", "tag": 1, "edits": [{"insert": ""}]}],
    "name-too-long": [set_op(1, "name", _long_name(201))],
    "name-too-long-utf8": [set_op(1, "name", "\u00e9" * 101)],          # 202 bytes
    "insert-used-tag": [{"op": "insert", "at": 0, "person": person(1, "Again")}],
    "insert-foreign-tag": [{"op": "insert", "at": 0, "person": person(10 ** 9, "Far")}],
    "insert-missing-field": "MISSING",
    "insert-duplicate-element": "DUP",
    "insert-topic-both": "BOTH",
    "atomic-second-op-bad": [set_op(1, "hairColor", "red"), set_op(1, "hairColor", "purple")],
    "move-of-absent": [{"op": "move", "tag": 4242, "to": 0}],
    "remove-of-absent": [{"op": "remove", "tag": 4242}],
    "lone-surrogate": "SURROGATE",
}


@pytest.mark.parametrize("name", list(INVALID_BATCHES))
def test_invalid_op(hub, room, name):
    r = Room(hub, room)
    x = hub.join(room, "X")
    ops = INVALID_BATCHES[name]
    t = x.new_tag()
    if ops == "MISSING":
        p = person(t, "NoEyes")
        del p["eyeColor"]
        ops = [{"op": "insert", "at": 0, "person": p}]
    elif ops == "DUP":
        ops = [{"op": "insert", "at": 0, "person": person(t, "Dup", facialHair=["beard", "beard"])}]
    elif ops == "BOTH":
        ops = [{"op": "insert", "at": 0, "person": person(t, "Both", likes=["art"], dislikes=["art"])}]
    if ops == "SURROGATE":
        x.send_raw('{"type":"submit","seq":1,"base":0,"ops":[{"op":"set","tag":1,"field":"name",'
                   '"value":"a\\ud800b"}]}')
        x.seq = 1
        seq = 1
    else:
        seq = x.submit(ops)
    assert_error(x, "invalid-op", seq)
    x.expect_nothing("ack", "history", barrier=True)        # and the connection is open
    ack = r.still_works(x)
    assert ack["rev"] == 1, "the refused batch made a revision"
    # nothing of the batch was applied
    fresh = hub.join(room, "F")
    expected = [dict(p) for p in SEED]
    expected[1]["hairColor"] = r.b.people[1]["hairColor"]
    assert norm(fresh.welcome["people"]) == norm(expected)
    # and the offender's next good batch goes through
    x.sync(r.b.rev)
    assert x.edit([set_op(3, "glasses", False)])["ops"] == [set_op(3, "glasses", False)]


def test_refused_submit_uses_up_its_seq_and_its_error_is_replayed(hub, room):
    """The reply to each seq is kept and replayed verbatim when the seq is sent again, before any other
    check: an invalid-op is that seq's reply even if the resend carries a valid batch."""
    r = Room(hub, room)
    x = hub.join(room, "X")
    x.submit([set_op(999, "hairColor", "red")], seq=1)
    err = assert_error(x, "invalid-op", 1)
    text = x.raw_of(err)
    x.send({"type": "submit", "seq": 1, "base": 0, "ops": [set_op(1, "hairColor", "red")]})
    again = x.take_error()
    assert x.raw_of(again) == text
    x.expect_nothing("ack", barrier=True)
    assert x.edit([set_op(1, "hairColor", "red")], seq=2)["rev"] == 1
    r.still_works(x)


def test_name_of_exactly_200_bytes_is_accepted(hub, room):
    x = hub.join(room, "X")
    assert x.edit([set_op(1, "name", "\u00e9" * 100)])["rev"] == 1     # 200 bytes
    assert x.edit([set_op(2, "name", "x" * 200)])["rev"] == 2


def test_labels_coalesce_keys_and_presence_fields_take_at_most_200_bytes(hub, room):
    """Session 23: a label (kept in the journal and sent with every log page), a coalesce key and a
    presence field (relayed to everyone) were taken up to the 1 MiB frame limit. Over 200 bytes they
    are bad-message with the request's seq, nothing applied, the connection open; 200 bytes are taken."""
    r = Room(hub, room)
    x = hub.join(room, "X")
    x.submit([set_op(1, "glasses", True)], seq=1, label="L" * 201)
    err = assert_error(x, "bad-message", 1)
    assert "label" in err["message"] and "200 bytes" in err["message"], err
    x.submit([set_op(1, "glasses", True)], seq=2, coalesce="c" * 300)
    assert "coalesce" in assert_error(x, "bad-message", 2)["message"]
    x.send({"type": "restore", "seq": 3, "rev": 0, "label": "R" * 1000})
    assert "label" in assert_error(x, "bad-message", 3)["message"]
    x.send({"type": "presence", "viewing": 1, "field": "f" * 201})
    assert "field" in assert_error(x, "bad-message")["message"]
    x.expect_nothing("ack", barrier=True)
    ack = x.edit([set_op(1, "glasses", True)], seq=4, label="\u00e9" * 100)  # 200 bytes
    assert ack["rev"] == 1
    assert x.timeline()["entries"][0]["label"] == "\u00e9" * 100
    r.still_works(x)


# -- stale-base ---------------------------------------------------------------------------------------

def test_stale_base(hub_factory, room):
    h = hub_factory({"rooms": {"keptRevisions": 3}})
    r = Room(h, room)
    x = h.join(room, "X")
    for i in range(10):
        x.edit([set_op(1, "hairLength", ["bald", "short", "medium", "long"][i % 4])])
    assert x.rev == 10
    y = h.join(room, "Y")                      # a fresh session: no previous ack of its own
    seq = y.submit([set_op(3, "glasses", False)], base=0)
    err = assert_error(y, "stale-base", seq)
    assert err["message"]
    assert y.is_open()
    r.still_works(x, y)
    # the recovery the code asks for: a fresh hello, then a current base
    y2 = h.join(room, "Y")
    assert y2.edit([set_op(3, "glasses", False)])["ops"] == [set_op(3, "glasses", False)]
    # a base inside the kept window is still transformed normally
    z = h.join(room, "Z")
    ack = z.edit([set_op(3, "eyeColor", "gray")], base=z.rev - 2)
    assert ack["ops"] == [set_op(3, "eyeColor", "gray")]


# -- rate-limited -------------------------------------------------------------------------------------

RATE = 5           # limits.opsPerSecond in these tests; bursts of twice this are allowed


def test_rate_limited(hub_factory, room):
    """Just over the burst: the excess frame is answered rate-limited (not fatal); the connection stays
    open and works once the rate allows; the other users are not affected."""
    h = hub_factory({"limits": {"opsPerSecond": RATE}})
    r = Room(h, room)
    x = h.join(room, "X")
    sent = 2 * RATE + 5                      # with the hello: 6 over the burst (a token comes back each
    for i in range(sent):                    # 1/RATE s: slack for a loaded machine reading them late)
        x.send({"type": "ping", "seq": i + 1})
    err = x.take_error()
    assert err["code"] == "rate-limited", err
    assert not err.get("fatal", False), err
    x.pump(0.2)
    assert len([m for m in x.log if m["type"] == "pong"]) < sent
    r.still_works()
    time.sleep(1.0)                          # the bucket refills
    assert x.is_open(), f"the offender's connection was closed (code {x.closed_code})"
    r.still_works(x)


# Reading (pinned here): the contract says a non-fatal error leaves the connection open, and a single
# rate-limited frame does; but a client that keeps flooding for more than a second, with no quiet
# second between, is closed with 1008 "rate limit" (a transport close, not an error frame), so one
# client cannot hold the hub's attention for ever. The other users are unaffected.
def test_rate_limited_sustained_flood_is_closed_with_1008(hub_factory, room):
    h = hub_factory({"limits": {"opsPerSecond": RATE}})
    r = Room(h, room)
    x = h.join(room, "X")
    t0, n = time.monotonic(), 0
    try:
        while time.monotonic() - t0 < 3.0:
            n += 1
            x.send({"type": "ping", "seq": n})
            time.sleep(0.01)
    except ConnectionClosed:
        pass
    code = x.wait_closed()
    # The hub sends close 1008; a client still writing when the socket closes may get a TCP reset that
    # discards that frame (its unread data makes the kernel reset), so "no close frame" is accepted too.
    assert code in (1008, None), f"closed with {code}"
    assert time.monotonic() - t0 > 1.0, "closed before the excess had lasted a second"
    r.still_works()


def test_rate_limited_submit_is_answered(hub_factory, room):
    h = hub_factory({"limits": {"opsPerSecond": RATE}})
    r = Room(h, room)
    x = h.join(room, "X")
    for i in range(2 * RATE):                # the hello and these: one over the burst
        x.send({"type": "presence", "viewing": 1 + i % 3})
    seq = x.submit([set_op(1, "glasses", True)])
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        x.pump(0.1)
        acks = [m for m in x.log if m["type"] == "ack" and m["seq"] == seq]
        errors = [m for m in x.log if m["type"] == "error"]
        if acks or any(e.get("seq") == seq for e in errors) or len(errors) >= 2:
            break
    else:
        raise AssertionError(f"submit seq {seq} got neither an ack nor an error: "
                             f"{[m for m in x.log if m['type'] != 'presence']}")
    r.still_works()


# -- room-full ----------------------------------------------------------------------------------------

def test_room_full_max_rooms(hub_factory, rooms):
    h = hub_factory({"limits": {"maxRooms": 1}})
    first = rooms("a")
    r = Room(h, first)
    x = h.connect(rooms("b"))
    x.send({"type": "hello", "protocol": 1, "user": "X"})
    assert_error(x, "room-full")
    x.expect_nothing("welcome")
    # still open: another hello is answered (room-full again), not dropped
    x.send({"type": "hello", "protocol": 1, "user": "X"})
    assert_error(x, "room-full")
    r.still_works()
    # the room that exists still takes new users
    d = h.join(first, "D")
    assert d.welcome["rev"] == r.b.rev


def test_room_full_max_people_per_room(hub_factory, room):
    h = hub_factory({"limits": {"maxPeoplePerRoom": 4}})
    r = Room(h, room)
    x = h.join(room, "X")
    t1, t2 = x.new_tag(), x.new_tag()
    assert x.edit([{"op": "insert", "at": 3, "person": person(t1, "Four")}])["rev"] == 1
    seq = x.submit([{"op": "insert", "at": 0, "person": person(t2, "Five")}])
    assert_error(x, "room-full", seq)
    x.expect_nothing("ack", barrier=True)
    r.still_works(x)
    assert [p["tag"] for p in r.c.people] == [1, 2, 3, t1]
    # a batch that keeps the count within the limit still goes through
    x.sync(r.b.rev)
    ack = x.edit([{"op": "remove", "tag": t1}, {"op": "insert", "at": 0, "person": person(t2, "Five")}])
    assert ack["ops"]
    r.c.sync(ack["rev"])
    assert [p["tag"] for p in r.c.people] == [t2, 1, 2, 3]


def test_a_close_frame_with_a_one_byte_body_fails_the_connection(hub, room):
    """RFC 6455 §5.5.1: a close body is empty or starts with a two-byte code. A one-byte body is a
    protocol error: the hub drops the connection instead of echoing the close (Autobahn case 7.3.2,
    found by `make conformance`). The room goes on for everyone else."""
    import os
    from pkclient import raw_upgrade
    r = Room(hub, room)
    s = raw_upgrade(hub.port, f"/v1/rooms/{room}")
    mask = os.urandom(4)
    s.sendall(bytes([0x88, 0x80 | 1]) + mask + bytes([ord("a") ^ mask[0]]))
    received = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        received += chunk
    s.close()
    assert b"\x88\x01a" not in received, f"the hub echoed the malformed close: {received!r}"
    r.still_works()

"""Join and catch-up, resend dedup, undo stacks across reconnects and tabs, presence (PROTOCOL: rules of
the exchange)."""

from __future__ import annotations

import copy
import json
import time

from conftest import SEED
from pkclient import by_tag, norm, norm_users, person


def set_op(tag, field, value):
    return {"op": "set", "tag": tag, "field": field, "value": value}


def ops_frames(client, since_mark=0):
    return [m for m in client.log[since_mark:] if m["type"] == "ops"]


# -- join / catch-up ----------------------------------------------------------------------------------

def test_since_replays_exactly_the_missed_revisions_in_order(hub, room):
    a = hub.join(room, "A")
    b = hub.join(room, "B")
    a.edit([set_op(1, "hairColor", "red")], label="one")                       # rev 1
    at_rev1 = copy.deepcopy(a.people)
    b.sync(1)
    b.edit([set_op(2, "eyeColor", "hazel")], label="two")                      # rev 2
    a.sync(2)
    a.edit([{"op": "move", "tag": 3, "to": 0}], label="three")                # rev 3
    a.undo()                                                                   # rev 4
    a.redo()                                                                   # rev 5
    b.sync(5)
    final = copy.deepcopy(a.people)

    c = hub.connect(room, "C")
    w = c.hello("C", since=1, people=at_rev1)
    assert w["rev"] == 5
    assert "people" not in w, w
    c.pump()
    got = [(m["rev"], m["author"], m["kind"]) for m in ops_frames(c)]
    assert got == [(2, "B", "edit"), (3, "A", "edit"), (4, "A", "undo"), (5, "A", "redo")]
    # the replayed ops are the ops as applied that the live connections got
    live = {m["rev"]: m["ops"] for m in ops_frames(b) if m["author"] == "A"}
    for m in ops_frames(c):
        if m["author"] == "A":
            assert m["ops"] == live[m["rev"]], m
    assert ops_frames(c)[0]["ops"] == [set_op(2, "eyeColor", "hazel")]
    assert ops_frames(c)[1].get("label") == "three"
    # ...and nothing else follows: no further ops frame
    c.expect_nothing("ops", "welcome")
    assert norm(c.people) == norm(final)

    # the catch-up connection is live: it gets the next revision like everyone else
    a.edit([set_op(1, "glasses", True)])
    c.sync(6)
    assert by_tag(c.people, 1)["glasses"] is True


def test_since_at_current_revision_gets_welcome_without_people_and_no_ops(hub, room):
    a = hub.join(room, "A")
    a.edit([set_op(1, "hairColor", "red")])
    a.edit([set_op(1, "hairColor", "gray")])
    c = hub.connect(room, "C")
    w = c.hello("C", since=2, people=a.people)
    assert w["rev"] == 2 and "people" not in w, w
    c.expect_nothing("ops")


def test_since_older_than_memory_is_caught_up_from_the_store(hub_factory, room):
    """A since older than the hub's memory window (rooms.keptRevisions) is served from the store:
    a welcome without people, then exactly the missed revisions in order (this hub's reading of
    "a since the hub cannot serve gets the full state": it can serve it)."""
    h = hub_factory({"rooms": {"keptRevisions": 3}})
    a = h.join(room, "A")
    for i, colour in enumerate(["red", "gray", "white", "black", "blonde", "red", "gray", "white"]):
        a.edit([set_op(1 + i % 3, "hairColor", colour)])
    assert a.rev == 8
    c = h.connect(room, "C")
    w = c.hello("C", since=1, people=SEED)
    assert w["rev"] == 8
    assert "people" not in w, w
    c.pump()
    assert [(m["rev"], m["author"]) for m in ops_frames(c)] == [(r, "A") for r in range(2, 9)]
    assert norm(c.people) == norm(a.people)
    # a since the hub keeps in memory is served as a catch-up too
    d = h.connect(room, "D")
    w = d.hello("D", since=7, people=None)
    assert "people" not in w and w["rev"] == 8
    d.pump()
    assert [(m["rev"], m["author"]) for m in ops_frames(d)] == [(8, "A")]


def test_since_ahead_of_the_hub_gets_full_state(hub, room):
    a = hub.join(room, "A")
    a.edit([set_op(1, "hairColor", "red")])
    c = hub.connect(room, "C")
    w = c.hello("C", since=999, people=SEED)
    assert w["rev"] == 1
    assert "people" in w, w
    assert norm(w["people"]) == norm(a.people)
    c.expect_nothing("ops")



def test_since_of_another_history_gets_the_full_state_with_reset(hub_factory, room):
    """An addition to the product contract (docs/PROTOCOL.md "A room that went back"): `hello.sinceTime`
    is the `time` of revision `since` as the client saw it. A memory hub restarted: the room starts
    again, and bob makes a different revision 1 and a 2. ann, who saw the old revision 1, says hello
    with since 1 and its time: the welcome carries the full state with `reset: true` and no `ops`
    follow. Without `sinceTime` (a client that does not send it) the hub cannot tell, and catches up
    from revision 1 as before. Every welcome says the time of its `rev`."""
    h = hub_factory()
    a = h.join(room, "ann")
    ack = a.edit([set_op(1, "hairColor", "red")])
    old_time = ack["time"]
    old_people = copy.deepcopy(a.people)
    a.close()
    h.restart(same_port=True)
    b = h.join(room, "bob")
    assert b.welcome["time"] > old_time, b.welcome       # revision 0's time: when the new room was made
    first = b.edit([set_op(2, "eyeColor", "hazel")])
    at_rev1 = copy.deepcopy(b.people)
    last = b.edit([set_op(3, "glasses", False)])

    c = h.connect(room, "ann-again")
    w = c.hello("ann", since=1, sinceTime=old_time, people=old_people)
    assert w.get("reset") is True, w
    assert w["rev"] == 2 and w["time"] == last["time"], w
    assert norm(w["people"]) == norm(b.people)
    c.expect_nothing("ops")

    same = h.connect(room, "carl")
    w = same.hello("carl", since=1, sinceTime=first["time"], people=at_rev1)
    assert "reset" not in w and "people" not in w, w
    same.pump()
    assert [m["rev"] for m in ops_frames(same)] == [2]
    assert norm(same.people) == norm(b.people)

    blind = h.connect(room, "dora")
    w = blind.hello("dora", since=1, people=old_people)
    assert "people" not in w and "reset" not in w, w   # no sinceTime: caught up on the new history


def test_a_client_at_revision_0_of_another_room_gets_the_full_state_with_reset(hub_factory, room):
    """Revision 0's time is when the room was made (docs/PROTOCOL.md "A room that went back"): a welcome
    at revision 0 says it. ann saw the room at revision 0; a memory hub restarted and made the room
    again; bob makes revisions 1 and 2 of it. ann's hello with since 0 and her time gets the full state
    with `reset`, no `ops`; carl, who saw the new room at revision 0, is caught up with 1 and 2.
    Before the fix revision 0 had no time, so ann was caught up with the new room's revisions on top of
    the old room's people and never agreed with the hub again (a black-box pass of the terminal
    client, session 39)."""
    h = hub_factory()
    a = h.join(room, "ann")
    born = a.welcome["time"]
    old_people = copy.deepcopy(a.people)
    a.close()
    h.restart(same_port=True)
    carl = h.join(room, "carl")
    reborn = carl.welcome["time"]
    assert reborn > born, (born, reborn)
    at_zero = copy.deepcopy(carl.people)
    carl.close()
    b = h.join(room, "bob")
    b.edit([set_op(2, "eyeColor", "hazel")])
    b.edit([set_op(3, "glasses", False)])

    c = h.connect(room, "ann-again")
    w = c.hello("ann", since=0, sinceTime=born, people=old_people)
    assert w.get("reset") is True and w["rev"] == 2, w
    assert norm(w["people"]) == norm(b.people)
    c.expect_nothing("ops")

    same = h.connect(room, "carl-again")
    w = same.hello("carl", since=0, sinceTime=reborn, people=at_zero)
    assert "reset" not in w and "people" not in w, w
    same.pump()
    assert [m["rev"] for m in ops_frames(same)] == [1, 2]
    assert norm(same.people) == norm(b.people)


def test_revision_0_s_time_goes_with_an_export_and_the_change_feed_checks_it(hub_factory, room):
    """An export with history carries revision 0's time (`created`) and an import keeps it, so a client
    at revision 0 of the room is caught up on the imported copy, not told it went back (a review,
    session 39: it was told); the change feed's `afterTime` at `after=0` is checked against it, and a
    `PUT` of people alone, or the `import` command's, is a new room with its own time."""
    from pkhttp import HubHTTP
    h = hub_factory({"storage": {"kind": "embedded", "path": "{workdir}/data/pk.sqlite"}})
    a = h.join(room, "ann")
    born = a.welcome["time"]
    a.edit([set_op(1, "hairColor", "red")])
    a.edit([set_op(2, "glasses", True)])
    a.close()
    web = HubHTTP(h.port, user="ann")
    ok = web.get(web.room_path(room, "revisions"), query={"after": 0, "afterTime": born})
    assert ok.status == 200 and [r["rev"] for r in ok.json["revisions"]] == [1, 2], ok
    other = web.get(web.room_path(room, "revisions"), query={"after": 0, "afterTime": born + 1})
    assert other.status == 409 and other.error_code() == "reset", other

    export = web.export(room, history=True).json
    assert export["created"] == born, export
    assert web.remove_room(room).status == 204
    assert web.create(room, export).status == 201
    c = h.connect(room, "ann-again")
    w = c.hello("ann", since=0, sinceTime=born, people=copy.deepcopy(SEED))
    assert "reset" not in w and "people" not in w, w
    c.pump()
    assert [m["rev"] for m in ops_frames(c)] == [1, 2]
    h.restart(same_port=True)                      # kept in the store (the import's first snapshot)
    d = h.join(room, "dan")
    assert d.welcome["rev"] == 2
    again = HubHTTP(h.port, user="ann").get(web.room_path(room, "revisions"), query={"after": 0, "afterTime": born})
    assert again.status == 200, again

    fresh = room[:50] + "-people"
    assert web.create(fresh, {"people": export["people"]}).status == 201
    e = h.join(fresh, "eve")
    assert e.welcome["rev"] == 0 and e.welcome["time"] > born, e.welcome


def test_since_time_is_checked_against_the_store_below_memory(hub_factory, room):
    """With `rooms.keptRevisions` 3 the room's memory no longer holds revisions 1-4 after 8 edits: a
    `sinceTime` for them is compared with the store's copy. The right time: a catch-up from the store;
    another: the full state with `reset`. The same far behind (`rooms.maxCatchUp` 2): the full state
    either way, with `reset` only for the other time."""
    h = hub_factory({"rooms": {"keptRevisions": 3, "maxCatchUp": 5}})
    a = h.join(room, "A")
    times, states = {}, {}
    for i, colour in enumerate(["red", "gray", "white", "black", "blonde", "red", "gray", "white"]):
        ack = a.edit([set_op(1 + i % 3, "hairColor", colour)])
        times[ack["rev"]] = ack["time"]
        states[ack["rev"]] = copy.deepcopy(a.people)
    for since in (3, 4):
        c = h.connect(room, f"C{since}")
        w = c.hello("C", since=since, sinceTime=times[since], people=states[since])
        assert "people" not in w and "reset" not in w, (since, w)
        c.pump()
        assert [m["rev"] for m in ops_frames(c)] == list(range(since + 1, 9))
        assert norm(c.people) == norm(a.people)
        d = h.connect(room, f"D{since}")
        w = d.hello("D", since=since, sinceTime=times[since] - 1, people=states[since])
        assert w.get("reset") is True and norm(w["people"]) == norm(a.people), (since, w)
        d.expect_nothing("ops")
    far = h.connect(room, "far")
    w = far.hello("F", since=1, sinceTime=times[1], people=states[1])
    assert "reset" not in w and norm(w["people"]) == norm(a.people), w
    other = h.connect(room, "other")
    w = other.hello("O", since=1, sinceTime=times[1] + 1, people=states[1])
    assert w.get("reset") is True and norm(w["people"]) == norm(a.people), w


# -- resend dedup -------------------------------------------------------------------------------------

def test_resend_after_resume_gets_the_same_reply_and_applies_once(hub, room):
    a = hub.join(room, "A")
    b = hub.join(room, "B")
    session = a.session
    frame = json.dumps({"type": "submit", "seq": 1, "base": 0, "label": "Type",
                        "ops": [{"op": "text", "tag": 1, "edits": [{"retain": 3}, {"insert": "x"}]}]})
    a.send_raw(frame)
    ack = a.take("ack")
    ack_text = a.raw_of(ack)
    assert ack["rev"] == 1
    a.close()

    a2 = hub.connect(room, "A2")
    w = a2.hello("A", resume=session)
    assert w["session"] == session, w
    a2.send_raw(frame)
    again = a2.take("ack")
    assert a2.raw_of(again) == ack_text                     # verbatim
    # same connection, same seq once more: still the same reply
    a2.send_raw(frame)
    assert a2.raw_of(a2.take("ack")) == ack_text

    b.pump()
    assert [(m["rev"], m["author"]) for m in ops_frames(b)] == [(1, "A")]   # one ops frame
    assert by_tag(b.people, 1)["name"] == "Annx"
    fresh = hub.join(room, "F")
    assert fresh.welcome["rev"] == 1 and by_tag(fresh.welcome["people"], 1)["name"] == "Annx"
    assert w["history"] == {"canUndo": True, "canRedo": False, "undoLabel": "Type"}
    a2.expect_nothing("history")     # a replay changes no stack

    # the session's counter goes on: seq 2 is a new request
    a2.seq = 1
    ack2 = a2.edit([set_op(1, "glasses", True)])
    assert ack2["seq"] == 2 and ack2["rev"] == 2


def test_resend_of_an_unanswered_submit_after_resume(hub, room):
    """The client never saw its ack (it dropped the connection right after sending); it resumes with
    `since` and resends. The catch-up frame of its own revision carries its seq (docs §7.9), and the
    resend is answered with the ack, once."""
    a = hub.join(room, "A")
    b = hub.join(room, "B")
    session = a.session
    frame = json.dumps({"type": "submit", "seq": 1, "base": 0,
                        "ops": [{"op": "text", "tag": 2, "edits": [{"insert": "!"}]}]})
    a.send_raw(frame)
    b.sync(1)          # it has been applied
    a.close()

    a2 = hub.connect(room, "A2")
    w = a2.hello("A", resume=session, since=0, people=SEED)
    assert w["session"] == session and w["rev"] == 1 and "people" not in w
    a2.pump()
    own = ops_frames(a2)
    assert [(m["rev"], m["author"], m.get("seq")) for m in own] == [(1, "A", 1)]
    a2.send_raw(frame)
    ack = a2.take("ack")
    assert ack["seq"] == 1 and ack["rev"] == 1 and ack["ops"] == own[0]["ops"]
    b.expect_nothing("ops")
    assert [m["rev"] for m in ops_frames(b)] == [1]
    assert by_tag(b.people, 2)["name"] == "!Joan"


def test_resent_undo_is_answered_verbatim_and_undoes_once(hub, room):
    a = hub.join(room, "A")
    b = hub.join(room, "B")
    a.edit([set_op(1, "hairColor", "red")], label="Red")       # seq 1, rev 1
    a.edit([set_op(1, "hairColor", "gray")], label="Gray")     # seq 2, rev 2
    a.send({"type": "undo", "seq": 3})
    u = a.take("undone")
    assert u["rev"] == 3 and u["ops"] == [set_op(1, "hairColor", "red")]
    text = a.raw_of(u)
    session = a.session
    a.close()
    a2 = hub.connect(room, "A2")
    a2.hello("A", resume=session)
    a2.send({"type": "undo", "seq": 3})
    assert a2.raw_of(a2.take("undone")) == text
    b.sync(3)
    b.expect_nothing("ops")
    assert [m["rev"] for m in ops_frames(b)] == [1, 2, 3]
    assert by_tag(b.people, 1)["hairColor"] == "red"          # not undone twice (that would be brown)


def test_hello_without_resume_is_a_new_session(hub, room):
    a = hub.join(room, "A")
    first = a.session
    a.edit([set_op(1, "hairColor", "red")])
    a.close()
    a2 = hub.join(room, "A")
    assert a2.session != first
    ack = a2.edit([set_op(1, "hairColor", "gray")], seq=1)     # seq 1 again: a new request here
    assert ack["rev"] == 2 and ack["ops"] == [set_op(1, "hairColor", "gray")]


def test_resume_of_an_unknown_or_foreign_session_starts_a_new_one(hub, room):
    """docs/PROTOCOL.md (added): a resume naming a session the hub does not keep, or one of another
    user, starts a new session."""
    a = hub.join(room, "A")
    a.edit([set_op(1, "hairColor", "red")])
    b = hub.connect(room, "B")
    w = b.hello("B", resume=a.session)
    assert w["session"] != a.session and w["user"] == "B"
    assert w["history"] == {"canUndo": False, "canRedo": False}
    u = b.undo()                                # B cannot undo A's edit through A's session
    assert "rev" not in u and u["ops"] == []
    c = hub.connect(room, "C")
    w = c.hello("C", resume="no-such-session")
    assert w["session"] != "no-such-session"
    assert c.edit([set_op(2, "glasses", True)], seq=1)["rev"] == 2


def test_ping_is_answered_with_its_seq_or_without(hub, room):
    """(This hub, session 24) a pong also says the hub's clock (`time`, ms since the epoch), so a
    client can measure a revision's time against the hub's clock rather than its own."""
    a = hub.join(room, "A")
    before = int(time.time() * 1000)
    a.send({"type": "ping", "seq": 41})
    pong = a.take("pong")
    after = int(time.time() * 1000)
    assert {k: v for k, v in pong.items() if k != "time"} == {"type": "pong", "seq": 41}, pong
    assert isinstance(pong.get("time"), int) and before - 1000 <= pong["time"] <= after + 1000, (before, pong, after)
    a.send({"type": "ping"})
    assert "seq" not in a.take("pong")
    # a ping's seq is not the session's counter: seq 1 is still free for a submit
    assert a.edit([set_op(1, "glasses", True)], seq=1)["rev"] == 1


# -- undo stacks belong to (room, user) ---------------------------------------------------------------

def test_undo_stack_survives_reconnect_without_resume(hub, room):
    b = hub.join(room, "B")
    a = hub.join(room, "A")
    a.edit([set_op(1, "hairColor", "red")], label="L1")
    a.edit([set_op(2, "glasses", True)], label="L2")
    a.close()
    a2 = hub.join(room, "A")
    assert a2.welcome["history"] == {"canUndo": True, "canRedo": False, "undoLabel": "L2"}
    u = a2.undo()
    assert u["rev"] == 3 and u["ops"] == [set_op(2, "glasses", False)] and u.get("label") in (None, "L2")
    a2.expect_history(canUndo=True, canRedo=True, undoLabel="L1", redoLabel="L2")
    b.sync(3)
    assert by_tag(b.people, 2)["glasses"] is False


def test_undo_stack_survives_reconnect_with_resume(hub, room):
    a = hub.join(room, "A")
    a.edit([set_op(1, "hairColor", "red")], label="L1")
    a.edit([set_op(2, "glasses", True)], label="L2")
    a.undo()
    session = a.session
    a.close()
    a2 = hub.connect(room, "A2")
    w = a2.hello("A", resume=session)
    assert w["session"] == session
    assert w["history"] == {"canUndo": True, "canRedo": True, "undoLabel": "L1", "redoLabel": "L2"}
    a2.seq = 3
    r = a2.redo()
    assert r["rev"] == 4 and r["ops"] == [set_op(2, "glasses", True)]
    u = a2.undo()
    u2 = a2.undo()
    assert u["ops"] == [set_op(2, "glasses", False)] and u2["ops"] == [set_op(1, "hairColor", "brown")]
    a2.expect_history(canUndo=False, canRedo=True, redoLabel="L1")


def test_undo_stacks_are_per_room(hub, rooms):
    r1, r2 = rooms("1"), rooms("2")
    a1 = hub.join(r1, "A")
    a1.edit([set_op(1, "hairColor", "red")], label="Red")
    a2 = hub.join(r2, "A")
    assert a2.welcome["history"] == {"canUndo": False, "canRedo": False}
    u = a2.undo()
    assert "rev" not in u and u["ops"] == []
    assert a1.undo()["ops"] == [set_op(1, "hairColor", "brown")]


def test_second_tab_of_same_user_shares_the_stacks(hub, room):
    a1 = hub.join(room, "A")
    a2 = hub.join(room, "A")
    b = hub.join(room, "B")
    assert a1.session != a2.session
    blocks = sorted([a1.tag_block, a2.tag_block, b.tag_block])
    for (f1, t1), (f2, t2) in zip(blocks, blocks[1:]):
        assert f1 <= t1 < f2 <= t2, blocks          # no two sessions share a tag block

    ack = a1.edit([set_op(1, "hairColor", "red")], label="Red")
    # the other tab gets the revision (ops goes to every connection but the sender) and the history
    m = a2.take("ops")
    assert (m["rev"], m["author"], m["kind"]) == (1, "A", "edit")
    assert m["ops"] == ack["ops"]
    a2.expect_history(canUndo=True, canRedo=False, undoLabel="Red")

    u = a2.undo()                                    # undoes tab 1's edit
    assert u["rev"] == 2 and u["ops"] == [set_op(1, "hairColor", "brown")]
    m = a1.take("ops")
    assert (m["rev"], m["author"], m["kind"]) == (2, "A", "undo")
    a1.expect_history(canUndo=False, canRedo=True, redoLabel="Red")
    a2.expect_history(canUndo=False, canRedo=True, redoLabel="Red")

    r = a1.redo()
    assert r["rev"] == 3 and r["ops"] == [set_op(1, "hairColor", "red")]
    a2.expect_history(canUndo=True, canRedo=False)
    b.sync(3)
    a2.sync(3)
    for c in (a1, a2, b):
        assert by_tag(c.people, 1)["hairColor"] == "red"
    assert [(m["rev"], m["kind"]) for m in ops_frames(b)] == [(1, "edit"), (2, "undo"), (3, "redo")]

    # an insert from the second tab's own block is accepted
    t = a2.new_tag()
    ack = a2.edit([{"op": "insert", "at": 0, "person": person(t, "Tab")}])
    assert ack["rev"] == 4


def test_every_change_of_the_stacks_reaches_the_user_s_other_tabs(hub_factory, room):
    """The product contract: `history` goes to all of a user's connections after every change to their
    stacks. The hub sent it only when what it says changed, so a selective undo of an older step (all
    of it skipped: the step is used up) and a new step labelled as the one before reached no other tab:
    a black-box pass saw a page keep "Undo this" on the used-up step, and a terminal keep its mark
    after the hub refused it (session 43). A batch added to a coalescing run changes no step and sends
    none."""
    hub = hub_factory({"undo": {"coalesceMillis": 60000}})
    a1 = hub.join(room, "A")
    a2 = hub.join(room, "A")
    b = hub.join(room, "B")
    first = a1.edit([set_op(1, "hairColor", "red")], label="Color")
    a2.expect_history(canUndo=True, undoLabel="Color")
    a1.expect_history(canUndo=True, undoLabel="Color")
    # A new step with the same label: the summary says the same, the stacks changed.
    a1.edit([set_op(2, "glasses", True)], label="Color")
    a2.expect_history(canUndo=True, undoLabel="Color")
    a1.expect_history(canUndo=True, undoLabel="Color")
    # A teammate overwrites the first step's field: its selective undo is all skipped, and used up.
    b.edit([set_op(1, "hairColor", "blonde")])
    a2.sync(3)
    a1.send({"type": "undo", "seq": a1.seq + 1, "entry": first["rev"]})
    a1.seq += 1
    undone = a1.take("undone")
    assert "rev" not in undone and undone["skipped"], undone
    a2.expect_history(canUndo=True, undoLabel="Color")
    assert [e["rev"] for e in a2.timeline()["entries"] if "entry" in e] == [2], "the used-up step is not offered"
    # A keystroke added to a coalescing run: the same step, no frame.
    a1.edit([set_op(3, "name", "Sa")], coalesce="name:3", label="Type")
    a2.expect_history(canUndo=True, undoLabel="Type")
    mark = a2.mark()
    a1.edit([set_op(3, "name", "Sam!")], coalesce="name:3", label="Type")
    a2.sync(5)
    a2.expect_nothing("history", since=mark, quiet=0.3)


# -- presence -----------------------------------------------------------------------------------------

def _clean(users):
    return norm_users([{k: v for k, v in u.items() if v is not None} for u in users])


def wait_presence(client, expected, timeout=5.0):
    want = _clean(expected)
    deadline = time.monotonic() + timeout
    seen = []
    while True:
        if client.presence is not None and _clean(client.presence) == want and not client.queues["presence"]:
            return
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"{client}: presence never became {expected}; now {client.presence}; "
                                 f"frames {seen}")
        try:
            seen.append(client.take("presence", left, allow_error=True)["users"])
        except AssertionError:
            pass


def test_presence_join_update_second_tab_and_leave(hub, room):
    a = hub.join(room, "A")
    assert _clean(a.welcome["presence"]) == _clean([{"user": "A"}])
    b = hub.join(room, "B")
    assert _clean(b.welcome["presence"]) == _clean([{"user": "A"}, {"user": "B"}])
    wait_presence(a, [{"user": "A"}, {"user": "B"}])

    a.send({"type": "presence", "viewing": 2, "field": "name"})
    both = [{"user": "A", "viewing": 2, "field": "name"}, {"user": "B"}]
    wait_presence(a, both)
    wait_presence(b, both)

    a2 = hub.join(room, "A")          # one entry per connection: A twice
    three = both + [{"user": "A"}]
    assert _clean(a2.welcome["presence"]) == _clean(three)
    wait_presence(a, three)
    wait_presence(b, three)

    b.send({"type": "presence", "viewing": 3})
    three = [{"user": "A", "viewing": 2, "field": "name"}, {"user": "B", "viewing": 3}, {"user": "A"}]
    for c in (a, a2, b):
        wait_presence(c, three)

    b.close()                          # leaving
    two = [{"user": "A", "viewing": 2, "field": "name"}, {"user": "A"}]
    wait_presence(a, two)
    wait_presence(a2, two)

    a.send({"type": "presence"})       # looking at nothing
    wait_presence(a2, [{"user": "A"}, {"user": "A"}])
    # presence is not an edit: no revision was made
    assert a.rev == 0 and not ops_frames(a2)

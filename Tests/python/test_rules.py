"""Further rules of SEMANTICS §2-§4 and PROTOCOL, end to end: batches that change nothing, clamping,
text positions in code points, the name limit on the NFC form, coalescing, scoped undo, redo clearing,
tag blocks, cascade off, depth, expiry."""

from __future__ import annotations

import time

from conftest import SEED
from pkclient import by_tag, norm, person, tags
from reports import assert_reports, rep


def set_op(tag, field, value):
    return {"op": "set", "tag": tag, "field": field, "value": value}


def typing(tag, at, s):
    return {"op": "text", "tag": tag, "edits": ([{"retain": at}] if at else []) + [{"insert": s}]}


# -- batches ------------------------------------------------------------------------------------------

def test_batch_that_changes_nothing_is_acked_at_current_rev_and_leaves_redo(hub, room):
    a = hub.join(room, "A")
    b = hub.join(room, "B")
    a.edit([set_op(1, "hairColor", "red")], label="Red")
    a.undo()
    a.expect_history(canUndo=False, canRedo=True, redoLabel="Red")
    b.sync(2)
    mark_a, mark_b = a.mark(), b.mark()
    ack = a.edit([set_op(1, "hairColor", "brown"), set_op(3, "glasses", True),
                  {"op": "facialHair", "tag": 3, "style": "beard", "present": True},
                  {"op": "preference", "tag": 1, "topic": "weather", "value": "dislike"}])
    assert ack["rev"] == 2 and ack["ops"] == [] and not ack.get("noop"), ack
    a.expect_nothing("history", since=mark_a, barrier=True)    # no undo entry, redo untouched
    b.expect_nothing("ops", since=mark_b, barrier=True)        # no broadcast
    r = a.redo()
    assert r["rev"] == 3 and r["ops"] == [set_op(1, "hairColor", "red")]


def test_diffs_that_change_nothing_are_left_out_of_a_batch_that_changes_something(hub, room):
    a = hub.join(room, "A")
    b = hub.join(room, "B")
    ack = a.edit([set_op(1, "hairColor", "brown"), set_op(1, "glasses", True), set_op(2, "eyeColor", "blue")],
                 label="Mixed")
    assert ack["rev"] == 1 and ack["ops"] == [set_op(1, "glasses", True)], ack
    m = b.take("ops")
    assert m["ops"] == [set_op(1, "glasses", True)] and m.get("label") == "Mixed"
    u = a.undo()
    assert u["ops"] == [set_op(1, "glasses", False)]


def test_batch_may_name_a_person_it_inserted_and_positions_are_clamped(hub, room):
    a = hub.join(room, "A")
    b = hub.join(room, "B")
    t = a.new_tag()
    p = person(t, "Zed", hairColor="red")
    ack = a.edit([{"op": "insert", "at": 99, "person": p}, set_op(t, "glasses", True),
                  {"op": "move", "tag": 1, "to": 99}, {"op": "move", "tag": 3, "to": -5}])
    assert ack["ops"] == [{"op": "insert", "at": 3, "person": p}, set_op(t, "glasses", True),
                          {"op": "move", "tag": 1, "to": 3}, {"op": "move", "tag": 3, "to": 0}], ack
    b.sync(1)
    assert tags(b.people) == [3, 2, t, 1]
    u = a.undo()                                  # one batch = one undo step
    assert u["rev"] == 2 and u["skipped"] == []
    b.sync(2)
    assert norm(b.people) == norm(SEED)


def test_text_positions_count_code_points_and_names_are_stored_as_sent(hub, room):
    a = hub.join(room, "A")
    decomposed = "Jose\u0301"                    # 5 code points, 4 graphemes, not NFC
    family = "A\U0001F469\u200d\U0001F469\u200d\U0001F467n"   # 7 code points, 3 graphemes
    a.edit([set_op(2, "name", decomposed), set_op(3, "name", family)])
    ack = a.edit([{"op": "text", "tag": 2, "edits": [{"retain": 5}, {"insert": "!"}]},
                  {"op": "text", "tag": 3, "edits": [{"retain": 6}, {"insert": "x"}]}])
    assert ack["rev"] == 2
    f = hub.join(room, "F")
    assert by_tag(f.people, 2)["name"] == "Jose\u0301!"
    assert by_tag(f.people, 3)["name"] == "A\U0001F469\u200d\U0001F469\u200d\U0001F467xn"
    # one past the end in code points is invalid-op
    seq = a.submit([{"op": "text", "tag": 2, "edits": [{"retain": 7}, {"insert": "?"}]}])
    err = a.take_error()
    assert err["code"] == "invalid-op" and err.get("seq") == seq


def test_name_limit_is_measured_on_the_nfc_form(hub, room):
    a = hub.join(room, "A")
    name = "e\u0301" * 100                        # 300 bytes as sent, 200 bytes in NFC
    assert a.edit([set_op(1, "name", name)])["rev"] == 1
    f = hub.join(room, "F")
    assert by_tag(f.people, 1)["name"] == name     # stored as sent, not normalised
    seq = a.submit([{"op": "text", "tag": 1, "edits": [{"retain": 200}, {"insert": "e"}]}])
    err = a.take_error()
    assert err["code"] == "invalid-op" and err.get("seq") == seq


# -- coalescing ---------------------------------------------------------------------------------------

def test_coalesced_typing_is_one_undo_step_across_a_teammates_batch(hub_factory, room):
    # A run's edits must come within undo.coalesceMillis of each other: five round trips over two
    # clients come between ann's keyed edits here, which a loaded machine can take past 500 ms.
    hub = hub_factory({"undo": {"coalesceMillis": 60000}})
    a = hub.join(room, "A")
    b = hub.join(room, "B")
    a.edit([typing(1, 3, "i")], coalesce="name:1", label="Type")
    b.sync(1)
    b.edit([typing(1, 0, ">")])                               # another user's batch: no break
    a.sync(2)
    a.edit([set_op(2, "hairColor", "black")], coalesce="name:1")  # own batch changing nothing
    a.edit([typing(1, 5, "e")], coalesce="name:1", label="Type more")
    a.expect_history(canUndo=True, undoLabel="Type")          # the first batch's label
    assert by_tag(a.people, 1)["name"] == ">Annie"
    u = a.undo()
    assert u["rev"] == 4 and u["skipped"] == [] and u.get("label") in (None, "Type")
    assert by_tag(a.people, 1)["name"] == ">Ann"
    a.expect_history(canUndo=False, canRedo=True)
    r = a.redo()
    assert by_tag(a.people, 1)["name"] == ">Annie" and r["rev"] == 5


def test_coalescing_is_broken_by_another_key_and_by_an_undo_that_finds_nothing(hub, room):
    a = hub.join(room, "A")
    a.edit([typing(1, 3, "a")], coalesce="k")
    a.edit([typing(2, 4, "b")], coalesce="other")             # another key: a new entry
    a.edit([typing(1, 4, "c")], coalesce="k")                 # and again
    u = a.undo(scope=3)                                       # nothing touches P3: nothing to do...
    assert "rev" not in u and u["ops"] == []
    a.edit([typing(1, 5, "d")], coalesce="k")                 # ...but the run is broken
    assert by_tag(a.people, 1)["name"] == "Annacd"
    a.undo()
    assert by_tag(a.people, 1)["name"] == "Annac"
    a.undo()
    assert by_tag(a.people, 1)["name"] == "Anna"
    a.undo()
    assert by_tag(a.people, 2)["name"] == "Joan"
    a.undo()
    assert by_tag(a.people, 1)["name"] == "Ann"


def test_coalescing_is_broken_by_a_pause(hub_factory, room):
    # A window long enough for one acked round trip on a loaded machine, and a pause well past it.
    h = hub_factory({"undo": {"coalesceMillis": 2000}})
    a = h.join(room, "A")
    a.edit([typing(1, 3, "a")], coalesce="k")
    a.edit([typing(1, 4, "b")], coalesce="k")
    time.sleep(3.0)
    a.edit([typing(1, 5, "c")], coalesce="k")
    a.undo()
    assert by_tag(a.people, 1)["name"] == "Annab"
    a.undo()
    assert by_tag(a.people, 1)["name"] == "Ann"


# -- undo / redo stacks -------------------------------------------------------------------------------

def test_scoped_undo_takes_the_newest_entry_touching_the_tag(hub, room):
    a = hub.join(room, "A")
    a.edit([set_op(1, "hairColor", "red")], label="P1")
    a.edit([set_op(2, "hairColor", "red")], label="P2")
    a.edit([set_op(3, "hairColor", "red")], label="P3")
    u = a.undo(scope=1)
    assert u["ops"] == [set_op(1, "hairColor", "brown")] and u.get("label") in (None, "P1")
    a.expect_history(canUndo=True, canRedo=True, undoLabel="P3", redoLabel="P1")
    u = a.undo(scope=1)
    assert "rev" not in u and u["ops"] == []                 # nothing else touches P1
    r = a.redo(scope=1)
    assert r["ops"] == [set_op(1, "hairColor", "red")]
    assert a.undo()["ops"] == [set_op(1, "hairColor", "brown")]   # the redone entry is the newest
    assert a.undo()["ops"] == [set_op(3, "hairColor", "blonde")]  # then the newest of the rest


def test_own_new_edit_clears_redo_but_a_teammates_does_not(hub, room):
    a = hub.join(room, "A")
    b = hub.join(room, "B")
    a.edit([set_op(1, "hairColor", "red")], label="Red")
    a.undo()
    b.sync(2)
    b.edit([set_op(2, "hairColor", "red")])
    a.sync(3)
    r = a.redo()                                              # a teammate's edit left A's redo alone
    assert r["rev"] == 4 and r["ops"] == [set_op(1, "hairColor", "red")]
    a.undo()
    a.edit([set_op(3, "glasses", False)])
    a.expect_history(canUndo=True, canRedo=False)
    r = a.redo()
    assert "rev" not in r and r["ops"] == []


def test_undo_with_nothing_to_undo_does_not_take_a_teammates_entry(hub, room):
    a = hub.join(room, "A")
    b = hub.join(room, "B")
    b.edit([set_op(1, "hairColor", "red")])
    b.expect_history(canUndo=True)
    a.sync(1)
    mark = b.mark()
    u = a.undo()
    assert "rev" not in u and u["ops"] == [] and u["skipped"] == []
    b.expect_nothing("ops", "history", since=mark, barrier=True)
    assert by_tag(b.people, 1)["hairColor"] == "red"


def test_cascade_off_stops_at_an_entry_that_changes_nothing(hub_factory, room):
    h = hub_factory({"undo": {"cascade": False}})
    a = h.join(room, "A")
    b = h.join(room, "B")
    a.edit([set_op(1, "glasses", True)])
    a.edit([set_op(3, "hairLength", "long")])
    b.sync(2)
    b.edit([{"op": "remove", "tag": 3}])
    a.sync(3)
    u = a.undo()
    assert "rev" not in u and u["ops"] == []
    assert_reports(u["skipped"], [rep("targetRemoved", 3, by="B", maybe={"field": "hairLength"})])
    u = a.undo()
    assert u["rev"] == 4 and u["ops"] == [set_op(1, "glasses", False)]


def test_undo_depth_bounds_the_stack(hub_factory, room):
    h = hub_factory({"undo": {"depth": 2}})
    a = h.join(room, "A")
    for c in ("red", "gray", "white"):
        a.edit([set_op(2, "hairColor", c)])
    assert a.undo()["ops"] == [set_op(2, "hairColor", "gray")]
    assert a.undo()["ops"] == [set_op(2, "hairColor", "red")]
    u = a.undo()
    assert "rev" not in u and u["ops"] == [] and u["skipped"] == []
    assert by_tag(a.people, 2)["hairColor"] == "red"


def test_undo_of_an_entry_older_than_the_kept_history(hub_factory, room):
    """With rooms.keptRevisions small, an entry whose revision has left the kept history is either
    undone exactly or consumed with one `expired` report per tag it touched (no `by`), applying
    nothing (SEMANTICS §4)."""
    h = hub_factory({"rooms": {"keptRevisions": 3}})
    a = h.join(room, "A")
    b = h.join(room, "B")
    a.edit([set_op(1, "hairColor", "red"), set_op(2, "glasses", True)], label="Old")
    for i in range(6):
        b.sync(a.rev)
        b.edit([set_op(3, "hairColor", ["red", "gray"][i % 2])])
    a.sync(b.rev)
    u = a.undo()
    if "rev" in u:
        assert u["skipped"] == [] and sorted(map(str, u["ops"])) == sorted(map(str, [
            set_op(1, "hairColor", "brown"), set_op(2, "glasses", False)]))
    else:
        assert u["ops"] == []
        assert_reports(u["skipped"], [rep("expired", 1), rep("expired", 2)])
        a.expect_history(canUndo=False)


# -- tag blocks ---------------------------------------------------------------------------------------

def test_tags_request_and_blocks_stay_the_users_across_sessions(hub, room):
    a = hub.join(room, "A")
    first = a.tag_block
    a.send({"type": "tags"})
    more = a.take("tags")
    assert more["from"] <= more["to"] and (more["from"] > first[1] or more["to"] < first[0]), (first, more)
    a.close()
    a2 = hub.join(room, "A")                 # a new session, a new block
    b = hub.join(room, "B")
    assert a2.tag_block != first
    # an insert made "offline" from the first block, and one from the extra block, are still valid
    ack = a2.edit([{"op": "insert", "at": 0, "person": person(first[0], "Offline")},
                   {"op": "insert", "at": 0, "person": person(more["from"], "Extra")}])
    assert ack["rev"] == 1
    # a tag from B's block is not A's
    seq = a2.submit([{"op": "insert", "at": 0, "person": person(b.tag_block[0], "Theirs")}])
    err = a2.take_error()
    assert err["code"] == "invalid-op" and err.get("seq") == seq


# -- guards under skip (SEMANTICS §2 table, §4 "by") --------------------------------------------------

def test_redo_that_removes_is_guarded_like_undo_of_insert(hub, room):
    a = hub.join(room, "A")
    b = hub.join(room, "B")
    a.edit([{"op": "remove", "tag": 2}])
    a.undo()
    b.sync(2)
    b.edit([set_op(2, "glasses", True)])
    a.sync(3)
    r = a.redo()
    assert "rev" not in r and r["ops"] == []
    assert_reports(r["skipped"], [rep("editedByOthers", 2, by="B")])
    assert by_tag(a.people, 2)["glasses"] is True


def test_edited_by_others_names_the_latest_other_writer(hub, room):
    a = hub.join(room, "A")
    b = hub.join(room, "B")
    c = hub.join(room, "C")
    t = a.new_tag()
    a.edit([{"op": "insert", "at": 0, "person": person(t)}])
    b.sync(1)
    b.edit([set_op(t, "glasses", True)])
    c.sync(2)
    c.edit([set_op(t, "hairColor", "red")])
    a.sync(3)
    a.edit([set_op(t, "eyeColor", "gray")])         # the undoer's own later write does not count
    u = a.undo()                                    # undoes the eyeColor entry
    assert u["ops"] == [set_op(t, "eyeColor", "brown")]
    u = a.undo()
    assert "rev" not in u and u["ops"] == []
    assert_reports(u["skipped"], [rep("editedByOthers", t, by="C")])


def test_undo_of_a_move_someone_moved_again_is_overwritten_position(hub, room):
    a = hub.join(room, "A")
    b = hub.join(room, "B")
    a.edit([{"op": "move", "tag": 3, "to": 0}])
    b.sync(1)
    b.edit([{"op": "move", "tag": 3, "to": 1}])
    a.sync(2)
    u = a.undo()
    assert "rev" not in u and u["ops"] == []
    assert_reports(u["skipped"], [rep("overwritten", 3, field="position", by="B")])
    assert tags(a.people) == [1, 3, 2]


def test_undo_skips_set_elements_and_registers_a_teammate_overwrote(hub, room):
    a = hub.join(room, "A")
    b = hub.join(room, "B")
    a.edit([{"op": "facialHair", "tag": 1, "style": "beard", "present": True},
            {"op": "preference", "tag": 1, "topic": "art", "value": "like"},
            {"op": "facialHair", "tag": 1, "style": "goatee", "present": True}])
    b.sync(1)
    b.edit([{"op": "facialHair", "tag": 1, "style": "beard", "present": False},
            {"op": "preference", "tag": 1, "topic": "art", "value": "dislike"}])
    a.sync(2)
    u = a.undo()
    assert u["rev"] == 3
    assert u["ops"] == [{"op": "facialHair", "tag": 1, "style": "goatee", "present": False}], u
    assert_reports(u["skipped"], [rep("overwritten", 1, field="facialHair", style="beard", by="B"),
                                  rep("overwritten", 1, field="preference", topic="art", by="B")])
    p1 = by_tag(a.people, 1)
    assert p1["facialHair"] == [] and p1["dislikes"] == ["art", "weather"] and p1["likes"] == []


def test_overwritten_by_may_name_the_undoer_themself(hub, room):
    """§4: `overwritten` with by = the latest writer, who may be the user themself (a scoped undo of an
    older entry whose field the user rewrote since)."""
    a = hub.join(room, "A")
    a.edit([set_op(1, "hairColor", "red"), set_op(2, "glasses", True)], label="Both")
    a.edit([set_op(1, "hairColor", "blonde")], label="Blonde")
    u = a.undo(scope=2)
    assert u["rev"] == 3 and u["ops"] == [set_op(2, "glasses", False)], u
    assert_reports(u["skipped"], [rep("overwritten", 1, field="hairColor", by="A")])
    assert by_tag(a.people, 1)["hairColor"] == "blonde"


def test_overwritten_names_the_latest_writer_not_the_first(hub, room):
    a = hub.join(room, "A")
    b = hub.join(room, "B")
    a.edit([set_op(1, "hairColor", "red")])
    b.sync(1)
    b.edit([set_op(1, "hairColor", "blonde")])
    a.sync(2)
    a.edit([set_op(1, "hairColor", "red")])
    b.sync(3)
    u = b.undo()
    assert "rev" not in u
    assert_reports(u["skipped"], [rep("overwritten", 1, field="hairColor", by="A")])

"""SEMANTICS §5: every worked case, end to end over WebSocket.

Start of every case: the seed [P1, P2, P3] (conftest.SEED: P1 "Ann" brown hair, dislikes weather;
P2 "Joan"; P3 "Sam"), users A and B at revision 0, policy skip, cascade on (the shared `hub`), plus a
third user C who watches (and in some cases edits). Each case checks the replies (ack / undone / redone
with ops as applied and skip reports), A's history messages, every connection's local model, the ops
frames each connection received, and the people a fresh hello gets.
"""

from __future__ import annotations

import copy

from conftest import SEED
from pkclient import by_tag, norm, person, tags
from reports import assert_reports, rep
from scene import Scene

P1, P2, P3 = 1, 2, 3


def seed():
    return copy.deepcopy(SEED)


def with_fields(people, tag, **fields):
    by_tag(people, tag).update(fields)
    return people


def set_op(tag, field, value):
    return {"op": "set", "tag": tag, "field": field, "value": value}


# 1 ---------------------------------------------------------------------------------------------------

def test_case_01_undo_own_field_keeps_teammates_then_redo(hub, room):
    s = Scene(hub, room, seed=SEED)
    a = s["A"]
    ack = s.edit("A", [set_op(P1, "hairColor", "red")], label="Hair colour")
    assert ack["rev"] == 1 and ack["ops"] == [set_op(P1, "hairColor", "red")] and not ack.get("noop")
    a.expect_history(canUndo=True, canRedo=False, undoLabel="Hair colour")

    ack = s.edit("B", [set_op(P2, "glasses", True)], base=0, label="Glasses")
    assert ack["rev"] == 2 and ack["ops"] == [set_op(P2, "glasses", True)]
    s.sync("A")

    u = s.undo("A")
    assert u["rev"] == 3 and u["ops"] == [set_op(P1, "hairColor", "brown")] and u["skipped"] == []
    assert u.get("label") in (None, "Hair colour")
    a.expect_history(canUndo=False, canRedo=True, redoLabel="Hair colour")
    after_undo = with_fields(seed(), P2, glasses=True)
    assert norm(s.people("C")) == norm(after_undo)

    r = s.redo("A")
    assert r["rev"] == 4 and r["ops"] == [set_op(P1, "hairColor", "red")] and r["skipped"] == []
    a.expect_history(canUndo=True, canRedo=False, undoLabel="Hair colour")

    final = with_fields(with_fields(seed(), P2, glasses=True), P1, hairColor="red")
    s.check(final)
    # B's history never changed because of A's undo / redo (stacks are per user).
    assert all(h.get("canRedo") is False for h in (m for m in s["B"].log if m["type"] == "history"))


# 2 ---------------------------------------------------------------------------------------------------

def test_case_02_skip_undo_over_teammates_newer_value_is_overwritten(hub, room):
    s = Scene(hub, room, seed=SEED)
    a = s["A"]
    s.edit("A", [set_op(P1, "hairColor", "red")], label="Red")
    s.sync("B")
    ack = s.edit("B", [set_op(P1, "hairColor", "blonde")], label="Blonde")
    assert ack["rev"] == 2 and ack["ops"] == [set_op(P1, "hairColor", "blonde")]
    s.sync("A")

    u = s.undo("A")
    assert "rev" not in u, u
    assert u["ops"] == []
    assert_reports(u["skipped"], [rep("overwritten", P1, field="hairColor", by="B")])
    a.expect_history(canUndo=False)
    s.check(with_fields(seed(), P1, hairColor="blonde"))


def test_case_02_force_undo_restores_old_colour(force_hub, room):
    s = Scene(force_hub, room, seed=SEED)
    s.edit("A", [set_op(P1, "hairColor", "red")], label="Red")
    s.sync("B")
    s.edit("B", [set_op(P1, "hairColor", "blonde")], label="Blonde")
    s.sync("A")

    u = s.undo("A")
    assert u["rev"] == 3 and u["ops"] == [set_op(P1, "hairColor", "brown")], u
    assert u["skipped"] == []
    s["A"].expect_history(canUndo=False, canRedo=True)
    s.check(seed())


# 3 ---------------------------------------------------------------------------------------------------

def test_case_03_concurrent_sets_b_undoes_to_red_then_a_to_original(hub, room):
    s = Scene(hub, room, seed=SEED)
    ack_a = s.edit("A", [set_op(P1, "hairColor", "red")], base=0, label="Red")
    ack_b = s.edit("B", [set_op(P1, "hairColor", "blonde")], base=0, label="Blonde")
    assert ack_a["rev"] == 1 and ack_b["rev"] == 2
    assert ack_b["ops"] == [set_op(P1, "hairColor", "blonde")]  # the later one (in hub order) wins
    s.sync()
    assert by_tag(s.people("C"), P1)["hairColor"] == "blonde"

    u = s.undo("B")
    assert u["rev"] == 3 and u["ops"] == [set_op(P1, "hairColor", "red")] and u["skipped"] == []
    s["B"].expect_history(canUndo=False, canRedo=True)
    s.sync()
    assert by_tag(s.people("A"), P1)["hairColor"] == "red"

    u = s.undo("A")
    assert u["rev"] == 4 and u["ops"] == [set_op(P1, "hairColor", "brown")] and u["skipped"] == []
    s["A"].expect_history(canUndo=False, canRedo=True)
    s.check(seed())


# 4 ---------------------------------------------------------------------------------------------------

def test_case_04_set_on_removed_person_is_noop_and_undo_puts_it_back_in_place(hub, room):
    s = Scene(hub, room, seed=SEED)
    ack = s.edit("A", [{"op": "remove", "tag": P2}], base=0, label="Remove Joan")
    assert ack["rev"] == 1 and ack["ops"] == [{"op": "remove", "tag": P2}]

    mark_a, mark_b = s["A"].mark(), s["B"].mark()
    ack = s.edit("B", [set_op(P2, "hairColor", "red")], base=0, label="Red")
    assert ack["rev"] == 1 and ack["ops"] == [], ack  # acked at the current revision, no new one
    assert_reports(ack.get("noop"), [rep("targetRemoved", P2, by="A", maybe={"field": "hairColor"})])
    s["B"].expect_nothing("history", since=mark_b)    # no undo entry for B
    s["A"].expect_nothing("ops", since=mark_a)        # no revision, no broadcast
    assert s["B"].history == {"canUndo": False, "canRedo": False}
    s.sync()
    assert tags(s.people("C")) == [P1, P3]
    assert tags(s.people("B")) == [P1, P3]

    u = s.undo("A")
    assert u["rev"] == 2 and u["skipped"] == []
    assert u["ops"] == [{"op": "insert", "at": 1, "person": SEED[1]}], u  # fields as removed, not red
    s["A"].expect_history(canUndo=False, canRedo=True)
    s.check(seed())


# 5 ---------------------------------------------------------------------------------------------------

def test_case_05_skip_undo_of_insert_a_teammate_edited(hub, room):
    s = Scene(hub, room, seed=SEED)
    t4 = s["A"].new_tag()
    p4 = person(t4, "Pat")
    ack = s.edit("A", [{"op": "insert", "at": 0, "person": p4}], label="Add Pat")
    assert ack["rev"] == 1 and ack["ops"] == [{"op": "insert", "at": 0, "person": p4}]
    s.sync("B")
    s.edit("B", [set_op(t4, "glasses", True)], label="Glasses")
    s.sync("A")

    u = s.undo("A")
    assert "rev" not in u and u["ops"] == [], u
    assert_reports(u["skipped"], [rep("editedByOthers", t4, by="B")])
    s["A"].expect_history(canUndo=False)
    s.check([dict(p4, glasses=True)] + seed())


def test_case_05_force_undo_removes_insert_and_redo_brings_it_back_edited(force_hub, room):
    s = Scene(force_hub, room, seed=SEED)
    t4 = s["A"].new_tag()
    p4 = person(t4, "Pat")
    s.edit("A", [{"op": "insert", "at": 0, "person": p4}], label="Add Pat")
    s.sync("B")
    s.edit("B", [set_op(t4, "glasses", True)], label="Glasses")
    s.sync("A")

    u = s.undo("A")
    assert u["rev"] == 3 and u["ops"] == [{"op": "remove", "tag": t4}] and u["skipped"] == [], u
    s["A"].expect_history(canUndo=False, canRedo=True, redoLabel="Add Pat")
    assert norm(s.people("C")) == norm(seed())

    r = s.redo("A")
    p4_edited = dict(p4, glasses=True)
    assert r["rev"] == 4 and r["skipped"] == []
    assert r["ops"] == [{"op": "insert", "at": 0, "person": p4_edited}], r
    s["A"].expect_history(canUndo=True, canRedo=False)
    s.check([p4_edited] + seed())


# 6 ---------------------------------------------------------------------------------------------------

def test_case_06_undo_of_move_goes_back_after_old_previous_neighbour(hub, room):
    s = Scene(hub, room, seed=SEED)
    ack = s.edit("A", [{"op": "move", "tag": P3, "to": 0}], label="Move Sam")
    assert ack["rev"] == 1 and ack["ops"] == [{"op": "move", "tag": P3, "to": 0}]
    s.sync("B")
    assert tags(s["B"].people) == [P3, P1, P2]
    t4 = s["B"].new_tag()
    p4 = person(t4, "Pat")
    ack = s.edit("B", [{"op": "insert", "at": 3, "person": p4}], label="Add Pat")  # after P2
    assert ack["rev"] == 2 and ack["ops"] == [{"op": "insert", "at": 3, "person": p4}]
    s.sync("A")

    u = s.undo("A")
    assert u["rev"] == 3 and u["skipped"] == []
    assert u["ops"] == [{"op": "move", "tag": P3, "to": 2}], u
    s.check(seed() + [p4])
    assert tags(s["C"].people) == [P1, P2, P3, t4]


def test_case_06_concurrent_insert_from_the_old_base(hub, room):
    """Case 6 with B inserting "after P2" from the base before the move (a three-way race)."""
    s = Scene(hub, room, seed=SEED)
    s.edit("A", [{"op": "move", "tag": P3, "to": 0}], base=0, label="Move Sam")
    t4 = s["B"].new_tag()
    p4 = person(t4, "Pat")
    ack = s.edit("B", [{"op": "insert", "at": 2, "person": p4}], base=0, label="Add Pat")  # P2|P3 gap
    assert ack["rev"] == 2
    s.sync()
    assert tags(s.people("C")) == [P3, P1, P2, t4]
    u = s.undo("A")
    assert u["rev"] == 3 and u["skipped"] == []
    s.check(seed() + [p4])


# 7 ---------------------------------------------------------------------------------------------------

def test_case_07_undo_of_preference_restores_dislike(hub, room):
    s = Scene(hub, room, seed=SEED)
    op = {"op": "preference", "tag": P1, "topic": "weather", "value": "like"}
    ack = s.edit("A", [op], label="Like weather")
    assert ack["rev"] == 1 and ack["ops"] == [op]
    s.sync()
    p1 = by_tag(s.people("B"), P1)
    assert "weather" in p1["likes"] and "weather" not in p1["dislikes"]
    w = s.hub.join(s.room, "peek")
    assert set(by_tag(w.welcome["people"], P1)["likes"]) == {"weather"}
    assert set(by_tag(w.welcome["people"], P1)["dislikes"]) == set()
    w.close()

    u = s.undo("A")
    assert u["rev"] == 2 and u["skipped"] == []
    assert u["ops"] == [{"op": "preference", "tag": P1, "topic": "weather", "value": "dislike"}], u
    s.check(seed())
    p1 = by_tag(s["C"].people, P1)
    assert set(p1["dislikes"]) == {"weather"} and set(p1["likes"]) == set()


# 8 ---------------------------------------------------------------------------------------------------

def test_case_08_undo_of_typing_rebased_over_teammates_typing(hub, room):
    s = Scene(hub, room, seed=SEED)
    assert by_tag(s["A"].people, P1)["name"] == "Ann"
    ack = s.edit("A", [{"op": "text", "tag": P1, "edits": [{"retain": 3}, {"insert": "e"}]}], base=0,
                 label="Type")
    assert ack["rev"] == 1
    ack = s.edit("B", [{"op": "text", "tag": P1, "edits": [{"insert": "a"}]}], base=0, label="Type")
    assert ack["rev"] == 2
    s.sync()
    for u in "ABC":
        assert by_tag(s[u].people, P1)["name"] == "aAnne", u

    u = s.undo("A")
    assert u["rev"] == 3 and u["skipped"] == []
    assert len(u["ops"]) == 1 and u["ops"][0]["op"] == "text" and u["ops"][0]["tag"] == P1
    s.check(with_fields(seed(), P1, name="aAnn"))


# 9 ---------------------------------------------------------------------------------------------------

def test_case_09_three_undos_three_redos_restore_the_model(hub, room):
    s = Scene(hub, room, seed=SEED)
    t4 = s["A"].new_tag()
    s.edit("A", [set_op(P1, "hairColor", "red"), {"op": "facialHair", "tag": P1, "style": "goatee",
                                                   "present": True}], label="Looks")
    s.edit("A", [{"op": "text", "tag": P2, "edits": [{"retain": 2}, {"delete": 2}, {"insert": "hn"}]}],
           label="Rename")
    s.edit("A", [{"op": "insert", "at": 1, "person": person(t4, "Pat")}, {"op": "move", "tag": P3, "to": 0}],
           label="Add and move")
    s.sync()
    before = copy.deepcopy(s.people("C"))
    assert tags(before) == [P3, P1, t4, P2]
    assert by_tag(before, P2)["name"] == "John"

    labels = []
    for _ in range(3):
        u = s.undo("A")
        assert "rev" in u and u["skipped"] == [], u
        labels.append(u.get("label"))
    assert norm(s.people("C")) == norm(seed())
    s["A"].expect_history(canUndo=False, canRedo=True)
    for _ in range(3):
        r = s.redo("A")
        assert "rev" in r and r["skipped"] == [], r
    s["A"].expect_history(canUndo=True, canRedo=False, undoLabel="Add and move")
    assert s.rev == 9
    s.check(before)
    # one more redo: nothing to do, no revision, no error
    r = s["A"].redo()
    assert "rev" not in r and r["ops"] == [] and r["skipped"] == []


# 10 --------------------------------------------------------------------------------------------------

def test_case_10_undo_of_edit_on_removed_person_reported_and_cascades(hub, room):
    s = Scene(hub, room, seed=SEED)
    s.edit("A", [set_op(P1, "glasses", True)], label="Glasses")
    s.edit("A", [set_op(P3, "hairLength", "long")], label="Long hair")
    s["A"].expect_history(canUndo=True, undoLabel="Long hair")
    s.sync("B")
    ack = s.edit("B", [{"op": "remove", "tag": P3}], label="Remove Sam")
    assert ack["rev"] == 3
    s.sync("A")

    u = s.undo("A")
    assert u["rev"] == 4, u
    assert u["ops"] == [set_op(P1, "glasses", False)], u
    assert_reports(u["skipped"], [rep("targetRemoved", P3, by="B", maybe={"field": "hairLength"})])
    s["A"].expect_history(canUndo=False, canRedo=True)
    s.check(seed()[:2])


# 11 --------------------------------------------------------------------------------------------------

def test_case_11_undo_applies_once_teammate_restored_the_person(hub, room):
    s = Scene(hub, room, seed=SEED)
    s.edit("A", [set_op(P1, "hairColor", "red")], label="Red")
    s.sync("B")
    s.edit("B", [{"op": "remove", "tag": P1}], label="Remove Ann")
    u = s.undo("B")
    red_p1 = dict(SEED[0], hairColor="red")
    assert u["rev"] == 3 and u["ops"] == [{"op": "insert", "at": 0, "person": red_p1}], u
    s.sync()
    assert norm(s.people("A")) == norm(with_fields(seed(), P1, hairColor="red"))

    u = s.undo("A")
    assert u["rev"] == 4 and u["ops"] == [set_op(P1, "hairColor", "brown")] and u["skipped"] == [], u
    s.check(seed())


# 12 --------------------------------------------------------------------------------------------------

def test_case_12_typing_against_concurrent_whole_name_set_is_overwritten(hub, room):
    s = Scene(hub, room, seed=SEED)
    ack = s.edit("A", [set_op(P2, "name", "Jo")], base=0, label="Rename")
    assert ack["rev"] == 1
    ack = s.edit("B", [{"op": "text", "tag": P2, "edits": [{"retain": 4}, {"insert": "!"}]}], base=0,
                 label="Type")
    assert ack["rev"] == 1 and ack["ops"] == [], ack
    assert_reports(ack.get("noop"), [rep("overwritten", P2, field="name", by="A")])
    s["B"].expect_nothing("history", since=0)
    s.check(with_fields(seed(), P2, name="Jo"))


# Three users -----------------------------------------------------------------------------------------

def test_case_02_three_users_by_names_the_latest_writer(hub, room):
    """Case 2 with a third writer: A red, B blonde, C gray; A's undo is overwritten by C (the latest)."""
    s = Scene(hub, room, seed=SEED)
    s.edit("A", [set_op(P1, "hairColor", "red")])
    s.sync("B")
    s.edit("B", [set_op(P1, "hairColor", "blonde")])
    s.sync("C")
    s.edit("C", [set_op(P1, "hairColor", "gray")])
    s.sync("A")
    u = s.undo("A")
    assert "rev" not in u and u["ops"] == []
    assert_reports(u["skipped"], [rep("overwritten", P1, field="hairColor", by="C")])
    # B's undo is overwritten by C as well; C's undo goes back to blonde (the value C replaced)
    u = s.undo("B")
    assert_reports(u["skipped"], [rep("overwritten", P1, field="hairColor", by="C")])
    u = s.undo("C")
    assert u["ops"] == [set_op(P1, "hairColor", "blonde")] and u["skipped"] == []
    s.check(with_fields(seed(), P1, hairColor="blonde"))


def test_case_04_three_users_concurrent_edits_on_removed_person(hub, room):
    """Case 4 with B and C both editing P2 from the old base: both are reported no-ops; A's undo
    brings P2 back as it was removed."""
    s = Scene(hub, room, seed=SEED)
    s.edit("A", [{"op": "remove", "tag": P2}], base=0)
    ack_b = s.edit("B", [set_op(P2, "hairColor", "red")], base=0)
    ack_c = s.edit("C", [{"op": "facialHair", "tag": P2, "style": "beard", "present": True},
                         set_op(P1, "eyeColor", "hazel")], base=0)
    assert ack_b["ops"] == [] and ack_b["rev"] == 1
    assert_reports(ack_b["noop"], [rep("targetRemoved", P2, by="A", maybe={"field": "hairColor"})])
    # C's batch changes P1, so it is a revision; the P2 part is left out and reported
    assert ack_c["rev"] == 2 and ack_c["ops"] == [set_op(P1, "eyeColor", "hazel")], ack_c
    assert_reports(ack_c.get("noop", []), [rep("targetRemoved", P2, by="A",
                                                maybe={"field": "facialHair", "style": "beard"})])
    s.sync("A")
    u = s.undo("A")
    assert u["rev"] == 3 and u["ops"] == [{"op": "insert", "at": 1, "person": SEED[1]}], u
    s.check(with_fields(seed(), P1, eyeColor="hazel"))

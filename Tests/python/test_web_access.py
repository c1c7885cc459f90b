"""The web page for people who use only a keyboard, a screen reader or high contrast (docs/WEB.md).

Each test here is a finding of an accessibility pass of the page (a helper, black box: keyboard only,
Chromium's accessibility tree through the DevTools protocol, forced colors), and fails on the page
before its fix. What a screen reader is told is read from the live regions the page writes to
(`#announcer`, `#teammates`, `#notice`, and each dialog's own `.dialog-live`); the focus from
`document.activeElement`. Fixtures, helpers and conventions are test_web.py's (nothing waits by
sleeping; every test checks the room itself through an observer's HubClient).
"""

from __future__ import annotations

import time

import pytest
from selenium.webdriver.common.keys import Keys

from conftest import unique_room
from pkclient import by_tag, person
from test_web import (RECONNECT_WAIT, ann_on_a_sqlite_hub, browsers, field_of, kill_hub_under,  # noqa: F401
                      observe, shots, wait_model)


def said(page, region: str) -> str:
    """What the live region `region` (a CSS selector) holds now, its spaces made one."""
    return page.js("const e = document.querySelector(arguments[0]); "
                   "return e ? e.textContent.replace(/\\s+/g, ' ').trim() : null;", region) or ""


def active(page) -> str:
    """The focused element, as `#id`, or `tag.class[data-rev=N]` inside a history row."""
    return page.js("""const e = document.activeElement;
        if (!e || e === document.body) return 'body';
        if (e.id) return '#' + e.id;
        const li = e.closest('li[data-rev]');
        return e.tagName.toLowerCase() + '.' + [...e.classList].join('.') + (li ? '[data-rev=' + li.dataset.rev + ']' : '');""")


def test_ctrl_z_in_find_a_person_undoes_the_typing_not_a_change_to_the_room(hub, room, browsers):
    """Ctrl+Z in "Find a person" took back ann's last change to the room (unsaid), not the letters
    she typed: only the name field was left its text undo. A field of typed text keeps it now. The
    barrier: an edit made after the Ctrl+Z is the room's next revision (it was the third)."""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(1)
    assert a.toggle("#glasses") is True
    wait_model(obs, lambda p: field_of(p, 1, "glasses") is True, "Ann's glasses on (rev 1)")
    a.wait_for(lambda p: (p.button("#undo") or {}).get("disabled") is False, "#undo enabled")

    a.click("#people-filter")
    a.keys("jo")
    a.keys("z", modifier=Keys.CONTROL)
    a.choose("hairColor", "red")
    people = wait_model(obs, lambda p: field_of(p, 1, "hairColor") == "red", "Ann's hair red (ann's next edit)")
    assert field_of(people, 1, "glasses") is True, f"Ctrl+Z in Find a person undid ann's glasses: {by_tag(people, 1)}"
    assert obs.rev == 2, f"the edit after the Ctrl+Z is revision 2, the room is at {obs.rev}"


def test_your_own_undo_redo_and_restore_are_said_to_a_screen_reader(hub, room, browsers):
    """A screen reader heard nothing when ann's own undo, redo or restore was done (only refusals and
    skips were said), though each changes what she is not looking at. #announcer says what it did, in
    the words a teammate's change is said in. Also: two timeline rows of one action on one person had
    the same "Restore to here: …" name; it says when and which revision now."""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(2)
    a.choose("hairColor", "red")
    wait_model(obs, lambda p: field_of(p, 2, "hairColor") == "red", "Joan's hair red")
    a.wait_for(lambda p: (p.button("#undo") or {}).get("disabled") is False, "#undo enabled")

    a.undo_key()
    a.wait_for(lambda p: said(p, "#announcer") == "You undid a change: Joan's hair color is now black",
               "#announcer saying what ann's undo did")
    a.keys("y", modifier=Keys.CONTROL)
    a.wait_for(lambda p: said(p, "#announcer") == "You redid a change: Joan's hair color is now red",
               "#announcer saying what ann's redo did")
    # The same words twice (undo, redo, undo) are a change of the region too, so they are read again.
    before = a.js("return document.getElementById('announcer').textContent;")
    a.undo_key()
    a.wait_for(lambda p: said(p, "#announcer") == "You undid a change: Joan's hair color is now black"
               and p.js("return document.getElementById('announcer').textContent;") != before,
               "#announcer saying the second undo again")

    # A restore from the timeline: said, with the revision it went back to.
    wait_model(obs, lambda p: field_of(p, 2, "hairColor") == "black", "Joan's hair black again")
    # Rows of the same action on the same person are told apart by their buttons' names (when, which).
    names = a.js("return [...document.querySelectorAll('#history-list button.restore-here')].map((b) => b.getAttribute('aria-label'));")
    assert len(set(names)) == len(names) and any(n.endswith("(revision 1)") for n in names), names
    a.click(a.history_row(1) + " button.restore-here")
    a.wait_for(lambda p: p.js("return document.getElementById('restore-dialog').open;"), "the restore question")
    a.click("#confirm-restore")
    wait_model(obs, lambda p: field_of(p, 2, "hairColor") == "red", "the room as it was after revision 1")
    a.wait_for(lambda p: said(p, "#announcer").startswith("You restored an earlier version"),
               "#announcer saying ann's restore")


def test_a_person_deleted_by_a_teammate_while_the_delete_question_is_open(hub, room, browsers):
    """With "Delete Joan?" open (a modal dialog: the page behind it is inert, and its live regions are
    not read), a teammate deleted Joan: the dialog went on asking, Delete did nothing and said nothing,
    and "observer: Joan was deleted" went to a region nobody heard. The question now says what
    happened and offers only Close (which has the focus if Delete had it), and the teammate's change
    is said inside the dialog."""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(2)
    a.click(a.row(2) + " .delete")
    a.wait_for(lambda p: p.js("return document.getElementById('confirm-dialog').open;"), "the delete question")
    assert said(a, "#confirm-text") == "Delete Joan? You can undo it."
    a.js("document.getElementById('confirm-delete').focus();")
    # Every text the dialog's region is given, in order (what a screen reader is told there).
    a.js("""window.__said = []; const live = document.querySelector('#confirm-dialog .dialog-live');
        new MutationObserver(() => window.__said.push(live.textContent.trim())).observe(live, {childList: true, characterData: true, subtree: true});""")

    obs.edit([{"op": "set", "tag": 3, "field": "glasses", "value": False}])
    a.wait_for(lambda p: said(p, "#confirm-dialog .dialog-live") == "observer: Sam no longer wears glasses",
               "a teammate's change said inside the open dialog")
    obs.edit([{"op": "remove", "tag": 2}])
    a.wait_for(lambda p: said(p, "#confirm-text") == "observer deleted Joan meanwhile: there is nothing to delete.",
               "the question saying Joan is gone")
    assert a.js("return document.getElementById('confirm-delete').hidden;") is True
    assert said(a, "#cancel-delete") == "Close" and active(a) == "#cancel-delete", active(a)
    # Said once, by the question (the teammate's "observer: Joan was deleted" said it a second time).
    a.wait_for(lambda p: "observer deleted Joan meanwhile: there is nothing to delete." in p.js("return window.__said;"),
               "the question's new words said in the dialog")
    assert not any("Joan was deleted" in t for t in a.js("return window.__said;")), a.js("return window.__said;")
    a.keys(Keys.ENTER)
    a.wait_for(lambda p: not p.js("return document.getElementById('confirm-dialog').open;"), "the dialog closed")
    assert obs.rev == 2, f"nothing more was done: the room is at {obs.rev}"


def test_the_delete_question_names_your_own_restore_in_another_tab(hub, room, browsers):
    """The same user's restore elsewhere (another tab, the terminal) took away the person the delete
    question asks about: it says "Your restore (elsewhere)", not "ann's restore" as if a teammate did
    it, nor "You (elsewhere)" as if it were a delete (a review, session 41; not tested until session 42)."""
    obs = observe(hub, room)
    kim = obs.new_tag()
    obs.edit([{"op": "insert", "at": 0, "person": person(kim, "Kim")}])
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(kim)
    a.click(a.row(kim) + " .delete")
    a.wait_for(lambda p: p.js("return document.getElementById('confirm-dialog').open;"), "the delete question")
    assert said(a, "#confirm-text") == "Delete Kim? You can undo it."
    other_tab = hub.join(room, "ann")
    other_tab.send({"type": "restore", "seq": 1, "rev": 0})
    assert other_tab.take("restored")["rev"] == 2
    a.wait_for(lambda p: said(p, "#confirm-text") == "Your restore (elsewhere) deleted Kim meanwhile: there is nothing to delete.",
               "the question naming ann's own restore elsewhere")
    assert a.js("return document.getElementById('confirm-delete').hidden;") is True


def test_arrow_keys_through_a_choice_are_one_undo_step(hub_factory, room, browsers):
    """Arrow keys on a closed choice change it at every press: four presses were four revisions and
    four undos. They are one coalesced step now, as typing a name is (the hub's coalesce window is
    made long here, so a slow machine does not split the run); a change a while later is a step of its
    own (a code review: queued edits with one key were merged however far apart)."""
    hub = hub_factory({"undo": {"coalesceMillis": 60000}})
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(2)
    start = a.value("select#hairColor")
    a.js("document.getElementById('hairColor').focus();")
    a.keys(Keys.ARROW_DOWN, Keys.ARROW_DOWN, Keys.ARROW_DOWN)
    moved = a.value("select#hairColor")
    assert moved != start, f"the arrows changed nothing ({start!r})"
    wait_model(obs, lambda p: field_of(p, 2, "hairColor") == moved, f"Joan's hair {moved}")
    assert obs.rev >= 2, f"the arrows made one revision ({obs.rev}): nothing to coalesce"
    a.wait_for(lambda p: (p.button("#undo") or {}).get("disabled") is False, "#undo enabled")
    a.undo_key()
    people = wait_model(obs, lambda p: field_of(p, 2, "hairColor") == start, f"one undo back to {start}")
    assert by_tag(people, 2)["hairColor"] == start
    # Only a quick run is one step: a choice changed again a while later (here 1.5 s, under the hub's
    # long window) is a step of its own (queued offline, such edits were merged however far apart).
    a.choose("hairColor", "red")
    wait_model(obs, lambda p: field_of(p, 2, "hairColor") == "red", "Joan's hair red")
    time.sleep(1.5)  # the user's pause between two changes: the scenario itself
    a.choose("hairColor", "blonde")
    wait_model(obs, lambda p: field_of(p, 2, "hairColor") == "blonde", "Joan's hair blonde")
    a.undo_key()
    wait_model(obs, lambda p: field_of(p, 2, "hairColor") == "red", "one undo back to red, not to the start")


def test_the_focus_on_a_timeline_row_comes_back_after_a_reconnect(hub_factory, room, browsers):
    """A keyboard user on a row's "Restore to here" when the hub went and came back was sent to the
    people list (the timeline is read again after a reconnect: its rows went, and the focus with
    them). The panel keeps the focus meanwhile and gives it back to the same button of that row."""
    hub, a = ann_on_a_sqlite_hub(hub_factory, room, browsers)
    for color in ("red", "blonde", "brown"):
        a.choose("hairColor", color)
    a.wait_for(lambda p: p.history_revs()[:4] == [3, 2, 1, 0], "the timeline's rows 3 to 0")
    target = a.history_row(2) + " button.restore-here"
    a.js("document.querySelector(arguments[0]).focus();", target)
    assert active(a) == "button.restore-here[data-rev=2]", active(a)

    kill_hub_under(hub, a)
    hub.restart(same_port=True)
    a.wait_for(lambda p: p.summary()["connection"] == "online", "online again", timeout=RECONNECT_WAIT)
    a.wait_for(lambda p: active(p) == "button.restore-here[data-rev=2]",
               "the focus back on revision 2's Restore to here")


def test_high_contrast_shows_the_selected_person_and_the_chosen_opinion(hub, room, browsers):
    """Forced colors (Windows high contrast) replace backgrounds and borders with the system's: the
    selected row and a topic's chosen like / neutral / dislike, told apart by background alone, looked
    like the others. They are marked in the system's colors. Also: a row's accessible name reads
    "Ann, brown …" (it was "Ann , brown …"), and "Only Ann"'s tooltip names her whole (a long name is
    cut with … in the button)."""
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(1)
    a.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "forced-colors", "value": "active"}]})
    assert a.js("return matchMedia('(forced-colors: active)').matches;") is True
    look = a.js("""
        const cs = (s) => getComputedStyle(document.querySelector(s));
        const row = (t) => cs('#people li[data-tag="' + t + '"]');
        const pressed = document.querySelector('.opinions button[aria-pressed="true"]');
        const other = pressed.parentElement.querySelector('button[aria-pressed="false"]');
        return {selected: row(1).outlineStyle + ' ' + row(1).outlineWidth, other: row(2).outlineStyle,
                pressed: getComputedStyle(pressed).backgroundColor, unpressed: getComputedStyle(other).backgroundColor,
                name: document.querySelector('#people li[data-tag="1"] .pick').getAttribute('aria-label')};""")
    assert look["selected"].startswith("solid") and look["other"] == "none", look
    assert look["pressed"] != look["unpressed"], look
    assert look["name"].startswith("Ann, "), look
    # "Only <name>" is cut with … when the name is long: its tooltip names the person whole.
    assert a.js("return document.getElementById('history-only').title;") == "Lists only the changes to Ann"


def test_a_teammate_s_typing_is_said_once_as_one_rename(hub, room, browsers):
    """The a11y pass of session 37: bob typing a name was said at his first letter ("bob: Joan is now
    called Joann") and then every 3 s as a summary ("5 changes by teammates; the last: …"), so one
    rename read as several. A teammate's typing is said once now, when it pauses, from the name before
    it to the name after; what ann sees (#activity) follows each letter. Another teammate's typing in
    the same name right after it is said after it, and bob's is said with the name he left (a review:
    the name at the moment it was said gave bob cat's letter); a change of another kind after them
    is said after them. A pause of the page's 1.5 s between two of bob's acks (a stalled machine)
    ends his run there by design: that attempt runs again in a new room, up to three times."""
    a = browsers(hub, "ann")
    for attempt in range(3):
        told = typing_told(hub, room if attempt == 0 else unique_room(f"typing-again-{attempt}"), a)
        if told is not None:
            break
    else:
        raise AssertionError("bob's acks came over a second apart on every attempt: a stalled machine")
    assert told == ["bob: Joan is now called Joanna Lee", "cat: Joanna Lee is now called Joanna Lee!",
                    "bob: Sam's hair color is now red"], told
    # A letter, and ann leaves the room before the pause: nothing is said of it later, nothing fails.
    bob = hub.join(a.room, "bob")
    bob.edit([{"op": "text", "tag": 3, "edits": [{"retain": 3}, {"insert": "m"}]}], label="Change Name", coalesce="name:3")
    a.wait_for(lambda p: "Samm" in said(p, "#activity"), "bob's letter on Sam shown")
    a.click("#leave")
    time.sleep(2.0)  # past the 1.5 s pause: the scenario itself
    assert not any("Samm" in t for t in a.js("return window.__said;")), a.js("return window.__said;")
    assert not a.console(), f"the page's console after leaving mid-typing: {a.console()}"
    bob.close()


def typing_told(hub, room: str, a) -> list | None:
    """ann's page in `room`; bob types "na Lee" after Joan, cat "!", then bob changes Sam's hair: what
    #teammates said, or None when two of bob's acks came more than 1.2 s apart (his run may have
    paused there, which the page ends a run at)."""
    a.open_room(room, "ann")
    a.room = room
    a.js("""window.__said = []; window.__shown = [];
        const live = document.getElementById('teammates'), shown = document.getElementById('activity');
        new MutationObserver(() => window.__said.push(live.textContent.replace(/\\s+/g, ' ').trim())).observe(
            live, {childList: true, characterData: true, subtree: true});
        new MutationObserver(() => window.__shown.push(shown.textContent)).observe(
            shown, {childList: true, characterData: true, subtree: true});""")
    bob = hub.join(room, "bob")
    cat = hub.join(room, "cat")
    try:
        name = "Joan"
        acked = [time.monotonic()]
        for letter in "na Lee":  # one letter after another, each waiting only for its ack (no page round trip)
            bob.edit([{"op": "text", "tag": 2, "edits": [{"retain": len(name)}, {"insert": letter}]}],
                     label="Change Name", coalesce="name:2")
            acked.append(time.monotonic())
            name += letter
        cat.sync(6)  # cat has bob's six letters
        cat.edit([{"op": "text", "tag": 2, "edits": [{"retain": len(name)}, {"insert": "!"}]}],
                 label="Change Name", coalesce="name:2")
        if max(later - earlier for earlier, later in zip(acked[1:], acked[2:])) > 1.2:
            return None
        a.wait_for(lambda p: any("Joanna Lee!" in t for t in p.js("return window.__said;")), "cat's typing said", timeout=8)
        shown = a.js("return window.__shown;")
        assert len({t for t in shown if "is now called" in t}) >= 2, f"#activity did not follow the letters: {shown}"
        bob.edit([{"op": "set", "tag": 3, "field": "hairColor", "value": "red"}], label="Change Hair Color")
        a.wait_for(lambda p: any("Sam's hair color is now red" in t for t in p.js("return window.__said;")),
                   "bob's next change said after it", timeout=8)
        return [t for t in a.js("return window.__said;") if t]
    finally:
        bob.close()
        cat.close()


def row_badge_box(page, tag: int) -> dict | None:
    """The border box of the `::after` (a teammate's name badge) of the list row of `tag`, as the
    DevTools protocol lays it out ({left, top, right, bottom}; None when it has none): a pseudo-element
    has no DOM rectangle to read from the page."""
    def find(node):
        attributes = node.get("attributes", [])
        if node.get("nodeName") == "LI" and dict(zip(attributes[::2], attributes[1::2])).get("data-tag") == str(tag):
            return next((p for p in node.get("pseudoElements", []) if p.get("pseudoType") == "after"), None)
        return next((found for child in node.get("children", []) if (found := find(child))), None)
    after = find(page.driver.execute_cdp_cmd("DOM.getDocument", {"depth": -1})["root"])
    return None if after is None else node_box(page, after["nodeId"])


def element_box(page, selector: str) -> dict:
    """The border box of `selector`'s element, as the DevTools protocol lays it out (row_badge_box's frame)."""
    root = page.driver.execute_cdp_cmd("DOM.getDocument", {"depth": 0})["root"]
    return node_box(page, page.driver.execute_cdp_cmd("DOM.querySelector",
                                                      {"nodeId": root["nodeId"], "selector": selector})["nodeId"])


def node_box(page, node_id: int) -> dict:
    """The border box of the DevTools protocol's node `node_id`: {left, top, right, bottom}."""
    quad = page.driver.execute_cdp_cmd("DOM.getBoxModel", {"nodeId": node_id})["model"]["border"]
    return {"left": min(quad[0::2]), "top": min(quad[1::2]), "right": max(quad[0::2]), "bottom": max(quad[1::2])}


@pytest.mark.parametrize("width", [1200, 390])
def test_a_teammate_s_name_on_a_changed_row_leaves_its_buttons_in_view(hub, room, browsers, width):
    """The a11y pass of session 37: the teammate's name a changed row wears for two seconds sat over the
    row's ↑ ↓ × (the name badge lets clicks through, but the buttons were hidden under it). It has a
    column of its own between the name and the buttons now, clear of both (a review: placed at the end
    of the name's cell, it covered a long name's end, the part a teammate types), on a wide window
    and on a phone's."""
    a = browsers(hub, "ann", width=width, height=900)
    a.open_room(room, "ann")
    a.select(1)
    bob = hub.join(room, "bob")
    bob.edit([{"op": "set", "tag": 2, "field": "name", "value": "Joan Antonia Ellington-Beauchamp"}], label="Rename")
    row = 'li[data-tag="2"]'
    a.wait_for(lambda p: p.js(f"return document.querySelector('{row}').classList.contains('changed');"),
               "Joan's row marked as changed by bob")
    badge = row_badge_box(a, 2)
    a.screenshot(f"1-bob-on-joan-s-row-{width}")
    assert badge is not None and badge["right"] > badge["left"], f"no name badge on Joan's row: {badge}"
    for button in ("button.move-up", "button.move-down", "button.delete"):
        box = element_box(a, f"{row} {button}")
        overlap = min(badge["right"], box["right"]) - max(badge["left"], box["left"])
        assert overlap <= 0, f"bob's name badge {badge} covers the row's {button} {box}"
    name = element_box(a, f"{row} .name")
    assert name["right"] <= badge["left"] + 0.5, f"bob's name badge {badge} covers the end of the name {name}"
    row_box = element_box(a, row)
    assert row_box["left"] <= badge["left"] and badge["right"] <= row_box["right"], (badge, row_box)
    bob.close()

"""The web client (docs/WEB.md), driven in headless Chromium against a real hub.

Written from docs/WEB.md, and especially its "Test hooks" table: the selectors and attributes there are
the contract these tests rely on. Each browser is a fresh headless Chromium with a profile of its own
(browser.py). Nothing waits by sleeping: every step polls the page (every 50 ms) until what a user would
see is there, or fails with what was awaited, a summary of the page's hooks, the browser console's
errors and a screenshot.

Every test also checks the room itself through an independent HubClient (pkclient.py), joined as a user
of its own (`observer`, who never edits), so a page that only draws the right thing does not pass.

Screenshots of the main states go to .build/web-screenshots/ under the repo (printed at the start of
the module's run; not committed). Rooms start from conftest's SEED: tag 1 Ann (brown hair, no glasses),
2 Joan (black hair, blue eyes), 3 Sam (glasses, beard), at revision 0. The session hub serves the web
client from its default web root, `Web/` (it runs from the repo root).

Binaries: the hub from conftest; PEOPLEKEEPER_CLIENT_BIN (default .build/debug/peoplekeeper) for the
terminal-client test; Chromium and chromedriver from browser.py. Needs `selenium` in the venv.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest

from browser import PeoplePage, query_of
from conftest import SEED, room_state, unique_room
from pkclient import by_tag, tags

from selenium.webdriver.common.keys import Keys

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CLIENT_BIN = os.environ.get("PEOPLEKEEPER_CLIENT_BIN", str(REPO / ".build" / "debug" / "peoplekeeper"))
SHOTS = REPO / ".build" / "web-screenshots"

POLL = 0.05             # seconds between two looks at the room
WAIT = 10.0             # default seconds to wait for the room to reach a state
RECONNECT_WAIT = 15.0   # a page retries with a backoff of up to 5 s
OBSERVER = "observer"   # the HubClient user that watches each room (never edits)
PHONE_WIDTH = 390       # CSS pixels of the emulated phone


# -- fixtures -----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def shots(request):
    """The screenshot folder (emptied of earlier runs' pictures), announced on the terminal even
    without -s (output capture is suspended for the line)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for old in SHOTS.glob("*.png"):
        old.unlink(missing_ok=True)  # another pytest worker may have taken it first
    say(request, f"web client screenshots: {SHOTS}")
    yield SHOTS
    say(request, f"web client screenshots: {SHOTS} ({len(list(SHOTS.glob('*.png')))} pictures)")


def say(request, line: str) -> None:
    capman = request.config.pluginmanager.getplugin("capturemanager")
    if capman is None:
        print(line)
        return
    with capman.global_and_fixture_disabled():
        print(f"\n{line}", flush=True)


@pytest.fixture
def browsers(request, shots):
    """A factory of headless Chromium pages on a hub: `browsers(hub, label)`; all quit at teardown."""
    made: list[PeoplePage] = []
    test = request.node.name.removeprefix("test_")[:60]

    def make(hub, label: str, **kw) -> PeoplePage:
        scheme = "https" if "tls" in hub.config else "http"
        b = PeoplePage(label, f"{scheme}://127.0.0.1:{hub.port}", shots, prefix=f"{test}-", **kw)
        made.append(b)
        return b

    yield make
    for b in made:
        b.quit()


# -- the room, independently --------------------------------------------------------------------------

def observe(hub, room: str):
    """A HubClient in the room as its own user; its model follows every revision anyone makes."""
    return hub.join(room, OBSERVER)


def wait_model(obs, pred, what: str, timeout: float = WAIT) -> list:
    """Read the observer's frames until its model satisfies `pred`; returns the people."""
    deadline = time.monotonic() + timeout
    while True:
        if obs.people is not None and pred(obs.people):
            return obs.people
        if time.monotonic() > deadline:
            raise AssertionError(f"the room never reached: {what}; at rev {obs.rev} it is {obs.people}")
        obs.pump(POLL)


def wait_presence(obs, pred, what: str, timeout: float = WAIT) -> list:
    deadline = time.monotonic() + timeout
    while True:
        if obs.presence is not None and pred(obs.presence):
            return obs.presence
        if time.monotonic() > deadline:
            raise AssertionError(f"the room's presence never reached: {what}; it is {obs.presence}")
        obs.pump(POLL)


def add_extras(obs, count: int) -> int:
    """Adds `count` people ("Extra 0", …) after the seed's three, in one revision; the last one's tag."""
    obs.edit([{"op": "insert", "at": 3 + i, "person": {**SEED[0], "tag": obs.new_tag(), "name": f"Extra {i}"}}
              for i in range(count)])
    return obs.people[-1]["tag"]


def field_of(people: list, tag: int, field: str):
    return by_tag(people, tag)[field]


def revisions_by(obs, author: str) -> list[dict]:
    """The `ops` broadcasts the observer received for `author`'s revisions, in order."""
    return [m for m in obs.log if m["type"] == "ops" and m.get("author") == author]


def last_label(obs, author: str, kind: str = "edit") -> str:
    frames = [m for m in revisions_by(obs, author) if m.get("kind") == kind]
    assert frames, f"no {kind} revision by {author} reached the observer: {obs.log[-6:]}"
    assert frames[-1].get("label"), f"{author}'s revision carries no label: {frames[-1]}"
    return frames[-1]["label"]


def room_log(hub, room: str) -> list[dict]:
    """The room's timeline over the hub's HTTP API (GET /v1/rooms/ROOM/log), newest first."""
    status, _, body = hub.http("GET", f"/v1/rooms/{room}/log")
    assert status == 200, (status, body)
    return json.loads(body)["entries"]


def undo_text_is(text: str):
    return lambda b: (lambda u: u if u and u["text"] == text and u["disabled"] is False else None)(b.button("#undo"))


def undo_disabled(b) -> bool:
    u = b.button("#undo")
    return bool(u) and u["disabled"] is True


def pk_set(hub, room: str, user: str, *args) -> subprocess.Popen:
    """Start `peoplekeeper set ARGS --url --room --user` (docs/CLIENT.md), without the client's own
    environment variables."""
    if not (os.path.isfile(CLIENT_BIN) and os.access(CLIENT_BIN, os.X_OK)):
        pytest.fail(f"no peoplekeeper client binary at {CLIENT_BIN}: build it, or set PEOPLEKEEPER_CLIENT_BIN",
                    pytrace=False)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PEOPLEKEEPER_URL", "PEOPLEKEEPER_ROOM", "PEOPLEKEEPER_USER")}
    argv = [CLIENT_BIN, "set", *[str(a) for a in args], "--url", f"ws://127.0.0.1:{hub.port}",
            "--room", room, "--user", user]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            stdin=subprocess.DEVNULL)


def ann_on_a_sqlite_hub(hub_factory, room: str, browsers):
    """A hub with SQLite storage (it can be killed and restarted with the room kept) and ann's page on
    it, online, with Ann (tag 1) selected."""
    hub = hub_factory({"storage": {"kind": "embedded", "path": "{workdir}/data/pk.sqlite"}})
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(1)
    return hub, a


def kill_hub_under(hub, page) -> None:
    """Kill the hub and wait for the page to say it is offline."""
    hub.kill()
    page.wait_for(lambda p: p.summary()["connection"] == "offline", '#connection[data-state="offline"] with the hub gone')


# JS: the accessible name of an element, in the ways a page gives one (aria-label, aria-labelledby,
# <label>, the text of a button / link / list item, title).
ACCESSIBLE_NAMES_JS = r"""
function accName(e) {
  const al = e.getAttribute('aria-label');
  if (al && al.trim()) return al.trim();
  const lb = e.getAttribute('aria-labelledby');
  if (lb) {
    const t = lb.split(/\s+/).map((id) => (document.getElementById(id) || {}).textContent || '').join(' ').trim();
    if (t) return t;
  }
  if (e.labels && e.labels.length) {
    const t = [...e.labels].map((l) => l.textContent).join(' ').replace(/\s+/g, ' ').trim();
    if (t) return t;
  }
  const role = e.getAttribute('role');
  if (['BUTTON', 'A', 'LI', 'SUMMARY', 'OPTION'].includes(e.tagName) || ['button', 'option', 'tab', 'link', 'listitem'].includes(role)) {
    const t = e.textContent.replace(/\s+/g, ' ').trim();
    if (t) return t;
  }
  const title = e.getAttribute('title');
  if (title && title.trim()) return title.trim();
  return '';
}
const out = [];
for (const sel of arguments[0]) {
  for (const e of document.querySelectorAll(sel)) {
    const id = e.id ? '#' + e.id : e.tagName.toLowerCase() + (e.className && typeof e.className === 'string' ? '.' + e.className.trim().split(/\s+/).join('.') : '') +
      (e.closest('[data-tag]') ? ' in [data-tag=' + e.closest('[data-tag]').getAttribute('data-tag') + ']' : '') +
      (e.closest('[data-topic]') ? ' in [data-topic=' + e.closest('[data-topic]').getAttribute('data-topic') + ']' : '');
    out.push([sel, id, accName(e)]);
  }
}
return out;
"""


# -- the tests ----------------------------------------------------------------------------------------

def test_a_change_in_one_browser_appears_live_in_the_other(hub, room, browsers):
    """ann joins through the join screen (room and user typed in, Join pressed: the address bar then
    says ?room=…&user=ann); bob opens the shared link /?room=R&user=bob, which joins at once. Both select
    Ann. The presence reaches the room (ann viewing Ann) and bob's page (#presence, and ann among the
    viewers on Ann's row). ann picks red in select#hairColor: bob's select shows red at once, with the
    `.changed` highlight by ann on Ann's row or field; the room has red at revision 1, labelled as
    ann's undo button says ("Undo Change Hair Color")."""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.join_with_form(room, "ann")
    a.screenshot("1-ann-joined")
    b = browsers(hub, "bob")
    b.open_room(room, "bob")
    assert b.wait_for(lambda p: p.q("#join") is None or not p.q("#join").is_displayed(),
                      "the join screen hidden once the shared link has joined")
    assert query_of(b.driver.current_url) == {"room": room, "user": "bob"}, b.driver.current_url

    a.select(1)
    b.select(1)
    assert a.value("select#hairColor") == "brown", f"Ann's seed hairColor is brown:\n{a.describe()}"
    wait_presence(obs, lambda us: any(u["user"] == "ann" and u.get("viewing") == 1 for u in us),
                  "ann viewing Ann (tag 1)")
    b.wait_for(lambda p: "ann" in (p.text('#people li[data-tag="1"] .viewers') or ""),
               "ann among the .viewers on Ann's row")
    b.wait_for(lambda p: "Ann" in (p.text('#presence li[data-user="ann"]') or ""),
               '#presence li[data-user="ann"] naming Ann (the person ann looks at)')

    a.choose("hairColor", "red")
    b.wait_for(lambda p: p.value("select#hairColor") == "red", "bob's select#hairColor showing ann's red")
    hits = b.wait_for(lambda p: p.changed_by("ann", 1),
                      'the .changed highlight with data-by="ann" on Ann\'s row or a field of the detail')
    b.screenshot("2-bob-sees-ann-s-change")
    assert hits, hits

    people = wait_model(obs, lambda p: field_of(p, 1, "hairColor") == "red", "Ann's hairColor red (ann's edit)")
    assert obs.rev == 1, f"one revision for one change, the room is at {obs.rev}"
    label = last_label(obs, "ann")
    assert label == "Change Hair Color", f"the label of a hair colour change (WEB.md's example): {label!r}"
    a.wait_for(undo_text_is(f"Undo {label}"), f'#undo enabled with the text "Undo {label}"')
    rev, people = room_state(hub, room)
    assert rev == 1 and field_of(people, 1, "hairColor") == "red", (rev, by_tag(people, 1))
    for p in (a, b):
        p.wait_for(lambda x: (x.peoplekeeper() or {}).get("revision") == 1, "window.peoplekeeper.revision == 1")


def test_an_undo_that_goes_on_to_an_older_step_names_the_step_it_undid(hub, room, browsers):
    """undo.cascade: ann changes Ann's hair (r1), then toggles Sam's glasses (r2); a teammate
    overwrites the glasses (r3). ann's Undo names the glasses toggle, which has nothing left to take
    back, so the hub goes on to the hair change and undoes that. #notice says what was undone and what
    was skipped: "Undid Change Hair Color. Skipped: your change to Sam's glasses was overwritten by bob."
    Before the fix it said "Undone, except: …", which read as the glasses step partly undone."""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(1)
    a.choose("hairColor", "red")
    wait_model(obs, lambda p: field_of(p, 1, "hairColor") == "red", "Ann red (ann, r1)")
    a.select(3)
    assert a.toggle("#glasses") is False
    wait_model(obs, lambda p: field_of(p, 3, "glasses") is False, "Sam without glasses (ann, r2)")
    hair = [m for m in obs.log if m["type"] == "ops" and m["rev"] == 1][-1].get("label")
    glasses = last_label(obs, "ann")
    bob = hub.join(room, "bob")
    bob.edit([{"op": "set", "tag": 3, "field": "glasses", "value": True}], label="Toggle Glasses")
    wait_model(obs, lambda p: field_of(p, 3, "glasses") is True and obs.rev == 3, "Sam's glasses on again (bob, r3)")
    a.wait_for(undo_text_is(f"Undo {glasses}"), f'#undo offering "Undo {glasses}"')

    a.click("#undo")
    said = f"Undid {hair}. Skipped: your change to Sam's glasses was overwritten by bob."
    a.wait_for(lambda p: p.text("#notice") == said, f"#notice saying {said!r}")
    people = wait_model(obs, lambda p: field_of(p, 1, "hairColor") == "brown", "Ann's hair back (the older step undone)")
    assert field_of(people, 3, "glasses") is True, f"bob's glasses kept: {by_tag(people, 3)}"


def test_undo_of_a_field_a_teammate_overwrote_is_skipped_with_a_notice_and_the_next_undo_works(hub, room, browsers):
    """ann changes Ann's hairColor (brown → red), bob overwrites it (red → blonde). ann presses Ctrl+Z
    (focus on the page, not in the name field): #notice names bob and says overwritten, both pages and
    the room keep bob's blonde, no revision is made, and ann's undo has nothing left (the hub consumed
    the entry). ann then toggles Sam's glasses (on → off): #undo offers that action by its label;
    clicking it puts the glasses back (on both pages and in the room) and leaves #undo disabled, with
    #redo offering the same label."""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    b = browsers(hub, "bob")
    b.open_room(room, "bob")
    a.select(1)
    b.select(1)

    a.choose("hairColor", "red")
    wait_model(obs, lambda p: field_of(p, 1, "hairColor") == "red", "Ann's hairColor red (ann's edit)")
    b.wait_for(lambda p: p.value("select#hairColor") == "red", "bob's page showing ann's red")
    b.choose("hairColor", "blonde")
    wait_model(obs, lambda p: field_of(p, 1, "hairColor") == "blonde", "Ann's hairColor blonde (bob's edit)")
    a.wait_for(lambda p: p.value("select#hairColor") == "blonde", "ann's page showing bob's blonde")
    a.wait_for(undo_text_is("Undo Change Hair Color"), '#undo offering "Undo Change Hair Color"')
    mark = obs.mark()

    a.undo_key()
    notice = a.wait_for(lambda p: (lambda t: t if t and "bob" in t and "overwritten" in t.lower() else None)(p.text("#notice")),
                        "#notice naming bob and saying overwritten (ann's undo was skipped)")
    a.screenshot("1-ann-s-skip-notice")
    assert "Ann" in notice, f"the notice names the person whose field was overwritten (Ann): {notice!r}"
    assert a.value("select#hairColor") == "blonde", f"ann's page must keep bob's blonde:\n{a.describe()}"
    a.wait_for(undo_disabled, "#undo disabled: the skipped entry was ann's only one")
    obs.expect_nothing("ops", since=mark)
    assert b.value("select#hairColor") == "blonde", f"bob's page must keep his blonde:\n{b.describe()}"
    rev, people = room_state(hub, room)
    assert rev == 2 and field_of(people, 1, "hairColor") == "blonde", \
        f"a skipped undo changes nothing: rev {rev}, Ann {by_tag(people, 1)}"

    # ann's other change, and its undo by the button.
    a.select(3)
    assert a.value("#glasses") is True, f"Sam wears glasses in the seed:\n{a.describe()}"
    assert a.toggle("#glasses") is False
    wait_model(obs, lambda p: field_of(p, 3, "glasses") is False, "Sam without glasses (ann's edit)")
    label = last_label(obs, "ann")
    a.wait_for(undo_text_is(f"Undo {label}"), f'#undo offering "Undo {label}"')
    assert "glasses" in label.lower(), f"the glasses toggle's label should say so: {label!r}"
    a.click("#undo")
    a.wait_for(lambda p: p.value("#glasses") is True, "Sam's glasses back on ann's page after #undo")
    people = wait_model(obs, lambda p: field_of(p, 3, "glasses") is True, "Sam's glasses back (ann's undo)")
    assert field_of(people, 1, "hairColor") == "blonde", f"ann's undo must keep bob's blonde: {by_tag(people, 1)}"
    a.wait_for(undo_disabled, "#undo disabled: nothing left to undo")
    redo = a.wait_for(lambda p: (lambda r: r if r and r["disabled"] is False else None)(p.button("#redo")),
                      "#redo enabled after the undo")
    assert redo["text"] == f"Redo {label}", f'#redo says "Redo {label}": {redo}'
    a.screenshot("2-ann-undid-glasses")
    b.select(3)
    b.wait_for(lambda p: p.value("#glasses") is True, "bob's page showing Sam's glasses back")
    rev, people = room_state(hub, room)
    assert rev == 4 and field_of(people, 3, "glasses") is True and field_of(people, 1, "hairColor") == "blonde", \
        (rev, people)


def test_after_a_reload_the_undo_button_still_offers_the_last_action_and_it_works(hub, room, browsers):
    """ann changes Joan's eyeColor (blue → green); #undo offers it. The page is reloaded (same URL, same
    user): it joins again, and #undo offers the same label (the history comes from the hub). Clicking it
    gives Joan blue eyes again, on the page and in the room, and #undo is then disabled."""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(2)
    assert a.value("select#eyeColor") == "blue", a.describe()
    a.choose("eyeColor", "green")
    wait_model(obs, lambda p: field_of(p, 2, "eyeColor") == "green", "Joan's eyes green (ann's edit)")
    label = last_label(obs, "ann")
    a.wait_for(undo_text_is(f"Undo {label}"), f'#undo offering "Undo {label}" before the reload')
    url = a.driver.current_url

    a.driver.refresh()
    a.wait_online()
    assert query_of(a.driver.current_url) == {"room": room, "user": "ann"}, a.driver.current_url
    a.wait_for(undo_text_is(f"Undo {label}"), f'#undo offering "Undo {label}" after the reload of {url}')
    a.screenshot("1-after-reload")
    a.click("#undo")
    wait_model(obs, lambda p: field_of(p, 2, "eyeColor") == "blue", "Joan's eyes blue again (ann's undo after the reload)")
    a.select(2)
    a.wait_for(lambda p: p.value("select#eyeColor") == "blue", "select#eyeColor back to blue for Joan")
    a.wait_for(undo_disabled, "#undo disabled: nothing left to undo")
    assert [m["kind"] for m in revisions_by(obs, "ann")] == ["edit", "undo"], revisions_by(obs, "ann")


def test_a_terminal_client_edit_appears_in_the_browser_with_a_new_face(hub, room, browsers):
    """ann's page shows Joan (black hair). `peoplekeeper set 2 hairColor white --user carol` runs: ann's
    select#hairColor shows white, Joan's row has the `.changed` highlight by carol, and both Joan's face
    in the list and the large face in the detail are redrawn (their SVG differs). The room agrees."""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(2)
    assert a.value("select#hairColor") == "black", a.describe()
    row_face = a.wait_for(lambda p: p.face_html(2), 'Joan\'s face (#people li[data-tag="2"] .face svg)')
    big_face = a.wait_for(lambda p: p.face_html(None), "the large face (#detail .face svg)")

    proc = pk_set(hub, room, "carol", 2, "hairColor", "white")
    try:
        a.wait_for(lambda p: p.value("select#hairColor") == "white", "select#hairColor showing carol's white")
        a.wait_for(lambda p: p.changed_by("carol", 2), 'the .changed highlight with data-by="carol" for Joan')
        a.screenshot("1-carol-s-change")
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, f"set exited {proc.returncode}: {out} {err}"
    a.wait_for(lambda p: p.face_html(2) not in (None, row_face), "Joan's face in the list redrawn (its SVG changed)")
    a.wait_for(lambda p: p.face_html(None) not in (None, big_face), "the large face redrawn (its SVG changed)")
    people = wait_model(obs, lambda p: field_of(p, 2, "hairColor") == "white", "Joan's hair white (carol's edit)")
    assert [m["author"] for m in revisions_by(obs, "carol")] == ["carol"], obs.log[-4:]
    assert field_of(people, 2, "hairLength") == "long", by_tag(people, 2)


def ann_and_bob_typing(hub_factory, room, browsers):
    """A hub whose coalesce window is a minute (a loaded machine does not split a typed run into two
    undo steps), an observer, and ann's and bob's pages in `room`: (hub, obs, ann's page, bob's page)."""
    hub = hub_factory({"undo": {"coalesceMillis": 60000}})
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    b = browsers(hub, "bob")
    b.open_room(room, "bob")
    return hub, obs, a, b


def test_typing_a_name_shows_live_and_undoes_as_one_step(hub_factory, room, browsers):
    """ann and bob look at Joan. ann types `xy` at the end of #name: bob's list row and #name show
    `Joanxy`, and so does the room (each revision ann made is a text edit on Joan). One Ctrl+Z with
    the focus outside the field gives `Joan` back everywhere: all the typed characters are one undo
    step, and #undo is then disabled. (The page sends `y` once `x` is acked: this hub's coalesce
    window is a minute, so a loaded machine does not split the run.)"""
    hub, obs, a, b = ann_and_bob_typing(hub_factory, room, browsers)
    a.select(2)
    b.select(2)
    name = a.must("#name")
    assert name.tag_name == "input" and a.value("#name") == "Joan", a.describe()

    a.click(name)
    name.send_keys(Keys.END, "x", "y")
    a.wait_for(lambda p: p.value("#name") == "Joanxy", "#name `Joanxy` on ann's page")
    b.wait_for(lambda p: p.value("#name") == "Joanxy" and "Joanxy" in (p.text('#people li[data-tag="2"]') or ""),
               "bob's #name and Joan's row showing `Joanxy`")
    b.screenshot("1-bob-sees-typing")
    wait_model(obs, lambda p: field_of(p, 2, "name") == "Joanxy", "Joan renamed Joanxy")
    edits = revisions_by(obs, "ann")
    assert edits and all(op["op"] == "text" and op["tag"] == 2 for m in edits for op in m["ops"]), \
        f"typing sends text edits on Joan: {edits}"

    a.undo_key()
    a.wait_for(lambda p: p.value("#name") == "Joan", "#name back to `Joan` after one Ctrl+Z")
    wait_model(obs, lambda p: field_of(p, 2, "name") == "Joan", "Joan's name back after one undo")
    b.wait_for(lambda p: p.value("#name") == "Joan" and "Joanxy" not in (p.text('#people li[data-tag="2"]') or ""),
               "bob's page back to `Joan`")
    a.wait_for(undo_disabled, "#undo disabled: the typing was one undo step")
    undos = [m for m in revisions_by(obs, "ann") if m["kind"] == "undo"]
    assert len(undos) == 1, f"one undo revision for the whole typing: {undos}"
    _, people = room_state(hub, room)
    assert field_of(people, 2, "name") == "Joan", by_tag(people, 2)


def ann_in_joans_name(hub, room, browsers, caret: int):
    """An observer, bob, and ann's page with Joan selected and the caret in her name at `caret`."""
    obs = observe(hub, room)
    bob = hub.join(room, "bob")
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(2)
    a.js("const n = document.querySelector('#name'); n.focus(); n.setSelectionRange(arguments[0], arguments[0]);", caret)
    return obs, bob, a


def test_a_burst_of_teammates_revisions_is_drawn_once_a_frame_and_keeps_the_caret(hub, room, browsers):
    """A render costs milliseconds in a big room (docs/PERFORMANCE.md) and the page drew once per
    message, so a burst of teammates' revisions drew it once each. Now the messages that come before
    a frame are drawn in it, once. bob sends 40 revisions at once, each typing `x` before Joan's name
    and `y` after it, while ann's caret is in that name after `Jo`: ann's editor changes in far fewer
    steps than 40, ends at the last revision, and her caret is after `Jo` still (after the 40 `x`s): the
    text edits drawn in one frame are followed one after the other (taken as one replaced stretch, the
    caret went to the end)."""
    obs, bob, a = ann_in_joans_name(hub, room, browsers, caret=2)
    # The editor's changes (one MutationObserver callback per task that changed it) and the frames the
    # page went through meanwhile: drawn once a frame, the first are at most the second (and a few of
    # the page's own direct renders); drawn once a message, they were 40 in a handful of frames.
    a.js("window.__drawn = 0; window.__frames = 0; window.__counting = true;"
         "(function count() { if (!window.__counting) return; window.__frames += 1; requestAnimationFrame(count); })();"
         "new MutationObserver(() => { window.__drawn += 1; })"
         ".observe(document.querySelector('#detail'), {subtree: true, childList: true, attributes: true, characterData: true});")
    burst = 40
    base = bob.rev
    for i in range(burst):
        length = 4 + 2 * i    # "x" * i + "Joan" + "y" * i
        bob.submit([{"op": "text", "tag": 2, "edits": [{"insert": "x"}, {"retain": length}, {"insert": "y"}]}],
                   base=base + i)
    for _ in range(burst):
        assert "rev" in bob.take("ack"), bob
    final = "x" * burst + "Joan" + "y" * burst
    wait_model(obs, lambda p: field_of(p, 2, "name") == final, "Joan's name after bob's 40 revisions")
    a.wait_for(lambda p: p.value("#name") == final, f"#name {final!r} on ann's page")
    drawn, frames = a.js("window.__counting = false; return [window.__drawn, window.__frames];")
    assert drawn <= frames + 3 and drawn < burst, \
        f"ann's editor changed in {drawn} steps for {burst} messages, in {frames} frames"
    caret = a.js("const n = document.querySelector('#name');"
                 "return [document.activeElement === n, n.selectionStart, n.selectionEnd];")
    assert caret == [True, burst + 2, burst + 2], f"ann's caret (focused, start, end): {caret}"


def test_a_page_hidden_with_a_frame_booked_keeps_drawing_teammates_revisions(hub, room, browsers):
    """The page draws in the next animation frame, and a hidden page gets none: a page hidden while a
    frame was booked drew nothing until shown again, every later render waiting behind the booked one
    (a tab in the background, a minimised window). Now a hidden page draws from a task, the booked
    frame's render included. ann's page books a frame for bob's first rename (its frames are held, as
    a browser holds them in the moment before the tab goes), then ann opens another tab; bob renames
    Joan twice more. Watched from that other tab (a BroadcastChannel, so ann's page stays hidden): her
    list shows each name while hidden, the last one included."""
    bob = hub.join(room, "bob")
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    # Hold the page's animation frames (booked, not run, as for a page about to be hidden); note each
    # name Joan's row shows, with whether the page was hidden, and say it on a channel the other tab
    # hears (reading the page itself from the test would show it). The hold starts once no frame the
    # page booked is pending (a render booked for a message before it would draw bob's rename too,
    # with no frame held: seen under load): frames booked before these hooks have run after two
    # frames, and those booked since are counted.
    a.js("""const raf = window.requestAnimationFrame.bind(window), caf = window.cancelAnimationFrame.bind(window);
      window.__held = new Map(); window.__pending = new Set(); let next = 1e9;
      window.requestAnimationFrame = (fn) => {
        if (window.__holdFrames) { window.__held.set(next, fn); return next++; }
        const id = raf((t) => { window.__pending.delete(id); fn(t); });
        window.__pending.add(id);
        return id;
      };
      window.cancelAnimationFrame = (id) => { window.__pending.delete(id); if (!window.__held.delete(id)) caf(id); };
      const channel = new BroadcastChannel('pk-test'), name = document.querySelector('#people li[data-tag="2"] .name');
      window.__drawn = [];
      channel.onmessage = (e) => { if (e.data === 'visibility?') channel.postMessage(['visibility', document.visibilityState]); };
      new MutationObserver(() => { const seen = [name.textContent, document.visibilityState]; window.__drawn.push(seen); channel.postMessage(seen); })
        .observe(name, {subtree: true, childList: true, characterData: true});""")
    a.js("return new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))")
    a.wait_for(lambda p: p.js("if (window.__pending.size) return false; window.__holdFrames = true; return true"),
               "no frame of the page's pending, frames held from now")
    names = ["Joan B", "Joan C", "Joan D"]
    bob.submit([{"op": "text", "tag": 2, "edits": [{"retain": 4}, {"insert": " B"}]}])
    assert "rev" in bob.take("ack"), bob
    a.wait_for(lambda p: p.js("return window.peoplekeeper.revision") == bob.rev,
               f"ann's page took bob's revision {bob.rev} (its render is booked for a frame)")
    held = a.js("return [window.__held.size, document.querySelector('#people li[data-tag=\"2\"] .name').textContent]")
    assert held[0] >= 1 and held[1] == "Joan", f"a frame booked for bob's rename, not drawn yet: {held}"
    first = a.driver.current_window_handle
    a.driver.switch_to.new_window("tab")
    a.driver.get(a.base + "/healthz")  # the hub's origin, for the channel
    a.js("window.__seen = []; window.__channel = new BroadcastChannel('pk-test');"
         "window.__channel.onmessage = (e) => window.__seen.push(e.data); window.__channel.postMessage('visibility?');")
    a.wait_for(lambda p: ["visibility", "hidden"] in p.js("return window.__seen"), "ann's first page hidden")
    for before, after in zip(names, names[1:]):
        bob.submit([{"op": "text", "tag": 2, "edits": [{"delete": len(before)}, {"insert": after}]}])
        assert "rev" in bob.take("ack"), bob
    try:
        a.wait_for(lambda p: [name for name, _ in p.js("return window.__seen")][-1:] == names[-1:],
                   f"ann's hidden page drew {names[-1]!r}")
    finally:
        a.driver.close()
        a.driver.switch_to.window(first)
    drawn = a.js("return window.__drawn")  # in order, from before the other tab listened
    assert drawn[0] == ["Joan B", "hidden"] and drawn[-1] == ["Joan D", "hidden"] \
        and all(state == "hidden" for _, state in drawn), \
        f"ann's page drew bob's first rename (its booked frame's) and the rest while hidden: {drawn}"


def test_a_key_typed_as_the_person_is_deleted_does_not_land_on_the_next_person(hub, room, browsers):
    """WEB.md: a teammate deleting the person you are typing in sends the focus to the list, and what
    you type next never lands on the next person. Here in the render done just before a key (a render
    is booked for the next frame, ann's frames are held, her key comes first): the focus goes to Sam's
    row and the key is not typed into Sam's name. (A black-box pass saw keys land in the next name
    with teammates editing: its script sent each key to the element that had been focused a moment
    before, and WebDriver focuses that element again first; sent to whatever has the focus, as a
    keyboard does, none did, 3 runs of 3.)"""
    obs, bob, a = ann_in_joans_name(hub, room, browsers, caret=4)
    a.js("window.__holdFrames = true; const raf = window.requestAnimationFrame.bind(window);"
         "window.requestAnimationFrame = (fn) => window.__holdFrames ? 0 : raf(fn);")
    bob.edit([{"op": "remove", "tag": 2}], label="Delete Person")
    a.wait_for(lambda p: p.js("return window.peoplekeeper.revision") == bob.rev,
               "ann's page took bob's deletion (its render waits for a frame)")
    a.driver.switch_to.active_element.send_keys("x")
    a.wait_for(lambda p: p.js("return document.activeElement.closest('#people li')?.dataset.tag") == "3",
               "the focus on Sam's row in the list")
    time.sleep(0.5)
    marker = bob.edit([{"op": "set", "tag": 1, "field": "glasses", "value": True}])["rev"]
    people = wait_model(obs, lambda p: by_tag(p, 1)["glasses"] is True, "bob's later edit")
    assert by_tag(people, 3)["name"] == "Sam" and marker == 2, \
        f"nothing typed into Sam's name: {by_tag(people, 3)['name']!r}, bob's later edit at rev {marker}"
    assert "bob deleted Joan. Sam is selected now." in (a.text("#notice") or ""), a.describe()


def test_an_edit_skipped_as_a_teammate_s_restore_removes_its_person_is_said_with_the_new_selection(hub, room, browsers):
    """bob adds Kim (r1); ann's page, through a proxy, selects her. bob restores the room to how it
    began (r2: Kim goes) while what the hub sends ann is held; ann picks a hair color for Kim, which
    the hub answers as not made (Kim was deleted by bob's restore). Both frames reach ann's page in one
    read, so one render says both: the skip notice, then which person is selected now. The notice was
    replaced by "bob deleted Kim. Sam is selected now.", and the skip was said only under Recent
    notices (a black-box pass, session 40); a restore's removal is said as the restore's too."""
    from stallproxy import StallProxy
    from types import SimpleNamespace
    obs = observe(hub, room)
    bob = hub.join(room, "bob")
    kim = bob.new_tag()
    bob.edit([{"op": "insert", "at": 3, "person": {**SEED[0], "tag": kim, "name": "Kim"}}], label="Add Person")
    proxy = StallProxy(hub.port)
    try:
        a = browsers(SimpleNamespace(port=proxy.port, config=hub.config), "ann")
        a.open_room(room, "ann")
        a.select(kim)
        a.js("document.querySelector('select#hairColor').focus()")
        proxy.hold_down()
        bob.send({"type": "restore", "seq": bob.seq + 1, "rev": 0})
        bob.seq += 1
        assert bob.take("restored")["rev"] == 2
        a.choose("hairColor", "red")
        deadline = time.monotonic() + WAIT
        while b'"ack"' not in proxy.held_down():
            assert time.monotonic() < deadline, f"the hub's answer to ann's edit never came: {proxy.held_down()[-300:]!r}"
            time.sleep(0.05)
        proxy.release_down()
        # (Both frames come in one read; a loaded machine may still draw a frame between the two
        # messages: then the selection is said first and the skip after it, which is shown too.)
        skip = "Your change was not made: Kim was deleted by bob's restore."
        said = "bob's restore deleted Kim. Sam is selected now."

        def settled(p):  # drawn: Sam selected, and the skip shown (not replaced)
            # One script reads both: the skip is put up when its frame is read and the selection is
            # added at the next render, which may fall between two separate reads (a fresh-clone run
            # saw the notice before that render and the name after it).
            t, name = p.js("return [(document.querySelector('#notice')?.textContent ?? '')"
                           ".replace(/\\s+/g, ' ').trim(), document.querySelector('#name').value]")
            return t if name == "Sam" and t.startswith(skip) else None
        notice = a.wait_for(settled, "the skip notice shown, not replaced, with Sam selected")
        log = a.js("return [...document.querySelectorAll('#notice-log li')].map((li) => li.textContent.trim())")
        assert sum(entry.startswith(skip) for entry in log) == 1, f"the skip logged once: {log}"
        # One read, one render: the selection is added to the skip. Two frames: it was said first.
        assert notice == skip + " Sam is selected now." or (notice == skip and said in log), (notice, log)
    finally:
        proxy.close()


def test_the_selected_row_stays_in_place_when_a_teammate_moves_the_top_row_in_view(hub, room, browsers):
    """A black-box pass: a teammate moving the row at the top of the list's view far down made the list
    scroll after it (the browser's scroll anchor is the first row in view), and the selected person
    left the view, every time. Now the list keeps the selected row where it is on the screen."""
    obs = observe(hub, room)
    add_extras(obs, 37)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    tags = [p["tag"] for p in obs.people]
    chosen = tags[20]
    a.js(f"""document.querySelector('#people li[data-tag="{chosen}"]').scrollIntoView({{block: 'center'}})""")
    a.select(chosen)
    where = f"""const list = document.querySelector('#people'), box = list.getBoundingClientRect();
        const rows = [...list.querySelectorAll('li')].filter((li) => {{ const r = li.getBoundingClientRect(); return r.top >= box.top - 1 && r.bottom <= box.bottom + 1; }});
        const me = list.querySelector('li[data-tag="{chosen}"]').getBoundingClientRect();
        return {{top: Number(rows[0].dataset.tag), offset: Math.round(me.top - box.top), inView: me.top >= box.top && me.bottom <= box.bottom}};"""
    before = a.js(where)
    assert before["inView"] and before["top"] != chosen, before
    obs.edit([{"op": "move", "tag": before["top"], "to": len(tags) - 1}])
    a.wait_for(lambda p: p.list_tags()[-1] == before["top"], "the top row in view moved to the end")
    after = a.js(where)
    assert after["inView"] and abs(after["offset"] - before["offset"]) <= 2, \
        f"the selected row where it was on the screen: before {before}, after {after}"


def test_a_row_lit_out_of_view_fades_from_where_it_is_when_scrolled_in(hub, room, browsers):
    """A row out of view skips its contents (content-visibility), and the fade of a teammate's change
    runs in them (docs/PERFORMANCE.md "Only the rows in view fade"): a row lit out of view and scrolled
    in 1.2 s later faded from the start there, at full strength, and vanished when the mark ended (a
    code review found it; the badge did so before that too). Now it fades from where it is by then:
    its wash and badge are past the time it waited, not at the start. (It waits 0.8 s here: the mark
    ends at 2 s, and on a loaded machine the reads after the wait took much of what 1.2 s left.)"""
    obs = observe(hub, room)
    last = add_extras(obs, 60)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    assert a.js(f"""const r = document.querySelector('#people li[data-tag="{last}"]').getBoundingClientRect(),
        list = document.querySelector('#people').getBoundingClientRect(); return r.top > list.bottom;"""), \
        "the last row is below the list's fold"
    obs.edit([{"op": "set", "tag": last, "field": "glasses", "value": True}])
    a.wait_for(lambda p: p.js(f"""return document.querySelector('#people li[data-tag="{last}"]').dataset.by""") == OBSERVER,
               "the last row lit by the observer, out of view")
    lit = time.monotonic()
    time.sleep(0.8)
    a.js(f"""document.querySelector('#people li[data-tag="{last}"]').scrollIntoView({{block: 'center'}})""")
    time.sleep(0.2)  # a frame or two: the row's contents are made, their animations with them
    fades = a.js(f"""const r = document.querySelector('#people li[data-tag="{last}"]');
        return document.getAnimations().filter((x) => x.effect && x.effect.target === r && x.effect.pseudoElement)
          .map((x) => [x.effect.pseudoElement, x.effect.getComputedTiming().progress]);""")
    waited = 1000 * (time.monotonic() - lit)
    # 0.8 s of a 2 s fade is 0.4 of it; from the start, it was under 0.15.
    assert sorted(p for p, _ in fades) == ["::after", "::before"] and all(t is not None and t >= 0.3 for _, t in fades), \
        f"the wash and badge of a row lit {waited:.0f} ms ago, scrolled in: {fades} (pseudo-element, part of the fade done)"


def test_a_topic_moves_in_one_click_and_undo_on_this_person_takes_back_only_that_person(hub, room, browsers):
    """Ann dislikes weather in the seed: on ann's page the weather dislike button is pressed. One click
    on its like button moves weather from Ann's dislikes to her likes (one revision; aria-pressed moves
    to like). ann then gives Joan a beard (#facialHair-beard). Back on Ann, #undo-person takes back
    ann's newest change to Ann (the topic), not the beard on Joan, which is her newest change overall."""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(1)
    pressed = lambda p, topic: p.js("""return [...document.querySelectorAll('[data-topic="' + arguments[0] + '"] button[data-opinion]')]
        .filter((b) => b.getAttribute('aria-pressed') === 'true').map((b) => b.getAttribute('data-opinion'));""", topic)
    assert pressed(a, "weather") == ["dislike"], f"Ann dislikes weather in the seed: {pressed(a, 'weather')}"
    assert pressed(a, "sports") == ["none"], f"Ann is neutral on sports: {pressed(a, 'sports')}"

    a.click('[data-topic="weather"] button[data-opinion="like"]')
    a.wait_for(lambda p: pressed(p, "weather") == ["like"], 'aria-pressed="true" on weather\'s like button only')
    people = wait_model(obs, lambda p: "weather" in field_of(p, 1, "likes"), "Ann likes weather")
    assert "weather" not in field_of(people, 1, "dislikes") and obs.rev == 1, \
        f"one click, one revision, weather out of the dislikes: rev {obs.rev}, Ann {by_tag(people, 1)}"

    a.select(2)
    assert a.toggle("#facialHair-beard") is True
    wait_model(obs, lambda p: field_of(p, 2, "facialHair") == ["beard"], "Joan with a beard")
    a.select(1)
    a.click("#undo-person")
    people = wait_model(obs, lambda p: "weather" in field_of(p, 1, "dislikes"), "Ann dislikes weather again (#undo-person)")
    assert field_of(people, 1, "likes") == [] and field_of(people, 2, "facialHair") == ["beard"], \
        f"#undo-person on Ann takes back only ann's change to Ann: {people}"
    a.wait_for(lambda p: pressed(p, "weather") == ["dislike"], "weather's dislike button pressed again")
    undo = a.wait_for(lambda p: (lambda u: u if u and u["disabled"] is False else None)(p.button("#undo")),
                      "#undo still enabled (the beard is left to undo)")
    assert "facial hair" in undo["text"].lower() or "beard" in undo["text"].lower(), \
        f"#undo offers the beard, ann's remaining change: {undo}"
    assert [m["kind"] for m in revisions_by(obs, "ann")] == ["edit", "edit", "undo"], revisions_by(obs, "ann")


def test_offline_edits_wait_and_reach_the_hub_when_it_is_back(hub_factory, room, browsers):
    """A hub with SQLite storage. ann's page is online; the hub is killed: #connection says offline.
    ann changes Ann's hairColor (→ red) and glasses (→ on): the page shows both at once, and #waiting
    says 2. The hub restarts on the same port and storage: the page is online again with #waiting
    empty, a HubClient sees both edits, and ann's #undo (the glasses toggle, her last action) takes back
    only the glasses."""
    hub, a = ann_on_a_sqlite_hub(hub_factory, room, browsers)
    kill_hub_under(hub, a)

    a.choose("hairColor", "red")
    assert a.toggle("#glasses") is True
    a.wait_for(lambda p: (p.text("#waiting") or "") == "2", "#waiting saying 2 (two changes made offline)")
    s = a.summary()
    assert s["connection"] != "online" and s["hairColor"] == "red" and s["glasses"] is True, s
    # The values shown are ann's, not yet the hub's: their writer says so, not the seed's.
    assert [(a.writer(k) or {}).get("text") for k in ("hairColor", "glasses", "eyeColor")] == \
        ["you · waiting", "you · waiting", "from the start"], [a.writer(k) for k in ("hairColor", "glasses", "eyeColor")]
    # Undo is offered offline too: it waits behind the queued edits and undoes the last one.
    offline_undo = a.button("#undo")
    assert offline_undo and offline_undo["disabled"] is False and "glasses" in offline_undo["text"].lower(), \
        f"#undo while offline with edits waiting: {offline_undo}"
    a.screenshot("1-offline-with-2-waiting")

    hub.restart(same_port=True)
    a.wait_for(lambda p: (lambda s: s["connection"] == "online" and not s["waiting"])(p.summary()),
               "#connection online and #waiting empty after the hub came back", timeout=RECONNECT_WAIT)
    a.screenshot("2-back-online")
    obs = observe(hub, room)
    ann = by_tag(obs.people, 1)
    assert (ann["hairColor"], ann["glasses"]) == ("red", True), \
        f"both offline edits must reach the hub: Ann is {ann} at rev {obs.rev}"
    assert a.value("select#hairColor") == "red" and a.value("#glasses") is True, a.describe()

    # ann's last action (made offline) is hers to undo, by its label, after the reconnect.
    undo = a.wait_for(lambda p: (lambda u: u if u and u["disabled"] is False and u["text"].startswith("Undo ")
                                 and "glasses" in u["text"].lower() else None)(p.button("#undo")),
                      "#undo offering the glasses toggle made offline")
    a.click("#undo")
    a.wait_for(lambda p: p.value("#glasses") is False, f"Ann's glasses off again after {undo['text']!r}")
    people = wait_model(obs, lambda p: field_of(p, 1, "glasses") is False, "Ann's glasses undone after the reconnect")
    assert field_of(people, 1, "hairColor") == "red", f"the undo takes back only the glasses: {by_tag(people, 1)}"


def test_offline_the_undo_label_names_the_queued_edit_the_next_press_takes_back(hub_factory, room, browsers):
    """ann changes Ann's eye color (acked by the hub), then, offline, her hair color and her glasses.
    #undo offers "Undo Toggle Glasses"; once pressed, it offers "Undo Change Hair Color": the queued
    edit the next press takes back (it named the acked eye color change). Pressed again, it offers
    the eye color. Back online, the hub has taken back exactly what the labels said: the hair color
    and the glasses, not the eye color.
    Before the fix: after the first press #undo said "Undo Change Eye Color"."""
    hub, a = ann_on_a_sqlite_hub(hub_factory, room, browsers)
    a.choose("eyeColor", "green")
    a.wait_for(undo_text_is("Undo Change Eye Color"), "#undo offering the eye color change once acked")
    a.wait_online()
    kill_hub_under(hub, a)
    a.choose("hairColor", "red")
    assert a.toggle("#glasses") is True
    a.wait_for(undo_text_is("Undo Toggle Glasses"), "#undo offering the glasses, the last queued edit")
    a.click("#undo")
    a.wait_for(undo_text_is("Undo Change Hair Color"),
               "#undo offering the hair color (queued, next to be taken back) after one press")
    a.screenshot("1-offline-undo-offers-the-next-queued-edit")
    a.click("#undo")
    a.wait_for(undo_text_is("Undo Change Eye Color"), "#undo offering the eye color after the second press")

    hub.restart(same_port=True)
    a.wait_for(lambda p: (lambda s: s["connection"] == "online" and not s["waiting"])(p.summary()),
               "#connection online and #waiting empty after the hub came back", timeout=RECONNECT_WAIT)
    obs = observe(hub, room)
    ann = by_tag(obs.people, 1)
    assert (ann["eyeColor"], ann["hairColor"], ann["glasses"]) == ("green", "brown", False), \
        f"the two undos took back the glasses and the hair color, not the eye color: {ann}"
    a.wait_for(undo_text_is("Undo Change Eye Color"), "#undo still offering the eye color, online")


def test_offline_an_undo_and_a_redo_of_a_queued_edit_show_at_once(hub_factory, room, browsers):
    """ann's page, offline (the hub killed): she changes Ann's hair color (→ red) and turns her glasses
    on, then presses Undo twice: each press shows at once what it takes back (the glasses off, then the
    hair brown again) while the hub is still away, and Redo puts the red hair back at once. The status
    line keeps the five requests ("Your 2 changes, 2 undos and 1 redo are kept…"). When the hub is back
    the room is what the page showed (red hair, no glasses), made by ann's two edits, two undos and a
    redo, and the page still shows it.
    Before the change: the page showed nothing of an undo or a redo until the hub answered it."""
    hub, a = ann_on_a_sqlite_hub(hub_factory, room, browsers)
    kill_hub_under(hub, a)
    a.choose("hairColor", "red")
    assert a.toggle("#glasses") is True
    a.wait_for(undo_text_is("Undo Toggle Glasses"), "#undo offering the glasses toggle made offline")

    a.click("#undo")
    a.wait_for(lambda p: p.value("#glasses") is False, "Ann's glasses off at once, with the hub away", timeout=10)
    assert a.value("select#hairColor") == "red", a.describe()
    a.wait_for(undo_text_is("Undo Change Hair Color"), "#undo offering the hair color next")
    a.click("#undo")
    a.wait_for(lambda p: p.value("select#hairColor") == "brown", "Ann's hair brown again at once", timeout=10)
    a.wait_for(lambda p: (lambda r: r if r and r["text"] == "Redo Change Hair Color" and r["disabled"] is False
                          else None)(p.button("#redo")), "#redo offering the hair color")
    a.click("#redo")
    a.wait_for(lambda p: p.value("select#hairColor") == "red", "Ann's hair red again at once", timeout=10)
    assert a.value("#glasses") is False, a.describe()
    assert a.summary()["connection"] != "online", "all of it shown before the hub was back"
    kept = "Your 2 changes, 2 undos and 1 redo are kept and sent when it is back."
    a.wait_for(lambda p: kept in (p.text("#connection-detail") or ""), f"#connection-detail saying {kept!r}")
    a.screenshot("1-offline-undo-and-redo-shown-at-once")

    hub.restart(same_port=True)
    a.wait_for(lambda p: (lambda s: s["connection"] == "online" and not s["waiting"])(p.summary()),
               "#connection online and #waiting empty after the hub came back", timeout=RECONNECT_WAIT)
    obs = observe(hub, room)
    ann = by_tag(obs.people, 1)
    assert (ann["hairColor"], ann["glasses"]) == ("red", False), f"the room is what the page showed: {ann}"
    assert a.value("select#hairColor") == "red" and a.value("#glasses") is False, a.describe()
    kinds = [e["kind"] for e in reversed(room_log(hub, room)) if e["author"] == "ann"]
    assert kinds == ["edit", "edit", "undo", "undo", "redo"], f"ann's revisions, oldest first: {kinds}"


def test_an_undo_pressed_offline_for_an_edit_a_teammate_made_too_says_it_had_nothing_to_take_back(hub_factory, room,
                                                                                                   browsers):
    """The web pass's case. ann, offline, sets Ann's eyes hazel and her glasses on, and presses "Undo
    Toggle Glasses". While ann's page is still cut off, bob puts Ann's glasses on himself. ann's page
    comes back: her glasses edit changes nothing, so the undo pressed for it goes with it (it is not
    sent: sent, it would take back the eye color), and #notice says so in words: "Your undo of Toggle
    Glasses had nothing to take back: bob had already made the same change to Ann's glasses." The room
    keeps the hazel eyes and bob's glasses; ann made no undo.
    Before the fix: the undo went silently (#notice empty)."""
    hub, a = ann_on_a_sqlite_hub(hub_factory, room, browsers)
    kill_hub_under(hub, a)
    a.network_offline(True)  # the hub comes back for bob first
    a.choose("eyeColor", "hazel")
    assert a.toggle("#glasses") is True
    a.wait_for(undo_text_is("Undo Toggle Glasses"), "#undo offering the glasses toggle made offline")
    a.click("#undo")
    a.wait_for(lambda p: (p.text("#waiting") or "") == "3" or "3" in (p.text("#connection-detail") or ""),
               "three requests kept (two edits and the undo)")

    hub.restart(same_port=True)
    bob = hub.join(room, "bob")
    bob.edit([{"op": "set", "tag": 1, "field": "glasses", "value": True}], label="Toggle Glasses")
    a.network_offline(False)
    a.wait_for(lambda p: (lambda s: s["connection"] == "online" and not s["waiting"])(p.summary()),
               "#connection online and #waiting empty once ann's page is back", timeout=RECONNECT_WAIT)
    said = "Your undo of Toggle Glasses had nothing to take back: bob had already made the same change to Ann's glasses."
    a.wait_for(lambda p: p.text("#notice") == said, f"#notice saying {said!r}")
    assert a.text("#notice-log li") == said, a.text("#notice-log")
    a.screenshot("1-the-undo-had-nothing-to-take-back")
    obs = observe(hub, room)
    ann = by_tag(obs.people, 1)
    assert (ann["eyeColor"], ann["glasses"]) == ("hazel", True), f"the eye color stays, and bob's glasses: {ann}"
    assert a.value("select#eyeColor") == "hazel" and a.value("#glasses") is True, a.describe()
    kinds = [(e["author"], e["kind"]) for e in room_log(hub, room)]
    assert ("ann", "undo") not in kinds, f"no undo of ann's reached the hub: {kinds}"


def test_a_room_that_went_back_on_the_hub_is_shown_as_the_hub_has_it_and_offline_edits_are_kept(hub_factory, room,
                                                                                                browsers):
    """A memory hub (no data kept). ann sets Ann's hair red online; the hub dies and, while ann's page is
    cut off, turns Ann's glasses on. The hub restarts with the room as it began, and bob makes two
    revisions (Ann's eyes hazel, Joan's glasses on) before ann's page is back: ann's old revision 1 and
    bob's new one share a number. The page sees the room went back (`welcome.reset`): #notice says so
    in words, the page shows the hub's room (Ann's hair as it began, bob's changes) with ann's glasses
    edit kept, and the hub has it. Before: the page was caught up on the new history over its old
    state, and showed red hair nobody had."""
    hub = hub_factory()
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(1)
    obs = observe(hub, room)
    a.choose("hairColor", "red")
    wait_model(obs, lambda p: field_of(p, 1, "hairColor") == "red", "ann's red hair at the hub")
    kill_hub_under(hub, a)
    a.network_offline(True)
    assert a.toggle("#glasses") is True
    hub.restart(same_port=True)
    bob = hub.join(room, "bob")
    bob.edit([{"op": "set", "tag": 1, "field": "eyeColor", "value": "hazel"}])
    bob.edit([{"op": "set", "tag": 2, "field": "glasses", "value": True}])
    a.network_offline(False)
    a.wait_for(lambda p: (lambda s: s["connection"] == "online" and not s["waiting"])(p.summary()),
               "#connection online and #waiting empty once ann's page is back", timeout=RECONNECT_WAIT)
    a.wait_for(lambda p: "went back" in (p.text("#notice") or ""), "#notice saying the room went back")
    assert not WIRE_WORDS.search(a.text("#notice")), a.text("#notice")
    a.screenshot("1-the-room-went-back")
    obs = observe(hub, room)
    ann = by_tag(obs.people, 1)
    assert (ann["hairColor"], ann["eyeColor"], ann["glasses"]) == ("brown", "hazel", True), ann
    a.wait_for(lambda p: (p.value("select#hairColor"), p.value("select#eyeColor"), p.value("#glasses"))
               == ("brown", "hazel", True), "the page showing Ann as the hub has her")


def test_add_reorder_and_delete_people(hub, room, browsers):
    """ann presses #add-person: a fourth row appears, and the room has a fourth person with a new tag.
    Its ↑ (.move-up) moves it one place up, Ann's ↓ (.move-down) one place down; after each step the
    list's order is the room's. Its .delete then #confirm-delete removes it from the list and the room,
    leaving Ann, Joan and Sam in the order the moves gave them."""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.wait_for(lambda p: p.list_tags() == [1, 2, 3], "the list Ann, Joan, Sam (tags 1, 2, 3)")

    a.click("#add-person")
    new = a.wait_for(lambda p: [t for t in p.list_tags() if t not in (1, 2, 3)], "a fourth row after #add-person")
    assert len(new) == 1, a.list_tags()
    t = new[0]
    people = wait_model(obs, lambda p: t in tags(p), f"person {t} in the room")
    assert len(people) == 4, people
    a.wait_for(lambda p: p.list_tags() == tags(obs.people), f"the list in the room's order {tags(obs.people)}")
    a.screenshot("1-added")

    def step(css: str, tag: int, expected: list[int], what: str) -> None:
        a.click(f'#people li[data-tag="{tag}"] {css}')
        wait_model(obs, lambda p: tags(p) == expected, f"{what}: the room's order {expected}")
        a.wait_for(lambda p: p.list_tags() == expected, f"{what}: the list's order {expected}")

    order = a.list_tags()
    i = order.index(t)
    if i == 0:      # the page put it first: move it down instead
        expected = order[:]
        expected[0], expected[1] = expected[1], expected[0]
        step(".move-down", t, expected, f"person {t} moved down")
    else:
        expected = order[:]
        expected[i - 1], expected[i] = expected[i], expected[i - 1]
        step(".move-up", t, expected, f"person {t} moved up")
    order = a.list_tags()
    j = order.index(1)
    assert j < len(order) - 1, order
    expected = order[:]
    expected[j], expected[j + 1] = expected[j + 1], expected[j]
    step(".move-down", 1, expected, "Ann moved down")
    a.screenshot("2-reordered")

    a.click(f'#people li[data-tag="{t}"] .delete')
    confirm = a.wait_for(lambda p: (lambda e: e if e is not None and e.is_displayed() else None)(p.q("#confirm-delete")),
                         "#confirm-delete shown after .delete")
    assert t in tags(obs.people), "nothing is deleted before the confirmation"
    a.click(confirm)
    remaining = [x for x in expected if x != t]
    wait_model(obs, lambda p: tags(p) == remaining, f"person {t} deleted, the room's order {remaining}")
    a.wait_for(lambda p: p.list_tags() == remaining, f"the list without person {t}: {remaining}")
    a.screenshot("3-deleted")
    rev, people = room_state(hub, room)
    assert rev == 4 and tags(people) == remaining, (rev, tags(people))


def test_phone_width_has_one_column_and_no_horizontal_scroll(hub, room, browsers):
    """At 390 × 844 (a phone, emulated as mobile), neither the join screen nor the room screen (with a
    person selected, in a room whose name is as long as the tests' room names) is wider than the phone:
    document.documentElement.scrollWidth <= innerWidth == 390 (a mobile browser whose page is wider
    zooms out: innerWidth grows past 390). The people list and the detail editor are not side by side
    (one column under 700 px), and an edit made there reaches the room. Every problem is collected and
    reported at the end, with the elements that reach past 390 px."""
    obs = observe(hub, room)
    a = browsers(hub, "phone", width=390, height=844)
    a.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                             {"width": PHONE_WIDTH, "height": 844, "deviceScaleFactor": 2, "mobile": True})
    problems: list[str] = []

    def no_sideways_scroll(p, where: str) -> None:
        m = p.js("""const W = arguments[0];
                    return {scroll: document.documentElement.scrollWidth, body: document.body.scrollWidth,
                    inner: innerWidth, wide: [...document.querySelectorAll('body *')].filter((e) => {
                      const r = e.getBoundingClientRect(); return r.width > 0 && r.right > W + 1; })
                      .slice(0, 8).map((e) => (e.id ? '#' + e.id : e.tagName.toLowerCase() +
                        (typeof e.className === 'string' && e.className ? '.' + e.className.trim().split(/\\s+/).join('.') : '')) +
                        ' (right ' + Math.round(e.getBoundingClientRect().right) + ' px: ' +
                        JSON.stringify(e.textContent.replace(/\\s+/g, ' ').trim().slice(0, 50)) + ')')};""", PHONE_WIDTH)
        if not (m["inner"] == PHONE_WIDTH and m["scroll"] <= m["inner"] and m["body"] <= m["inner"]):
            problems.append(f"the {where} is wider than the phone's {PHONE_WIDTH} px: innerWidth {m['inner']}, "
                            f"documentElement.scrollWidth {m['scroll']}, body.scrollWidth {m['body']}; "
                            f"reaching past {PHONE_WIDTH} px: {m['wide']}")

    a.open("/?room=" + room)
    a.wait_for(lambda p: p.q("#join") is not None and p.q("#join").is_displayed(), "the join screen")
    assert a.value("#join-room") == room, f"a shared link fills the room: {a.describe()}"
    no_sideways_scroll(a, "join screen")
    a.screenshot("1-phone-join")

    a.open_room(room, "ann")
    a.select(2)
    no_sideways_scroll(a, "room screen")
    rects = a.js("""const r = (s) => { const e = document.querySelector(s); if (!e) return null;
                     const b = e.getBoundingClientRect(); return b.width > 0 && b.height > 0 ? [b.left, b.top, b.right, b.bottom] : null; };
                    return {people: r('#people'), detail: r('#detail')};""")
    if rects["people"] and rects["detail"]:
        (pl, pt, pr, pb), (dl, dt, dr, db) = rects["people"], rects["detail"]
        side_by_side = (pr <= dl + 1 or dr <= pl + 1) and not (pb <= dt + 1 or db <= pt + 1)
        if side_by_side:
            problems.append(f"at {PHONE_WIDTH} px the list and the detail are side by side, not one column: {rects}")
    a.screenshot("2-phone-room")
    a.choose("hairLength", "bald")
    wait_model(obs, lambda p: field_of(p, 2, "hairLength") == "bald", "Joan bald (edited at phone width)")
    no_sideways_scroll(a, "room screen after an edit")
    a.js("window.scrollTo(0, document.documentElement.scrollHeight);")
    a.screenshot("3-phone-room-bottom")
    assert not problems, "\n".join(problems)


def test_keyboard_reaches_undo_and_the_list_and_controls_have_accessible_names(hub, room, browsers):
    """With an edit of ann's to undo, Tab from the top of the page reaches #undo (with a visible focus
    indicator) and the people list; in the list, ↓ selects the next person and ↑ the one before. Every
    control of the join form, the list, the detail editor and undo / redo has an accessible name
    (aria-label, aria-labelledby, a <label>, or its text), each list row's names the person, and
    #notice is announced (inside an aria-live region)."""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(1)
    a.toggle("#glasses")
    wait_model(obs, lambda p: field_of(p, 1, "glasses") is True, "Ann with glasses (ann's edit)")
    a.wait_for(lambda p: (p.button("#undo") or {}).get("disabled") is False, "#undo enabled")

    # Start the tab order at the top: a throwaway focusable element before everything else.
    a.js("""const t = document.createElement('a'); t.id = 'pk-test-top'; t.href = '#'; t.textContent = 'top';
            document.body.prepend(t); t.focus();""")
    seen, undo_focus, list_stop = [], None, None
    for _ in range(120):
        a.keys(Keys.TAB)
        info = a.js("""const e = document.activeElement;
            if (!e || e === document.body) return null;
            const li = e.closest('#people li[data-tag]');
            const cs = getComputedStyle(e);
            return {el: e, id: e.id, desc: e.id ? '#' + e.id : e.tagName.toLowerCase() + (typeof e.className === 'string' && e.className ? '.' + e.className.trim().split(/\\s+/).join('.') : ''),
                    inList: !!e.closest('#people'), row: li ? li.getAttribute('data-tag') : null,
                    action: !!e.closest('.move-up, .move-down, .delete'),
                    focusVisible: e.matches(':focus-visible'),
                    outline: cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) > 0, shadow: cs.boxShadow !== 'none'};""")
        if info is None or info["id"] == "pk-test-top":
            if seen:
                break       # went round the whole page
            continue
        seen.append(info["desc"] + (f"[{info['row']}]" if info["row"] else ""))
        if info["id"] == "undo" and undo_focus is None:
            undo_focus = info
        if info["inList"] and not info["action"] and list_stop is None:
            list_stop = info
        if undo_focus and list_stop:
            break
    print(f"tab order from the top: {seen}")
    assert undo_focus, f"Tab from the top never reached #undo; the tab order: {seen}\n{a.describe()}"
    assert undo_focus["outline"] or undo_focus["shadow"], \
        f"#undo focused by Tab shows no focus indicator (no outline, no box-shadow): {undo_focus}"
    assert list_stop, f"Tab from the top never reached the people list (#people); the tab order: {seen}"
    a.js("document.getElementById('pk-test-top').remove();")

    # Arrow keys in the list select the next / previous person (from the list's tab stop).
    a.js("arguments[0].focus();", list_stop["el"])
    a.wait_for(lambda p: p.js("return !!document.activeElement.closest('#people');"), "the focus back in the list")
    before = a.selected_tag()
    order = a.list_tags()
    assert before in order, f"a person is selected: {a.describe()}"
    i = order.index(before)
    there, back = (Keys.ARROW_DOWN, Keys.ARROW_UP) if i < len(order) - 1 else (Keys.ARROW_UP, Keys.ARROW_DOWN)
    target = order[i + 1] if there == Keys.ARROW_DOWN else order[i - 1]
    a.keys(there)
    a.wait_for(lambda p: p.selected_tag() == target, f"an arrow key in the list (focus on {list_stop['desc']}) "
               f"selecting person {target} after {before}")
    a.keys(back)
    a.wait_for(lambda p: p.selected_tag() == before, f"the opposite arrow key selecting person {before} again")

    # Accessible names.
    selectors = ["#join-room", "#join-user", "#join-token", "#join-submit", "#people li[data-tag]",
                 "#people li[data-tag] button", "#people li[data-tag] input", "#add-person", "#undo", "#redo",
                 "#undo-person", "#detail input", "#detail select", "#detail button", "#detail textarea"]
    names = a.js(ACCESSIBLE_NAMES_JS, selectors)
    found = {sel for sel, _, _ in names}
    for required in ("#join-room", "#join-user", "#join-token", "#join-submit", "#people li[data-tag]",
                     "#add-person", "#undo", "#redo", "#undo-person", "#detail input", "#detail select",
                     "#detail button"):
        assert required in found, f"no element for {required!r} (docs/WEB.md's hooks): {a.describe()}"
    print("accessible names: " + "; ".join(f"{desc} = {n!r}" for _, desc, n in names))
    unnamed = [f"{sel}: {desc}" for sel, desc, n in names if not n]
    assert not unnamed, f"controls without an accessible name: {unnamed}"
    rows = {desc: n for sel, desc, n in names if sel == "#people li[data-tag]"}
    for person in ("Ann", "Joan", "Sam"):
        assert any(person in n for n in rows.values()), f"no list row whose accessible name says {person}: {rows}"
    live = a.js("""const n = document.querySelector('#notice'); if (!n) return 'missing';
                   const r = n.closest('[aria-live], [role=status], [role=alert], [role=log]');
                   return r ? (r.getAttribute('aria-live') || r.getAttribute('role')) : null;""")
    assert live not in (None, "missing", "off"), f"#notice must be in an aria-live region: {live!r}"


# -- issue 17: the page as a new user meets it ---------------------------------------------------------
#
# Each test below failed against the page before issue 17's web changes; its docstring says which
# assertion did. Tokens for `auth.mode: token` hubs are HS256 JWTs made here with Python's own HMAC
# (as test_trust.py does), so these tests do not depend on `peoplekeeper-hub token`.

TOKEN_SECRET = "a-web-test-secret-of-more-than-32-bytes-0123456789"
# What a page must never show a user: wire field names and identifiers instead of words.
WIRE_WORDS = re.compile(r"\bhello\.\w+|\blimits\.\w+|\bauth\.\w+|\b(?:hairColor|hairLength|eyeColor|facialHair|"
                        r"preference|noop|seq|targetRemoved|editedByOthers)\b")
# What the page says while the hub cannot be reached.
UNREACHABLE = re.compile(r"unreachable|can.t be reached|cannot be reached|can.t reach|cannot reach", re.I)


def jwt(user: str, rooms: list[str], role: str = "editor", ttl: int = 3600) -> str:
    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64(json.dumps({"sub": user, "rooms": rooms, "role": role, "exp": int(time.time()) + ttl}).encode())
    signature = hmac.new(TOKEN_SECRET.encode(), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{b64(signature)}"


def token_hub(hub_factory, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text(TOKEN_SECRET + "\n")
    return hub_factory({"auth": {"mode": "token", "secretFile": str(secret)}})


def join_with_token(p: PeoplePage, room: str, user: str, tok: str) -> None:
    """Open the shared link /?room=R, type the user and the token into the join form, press Join, and
    wait for the room screen online."""
    p.user = user
    p.open("/?" + urllib.parse.urlencode({"room": room}))
    p.wait_for(lambda b: b.q("#join") and b.q("#join").is_displayed(), "the join screen (#join shown)")
    for css, value in (("#join-user", user), ("#join-token", tok)):
        el = p.must(css)
        el.clear()
        el.send_keys(value)
    p.click("#join-submit")
    p.wait_online()


def room_text(p: PeoplePage) -> str:
    """What a user reads on the room screen: its rendered text (hidden elements left out)."""
    return p.js("const r = document.getElementById('room'); return r ? r.innerText : '';")


def status_text(p: PeoplePage) -> str:
    return p.js("const r = document.querySelector('#room .topbar'); return r ? r.innerText : '';")


def test_a_hub_that_refuses_the_page_s_connection_is_not_called_unreachable(hub_factory, room, browsers):
    """The hub takes one connection (limits.maxConnections: 1) and a client holds it. ann opens the
    room's link: the hub answers its WebSocket handshake 503, which a browser tells a page nothing
    about. The page asks the hub's /healthz, which answers, and says the hub is running but won't let
    this page connect (not "can't reach the hub"), and keeps trying; when the client leaves, ann joins
    and nothing of it is said any more. A hub that is away is still called unreachable.
    Before the fix: "Can't reach the hub. Offline, retrying in N s." throughout (a black-box pass,
    session 38: an origin or Host refusal looked like an outage)."""
    hub = hub_factory({"limits": {"maxConnections": 1}})
    holder = hub.join(room, "holder")
    a = browsers(hub, "ann")
    a.open("/?" + urllib.parse.urlencode({"room": room, "user": "ann"}))
    said = a.wait_for(lambda p: (lambda t: t if "won't let this page connect" in t else None)(p.text("#join-status") or ""),
                      "the join screen saying the hub refuses the page")
    assert said == ("The hub is running but won't let this page connect: it may be full, or not set up for "
                    "pages from this address. Retrying…"), said   # a live region: no countdown said every second
    assert not UNREACHABLE.search(said), said
    assert not WIRE_WORDS.search(said), said
    holder.close()
    a.wait_online()
    assert "won't let" not in room_text(a), room_text(a)
    assert (a.text("#connection-detail") or "") == "", a.text("#connection-detail")

    hub.kill()                                   # away: unreachable, as before
    a.wait_for(lambda p: "The hub can't be reached." in (p.text("#connection-detail") or ""),
               "#connection-detail saying the hub can't be reached", timeout=15)
    time.sleep(2)                                # retries meanwhile: /healthz does not answer either
    assert "won't let" not in (a.text("#connection-detail") or ""), a.text("#connection-detail")


def test_a_room_an_admin_deletes_is_not_made_again_by_the_page(hub_factory, room, browsers):
    """ann's page is in the room with a change made; an admin deletes the room (`DELETE`, which closes
    its connections with 1000 "room deleted"). The page stops and says so on the join screen, in
    words; the room stays deleted (404), until ann presses Join, which makes a new room of the name.
    Before the fix: the page reconnected at once and its hello made the room again from the seed,
    undoing the delete unasked ("room reset on the hub"; a black-box pass, session 39)."""
    hub = hub_factory()
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(1)
    assert a.toggle("#glasses") is True
    a.wait_for(lambda p: p.summary()["peoplekeeper"]["pending"] == 0, "ann's change acknowledged")
    status, _, body = hub.http("DELETE", f"/v1/rooms/{room}")
    assert status == 204, (status, body)
    said = a.wait_for(lambda p: (lambda t: t if "deleted" in t else None)(p.text("#join-error") or ""),
                      "the join screen saying an admin deleted the room")
    assert said == "An admin deleted this room and all of its history. Join again to start a new room with this name.", said
    assert not WIRE_WORDS.search(said), said
    time.sleep(2)                                        # a page that reconnects would have by now
    status, _, body = hub.http("GET", f"/v1/rooms/{room}")
    assert status == 404, f"the room was made again: {status} {body[:200]!r}"
    a.click("#join-submit")
    a.wait_online()
    assert a.summary()["peoplekeeper"]["revision"] == 0
    assert hub.http("GET", f"/v1/rooms/{room}")[0] == 200


def test_a_question_open_when_the_room_is_deleted_closes_and_the_join_screen_works(hub_factory, room, browsers):
    """ann has "Restore to here" asking (then, in the room made again, the delete question) when an
    admin deletes the room. The question closes with the room, and the join screen takes clicks and
    the focus. Before the fix the question stayed open as a modal dialog over the join screen: Join's
    click landed on it, Tab kept the focus on the page, and only Esc got her out (a black-box pass,
    session 40)."""
    hub = hub_factory()
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(1)
    assert a.toggle("#glasses") is True
    a.wait_for(history_is([1, 0]), "ann's panel with revision 1 and the start")
    open_dialog = "return [...document.querySelectorAll('dialog')].filter((d) => d.open).map((d) => d.id);"
    for question in ("restore", "delete"):
        if question == "restore":
            a.click(a.history_row(0) + " button.restore-here")
        else:
            a.select(2)
            a.keys(Keys.DELETE)
        a.wait_for(lambda p: p.js(open_dialog), f"the {question} question open")
        status, _, body = hub.http("DELETE", f"/v1/rooms/{room}")
        assert status == 204, (status, body)
        a.wait_for(lambda p: "deleted" in (p.text("#join-error") or ""), "the join screen saying the room was deleted")
        assert a.js(open_dialog) == [], f"a question left open over the join screen: {a.describe()}"
        a.click("#join-submit")                           # before: ElementClickInterceptedException
        a.wait_online()
        assert a.summary()["peoplekeeper"]["revision"] == 0
        a.select(1)


def test_your_own_restore_from_a_row_further_down_shows_at_the_top(hub, room, browsers):
    """ann's timeline has 30 revisions; she scrolls down to revision 5 and restores the room to it. The
    list goes back to its top, with the focus on it, where her restore's row is. Before, the list
    held the row back while she read further down ("↑ 1 newer change"), and her own restore was not
    to be seen (a black-box pass, session 40)."""
    bob = hub.join(room, "bob")
    colours = ["red", "white", "gray", "black", "brown", "blonde"]  # each edit changes its person's hair
    for i in range(30):
        bob.edit([{"op": "set", "tag": 1 + i % 3, "field": "hairColor", "value": colours[i % 6]}])
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.wait_for(lambda p: 30 in p.history_revs() and 5 in p.history_revs(), "ann's timeline with revisions 30 and 5")
    a.js("const l = document.getElementById('history-list'); l.scrollTop = l.scrollHeight;")
    a.wait_for(lambda p: p.js("return document.getElementById('history-list').scrollTop;") > 100, "the list scrolled down")
    a.click(a.history_row(5) + " button.restore-here")
    a.wait_for(lambda p: p.js("return document.getElementById('restore-dialog').open;"), "the restore question")
    a.click("#confirm-restore")
    a.wait_for(lambda p: p.history_revs()[:2] == [31, 30], "ann's restore on top of the list")
    state = a.js("""const l = document.getElementById('history-list');
        return {top: l.scrollTop, focus: document.activeElement && document.activeElement.id,
                newer: !document.getElementById('history-newer').hidden};""")
    assert state == {"top": 0, "focus": "history-list", "newer": False}, state


def test_after_the_hub_comes_back_nothing_still_says_it_is_unreachable(hub_factory, room, browsers):
    """Issue 17, item 1. ann's page is online; the hub is killed: the page says the hub cannot be
    reached and that her changes are kept. She makes two changes offline; the hub restarts. From then
    on, at every look (every 50 ms) until a second after the page is back: whenever #connection says
    online, no text of the room screen says the hub is unreachable, and once #waiting is empty nothing
    says changes are kept or waiting. A second outage, held for 9 s (longer than any timer of the page),
    keeps saying so all along while it is true.
    Before the fix: failed at "#connection online while the page still says the hub is unreachable"
    (the old activity line said "The hub is unreachable (…)" for 8 s, whatever the connection did)."""
    hub = hub_factory({"storage": {"kind": "embedded", "path": "{workdir}/data/pk.sqlite"}})
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(1)
    assert not UNREACHABLE.search(room_text(a)), room_text(a)

    hub.kill()
    a.wait_for(lambda p: p.summary()["connection"] == "offline" and UNREACHABLE.search(status_text(p)),
               "#connection offline and the page saying the hub cannot be reached")
    a.choose("hairColor", "red")
    assert a.toggle("#glasses") is True
    a.wait_for(lambda p: (p.text("#waiting") or "") == "2", "#waiting saying 2 (two changes made offline)")
    a.wait_for(lambda p: re.search(r"\bkept\b", status_text(p)), "the page saying the changes are kept")

    hub.restart(same_port=True)
    seen_online_at = None
    samples = 0
    deadline = time.monotonic() + RECONNECT_WAIT
    while True:
        s = a.js("return {state: document.getElementById('connection').getAttribute('data-state'),"
                 " waiting: document.getElementById('waiting').textContent.trim(),"
                 " text: document.getElementById('room').innerText};")
        samples += 1
        if s["state"] == "online":
            assert not UNREACHABLE.search(s["text"]), \
                f"#connection online while the page still says the hub is unreachable:\n{s['text']}\n{a.describe()}"
            if not s["waiting"]:
                assert not re.search(r"\bkept\b|\bwaiting\b|\bsending\b", s["text"], re.I), \
                    f"nothing waits, yet the page still speaks of kept / waiting changes:\n{s['text']}\n{a.describe()}"
                seen_online_at = seen_online_at or time.monotonic()
        if seen_online_at and time.monotonic() > seen_online_at + 1.0:
            break
        assert time.monotonic() < deadline, f"the page never came back online with nothing waiting:\n{a.describe()}"
        time.sleep(POLL)
    a.screenshot("1-back-online-nothing-stale")
    obs = observe(hub, room)
    ann = by_tag(obs.people, 1)
    assert (ann["hairColor"], ann["glasses"]) == ("red", True), f"both offline edits reached the hub: {ann}"

    # A message about the connection stays as long as it is true.
    hub.kill()
    a.wait_for(lambda p: p.summary()["connection"] == "offline", "#connection offline (second outage)")
    lost = time.monotonic()
    a.toggle("#glasses")
    while time.monotonic() < lost + 9.0:
        text = status_text(a)
        assert UNREACHABLE.search(text) and re.search(r"\bkept\b", text), \
            f"{time.monotonic() - lost:.1f} s into an outage the page no longer says so:\n{text}\n{a.describe()}"
        time.sleep(0.25)
    hub.restart(same_port=True)
    a.wait_for(lambda p: (lambda s: s["connection"] == "online" and not s["waiting"])(p.summary()),
               "online with nothing waiting after the second outage", timeout=RECONNECT_WAIT)
    a.wait_for(lambda p: not UNREACHABLE.search(room_text(p)) and not re.search(r"\bkept\b", room_text(p)),
               "no word of the outage once it is over")


def test_a_viewer_is_told_so_and_no_edit_control_is_offered(hub_factory, tmp_path, room, browsers):
    """Issue 17, item 2. On a token hub, ann joins as an editor and val with a viewer's token. val's
    header says she can only view (and ann's names her role, editor); on val's page every control that
    edits is disabled or not shown: Add person, Undo / Redo, each row's move and delete buttons, every
    input, select and button of the detail editor (its undo / redo on this person included). Delete
    and Alt+↓ in the list and Ctrl+Z change nothing and say she can only view the room; nothing val's
    page does reaches the hub (no error, no revision), and ann's change still shows on val's page live.
    Before the fix: failed at "val's header says view only" (nothing said so; every control was on)."""
    hub = token_hub(hub_factory, tmp_path)
    obs = hub.join(room, OBSERVER, token=jwt(OBSERVER, [room], "viewer"))
    a = browsers(hub, "ann")
    join_with_token(a, room, "ann", jwt("ann", [room]))
    v = browsers(hub, "val")
    join_with_token(v, room, "val", jwt("val", [room], "viewer"))
    v.select(1)

    header = v.wait_for(lambda p: (lambda t: t if re.search(r"view only|viewer", t, re.I) else None)(status_text(p)),
                        "val's header saying she is a viewer (view only)")
    assert re.search(r"view only", header, re.I), f"the viewer's header says 'view only': {header!r}"
    assert re.search(r"\beditor\b", status_text(a), re.I), f"ann's header names her role: {status_text(a)!r}"
    v.screenshot("1-viewer")

    enabled = v.js("""
        const shown = (e) => !!e && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
        const out = [];
        for (const e of document.querySelectorAll('#add-person, #undo, #redo, #people li .move-up, #people li .move-down, '
                                                  + '#people li .delete, #detail input, #detail select, #detail button')) {
          if (!shown(e)) continue;
          if (e.disabled || e.readOnly || e.getAttribute('aria-disabled') === 'true') continue;
          out.push(e.id ? '#' + e.id : e.tagName.toLowerCase() + '.' + e.className + ' ' + (e.textContent || '').trim().slice(0, 20));
        }
        return out;""")
    assert not enabled, f"controls a viewer cannot use are offered to val: {enabled}"
    assert v.js("return document.querySelector('#people li[data-tag]').getAttribute('draggable');") != "true", \
        "a viewer's rows are not draggable"

    mark = obs.mark()
    v.click(v.row(1) + " .pick")
    v.keys(Keys.DELETE)
    v.keys(Keys.ARROW_DOWN, modifier=Keys.ALT)
    v.undo_key()
    time.sleep(0.5)
    assert not v.q("#confirm-dialog[open]"), f"Delete opened the confirmation for a viewer:\n{v.describe()}"
    assert v.list_tags() == [1, 2, 3], v.list_tags()
    # The page sends nothing, and says why nothing happened (since session 37: an accessibility pass
    # found these keys did nothing, unsaid).
    assert v.text("#notice") == "You can only view this room: nothing was changed.", v.describe()
    obs.expect_nothing("ops", since=mark)

    a.select(1)
    a.choose("hairColor", "red")
    v.wait_for(lambda p: p.value("select#hairColor") == "red", "val's page showing ann's red live")


def test_the_access_token_is_kept_for_the_session_and_asked_for_in_plain_words(hub_factory, tmp_path, room, browsers):
    """Issue 17, item 3. On a token hub, ann opens the shared link /?room=R&user=ann without a token:
    the join screen asks for an access token in plain words (no wire name such as `hello.token`) and
    puts the focus on the token field. She pastes it and joins; the address bar never holds the token.
    A reload joins again at once (the token is kept in sessionStorage for the tab, never in
    localStorage). A token for another user is refused in words that say whose it is.
    Before the fix: failed at "the join screen's message has no wire words" (it said "…needs an access
    token: give hello.token"); a reload also asked again."""
    hub = token_hub(hub_factory, tmp_path)
    tok = jwt("ann", [room])
    a = browsers(hub, "ann")
    a.open("/?" + urllib.parse.urlencode({"room": room, "user": "ann"}))
    message = a.wait_for(lambda p: p.q("#join").is_displayed() and p.text("#join-error"),
                         "the join screen with a message (#join-error) after the hub asked for a token")
    a.screenshot("1-asked-for-a-token")
    assert not WIRE_WORDS.search(message), f"the join screen shows wire words: {message!r}"
    assert re.search(r"access token", message, re.I), f"the message asks for the access token: {message!r}"
    assert a.js("return document.activeElement && document.activeElement.id;") == "join-token", \
        f"the focus is on the token field: {a.describe()}"

    a.must("#join-token").send_keys(tok)
    a.click("#join-submit")
    a.wait_online()
    assert query_of(a.driver.current_url) == {"room": room, "user": "ann"}, a.driver.current_url
    assert tok not in a.driver.current_url
    kept = a.js("return {session: Object.values(sessionStorage), local: Object.values(localStorage)};")
    assert any(tok in v for v in kept["session"]), f"the token is kept in sessionStorage: {kept}"
    assert not any(tok in v for v in kept["local"]), f"the token is never in localStorage: {kept}"

    a.driver.refresh()
    a.wait_online()
    assert tok not in a.driver.current_url and query_of(a.driver.current_url) == {"room": room, "user": "ann"}

    # Someone else's token, in a fresh browser: refused in words, asking again.
    b = browsers(hub, "bob")
    b.open("/?" + urllib.parse.urlencode({"room": room}))
    b.wait_for(lambda p: p.q("#join").is_displayed(), "the join screen")
    b.must("#join-user").send_keys("bob")
    b.must("#join-token").send_keys(tok)
    b.click("#join-submit")
    refusal = b.wait_for(lambda p: p.q("#join").is_displayed() and p.text("#join-error"),
                         "the join screen with a refusal for ann's token used by bob")
    assert not WIRE_WORDS.search(refusal) and "ann" in refusal and "bob" in refusal, refusal
    assert not any(tok in v for v in b.js("return Object.values(sessionStorage);")), \
        "a refused token is not kept"


def test_an_expired_token_asks_for_a_new_one_and_the_room_carries_on(hub_factory, tmp_path, room, browsers):
    """Session 23. The hub ends a session when its token expires. ann joins with a token of a few
    seconds and changes Ann's hair: when the token expires, the join screen says so in plain words,
    that nothing of hers is lost, and asks for a new token (the focus on the token field, the room and
    her name still filled in). She pastes a new one and presses Join: the same room comes back, with
    her change, and she goes on editing.
    Before the fix: the hub let the session run past the token's exp (the page never asked)."""
    hub = token_hub(hub_factory, tmp_path)
    obs = hub.join(room, OBSERVER, token=jwt(OBSERVER, [room], "viewer"))
    a = browsers(hub, "ann")
    # 15 s: room for the join and the edit before it ends on a loaded machine (8 s failed once, with a
    # fresh-clone `make test` running beside the web suite).
    join_with_token(a, room, "ann", jwt("ann", [room], ttl=15))
    a.select(1)
    a.choose("hairColor", "red")
    wait_model(obs, lambda people: by_tag(people, 1)["hairColor"] == "red", "ann's red hair at the hub")
    a.wait_for(lambda p: p.q("#join").is_displayed() and re.search(r"expired", p.text("#join-error") or ""),
               "the join screen saying the access token expired", timeout=30)
    message = a.text("#join-error")
    a.screenshot("1-token-expired")
    assert not WIRE_WORDS.search(message), f"the join screen shows wire words: {message!r}"
    assert re.search(r"carry on", message) and re.search(r"nothing of yours is lost", message), message
    assert not a.q("#room").is_displayed()
    assert a.js("return document.activeElement && document.activeElement.id;") == "join-token", a.describe()
    assert (a.js("return document.getElementById('join-room').value;"),
            a.js("return document.getElementById('join-user').value;")) == (room, "ann")

    a.must("#join-token").send_keys(jwt("ann", [room]))
    a.click("#join-submit")
    a.wait_online()
    assert a.q("#room").is_displayed() and not a.q("#join").is_displayed()
    a.select(1)
    assert a.toggle("#glasses") is True
    wait_model(obs, lambda people: (by_tag(people, 1)["hairColor"], by_tag(people, 1)["glasses"]) == ("red", True),
               "ann's change made after the new token, beside the one before")
    a.wait_for(lambda p: not p.summary()["waiting"], "nothing waiting on ann's page")


def test_a_highlight_names_the_latest_writer_and_fades(hub, browsers):
    """Issue 17, item 6. ann and bob look at Ann. ann picks red: bob's hair color field is highlighted
    by ann. bob then picks blonde: at once no highlight on bob's page names ann for Ann's hair color or
    Ann's row (bob is the latest writer of that value), while ann's page names bob, and that highlight
    fades (a CSS animation on the field and on its name badge). Within 3 s every highlight is gone.
    The README's screenshot (docs/images/web-client.png) is this test's "readme" picture.
    Before the fix: failed at "bob's own value still wears ann's highlight" ("detail hairColor" by ann)."""
    room = unique_room("team")
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    b = browsers(hub, "bob")
    b.open_room(room, "bob")
    a.select(1)
    b.select(1)

    a.choose("hairColor", "red")
    b.wait_for(lambda p: "detail hairColor" in p.changed_by("ann", 1), "bob's hair color field highlighted by ann")

    b.choose("hairColor", "blonde")
    left = b.changed_by("ann", 1)
    assert not left, f"bob's own value still wears ann's highlight: {left}\n{b.describe()}"
    a.wait_for(lambda p: "detail hairColor" in p.changed_by("bob", 1), "ann's hair color field highlighted by bob")
    fading = a.js("""const f = document.querySelector('#detail [data-field="hairColor"]');
        return {field: getComputedStyle(f).animationName, badge: getComputedStyle(f, '::after').animationName};""")
    assert fading["field"] != "none" and fading["badge"] != "none", f"the highlight and its badge fade: {fading}"
    # Ann's row in the list too: its wash is the row's ::before (a row out of view skips it).
    row = a.js("""const r = document.querySelector('#people li[data-tag="1"]');
        return {by: r.dataset.by, wash: getComputedStyle(r, '::before').animationName, badge: getComputedStyle(r, '::after').animationName};""")
    assert row["by"] == "bob" and row["wash"] != "none" and row["badge"] != "none", f"Ann's row fades, named bob: {row}"
    wait_model(obs, lambda p: field_of(p, 1, "hairColor") == "blonde", "Ann blonde (bob's edit)")
    a.wait_for(lambda p: p.js("return document.querySelectorAll('.changed').length;") == 0,
               "every highlight gone on ann's page", timeout=10.0)

    # The README's picture: two people editing one room, with roles, the connection and a highlight
    # (the observer leaves first, so that "Here now" shows only the two of them).
    obs.close()
    b.wait_for(lambda p: p.q('#presence li[data-user="observer"]') is None, "the observer gone from bob's #presence")
    a.choose("eyeColor", "green")
    b.wait_for(lambda p: "detail eyeColor" in p.changed_by("ann", 1), "bob's eye color field highlighted by ann")
    b.js("document.querySelector('#eyeColor').blur(); document.querySelector('#hairColor').focus();")
    a.wait_for(lambda p: "Hair color" in (p.text('#presence li[data-user="bob"]') or ""), "ann seeing bob on Hair color")
    b.wait_for(lambda p: "Hair color" in (p.text('#presence li[data-user="bob"]') or "") and
               "Ann" in (p.text('#presence li[data-user="ann"]') or ""), "bob's presence list up to date")
    b.screenshot("readme")


def png_pixels(data: bytes) -> list[tuple[int, int, int]]:
    """The pixels of an 8-bit RGB or RGBA, non-interlaced PNG (what Chrome's screenshots are), as RGB."""
    import struct
    import zlib
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    bpp = 3 if color == 2 else 4
    raw, stride, prev, out = zlib.decompress(idat), width * bpp, bytearray(width * bpp), []
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p_ = a + b - c
                pa, pb, pc = abs(p_ - a), abs(p_ - b), abs(p_ - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out += [tuple(line[i:i + 3]) for i in range(0, stride, bpp)]
        prev = line
    return out


def test_a_lit_selected_row_still_looks_selected(hub, room, browsers):
    """The web pass of session 32: when a teammate changed the person selected, the row's yellow wash
    covered its blue fill, so for about a second only a pale border said which row was selected. The
    wash leaves a frame of the selection's fill now. The fade is held a moment into it, and the row's
    picture counted: yellow inside, the selection's blue around it.
    Before: failed at "the selection's fill shows around the wash" (0 of 18,126 pixels blue)."""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(2)
    obs.edit([{"op": "set", "tag": 2, "field": "hairColor", "value": "red"}])
    a.wait_for(lambda p: p.js("return document.querySelector('#people li[data-tag=\"2\"]').classList.contains('changed');"),
               "Joan's row lit by the observer's change")
    a.js("for (const x of document.getAnimations()) { x.pause(); x.currentTime = 300; }")
    row = a.must('#people li[data-tag="2"]')
    pixels = png_pixels(row.screenshot_as_png)
    near = lambda px, rgb: all(abs(x - y) <= 3 for x, y in zip(px, rgb))
    selected, washed = (sum(near(px, rgb) for px in pixels) for rgb in ((0xdd, 0xe7, 0xfb), (0xff, 0xf1, 0xbf)))
    a.screenshot("1-lit-and-selected")
    assert washed > len(pixels) // 3, f"the wash is there: {washed} of {len(pixels)} pixels yellow"
    assert selected > len(pixels) // 20, f"the selection's fill shows around the wash: {selected} of {len(pixels)} pixels blue"


def test_an_undo_s_notice_names_a_person_deleted_before_the_page_opened(hub, room, browsers):
    """ann adds Zed from another client (rev 1) and bob deletes him (rev 2) before ann's page opens, then
    makes 60 more revisions (more than the timeline's first page): the page never showed Zed and reads
    no row about him. ann's undo (of the add) says "Nothing was undone: Zed was deleted by bob." — the
    page asks the hub for the rows that named someone gone whom a notice names by tag (their deletion
    says the name), and says the notice again with it, logged once.
    Before: "… tag 8104 was deleted by bob." (the page knew no name for him)."""
    ann = hub.join(room, "ann")
    zed = ann.new_tag()
    ann.edit([{"op": "insert", "at": 3, "person": {**SEED[0], "tag": zed, "name": "Zed"}}], label="Add Person")
    bob = hub.join(room, "bob")
    bob.edit([{"op": "remove", "tag": zed}], label="Delete Person")
    # More revisions since than the timeline's first page holds: no row the page reads names Zed.
    for i in range(60):
        bob.edit([{"op": "set", "tag": 1, "field": "glasses", "value": i % 2 == 0}], label="Toggle Glasses")
    ann.close()

    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.wait_for(undo_text_is("Undo Add Person"), '#undo offering "Undo Add Person"')
    a.undo_key()
    notice = a.wait_for(lambda p: "Zed" in p.text("#notice") and p.text("#notice"), "#notice naming Zed")
    assert notice == "Nothing was undone: Zed was deleted by bob.", notice
    logged = a.js("return [...document.querySelectorAll('#notice-log li')].map((e) => e.textContent)")
    assert len([t for t in logged if "deleted by bob" in t]) == 1, logged


def test_a_skip_notice_hides_nothing_can_be_dismissed_is_logged_and_goes_with_the_next_action(hub, room, browsers):
    """Issue 17, items 7 and 5 (web). ann changes Ann's hair color, bob overwrites it, ann presses
    Ctrl+Z: #notice says "Nothing was undone:", names Ann's hair color (in the page's spelling) and bob.
    The notice covers no control and no part of the list or the detail card (in a laptop-sized window);
    #notice-dismiss takes it away and it stays in #notice-log. A second Ctrl+Z says there is nothing
    left to undo; ann's next action (toggling Joan's glasses) takes that notice away too (a report
    belongs to the action that caused it), and the log keeps both, newest first.
    Before the fix: failed at "#notice says Nothing was undone" (it said "Your change to Ann's hair
    colour was overwritten by bob", for 6 s, over the bottom of the detail card)."""
    obs = observe(hub, room)
    a = browsers(hub, "ann", height=760)
    a.open_room(room, "ann")
    b = browsers(hub, "bob")
    b.open_room(room, "bob")
    a.select(1)
    b.select(1)
    a.choose("hairColor", "red")
    b.wait_for(lambda p: p.value("select#hairColor") == "red", "bob's page showing ann's red")
    b.choose("hairColor", "blonde")
    a.wait_for(lambda p: p.value("select#hairColor") == "blonde", "ann's page showing bob's blonde")
    wait_model(obs, lambda p: field_of(p, 1, "hairColor") == "blonde", "Ann blonde")

    a.undo_key()
    notice = a.wait_for(lambda p: p.text("#notice"), "#notice after ann's skipped undo")
    a.screenshot("1-nothing-was-undone")
    assert notice.startswith("Nothing was undone:"), f"#notice says nothing was undone: {notice!r}"
    assert "Ann's hair color" in notice and "bob" in notice, notice

    covered = a.js("""
        const n = document.getElementById('notice').getBoundingClientRect();
        const hit = (r) => r.width > 0 && r.height > 0 && r.left < n.right && n.left < r.right && r.top < n.bottom && n.top < r.bottom;
        const own = document.getElementById('notice').closest('.notice-box') || document.getElementById('notice');
        const out = [];
        for (const e of document.querySelectorAll('#room button, #room input, #room select, #room label, #room h2, '
                                                  + '#people li, #detail .field, #detail, #people, #presence li, #connection')) {
          if (own.contains(e) || e.contains(own)) continue;
          const r = e.getBoundingClientRect();
          if (hit(r)) out.push((e.id ? '#' + e.id : e.tagName.toLowerCase() + '.' + e.className) + ' ' + JSON.stringify(
            e.textContent.replace(/\\s+/g, ' ').trim().slice(0, 30)));
        }
        return out;""")
    assert not covered, f"the notice covers: {covered}\n{a.describe()}"

    a.click("#notice-dismiss")
    a.wait_for(lambda p: not p.text("#notice") and not p.q("#notice").is_displayed(), "#notice gone after #notice-dismiss")
    log = a.wait_for(lambda p: [li.text for li in p.qa("#notice-log li")], "#notice-log holding the notice")
    assert any(t.startswith("Nothing was undone:") for t in log), log

    a.undo_key()
    a.wait_for(lambda p: "nothing" in (p.text("#notice") or "").lower(), "#notice saying there is nothing left to undo")
    a.select(2)
    a.toggle("#glasses")
    a.wait_for(lambda p: not p.text("#notice"), "the notice gone with ann's next action")
    log = [li.text for li in a.qa("#notice-log li")]
    assert len(log) == 2 and "undo" in log[0].lower() and log[1].startswith("Nothing was undone:"), log
    a.screenshot("2-notice-log")


def test_the_page_speaks_one_vocabulary_in_words_not_identifiers(hub, room, browsers):
    """Issue 17, item 8 (web). ann and bob look at Ann. bob's focus on the weather opinion shows on
    ann's page as "Weather" (not "preference"), on the hair color choice as "Hair color" (not
    "hairColor"). carol (the terminal client) takes Sam's glasses off: ann's activity line names Sam.
    Nowhere on ann's page (text, titles, accessible names) is "colour" or an identifier such as
    hairColor or preference; the labels are "Hair color" and "Eye color", and the labels ann's edits
    carry use the same words as the page ("Change Hair Color"; a person deleted with "Delete" is undone
    as "Delete Person").
    Before the fix: failed at "bob's presence on weather names the topic" ("bob — Ann · preference")."""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    b = browsers(hub, "bob")
    b.open_room(room, "bob")
    a.select(1)
    b.select(1)

    b.js("document.querySelector('[data-topic=\"weather\"] button[aria-pressed=\"true\"]').focus();")
    bob = a.wait_for(lambda p: (lambda t: t if "·" in t else None)(p.text('#presence li[data-user="bob"]') or ""),
                     "bob's presence naming what he looks at")
    assert "Weather" in bob and "preference" not in bob, f"bob's presence on weather names the topic: {bob!r}"
    b.js("document.querySelector('#hairColor').focus();")
    bob = a.wait_for(lambda p: (lambda t: t if "Hair color" in t else None)(p.text('#presence li[data-user="bob"]') or ""),
                     'bob\'s presence saying "Hair color"')
    assert "hairColor" not in bob, bob

    proc = pk_set(hub, room, "carol", 3, "glasses", "false")
    try:
        activity = a.wait_for(lambda p: (lambda t: t if "carol" in t else None)(p.text("#activity") or ""),
                              "ann's activity line telling carol's change")
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, (out, err)
    assert "Sam" in activity and "glasses" in activity.lower(), f"the activity says whose glasses: {activity!r}"

    labels = {l: a.text(f'label[for="{f}"]') for f, l in (("hairColor", "Hair color"), ("eyeColor", "Eye color"))}
    assert all(k == v for k, v in labels.items()), labels
    everything = a.js("""
        const out = [document.getElementById('room').innerText, document.title];
        for (const e of document.querySelectorAll('#room [title], #room [aria-label]'))
          out.push(e.getAttribute('title') || '', e.getAttribute('aria-label') || '');
        return out.join('\\n');""")
    assert "colour" not in everything.lower(), f"the page spells 'colour' somewhere: {everything!r}"
    wire = sorted(set(m.group(0) for m in WIRE_WORDS.finditer(everything)))
    assert not wire, f"identifiers a user reads on the page: {wire}"

    a.choose("hairColor", "red")
    wait_model(obs, lambda p: field_of(p, 1, "hairColor") == "red", "Ann red")
    assert last_label(obs, "ann") == "Change Hair Color"
    a.click(f'{a.row(3)} .delete')
    a.wait_for(lambda p: "Sam" in (p.text("#confirm-text") or ""), "the delete prompt naming Sam")
    a.click("#confirm-delete")
    wait_model(obs, lambda p: 3 not in tags(p), "Sam deleted")
    assert last_label(obs, "ann") == "Delete Person", f"the page deletes, the label says so: {last_label(obs, 'ann')!r}"
    a.wait_for(undo_text_is("Undo Delete Person"), '#undo offering "Undo Delete Person"')


# -- issue 18, item 3: history you can see and act on (HISTORY.md §6) ----------------------------------
#
# Each test below failed against the page before the history panel and the editor's "who · when"
# existed (no #history-list, no .writer); its docstring says at which step.

def history_is(revs: list[int]):
    """A wait condition: the history panel's rows are exactly these revisions, top to bottom."""
    return lambda p: (lambda rows: rows if [r["rev"] for r in rows] == revs else None)(p.history_rows())


def iso(ms: int) -> str:
    """A hub time (ms since the epoch) as the page's <time datetime> says it (JS toISOString)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


def ops_frame(obs, rev: int) -> dict:
    frames = [m for m in obs.log if m["type"] == "ops" and m["rev"] == rev]
    assert frames, f"the observer never got revision {rev}: {obs.log[-4:]}"
    return frames[-1]


def test_the_history_panel_lists_the_room_s_changes_newest_first_and_loads_older_pages_on_scroll(hub, room, browsers):
    """ann and bob each make a change: both pages' history panels show them live, newest first (bob's
    eye color change on Joan, then ann's hair color change on Ann): who, the action's label, the person
    by name, "just now" with the exact time as the tooltip (<time datetime> is the hub's time). A rename
    of Ann shows her new name on the older row. carol (a client of her own) then makes 60 changes; they
    appear at the top of ann's panel as they happen. A page opened afterwards reads only the newest 50
    rows ("Show older changes" is offered); scrolling the list to its end loads the older ones, down to
    ann's first change, and then says nothing is older.
    Before: failed at "the history panel (#history-list) saying there are no changes yet" (the page had
    none)."""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    b = browsers(hub, "bob")
    b.open_room(room, "bob")
    a.wait_for(lambda p: p.q("#history-list") is not None and "No changes yet" in (p.text("#history") or ""),
               "the history panel (#history-list) saying there are no changes yet")

    a.select(1)
    a.choose("hairColor", "red")
    wait_model(obs, lambda p: field_of(p, 1, "hairColor") == "red", "Ann red (ann's edit)")
    b.select(2)
    b.choose("eyeColor", "green")
    wait_model(obs, lambda p: field_of(p, 2, "eyeColor") == "green", "Joan's eyes green (bob's edit)")
    for p in (a, b):
        rows = p.wait_for(history_is([2, 1, 0]), f"{p.label}'s panel showing revisions 2 and 1, newest first, "
                          "then the room as it started")
        top, first, start = rows
        assert (top["author"], top["who"], top["what"], top["touched"]) == ("bob", "bob", "Change Eye Color", "Joan"), top
        assert (first["who"], first["what"], first["touched"]) == ("ann", "Change Hair Color", "Ann"), first
        assert (start["kind"], start["what"], start["restore"]) == ("start", "The room as it started", True), start
        for row in (top, first):
            assert row["when"] == "just now" and row["title"], f"a relative time with the exact time on hover: {row}"
            assert row["datetime"] == iso(ops_frame(obs, row["rev"])["time"]), (row, ops_frame(obs, row["rev"]))
    a.screenshot("1-two-rows")

    # Names as they are now: Ann renamed, her old row says so.
    name = a.must("#name")
    a.click(name)
    name.send_keys(Keys.END, "ie")
    wait_model(obs, lambda p: field_of(p, 1, "name") == "Annie", "Ann renamed Annie")
    b.wait_for(lambda p: (lambda r: r and r[-2]["rev"] == 1 and r[-2]["touched"] == "Annie")(p.history_rows()),
               "bob's row of ann's first change naming Annie (her name now)")
    head = obs.rev

    carol = hub.join(room, "carol")
    for i in range(60):
        carol.edit([{"op": "set", "tag": 3, "field": "hairLength", "value": ("long", "short")[i % 2]}],
                   label="Change Hair Length")
    last = head + 60
    a.wait_for(lambda p: p.history_revs()[:1] == [last], f"ann's panel showing carol's revision {last} at the top, live")
    # (ann's own typing, revisions 3 and 4, is one row or two on her page: one undo step, or two when
    # the hub took longer than its coalesce window between them; bob's page below shows it as one.)
    assert a.history_revs()[:61] == list(range(last, head - 1, -1)), "every revision came live, in order"
    top = a.history_rows()[0]
    assert (top["who"], top["what"], top["touched"]) == ("carol", "Change Hair Length", "Sam"), top

    c = browsers(hub, "bob-later")
    c.open_room(room, "bob")
    revs = c.wait_for(lambda p: (lambda r: r if r and r[0] == last else None)(p.history_revs()),
                      "a page opened later showing the newest revision at the top")
    assert revs == list(range(last, last - 50, -1)), f"the first page is the newest 50 rows: {revs}"
    assert c.q("#history-more").is_displayed() and not c.q("#history-end").is_displayed(), c.describe()
    c.screenshot("2-first-page")
    c.scroll_history_to_end()
    revs = c.wait_for(lambda p: (lambda r: r if r and r[-1] == 0 else None)(p.history_revs()),
                      "the older rows, down to revision 1 and the room as it started, after scrolling the list to its end")
    assert revs == list(range(last, head, -1)) + [head, 2, 1, 0], \
        f"every revision, ann's typing of `ie` (revisions 3 and {head}) one row: {revs}"
    rows = c.history_rows()
    assert (rows[-4]["first"], rows[-4]["what"], rows[-4]["revText"]) == (3, "Change Name (2 changes)", f"#3–#{head}"), rows[-4]
    assert (rows[-2]["who"], rows[-2]["what"], rows[-2]["touched"]) == ("ann", "Change Hair Color", "Annie"), rows[-2]
    assert (rows[-3]["who"], rows[-3]["touched"]) == ("bob", "Joan"), rows[-3]
    assert rows[-3]["undo"] is True and rows[-2]["undo"] is None, \
        f"bob (this page's user) may undo his own row on its own, not ann's: {rows[-3:-1]}"
    c.wait_for(lambda p: p.q("#history-end").is_displayed() and not p.q("#history-more").is_displayed(),
               "the end of the timeline said (#history-end), no more to load")
    c.screenshot("3-scrolled-to-the-start")


def two_frames_after(p, script: str) -> None:
    """Runs `script` on the page and returns two frames later (a scroll's event comes with the next frame)."""
    p.driver.execute_async_script(script + "; requestAnimationFrame(() => requestAnimationFrame(arguments[arguments.length - 1]));")


def test_rows_read_below_the_top_of_the_history_stay_while_teammates_change_the_room(hub, room, browsers):
    """A black-box pass of session 32 read the history panel in a room with teammates at 60 edits a
    second: the panel kept 200 rows (or as many as were scrolled to), so each live revision at the top
    dropped the oldest row, and the rows being read at the bottom went, several a second. Now, while
    the list is scrolled below its top, no row comes or goes: "↑ 5 newer changes" over the list says
    what waits, and takes the list to its top, where they are.
    Before: failed at "5 newer changes said" (the rows read were dropped, revisions 1–5 first)."""
    obs = observe(hub, room)
    mates = [hub.join(room, user) for user in ("carol", "dave", "erin")]
    for i in range(240):  # 80 each: within a connection's burst of the hub's 100 frames a second
        mates[i % 3].edit([{"op": "set", "tag": 3, "field": "hairLength", "value": ("long", "short")[i % 2]}],
                          label="Change Hair Length")
    head = max(m.rev for m in mates)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.wait_for(lambda p: p.history_revs()[:1] == [head], "the newest revision at the top of ann's panel")
    for _ in range(8):  # pages of 50: scrolled to the end until the room's start is shown
        a.scroll_history_to_end()
        if a.wait_for(lambda p: (lambda r: r if r and len(r) > 50 else None)(p.history_revs()), "older rows")[-1] == 0:
            break
        time.sleep(0.3)
    before = a.wait_for(lambda p: (lambda r: r if r and r[-1] == 0 else None)(p.history_revs()),
                        "every row down to the room's start")
    assert before == list(range(head, -1, -1)), before
    read = 'document.querySelector(\'#history-list li[data-rev="5"]\')'
    two_frames_after(a, f"{read}.scrollIntoView({{block: 'center'}});")
    offset = lambda p: p.js(f"return Math.round({read}.getBoundingClientRect().top "
                           "- document.getElementById('history-list').getBoundingClientRect().top);")
    y = offset(a)
    a.screenshot("1-reading-revision-5")

    for i in range(5):
        mates[0].edit([{"op": "set", "tag": 1, "field": "eyeColor", "value": ("green", "blue")[i % 2]}],
                      label="Change Eye Color")
    newer = a.wait_for(lambda p: (lambda e: e if e and "5 newer changes" in e else None)(p.text("#history-newer")),
                       "5 newer changes said")
    a.screenshot("2-five-newer-waiting")
    assert a.history_revs() == before, "no row came or went while ann read"
    assert abs(offset(a) - y) <= 1, f"the row ann reads stayed where it was: {y} → {offset(a)}"
    assert "↑" in newer and a.q("#history-newer").is_displayed(), newer

    a.click("#history-newer")
    a.wait_for(lambda p: p.history_revs()[:6] == list(range(head + 5, head - 1, -1)),
               "the waiting revisions at the top once ann is back there")
    assert a.js("return document.getElementById('history-list').scrollTop;") == 0
    assert not a.q("#history-newer").is_displayed(), "nothing waits at the top"
    assert a.js("return document.activeElement.id;") == "history-list", "the focus is on the list, not lost"
    mates[1].edit([{"op": "set", "tag": 2, "field": "glasses", "value": True}], label="Change Glasses")
    a.wait_for(lambda p: p.history_revs()[:1] == [head + 6], "a teammate's next change at the top, live again")
    a.screenshot("3-back-at-the-top")

    # Scrolled down a little and back up by hand (no button): the same.
    two_frames_after(a, "document.getElementById('history-list').scrollTop = 300;")
    for value in ("green", "brown"):  # Joan's eyes are blue
        mates[2].edit([{"op": "set", "tag": 2, "field": "eyeColor", "value": value}], label="Change Eye Color")
    a.wait_for(lambda p: "2 newer changes" in (p.text("#history-newer") or ""), "2 newer changes said")
    assert a.history_revs()[:1] == [head + 6]
    a.js("document.getElementById('history-list').scrollTop = 0;")
    a.wait_for(lambda p: p.history_revs()[:3] == [head + 8, head + 7, head + 6], "both at the top once scrolled there")


def test_a_person_added_renamed_by_typing_and_deleted_is_named_as_they_were_when_deleted(hub, room, browsers):
    """Session 26 (a history pass): carol adds "New person", types it into "Kim", then deletes her. A
    page opened afterwards (which never saw Kim) names her on the deletion's row as "Kim (deleted)",
    the name she had then, from the rows it read: the insert, then the typing replayed on it.
    Before: "New person (deleted)", the insert's name."""
    obs = observe(hub, room)
    carol = hub.join(room, "carol")
    tag = carol.new_tag()
    carol.edit([{"op": "insert", "at": 3, "person": {**SEED[0], "tag": tag, "name": "New person"}}], label="Add Person")
    carol.edit([{"op": "text", "tag": tag, "edits": [{"delete": 10}, {"insert": "Ki"}]}], label="Change Name")
    carol.edit([{"op": "text", "tag": tag, "edits": [{"retain": 2}, {"insert": "m"}]}], label="Change Name")
    carol.edit([{"op": "remove", "tag": tag}], label="Delete Person")
    wait_model(obs, lambda p: obs.rev == 4, "carol's four revisions")
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    # (the typing, revisions 2 and 3, is one row: history-runs.js)
    rows = a.wait_for(history_is([4, 3, 1, 0]), "ann's panel showing carol's four revisions in three rows")
    assert rows[1]["first"] == 2, rows[1]
    assert [r["touched"] for r in rows[:3]] == ["Kim (deleted)"] * 3, rows


def x_after_joans_name(page, obs):
    """`page`'s user selects Joan and types `x` after her name (revision 1, seen by `obs`); returns the
    name field, the focus still in it."""
    page.select(2)
    name = page.must("#name")
    page.click(name)
    name.send_keys(Keys.END, "x")
    wait_model(obs, lambda p: field_of(p, 2, "name") == "Joanx", f"Joanx ({page.label}, r1)")
    return name


def test_a_name_typed_a_letter_a_revision_is_one_row_of_the_history(hub_factory, room, browsers):
    """bob types `xyz` after Joan's name: two or three revisions (`x` alone, then `yz` as the page sends
    them), one undo step (this hub's coalesce window is a minute); ann then changes Ann's hair. Both
    panels show bob's typing as one row ("Change Name (3 changes)", revisions "#1–#3"), on Joan;
    bob's with "Undo this", which takes the whole name back in one revision (`Joan` again), and whose
    "Restore to here" asks about the room right after the typing. (It was a row a letter: a black-box
    pass, session 40.)"""
    _, obs, a, b = ann_and_bob_typing(hub_factory, room, browsers)
    name = x_after_joans_name(b, obs)
    name.send_keys("y", "z")  # one revision or two: the page sends what was typed while one was on its way
    wait_model(obs, lambda p: field_of(p, 2, "name") == "Joanxyz", "Joan renamed Joanxyz (bob)")
    typed = obs.rev
    assert typed >= 2, typed
    name.send_keys(Keys.TAB)
    a.select(1)
    a.choose("hairColor", "red")
    wait_model(obs, lambda p: field_of(p, 1, "hairColor") == "red", "Ann red (ann)")

    def typed_row(p):
        rows = p.history_rows()
        return rows if [(r["rev"], r["first"]) for r in rows] == [(typed + 1, None), (typed, 1), (0, None)] else None
    for p in (a, b):
        rows = p.wait_for(typed_row, f"{p.label}'s panel: ann's change, bob's typing as one row (1–{typed}), the start")
        row = rows[1]
        assert (row["who"], row["what"], row["touched"], row["revText"]) == \
            ("bob", f"Change Name ({typed} changes)", "Joanxyz", f"#1–#{typed}"), row
        assert row["undo"] is (True if p is b else None), row
    b.screenshot("1-typing-one-row")

    b.click(b.history_row(typed) + " button.restore-here")
    b.wait_for(lambda p: p.q("#restore-dialog") is not None and p.q("#restore-dialog").is_displayed(),
               "the restore question")
    assert b.js("return document.getElementById('restore-dialog').getAttribute('data-rev')") == str(typed), \
        "Restore to here on the run restores to right after its newest revision"
    b.js("document.getElementById('restore-dialog').close()")

    b.click(b.history_row(typed) + " button.undo-entry")
    wait_model(obs, lambda p: field_of(p, 2, "name") == "Joan", "Joan's whole name back (bob's Undo this on the row)")
    frame = ops_frame(obs, typed + 2)
    assert (frame["author"], frame["kind"]) == ("bob", "undo") and obs.rev == typed + 2, frame
    b.wait_for(lambda p: [(r["rev"], r["first"], r["undo"]) for r in p.history_rows()][1:3]
               == [(typed + 1, None, None), (typed, 1, None)] and p.history_revs()[:1] == [typed + 2],
               "bob's undo at the top, and no Undo this left on the typing's row")


def test_a_step_of_typing_with_a_teammate_s_change_in_its_middle_says_undo_takes_it_all(hub_factory, room, browsers):
    """ann types `x` in Joan's name (r1), bob changes Sam's glasses (r2), ann types `y` (r3): one undo
    step of ann's (this hub's coalesce window is a minute; a teammate's change does not end it), two
    rows of hers around bob's. Each of her rows says what "Undo" takes back: "Undo #1–#3", the whole
    step; taken back, both letters go and bob's change stays. (A black-box pass: the row said "(7
    changes)" and "Undo this" took back 20 letters.)"""
    hub = hub_factory({"undo": {"coalesceMillis": 60000}})
    obs = observe(hub, room)
    bob = hub.join(room, "bob")
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    name = x_after_joans_name(a, obs)
    bob.edit([{"op": "set", "tag": 3, "field": "glasses", "value": False}], label="Toggle Glasses")
    a.wait_for(lambda p: p.js("return window.peoplekeeper.revision") == 2, "bob's change on ann's page")
    name.send_keys("y")
    wait_model(obs, lambda p: field_of(p, 2, "name") == "Joanxy", "Joanxy (ann, r3)")
    name.send_keys(Keys.TAB)

    def undo_texts(p):
        rows = p.history_rows()
        if [r["rev"] for r in rows] != [3, 2, 1, 0]:
            return None
        texts = p.js("return [...document.querySelectorAll('#history-list li[data-rev]')].map((li) => "
                     "{ const b = li.querySelector('button.undo-entry'); return b && !b.hidden ? b.textContent.trim() : null; })")
        return texts if texts[:3] == ["Undo #1–#3", None, "Undo #1–#3"] else None
    a.wait_for(undo_texts, "ann's two rows of one step each offering \"Undo #1–#3\"")
    a.click(a.history_row(1) + " button.undo-entry")
    people = wait_model(obs, lambda p: field_of(p, 2, "name") == "Joan", "Joan's name whole again")
    assert field_of(people, 3, "glasses") is False, "bob's change stays"


def test_undo_this_takes_back_one_older_change_of_mine_and_nothing_after_it(hub, room, browsers):
    """ann changes Ann's hair (r1), then Joan's glasses (r2); bob then changes Ann's eye color (r3).
    ann's panel offers "Undo this" on her two rows, not on bob's (and bob's, on his row only). ann's
    "Undo this" on r1 (an older step) gives Ann brown hair again and nothing else: Joan keeps her glasses
    (ann's own later change) and Ann her green eyes (bob's). The undo is the new top row; r1 offers no
    undo any more, and #undo still offers ann's newest step. Then bob takes Joan's glasses off, and ann's
    "Undo this" on r2 is skipped: the notice says so like any other ("Nothing was undone: … by bob."),
    nothing changes in the room, and r2's button goes.
    Before: failed at "ann's panel with Undo this on her rows (revisions 2 and 1)" (no history
    panel)."""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    b = browsers(hub, "bob")
    b.open_room(room, "bob")
    a.select(1)
    a.choose("hairColor", "red")
    wait_model(obs, lambda p: field_of(p, 1, "hairColor") == "red", "Ann red (ann, r1)")
    a.select(2)
    assert a.toggle("#glasses") is True
    wait_model(obs, lambda p: field_of(p, 2, "glasses") is True, "Joan with glasses (ann, r2)")
    b.select(1)
    b.choose("eyeColor", "green")
    wait_model(obs, lambda p: field_of(p, 1, "eyeColor") == "green", "Ann's eyes green (bob, r3)")

    rows = a.wait_for(lambda p: (lambda r: r if [x["rev"] for x in r] == [3, 2, 1, 0] and r[1]["undo"] and r[2]["undo"]
                                 else None)(p.history_rows()),
                      "ann's panel with Undo this on her rows (revisions 2 and 1)")
    assert rows[0]["undo"] is None and rows[0]["who"] == "bob", f"no Undo this on bob's row for ann: {rows[0]}"
    assert (rows[1]["entry"], rows[2]["entry"]) == (2, 1), rows
    brows = b.wait_for(history_is([3, 2, 1, 0]), "bob's panel with the three rows and the start")
    assert [r["undo"] for r in brows] == [True, None, None, None], f"bob may undo only his own row: {brows}"
    a.screenshot("1-undo-this-offered")

    a.click(a.history_row(1) + " button.undo-entry")
    people = wait_model(obs, lambda p: field_of(p, 1, "hairColor") == "brown", "Ann's hair brown again (ann's Undo this on r1)")
    assert field_of(people, 2, "glasses") is True, f"ann's later change stays: {by_tag(people, 2)}"
    assert field_of(people, 1, "eyeColor") == "green", f"bob's later change stays: {by_tag(people, 1)}"
    frame = ops_frame(obs, 4)
    assert (frame["author"], frame["kind"]) == ("ann", "undo") and obs.rev == 4, frame
    rows = a.wait_for(lambda p: (lambda r: r if r and r[0]["rev"] == 4 and r[-2]["rev"] == 1 and r[-2]["undo"] is None
                                 else None)(p.history_rows()),
                      "the undo at the top of ann's panel, and no Undo this left on revision 1")
    assert (rows[0]["kind"], rows[0]["what"], rows[0]["touched"]) == ("undo", "Undo Change Hair Color", "Ann"), rows[0]
    assert [r["rev"] for r in rows if r["undo"]] == [2], f"only r2 is left to undo on its own: {rows}"
    a.wait_for(undo_text_is("Undo Toggle Glasses"), '#undo still offering ann\'s newest step ("Undo Toggle Glasses")')
    b.wait_for(lambda p: p.value("select#hairColor") == "brown" and p.value("select#eyeColor") == "green",
               "bob's page: Ann's hair brown, her eyes still green")

    # A teammate came after: the selective undo is skipped, and says so as any skip notice does.
    b.select(2)
    assert b.toggle("#glasses") is False
    wait_model(obs, lambda p: field_of(p, 2, "glasses") is False, "Joan without glasses (bob, r5)")
    a.wait_for(lambda p: p.history_revs()[:1] == [5], "bob's change at the top of ann's panel")
    mark = obs.mark()
    a.click(a.history_row(2) + " button.undo-entry")
    notice = a.wait_for(lambda p: p.text("#notice"), "#notice after ann's Undo this on revision 2")
    assert notice == "Nothing was undone: your change to Joan's glasses was overwritten by bob.", notice
    a.wait_for(lambda p: (lambda r: r and r["undo"] is None)(next((x for x in p.history_rows() if x["rev"] == 2), None)),
               "no Undo this on revision 2 any more (the entry was consumed)")
    a.screenshot("2-skipped")
    obs.expect_nothing("ops", since=mark)
    rev, people = room_state(hub, room)
    assert rev == 5 and field_of(people, 2, "glasses") is False, (rev, by_tag(people, 2))


def test_restore_to_here_asks_how_many_changes_it_takes_back_and_can_be_undone(hub, browsers):
    """ann changes Ann's hair (r1); bob changes Joan's eyes (r2) and hair (r3); ann takes Sam's glasses
    off (r4). On ann's page every row offers "Restore to here" (the newest row's is off: it is how the
    room is now). On r1 it first asks, saying it takes back the 3 changes made since; "Keep as it is"
    sends nothing. Confirmed, the room is as it was after r1 (Ann red, Joan's eyes blue and hair black,
    Sam with glasses) in one revision of kind restore by ann, which bob's page shows live at the top of
    its panel. ann's Undo then offers the restore and takes it back to the state after r4.
    The picture docs/images/history-panel.png is this test's "history-panel" screenshot (1440 px wide,
    in a room with a short name).
    Before: failed at "ann's panel with revisions 4 to 1" (no history panel)."""
    room = unique_room("team")
    obs = observe(hub, room)
    a = browsers(hub, "ann", width=1440, height=900)
    a.open_room(room, "ann")
    b = browsers(hub, "bob")
    b.open_room(room, "bob")
    a.select(1)
    a.choose("hairColor", "red")
    wait_model(obs, lambda p: field_of(p, 1, "hairColor") == "red", "Ann red (ann, r1)")
    b.select(2)
    b.choose("eyeColor", "green")
    wait_model(obs, lambda p: field_of(p, 2, "eyeColor") == "green", "Joan's eyes green (bob, r2)")
    b.choose("hairColor", "white")
    wait_model(obs, lambda p: field_of(p, 2, "hairColor") == "white", "Joan's hair white (bob, r3)")
    a.select(3)
    assert a.toggle("#glasses") is False
    wait_model(obs, lambda p: field_of(p, 3, "glasses") is False, "Sam without glasses (ann, r4)")

    rows = a.wait_for(history_is([4, 3, 2, 1, 0]), "ann's panel with revisions 4 to 1 and the start")
    assert [r["restore"] for r in rows] == [False, True, True, True, True], \
        f"Restore to here on every row but the newest (which is how the room is now): {rows}"
    mark = obs.mark()
    a.click(a.history_row(1) + " button.restore-here")
    a.wait_for(lambda p: p.js("return document.getElementById('restore-dialog').open;"), "the restore confirmation open")
    question = a.text("#restore-text")
    a.screenshot("1-restore-asks")
    assert "takes back the 3 changes" in question and "ann's Change Hair Color" in question, question
    assert a.js("return document.getElementById('restore-dialog').getAttribute('data-count');") == "3"
    a.click("#cancel-restore")
    a.wait_for(lambda p: not p.js("return document.getElementById('restore-dialog').open;"), "the confirmation closed")
    obs.expect_nothing("ops", since=mark)

    a.click(a.history_row(1) + " button.restore-here")
    a.wait_for(lambda p: p.js("return document.getElementById('restore-dialog').open;"), "the restore confirmation open again")
    a.click("#confirm-restore")
    people = wait_model(obs, lambda p: field_of(p, 2, "eyeColor") == "blue" and field_of(p, 3, "glasses") is True,
                        "the room as it was after revision 1")
    assert (field_of(people, 1, "hairColor"), field_of(people, 2, "hairColor")) == ("red", "black"), people
    frame = ops_frame(obs, 5)
    assert (frame["author"], frame["kind"], frame.get("label")) == ("ann", "restore", "Restore to revision 1"), frame
    rows = b.wait_for(lambda p: (lambda r: r if r and r[0]["rev"] == 5 else None)(p.history_rows()),
                      "the restore at the top of bob's panel, live")
    assert (rows[0]["kind"], rows[0]["who"], rows[0]["what"]) == ("restore", "ann", "Restore to revision 1"), rows[0]
    assert "Joan" in rows[0]["touched"] and "Sam" in rows[0]["touched"], rows[0]
    b.wait_for(lambda p: p.value("select#eyeColor") == "blue" and p.value("select#hairColor") == "black",
               "bob's page showing Joan as she was")
    a.wait_for(undo_text_is("Undo Restore to revision 1"), '#undo offering "Undo Restore to revision 1"')
    a.wait_for(lambda p: (lambda r: r and r[0]["rev"] == 5 and r[0]["undo"] is True)(p.history_rows()),
               "Undo this on ann's restore (one undo step of hers)")

    a.click("#undo")
    people = wait_model(obs, lambda p: field_of(p, 2, "eyeColor") == "green" and field_of(p, 3, "glasses") is False,
                        "the room as it was before the restore (ann's undo)")
    assert (field_of(people, 1, "hairColor"), field_of(people, 2, "hairColor")) == ("red", "white"), people

    # The picture for the README: the observer leaves first, so that "Here now" shows ann and bob.
    obs.close()
    a.wait_for(lambda p: p.q('#presence li[data-user="observer"]') is None, "the observer gone from ann's #presence")
    a.wait_for(lambda p: (lambda r: r and r[0]["rev"] == 6 and r[0]["kind"] == "undo")(p.history_rows()),
               "the undo of the restore at the top of ann's panel")
    a.select(2)
    a.wait_for(lambda p: (p.writer("eyeColor") or {}).get("user") == "ann", "Joan's eye color last written by ann (the undo)")
    a.blur()
    a.wait_for(lambda p: p.js("""const bg = (s) => getComputedStyle(document.querySelector(s)).backgroundColor;
        return bg('#people li[data-tag="3"]') === 'rgba(0, 0, 0, 0)' && bg('[data-field="facialHair-beard"]') === 'rgb(255, 255, 255)';"""),
        "the selection's color transitions over (Sam's row and his beard toggle no longer blue)")
    a.screenshot("history-panel")


def test_restore_to_a_revision_the_room_already_looks_like_offers_no_restore(hub, room, browsers):
    """ann changes Ann's hair (r1), puts her glasses on (r2) and takes them off again (r3): the room
    is as it was right after r1. "Restore to here" on r1 says so ("The room already looks like it did
    right after ann's Change Hair Color…: restoring it would change nothing."), counts no change and
    offers no Restore, only Close; nothing is sent (HISTORY §3: such a restore makes no revision). On
    r2 the question is the usual one, taking back 1 change.
    Before the fix: the question said it "takes back the 2 changes made since" and offered Restore."""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(1)
    a.choose("hairColor", "red")
    assert a.toggle("#glasses") is True
    wait_model(obs, lambda p: field_of(p, 1, "glasses") is True, "Ann with glasses (r2)")
    assert a.toggle("#glasses") is False
    wait_model(obs, lambda p: field_of(p, 1, "glasses") is False and obs.rev == 3, "Ann without glasses again (r3)")
    a.wait_for(history_is([3, 2, 1, 0]), "ann's panel with revisions 3 to 1 and the start")

    mark = obs.mark()
    dialog = ("const d = document.getElementById('restore-dialog'); return {open: d.open, count: d.getAttribute('data-count'),"
              " already: d.getAttribute('data-already'), rev: d.getAttribute('data-rev'),"
              " restore: !document.getElementById('confirm-restore').hidden,"
              " close: document.getElementById('cancel-restore').textContent.trim(),"
              " title: document.getElementById('restore-title').textContent.trim(),"
              " text: document.getElementById('restore-text').textContent.trim()};")
    a.click(a.history_row(1) + " button.restore-here")
    said = a.wait_for(lambda p: (lambda d: d if d["open"] and d["already"] == "true" else None)(p.js(dialog)),
                      "the question saying the room already looks like revision 1")
    assert said["text"] == ("The room already looks like it did right after ann's Change Hair Color (just now): "
                            "restoring it would change nothing."), said
    assert (said["rev"], said["count"], said["restore"], said["close"], said["title"]) == \
        ("1", "0", False, "Close", "Nothing to restore"), said
    a.screenshot("1-nothing-to-restore")
    a.click("#cancel-restore")
    a.wait_for(lambda p: not p.js(dialog)["open"], "the question closed")
    obs.expect_nothing("ops", since=mark)

    a.click(a.history_row(2) + " button.restore-here")
    asked = a.wait_for(lambda p: (lambda d: d if d["open"] and d["count"] == "1" else None)(p.js(dialog)),
                       "the usual question on revision 2")
    assert asked["already"] is None and asked["restore"] is True and asked["close"] == "Keep as it is", asked
    assert "takes back the 1 change made since" in asked["text"], asked
    a.click("#cancel-restore")


def test_in_a_cluster_the_restore_question_reads_the_room_at_the_node_that_holds_it(hub_factory, pg_server, room,
                                                                                      browsers, tmp_path):
    """Two nodes on one PostgreSQL with tokens, each listing both nodes' pages in auth.allowedOrigins.
    bob's client holds the room at node b and makes r1 (Ann's hair), r2 (glasses on) and r3 (glasses
    off: the room is as right after r1 again). ann's page is served by node a, whose WebSocket sends it
    to b. "Restore to here" on r1 says the room already looks like that and offers no Restore, as on
    one node: the page reads `?at=1` at b (the node its WebSocket was sent to) with its token, and b
    lets a's page read the answer (CORS, preflight and all).
    Before the fix: the page asked a, whose 307 the browser followed to b without the token (401), and
    b's answer had no Access-Control-Allow-Origin anyway: the question asked to take back 2 changes."""
    from conftest import merge, to_yaml
    secret = tmp_path / "secret"
    secret.write_text(TOKEN_SECRET + "\n")
    nodes = [hub_factory({"storage": {"kind": "postgres", "postgresURL": pg_server.url}, "cluster": {"nodeId": name},
                          "auth": {"mode": "token", "secretFile": str(secret)}, "metrics": {"enabled": True}})
             for name in ("a", "b")]
    origins = [f"http://127.0.0.1:{n.port}" for n in nodes]
    for n in nodes:  # each node lets both nodes' pages in: only known once both have their ports
        n.config = merge(n.config, {"auth": {"allowedOrigins": origins}})
        n.config_path.write_text(to_yaml(n.config))
        n.restart(same_port=True)
    a, b = nodes
    bob = b.join(room, "bob", token=jwt("bob", [room]))
    for ops in ([{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}],
                [{"op": "set", "tag": 1, "field": "glasses", "value": True}],
                [{"op": "set", "tag": 1, "field": "glasses", "value": False}]):
        bob.submit(ops)
        assert "rev" in bob.take("ack"), bob
    assert bob.rev == 3

    ann = browsers(a, "ann")
    join_with_token(ann, room, "ann", jwt("ann", [room]))
    assert ann.js("return window.peoplekeeper.revision") == 3
    ann.wait_for(history_is([3, 2, 1, 0]), "ann's panel with bob's revisions 3 to 1 and the start")
    dialog = ("const d = document.getElementById('restore-dialog'); return {open: d.open, count: d.getAttribute('data-count'),"
              " already: d.getAttribute('data-already'), restore: !document.getElementById('confirm-restore').hidden,"
              " text: document.getElementById('restore-text').textContent.trim()};")
    ann.click(ann.history_row(1) + " button.restore-here")
    # The question opens as the usual one and changes once the `?at=1` read is answered (slow on a busy
    # machine): wait for that, not for the first question shown.
    said = ann.wait_for(lambda p: (lambda d: d if d["open"] and d["already"] == "true" else None)(p.js(dialog)),
                        "the restore question on revision 1 saying the room already looks like that")
    assert said["already"] == "true" and said["count"] == "0" and said["restore"] is False, said
    assert said["text"].startswith("The room already looks like it did right after bob's"), said
    ann.click("#cancel-restore")
    preflights = re.search(r'^peoplekeeper_http_requests_total\{(?=[^}]*route="OPTIONS \(preflight\)")(?=[^}]*status="200")'
                           r'[^}]*\} (\d+)', b.metrics(), re.MULTILINE)
    assert preflights and int(preflights.group(1)) >= 1, "the page's read went to b, preflight first"
    status, _, body = b.http("GET", f"/v1/rooms/{room}", {"Authorization": "Bearer " + jwt("bob", [room])})
    assert status == 200 and json.loads(body)["rev"] == 3, (status, body)


def test_no_restore_is_offered_or_queued_while_the_hub_is_unreachable(hub_factory, room, browsers):
    """A restore is worked out by the hub when it gets there, so one queued offline would take back
    whatever teammates sent meanwhile, which the question never counted. ann changes Ann's hair (r1)
    and glasses (r2) and opens "Restore to here" on r1 (takes back 1 change); the hub is killed while
    the question is open: it now says the hub is unreachable, offers no Restore, only Close, and the
    same on a question opened offline. After the restart a teammate's change is kept: no restore was
    queued. Before the fix: Restore stayed offered, was queued, and took back bob's change made meanwhile."""
    hub, a = ann_on_a_sqlite_hub(hub_factory, room, browsers)
    a.choose("hairColor", "red")
    assert a.toggle("#glasses") is True
    a.wait_for(history_is([2, 1, 0]), "ann's panel with revisions 2, 1 and the start")
    dialog = ("const d = document.getElementById('restore-dialog'); return {open: d.open, count: d.getAttribute('data-count'),"
              " offline: d.getAttribute('data-offline'), restore: !document.getElementById('confirm-restore').hidden,"
              " close: document.getElementById('cancel-restore').textContent.trim(),"
              " title: document.getElementById('restore-title').textContent.trim(),"
              " text: document.getElementById('restore-text').textContent.trim()};")
    a.click(a.history_row(1) + " button.restore-here")
    asked = a.wait_for(lambda p: (lambda d: d if d["open"] and d["count"] == "1" else None)(p.js(dialog)),
                       "the usual question on revision 1")
    assert asked["restore"] is True and asked["offline"] is None, asked

    kill_hub_under(hub, a)
    said = a.wait_for(lambda p: (lambda d: d if d["offline"] == "true" else None)(p.js(dialog)),
                      "the open question saying the hub is unreachable")
    assert (said["open"], said["restore"], said["close"], said["title"], said["count"]) == \
        (True, False, "Close", "The hub is unreachable", "0"), said
    assert "can't be reached" in said["text"] and "Try again" in said["text"], said
    a.screenshot("1-restore-offline")
    a.click("#cancel-restore")
    a.wait_for(lambda p: not p.js(dialog)["open"], "the question closed")
    a.click(a.history_row(1) + " button.restore-here")
    again = a.wait_for(lambda p: (lambda d: d if d["open"] else None)(p.js(dialog)), "the question opened offline")
    assert again["offline"] == "true" and again["restore"] is False, again
    # Enter on the dialog (its default action) restores nothing either.
    a.js("document.getElementById('confirm-restore').click();")
    a.wait_for(lambda p: not p.js(dialog)["open"], "the question closed")
    assert not (a.text("#waiting") or ""), "nothing queued"

    hub.restart(same_port=True)
    a.wait_for(lambda p: p.summary()["connection"] == "online", "ann online again", timeout=RECONNECT_WAIT)
    obs = observe(hub, room)
    bob = hub.join(room, "bob")
    bob.edit([{"op": "set", "tag": 2, "field": "glasses", "value": True}], label="Toggle Glasses")
    people = wait_model(obs, lambda p: field_of(p, 2, "glasses") is True, "bob's change")
    time.sleep(1.0)
    assert obs.rev == 3 and field_of(obs.people, 2, "glasses") is True and field_of(obs.people, 1, "glasses") is True, \
        f"no restore went out: rev {obs.rev}, {obs.people}"


def test_the_room_as_it_started_is_the_last_row_and_can_be_restored_to(hub, room, browsers):
    """The hub lists no revision 0 (HISTORY §4), yet the terminal client can `restore 0`. ann changes
    Ann's hair (r1) and bob Joan's glasses (r2): ann's panel ends with a row for revision 0, "The room
    as it started" (no author, no time, no Undo this), with "Restore to here". It asks first ("…how it
    was when it started? This takes back the 2 changes made since…"); confirmed, the room is its seed
    again, in one revision of ann's, "Restore to revision 0".
    Before the fix: failed at "ann's panel ending with the room as it started" (no row for revision 0)."""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(1)
    a.choose("hairColor", "red")
    wait_model(obs, lambda p: field_of(p, 1, "hairColor") == "red", "Ann red (ann, r1)")
    bob = hub.join(room, "bob")
    bob.edit([{"op": "set", "tag": 2, "field": "glasses", "value": True}], label="Toggle Glasses")
    rows = a.wait_for(history_is([2, 1, 0]), "ann's panel ending with the room as it started")
    start = rows[-1]
    assert (start["kind"], start["who"], start["what"], start["when"], start["touched"]) == \
        ("start", "", "The room as it started", "", ""), start
    assert (start["undo"], start["restore"], start["author"], start["entry"]) == (None, True, None, None), start
    a.wait_for(lambda p: p.q("#history-end").is_displayed(), "#history-end under it: nothing older")

    a.click(a.history_row(0) + " button.restore-here")
    a.wait_for(lambda p: p.js("return document.getElementById('restore-dialog').open;"), "the restore confirmation open")
    dialog = a.js("const d = document.getElementById('restore-dialog');"
                  "return [d.getAttribute('data-rev'), d.getAttribute('data-count')];")
    assert dialog == ["0", "2"], dialog
    assert a.text("#restore-text") == ("Restore the room to how it was when it started? This takes back the 2 changes "
                                       "made since, by everyone. You can undo the restore."), a.text("#restore-text")
    a.screenshot("1-restore-the-start-asks")
    a.click("#confirm-restore")
    wait_model(obs, lambda p: p == SEED, "the room as it started (its seed)")
    frame = ops_frame(obs, 3)
    assert (frame["author"], frame["kind"], frame.get("label")) == ("ann", "restore", "Restore to revision 0"), frame
    rows = a.wait_for(history_is([3, 2, 1, 0]), "the restore at the top of ann's panel")
    assert (rows[0]["what"], rows[0]["restore"]) == ("Restore to revision 0", False), rows[0]


def test_a_computer_whose_clock_is_off_still_shows_a_change_made_now_as_just_now(hub, room, browsers):
    """A revision's time is the hub's clock; "2 min ago" was worked out on the page's, so a computer
    whose clock ran five minutes fast showed a teammate's change of this instant as "5 min ago" in the history
    panel and beside the field (session 24). The page now measures against the hub's clock, from the
    `pong` (its `time`) of a ping after the welcome.
    Before: failed at "ann's history panel: the change just now" (it said "5 min ago")."""
    obs = observe(hub, room)
    a = browsers(hub, "ann", clock_offset_ms=5 * 60_000)
    a.open_room(room, "ann")
    assert abs(a.js("return Date.now()") / 1000 - time.time() - 300) < 30, "the page's clock runs five minutes fast"
    a.select(1)
    obs.send({"type": "submit", "seq": 1, "base": 0, "ops": [{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}],
              "label": "Change Hair Color"})
    rows = a.wait_for(lambda p: (lambda r: r if r and r[0]["rev"] == 1 else None)(p.history_rows()),
                      "ann's history panel with the observer's change on top")
    assert rows[0]["when"] == "just now", f"ann's history panel: the change just now: {rows[0]}"
    w = a.wait_for(lambda p: (lambda w: w if w and w["user"] == OBSERVER else None)(p.writer("hairColor")),
                   "ann's hair color naming the observer")
    assert w["text"] == f"{OBSERVER} · just now", w


def test_the_editor_says_who_last_changed_each_field_and_follows_a_teammate_live(hub, room, browsers):
    """ann and bob look at Ann. Beside each field ann's editor says who last changed it: "from the start"
    for the seed's values. bob picks red hair: at once ann's hair color says "bob · just now" (the exact
    time and the revision in its tooltip), her eye color still "from the start". ann's own change reads
    "ann · just now" on both pages. bob's glasses toggle, his like of music and his move of Ann down the
    list show beside those fields ("moved by bob" for the place in the list). The hub's own `blame`,
    asked by an independent client, names the same writers.
    Before: failed at "ann's hair color saying who last changed it" (no .writer beside any field)."""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    b = browsers(hub, "bob")
    b.open_room(room, "bob")
    a.select(1)
    b.select(1)
    w = a.wait_for(lambda p: (lambda w: w if w and w["text"] else None)(p.writer("hairColor")),
                   "ann's hair color saying who last changed it (#detail .writer[data-writer=hairColor])")
    assert w == {"text": "from the start", "user": "", "title": "Unchanged since the room began"}, w
    for key in ("name", "eyeColor", "glasses", "topic-weather"):
        assert (a.writer(key) or {}).get("text") == "from the start", (key, a.writer(key))
    assert a.writer("created")["text"] == "in the room from the start", a.writer("created")

    b.choose("hairColor", "red")
    w = a.wait_for(lambda p: (lambda w: w if w and w["user"] == "bob" else None)(p.writer("hairColor")),
                   "ann's hair color naming bob, live")
    assert w["text"] == "bob · just now" and "revision 1" in w["title"], w
    assert a.writer("eyeColor")["text"] == "from the start", a.writer("eyeColor")
    a.screenshot("1-bob-changed-hair")

    a.choose("eyeColor", "green")
    a.wait_for(lambda p: (p.writer("eyeColor") or {}).get("text") == "ann · just now", 'ann\'s eye color "ann · just now"')
    b.wait_for(lambda p: (p.writer("eyeColor") or {}).get("text") == "ann · just now", 'bob\'s page: eye color "ann · just now"')

    assert b.toggle("#glasses") is True
    a.wait_for(lambda p: (p.writer("glasses") or {}).get("user") == "bob", "ann's glasses field naming bob")
    b.click('[data-topic="music"] button[data-opinion="like"]')
    a.wait_for(lambda p: (p.writer("topic-music") or {}).get("text") == "bob · just now", "music naming bob")
    b.click(b.row(1) + " .move-down")
    a.wait_for(lambda p: (p.writer("position") or {}).get("text") == "moved by bob · just now",
               'the head saying "moved by bob · just now"')
    wait_model(obs, lambda p: tags(p)[:2] == [2, 1], "Ann moved down (bob)")
    a.screenshot("2-writers")

    obs.send({"type": "blame", "seq": 1000, "tag": 1})
    blame = obs.take("blame")
    f = blame["fields"]
    assert (f["hairColor"]["user"], f["eyeColor"]["user"], f["glasses"]["user"], f["position"]["user"],
            f["preference"]["music"]["user"], f["name"]["user"]) == ("bob", "ann", "bob", "bob", "bob", None), blame
    for key, field in (("hairColor", f["hairColor"]), ("eyeColor", f["eyeColor"]), ("glasses", f["glasses"])):
        assert f"revision {field['rev']}" in a.writer(key)["title"], (key, a.writer(key), field)


def test_only_this_person_lists_the_changes_that_named_them_and_follows_the_selection(hub, room, browsers):
    """The web page offered the room's history only, not a person's (`log` with `tag`). "Only Joan" in the
    history panel's head lists the changes that named the selected person, newest first, without the
    room's start; a teammate's change of someone else leaves it as it is, one of theirs appears at the
    top; selecting another person lists theirs; pressed again, the room's history is back. "Undo this" works
    on those rows as on the room's."""
    obs = observe(hub, room)
    obs.edit([{"op": "set", "tag": 2, "field": "glasses", "value": True}])         # rev 1: Joan
    obs.edit([{"op": "set", "tag": 3, "field": "hairColor", "value": "red"}])      # rev 2: Sam
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.wait_for(history_is([2, 1, 0]), "the room's history")
    a.select(2)
    a.choose("hairColor", "blonde")                                                  # rev 3: Joan, ann's
    wait_model(obs, lambda p: field_of(p, 2, "hairColor") == "blonde", "Joan blonde (ann's edit)")
    only = a.must("#history-only")
    assert only.text == "Only Joan" and only.get_attribute("aria-pressed") == "false", only.text
    a.click(only)
    rows = a.wait_for(history_is([3, 1]), "Joan's changes only: 3 and 1, no start row")
    assert a.text("#history-title") == "History of Joan", a.text("#history-title")
    assert a.must("#history-only").get_attribute("aria-pressed") == "true"
    assert rows[0]["who"] == "ann" and rows[0]["undo"] is True, rows[0]
    bob = hub.join(room, "bob")
    bob.edit([{"op": "set", "tag": 3, "field": "hairColor", "value": "black"}])     # rev 4: Sam
    bob.edit([{"op": "set", "tag": 2, "field": "eyeColor", "value": "green"}])      # rev 5: Joan
    a.wait_for(history_is([5, 3, 1]), "bob's change of Joan on top; his change of Sam not listed")
    a.wait_for(lambda p: p.q("#history-end").is_displayed(), "nothing older about Joan said")
    assert "every change to Joan" in a.text("#history-end"), a.text("#history-end")
    # Undo this on ann's row: a selective undo of her change to Joan's hair.
    a.click(a.history_row(3) + " button.undo-entry")
    wait_model(obs, lambda p: field_of(p, 2, "hairColor") != "blonde", "ann's blonde undone on its own")
    a.wait_for(lambda p: (p.history_revs() or [0])[0] == 6, "the undo, which named Joan, on top")
    a.select(3)
    a.wait_for(history_is([4, 2]), "Sam's changes once Sam is selected")
    assert a.text("#history-title") == "History of Sam"
    a.click(a.must("#history-only"))
    a.wait_for(history_is([6, 5, 4, 3, 2, 1, 0]), "the room's history again")
    assert a.text("#history-title") == "History"


def test_a_tap_on_a_history_row_s_time_shows_the_exact_time_in_its_place(hub, room, browsers):
    """The exact time of a change was only in the time's tooltip, which a touch screen never shows (no
    hover): a tap (a click) on the time shows it in place of "just now", with the year and the seconds,
    and a second tap goes back."""
    obs = observe(hub, room)
    obs.edit([{"op": "set", "tag": 2, "field": "glasses", "value": True}])
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.wait_for(history_is([1, 0]), "the change in the history")
    assert a.history_rows()[0]["when"] == "just now"
    a.click(a.history_row(1) + " time.when")
    row = a.wait_for(lambda p: (lambda r: r[0] if r and r[0]["when"] != "just now" else None)(p.history_rows()),
                     "the exact time in place of just now")
    acked = next(m for m in obs.log if m["type"] == "ack" and m.get("rev") == 1)
    year = time.strftime("%Y", time.gmtime(acked["time"] / 1000))
    assert year in row["when"] and re.search(r"\d:\d\d:\d\d", row["when"]), row
    assert a.q(a.history_row(1) + " time.when").get_attribute("data-exact") == "true"
    a.click(a.history_row(1) + " time.when")
    a.wait_for(lambda p: (p.history_rows() or [{}])[0].get("when") == "just now", "back to just now")


def test_a_viewer_sees_the_history_and_who_changed_what_but_no_undo_this_or_restore(hub_factory, tmp_path, room, browsers):
    """On a token hub, ann (editor) makes two changes; val (viewer) sees both rows in her history panel,
    with who, what and whom, but no "Undo this" and no "Restore to here" (ann's page has them), and
    beside Ann's hair color in her editor "ann · just now". Nothing val's page shows in the panel is a
    button she could press except the list itself.
    Before: failed at "ann's panel with her two rows and Undo this" (no history panel)."""
    hub = token_hub(hub_factory, tmp_path)
    a = browsers(hub, "ann")
    join_with_token(a, room, "ann", jwt("ann", [room]))
    v = browsers(hub, "val")
    join_with_token(v, room, "val", jwt("val", [room], "viewer"))
    a.select(1)
    a.choose("hairColor", "red")
    a.select(2)
    a.choose("eyeColor", "green")

    arows = a.wait_for(lambda p: (lambda r: r if [x["rev"] for x in r] == [2, 1, 0] and r[0]["undo"] else None)(p.history_rows()),
                       "ann's panel with her two rows and Undo this")
    assert [(r["undo"], r["restore"]) for r in arows] == [(True, False), (True, True), (None, True)], arows
    vrows = v.wait_for(history_is([2, 1, 0]), "val's history panel with ann's two rows and the start")
    assert [(r["who"], r["what"], r["touched"]) for r in vrows] == \
        [("ann", "Change Eye Color", "Joan"), ("ann", "Change Hair Color", "Ann"), ("", "The room as it started", "")], vrows
    assert all(r["undo"] is None and r["restore"] is None for r in vrows), f"a viewer is offered no Undo this / Restore: {vrows}"
    # Buttons that would change the room (reading ones stay: "Only Ann" lists her changes, since session 22).
    buttons = v.js("""return [...document.querySelectorAll('#history button:not(#history-only)')].filter((e) => !e.hidden &&
        e.getClientRects().length > 0 && !e.disabled).map((e) => e.className + ' ' + e.textContent.trim());""")
    assert not buttons, f"buttons in a viewer's history panel: {buttons}"
    v.select(1)
    w = v.wait_for(lambda p: (lambda w: w if w and w["user"] == "ann" else None)(p.writer("hairColor")),
                   "val's editor naming ann beside Ann's hair color")
    assert w["text"] == "ann · just now", w
    v.screenshot("1-viewer-history")


# -- session 20: a keyboard and screen-reader pass -----------------------------------------------------

ACTIVE = """const e = document.activeElement;
    return !e || e === document.body ? 'body' : (e.id ? '#' + e.id : e.className || e.tagName.toLowerCase());"""


def test_a_teammate_deleting_the_person_you_type_into_sends_focus_to_the_list_not_to_the_next_person(hub, room, browsers):
    """ann types into Joan's name; bob deletes Joan. ann's next keys must not land on the person shown
    next (Sam): focus goes to the list, on the selected row, and the notice says bob deleted Joan. The
    room: Sam's name unchanged. (Before: the editor showed Sam under ann's caret, and "ly" renamed him.)"""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(2)
    a.js("document.getElementById('name').focus();")
    a.keys(Keys.END, "ie")
    wait_model(obs, lambda p: field_of(p, 2, "name") == "Joanie", "Joan renamed Joanie as ann types")
    bob = hub.join(room, "bob")
    bob.edit([{"op": "remove", "tag": 2}], label="Delete Person")
    a.wait_for(lambda p: p.selected_tag() == 3, "Sam selected once Joan is gone")
    a.wait_for(lambda p: p.js("return !!document.activeElement.closest('#people li[data-tag=\"3\"]');"),
               "the focus on Sam's row in the list, not in the editor")
    a.wait_for(lambda p: "bob deleted Joanie" in (p.text("#notice") or ""), "#notice saying bob deleted Joanie")
    a.keys("ly")
    time.sleep(0.5)  # what the keys would have done has had time to reach the hub
    rev, people = room_state(hub, room)
    assert field_of(people, 3, "name") == "Sam", f"ann's keys changed Sam: {by_tag(people, 3)}"
    bob.close()


def test_when_a_teammate_deletes_the_last_person_the_focus_goes_to_add_person_not_the_page(hub, room, browsers):
    """The web pass of session 32: with the focus on the row of the room's last person, a teammate's
    delete dropped it to the page (document.body), where the next key goes nowhere. It goes to "Add
    person" now, the one thing left to do, and the notice says who deleted whom.
    Before: failed at "the focus on Add person" (BODY)."""
    obs = observe(hub, room)
    obs.edit([{"op": "remove", "tag": 1}, {"op": "remove", "tag": 2}])
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(3)
    a.js("document.querySelector('#people li[data-tag=\"3\"] .pick').focus();")
    obs.edit([{"op": "remove", "tag": 3}], label="Delete Person")
    a.wait_for(lambda p: p.list_tags() == [], "the list empty on ann's page")
    a.wait_for(lambda p: p.js("return document.activeElement.id;") == "add-person", "the focus on Add person")
    assert "observer deleted Sam" in (a.text("#notice") or ""), a.text("#notice")
    a.keys(Keys.ENTER)
    wait_model(obs, lambda people: len(people) == 1, "Enter there adds a person")


def test_when_a_teammate_deletes_the_only_person_find_a_person_shows_the_focus_goes_to_the_search(hub, room, browsers):
    """A code review of session 33: with "Find a person" showing only Joan and the focus on her row, a
    teammate's delete selected the next person by place (Sam), whose row the search leaves out, and
    the focus went to the page. It goes to the search field now, where the user was looking.
    Before: failed at "the focus on Find a person" (BODY)."""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.click("#people-filter")
    a.keys("Jo")
    a.wait_for(lambda p: p.js("return [...document.querySelectorAll('#people li:not([hidden])')].map((li) => li.dataset.tag);")
               == ["2"], "only Joan's row shown")
    a.select(2)
    a.js("document.querySelector('#people li[data-tag=\"2\"] .pick').focus();")
    obs.edit([{"op": "remove", "tag": 2}], label="Delete Person")
    a.wait_for(lambda p: p.js("return document.activeElement.id;") == "people-filter", "the focus on Find a person")
    assert "observer deleted Joan" in (a.text("#notice") or ""), a.text("#notice")


def test_the_list_follows_the_selected_person_a_teammate_moves_far_and_the_focus_stays_in_view(hub, room, browsers):
    """The web pass of session 32 saw the focus left on a row out of view when a teammate moved the
    selected person far down; since the list keeps the selected row where it is on the screen (session
    32), the list follows them: their row, with the focus, is in view after the move.
    Before that: failed at the last assert (the focused row out of view)."""
    obs = observe(hub, room)
    add_extras(obs, 37)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    chosen = obs.people[5]["tag"]
    a.select(chosen)
    a.js(f"document.querySelector('#people li[data-tag=\"{chosen}\"] .pick').focus();")
    obs.edit([{"op": "move", "tag": chosen, "to": 35}])
    a.wait_for(lambda p: p.list_tags()[35] == chosen, "the selected person moved to 36th on ann's page")
    seen = a.js(f"""const list = document.querySelector('#people').getBoundingClientRect();
        const me = document.querySelector('#people li[data-tag="{chosen}"]'), r = me.getBoundingClientRect();
        return {{inView: r.top >= list.top - 1 && r.bottom <= list.bottom + 1, focused: me.contains(document.activeElement)}};""")
    assert seen == {"inView": True, "focused": True}, seen


def test_a_control_that_disables_itself_hands_focus_on_and_teammates_changes_are_announced(hub, room, browsers):
    """After joining, focus is on the selected row (not the page's body). ann undoes with #undo until it
    disables: focus moves to #redo, not to the body. bob's changes reach #teammates (a polite live
    region): the first at once, a burst as one summary, not a text per change."""
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.wait_for(lambda p: p.js("return !!document.activeElement.closest('#people li[data-tag]');"),
               "the focus on the selected row once the room shows")
    a.select(1)
    a.toggle("#glasses")
    a.wait_for(lambda p: (p.button("#undo") or {}).get("disabled") is False, "#undo enabled")
    a.js("document.getElementById('undo').focus();")
    a.keys(Keys.ENTER)
    a.wait_for(lambda p: (p.button("#undo") or {}).get("disabled") is True, "#undo disabled: nothing left to undo")
    assert a.js(ACTIVE) == "#redo", f"focus after the last undo: {a.js(ACTIVE)} (expected #redo)"

    live = a.js("return document.getElementById('teammates')?.getAttribute('aria-live');")
    assert live == "polite", f"#teammates must be a polite live region: {live!r}"
    a.js("""window.pkSaid = []; new MutationObserver(() => window.pkSaid.push(
              document.getElementById('teammates').textContent)).observe(
              document.getElementById('teammates'), {childList: true, characterData: true, subtree: true});""")
    bob = hub.join(room, "bob")
    for i in range(6):
        bob.edit([{"op": "set", "tag": 3, "field": "glasses", "value": i % 2 == 0}], label="Toggle Glasses")
    a.wait_for(lambda p: any("bob" in t for t in p.js("return window.pkSaid;")), "bob's change said in #teammates")
    a.wait_for(lambda p: any("changes by teammates" in t for t in p.js("return window.pkSaid;")),
               "the rest of the burst said as one summary", timeout=8)
    said = a.js("return window.pkSaid;")
    assert len(said) <= 3, f"six changes said one by one: {said}"
    bob.close()


def test_find_a_person_narrows_the_list_and_the_keyboard_goes_to_the_first_match(hub, room, browsers):
    """Typing "jo" in #people-filter leaves Joan's row alone in the list and #people-found says
    "1 of 3"; ↓ selects Joan and puts the focus on her row; ↑ / ↓ there stay among the rows shown.
    Case and accents are ignored ("SÅM" finds Sam); a name nobody has says so; Esc clears it and every
    row is back. The room is not touched. (Session 20: a 1,000-person room had no way to find anyone.)"""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    shown = lambda p: p.js("""return [...document.querySelectorAll('#people li[data-tag]')]
        .filter((li) => li.offsetParent !== null).map((li) => Number(li.dataset.tag));""")
    a.js("document.getElementById('people-filter').focus();")
    a.keys("jo")
    a.wait_for(lambda p: shown(p) == [2], "only Joan's row shown")
    assert a.text("#people-found") == "1 of 3", a.text("#people-found")
    a.keys(Keys.ARROW_DOWN)
    a.wait_for(lambda p: p.selected_tag() == 2, "Joan selected by ↓ from the search")
    a.wait_for(lambda p: p.js("return !!document.activeElement.closest('#people li[data-tag=\"2\"]');"),
               "the focus on Joan's row")
    a.keys(Keys.ARROW_DOWN)
    time.sleep(0.3)
    assert a.selected_tag() == 2, "↓ on the only row shown stays there (Sam is not shown)"
    a.js("const f = document.getElementById('people-filter'); f.focus(); f.select();")
    a.keys("SÅM")
    a.wait_for(lambda p: shown(p) == [3], "Sam found whatever the case and the accent")
    a.keys(Keys.BACKSPACE, Keys.BACKSPACE, Keys.BACKSPACE, "zed")
    a.wait_for(lambda p: shown(p) == [] and "Nobody" in (p.text("#people-found") or ""), "nobody called zed, said so")
    a.keys(Keys.ESCAPE)
    a.wait_for(lambda p: shown(p) == [1, 2, 3] and not p.text("#people-found"), "every row back after Esc")
    assert obs.rev == 0, f"finding people changed the room: revision {obs.rev}"


def test_the_people_grid_is_one_tab_stop_and_arrows_move_between_a_row_s_cells(hub, room, browsers):
    """On the selected row (Joan, in the middle), → goes from her name to her move-up button, then
    move-down, then delete, and ← back; Enter on move-down moves her (the room follows). Tab from the
    name leaves the list at once (the row's buttons were tab stops of their own before session 20)."""
    obs = observe(hub, room)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(2)
    a.js("""document.querySelector('#people li[data-tag="2"] .pick').focus();""")
    cell = lambda p: p.js("""const e = document.activeElement; const li = e.closest('#people li[data-tag]');
        return li ? li.dataset.tag + ':' + e.className.split(' ')[0] : (e.id || e.tagName);""")
    stops = []
    for key in (Keys.ARROW_RIGHT, Keys.ARROW_RIGHT, Keys.ARROW_RIGHT, Keys.ARROW_LEFT):
        a.keys(key)
        stops.append(cell(a))
    assert stops == ["2:move-up", "2:move-down", "2:delete", "2:move-down"], stops
    a.keys(Keys.ENTER)
    wait_model(obs, lambda p: [x["tag"] for x in p] == [1, 3, 2], "Joan moved down by Enter on her move-down")
    a.js("""document.querySelector('#people li[data-tag="2"] .pick').focus();""")
    a.keys(Keys.TAB)
    after = cell(a)
    assert not after.startswith("2:") and not after.startswith("1:") and not after.startswith("3:"), \
        f"Tab from the selected name stayed in the list: {after}"


# -- a phone (session 21: a small-screen and touch pass) ----------------------------------------------------

def _rect(p, css: str) -> dict | None:
    return p.js("""const e = document.querySelector(arguments[0]); if (!e) return null;
                   const r = e.getBoundingClientRect(); return {left: r.left, top: r.top, right: r.right, bottom: r.bottom,
                   width: r.width, height: r.height};""", css)


def test_the_name_field_stays_put_while_teammates_change_the_person_being_typed_in(hub, room, browsers):
    """A small-screen pass: while ann typed Joan's name, bob's glasses, facial hair and a move lengthened
    the editor's header (the description wrapped, "moved by bob" came), and the name field jumped down
    under her fingers (on a phone: the editor is narrow). The header's description and origin line keep
    two lines each, always."""
    obs = observe(hub, room)
    a = browsers(hub, "ann", width=390, height=844)
    a.open_room(room, "ann")
    a.select(2)
    name = a.must("#name")
    a.click(name)
    top = lambda: a.js("return document.querySelector('#name').getBoundingClientRect().top;")
    before = top()
    bob = hub.join(room, "bob")
    bob.edit([{"op": "set", "tag": 2, "field": "glasses", "value": True}]
             + [{"op": "facialHair", "tag": 2, "style": s, "present": True}
                for s in ("mustache", "beard", "goatee", "sideburns", "stubble")])
    bob.edit([{"op": "move", "tag": 2, "to": 0}])
    a.wait_for(lambda p: "Stubble" in (p.text("#face-description") or "") or "stubble" in (p.text("#face-description") or ""),
               "bob's facial hair in the description")
    a.wait_for(lambda p: "moved by bob" in (p.text("#detail") or ""), "moved by bob under the name")
    after = top()
    assert abs(after - before) <= 1, f"the name field moved from {before} to {after} px"
    assert a.js("return document.activeElement.id;") == "name"


def test_a_phone_at_320_px_keeps_long_names_topics_and_notices_on_screen(hub, room, browsers):
    """A small-screen pass found, at 320 px: a 45-letter name without a space made the page scroll sideways
    and pushed the delete question's Delete button off the screen; the like / dislike buttons covered the
    topics' names ("Weath…"); and the notice of a skipped "Undo this" went into the top bar, which
    scrolls away on a phone, 1,500 px above the history where it was tapped (the button just vanished).
    Now nothing reaches past 320 px, the Delete button is on screen, every topic's name shows whole, and
    the notice shows at the bottom of the screen. A person tapped in the list is brought into view in the
    editor, under the list on a phone."""
    obs = observe(hub, room)
    long_name = "Maximiliankonstantinwolfgangbartholomeus" + "Smith"
    obs.edit([{"op": "set", "tag": 2, "field": "name", "value": long_name}])
    # Enough people that the editor, under the list, starts below the screen.
    add_extras(obs, 12)
    a = browsers(hub, "phone320", width=320, height=640)
    a.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                             {"width": 320, "height": 640, "deviceScaleFactor": 2, "mobile": True})
    a.open_room(room, "ann")
    a.click(a.row(2))
    a.wait_for(lambda p: p.selected_tag() == 2, "the long-named person selected")
    a.wait_for(lambda p: (lambda r: r if r and abs(r["top"]) <= 2 else None)(_rect(p, "#detail")),
               "the editor brought to the top of the screen after the tap")
    wide = a.js("""return [document.documentElement.scrollWidth, innerWidth,
                   [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > innerWidth + 1
                     && e.getClientRects().length).slice(0, 5).map((e) => e.id || e.className || e.tagName)];""")
    assert wide[0] <= wide[1] == 320, f"nothing is wider than the phone: {wide}"
    topics = a.js("""return [...document.querySelectorAll('#detail .topic')].map((t) => {
                       const n = t.querySelector('.topic-name'), o = t.querySelector('.opinions');
                       const a = n.getBoundingClientRect(), b = o.getBoundingClientRect();
                       return {name: n.textContent, cut: n.scrollWidth > n.clientWidth + 1,
                               covered: a.right > b.left + 1 && a.bottom > b.top + 1 && b.bottom > a.top + 1}; });""")
    assert topics and not [t for t in topics if t["cut"] or t["covered"]], topics
    a.screenshot("1-phone-long-name")

    a.click(a.row(2) + " button.delete")
    a.wait_for(lambda p: p.js("return document.getElementById('confirm-dialog').open"), "the delete question")
    delete = _rect(a, "#confirm-delete")
    assert delete["left"] >= 0 and delete["right"] <= 320, f"the Delete button on screen: {delete}"
    a.screenshot("2-phone-delete-question")
    a.click("#cancel-delete")

    # ann's change, overwritten by bob: her "Undo this" (at the bottom, in the history) is skipped.
    a.choose("hairColor", "red")
    wait_model(obs, lambda p: field_of(p, 2, "hairColor") == "red", "Joan's hair red (ann)")
    obs.edit([{"op": "set", "tag": 2, "field": "hairColor", "value": "white"}])
    a.wait_for(lambda p: [r["rev"] for r in p.history_rows()][:2] == [4, 3], "bob's change in ann's history")
    a.js("document.querySelector(arguments[0]).scrollIntoView({block: 'center'});", a.history_row(3))
    a.click(a.history_row(3) + " button.undo-entry")
    a.wait_for(lambda p: "Nothing was undone" in (p.text("#notice") or ""), "the skip notice")
    notice = _rect(a, "#notice")
    assert notice["top"] >= 0 and notice["bottom"] <= 640 and notice["height"] > 0, \
        f"the notice is on screen where the user is: {notice}"
    a.screenshot("3-phone-notice")
    assert field_of(obs.people, 2, "hairColor") == "white"


def place(p) -> str:
    """What "Place in the list" (#place) holds."""
    return p.js("return document.getElementById('place').value;")


def ann_on_the_last_of_15(hub, room, browsers):
    """ann's page with the last of 15 people selected (12 extras added): (observer, page, their tag)."""
    obs = observe(hub, room)
    last = add_extras(obs, 12)
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(last)
    assert place(a) == "15" and a.text("#place-count") == "of 15", (place(a), a.text("#place-count"))
    return obs, a, last


def test_place_in_the_list_moves_a_person_anywhere_in_one_step(hub_factory, room, browsers):
    """Session 23 (a phone pass left it: moving someone far by touch took a tap per place, as the list
    cannot be dragged with a finger). The editor's "Place in the list" takes a number: Enter moves the
    person there in one step; a number past the end means last. While ann types a number, bob's move
    of someone else changes where her person is, but not what she is typing. Her moves of one person
    in a row are one undo step, as with the arrow buttons.
    The hub joins a run's edits that come within `undo.coalesceMillis` of each other; between ann's two
    moves here the test waits on both pages and on bob's move, which on a loaded machine took longer
    than the default 500 ms (the undo then took back only her second move). What is tested is that the
    page sends her moves as one run, so this hub's window is a minute."""
    hub = hub_factory({"undo": {"coalesceMillis": 60000}})
    obs, a, last = ann_on_the_last_of_15(hub, room, browsers)
    a.screenshot("1-place-in-the-list")

    field = a.must("#place")
    a.click(field)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys("1", Keys.ENTER)
    wait_model(obs, lambda people: people[0]["tag"] == last, "Extra 11 first, in one move")
    a.wait_for(lambda p: place(p) == "1", "#place saying 1")

    # Typing 9; meanwhile bob moves Sam to the top: ann's person is 2nd now, her 9 stays, and goes.
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys("9")
    sam = 3
    obs.edit([{"op": "move", "tag": sam, "to": 0}])
    a.wait_for(lambda p: p.js("return document.querySelector('#people li[data-tag]').getAttribute('data-tag');")
               == str(sam), "bob's move on ann's page")
    assert place(a) == "9", f"what ann is typing is left alone: {place(a)}"
    field.send_keys(Keys.ENTER)
    wait_model(obs, lambda people: [p["tag"] for p in people].index(last) == 8, "Extra 11 9th")

    # Moves of one person in a row are one undo step, as with the arrow buttons: Undo takes her back.
    a.click("#undo")
    wait_model(obs, lambda people: people[-1]["tag"] == last, "one undo: Extra 11 last again")
    a.wait_for(lambda p: place(p) == "15", "#place saying 15 after the undo")

    a.select(1)
    a.click(field)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys("99", Keys.ENTER)
    wait_model(obs, lambda people: people[-1]["tag"] == 1, "a place past the end: Ann last")
    a.wait_for(lambda p: place(p) == "15", "#place saying 15")


def test_a_teammate_s_move_between_select_all_and_a_digit_in_the_place_field_does_not_add_to_the_number(hub, room, browsers):
    """The web pass of session 32, in a room where teammates moved people: in "Place in the list",
    Ctrl+A then 5 read "25" or "65" and moved the person last (4 of 8). A teammate's move between the
    two keys rewrote the number, which dropped the selection (a number field's selection can be
    neither read nor put back), and the 5 was added to the new number. While the field has focus its
    number is the user's until it is taken (Enter), left, or Escape; "of N" follows. Taken, it follows
    the room again (her undo from the field shows where it took her back; a code review found a first
    fix that froze the field for as long as it had focus).
    Before: failed at "what ann selected is still there for her 5" ("145")."""
    obs, a, last = ann_on_the_last_of_15(hub, room, browsers)
    field = a.must("#place")
    a.click(field)
    field.send_keys(Keys.CONTROL, "a")
    obs.edit([{"op": "move", "tag": 3, "to": 14}])  # Sam last: ann's person is 14th now
    a.wait_for(lambda p: p.js("return document.querySelector('#people li[data-tag]:last-child').getAttribute('data-tag');")
               == "3", "bob's move of Sam on ann's page")
    assert a.text("#place-count") == "of 15"
    field.send_keys("5")
    assert place(a) == "5", f"what ann selected is still there for her 5 ({place(a)!r})"
    field.send_keys(Keys.ENTER)
    wait_model(obs, lambda people: [p["tag"] for p in people].index(last) == 4, "Extra 11 fifth")

    # Taken, the field follows the room again: ann's undo there (Ctrl+Z) shows where it took her back.
    field.send_keys(Keys.CONTROL, "z")
    people = wait_model(obs, lambda people: [p["tag"] for p in people].index(last) != 4, "ann's move undone")
    back = str([p["tag"] for p in people].index(last) + 1)
    a.wait_for(lambda p: place(p) == back, f"#place saying {back} after the undo, ann still in it")
    assert a.js("return document.activeElement.id;") == "place"

    # The field left: it shows where the person is, teammates' moves included.
    a.click("#people-filter")
    obs.edit([{"op": "move", "tag": 3, "to": 0}])  # Sam first: ann's person one further down
    a.wait_for(lambda p: place(p) == str(int(back) + 1), "#place following a teammate's move once ann left it")


def test_text_twice_the_usual_size_takes_one_column_and_nothing_scrolls_sideways(hub, room, browsers):
    """Text-only zoom (WCAG 1.4.4): a reader who sets their browser's text size to 32 px (twice the
    usual) at 1,200 px. The layout's breakpoints were in px, so the page kept its two columns for a
    window of 1,200 px: the editor was squeezed to a few letters a line ("Joa / n", "Und / o on / this")
    and the like / dislike buttons reached past the window (the page scrolled sideways). They are in
    em now, read as the reader's text size: the page takes one column, the name field is as wide as the
    editor, and nothing reaches past the window's right edge. At the usual size the same window keeps
    its two columns."""
    big = browsers(hub, "text32", width=1200, height=900, font_size=32)
    big.open_room(room, "ann")
    big.select(2)
    big.screenshot("1-text-32px")
    layout = big.js("""
        const vw = document.documentElement.clientWidth;
        const past = [...document.querySelectorAll('#room *')].filter((e) => e.getClientRects().length
          && !e.classList.contains('sr-only') && e.getBoundingClientRect().right > vw + 1)
          .slice(0, 5).map((e) => e.id || e.className || e.tagName);
        return {vw, scroll: document.documentElement.scrollWidth, past,
                font: getComputedStyle(document.getElementById('name')).fontSize,
                columns: getComputedStyle(document.querySelector('.room-main')).gridTemplateColumns.split(' ').length,
                name: document.getElementById('name').getBoundingClientRect().width};""")
    assert layout["font"] == "32px", f"the reader's text size reaches the page: {layout}"
    assert layout["scroll"] <= layout["vw"] and not layout["past"], f"nothing reaches past the window: {layout}"
    assert layout["columns"] == 1, f"one column for text this big: {layout}"
    assert layout["name"] >= 0.8 * layout["vw"], f"the editor has the window's width: {layout}"

    usual = browsers(hub, "text16", width=1200, height=900)
    usual.open_room(room, "bob")
    columns = usual.js("return getComputedStyle(document.querySelector('.room-main')).gridTemplateColumns.split(' ').length;")
    assert columns == 2, "at the usual text size 1,200 px keeps the list beside the editor"


def test_a_phone_on_its_side_keeps_the_name_field_clear_of_the_top_bar(hub, room, browsers):
    """At 740 × 360 (a phone on its side) the sticky top bar took a third of the height and covered the
    name field being typed in (WCAG 2.4.11). On a window this short the bar scrolls away with the page:
    the focused name field is wholly on screen and under nothing."""
    a = browsers(hub, "landscape", width=740, height=360)
    a.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                             {"width": 740, "height": 360, "deviceScaleFactor": 2, "mobile": True})
    a.open_room(room, "ann")
    a.select(2)
    a.js("document.getElementById('name').focus();")
    a.wait_for(lambda p: p.js("return document.activeElement && document.activeElement.id") == "name", "#name focused")
    found = a.js("""const n = document.getElementById('name').getBoundingClientRect();
                    const x = n.left + n.width / 2, y = n.top + n.height / 2;
                    const hit = document.elementFromPoint(x, y);
                    return {top: n.top, bottom: n.bottom, hit: hit && (hit.id || hit.className)};""")
    assert found["top"] >= 0 and found["bottom"] <= 360 and found["hit"] == "name", found


def test_the_page_over_https_loads_joins_and_edits(hub_factory, room, browsers, tmp_path):
    """An operator's black-box pass of a TLS cluster (session 38): with `tls` on, Chromium got the page's
    files empty and showed nothing (the hub offered HTTP/2, over which its file answers were broken:
    ERR_HTTP2_COMPRESSION_ERROR), and the API refused the page's own origin. The hub speaks HTTP/1.1
    over TLS now: the page loads over https, joins over wss, an edit reaches the room, and the page's
    own `?at=` read (a restore's check) is answered."""
    import http.client
    import ssl
    from test_trust import self_signed
    cert, key = self_signed(tmp_path)
    hub = hub_factory({"tls": {"certFile": cert, "keyFile": key}})
    a = browsers(hub, "ann")
    a.open_room(room, "ann")
    a.select(1)
    assert a.toggle("#glasses") is True
    a.wait_for(lambda p: p.summary()["peoplekeeper"]["pending"] == 0 and p.summary()["peoplekeeper"]["revision"] == 1,
               "ann's change acknowledged (revision 1)")
    read = a.driver.execute_async_script("""const done = arguments[arguments.length - 1];
        fetch('/v1/rooms/' + encodeURIComponent(arguments[0]) + '?at=0').then((r) => done(r.status), (e) => done(String(e)));""",
        room)
    assert read == 200, f"the page's ?at=0 read over https: {read}"
    https = http.client.HTTPSConnection("127.0.0.1", hub.port, timeout=5, context=ssl.create_default_context(cafile=cert))
    try:
        https.request("GET", f"/v1/rooms/{room}")
        answer = https.getresponse()
        state = json.loads(answer.read())
    finally:
        https.close()
    assert answer.status == 200 and by_tag(state["people"], 1)["glasses"] is True, (answer.status, state)
    assert not a.console(), f"the page's console over https: {a.console()}"

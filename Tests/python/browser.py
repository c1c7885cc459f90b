"""A headless Chromium driven by Selenium, for the web client's tests (test_web.py, docs/WEB.md).

Each `Browser` is one Chromium (`--headless=new`, `--no-sandbox`, a fresh profile in a temporary
directory that is removed by `quit()`), driven through the system's chromedriver. Nothing waits by
sleeping: `wait_for` polls the page (every 50 ms) until a condition holds, and on a timeout fails with
what was awaited, a summary of the page's test hooks, the browser console's errors and the path of a
screenshot of the page at that moment.

`PeoplePage` adds the PeopleKeeper page's test hooks (docs/WEB.md, "Test hooks"): joining, selecting a
person, choosing a value, toggling, undo by key or button, reading what the page shows, and the history
panel's rows and the editor's "who · when" beside each field.

Binaries: PEOPLEKEEPER_CHROMIUM (default /usr/bin/chromium) and PEOPLEKEEPER_CHROMEDRIVER (default
/usr/bin/chromedriver).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any, Callable

from selenium import webdriver
from selenium.common.exceptions import (ElementClickInterceptedException, ElementNotInteractableException,
                                        JavascriptException, NoSuchElementException,
                                        StaleElementReferenceException, WebDriverException)
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select

CHROMIUM = os.environ.get("PEOPLEKEEPER_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("PEOPLEKEEPER_CHROMEDRIVER", "/usr/bin/chromedriver")

POLL = 0.05     # seconds between two looks at a page
WAIT = 10.0     # default seconds to wait for something to show on a page
SLOW = 2.0      # a wait longer than this is printed (shown with a failing test's output)

# Exceptions that mean "not yet" while polling: the page re-rendered under us, or a hook is not there yet.
_TRANSIENT = (StaleElementReferenceException, NoSuchElementException, ElementNotInteractableException,
              JavascriptException)

# One round trip that reads every test hook of docs/WEB.md (robust to missing elements).
_SUMMARY_JS = r"""
const q = (s) => document.querySelector(s);
const shown = (e) => !!e && !e.hidden && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
const txt = (s) => { const e = q(s); return e ? e.textContent.replace(/\s+/g, ' ').trim() : null; };
const btn = (s) => { const e = q(s); return e ? { text: e.textContent.replace(/\s+/g, ' ').trim(), disabled: e.disabled } : null; };
const val = (s) => { const e = q(s); return e ? (e.type === 'checkbox' ? e.checked : e.value) : null; };
let pk = null;
try { pk = window.peoplekeeper ? JSON.parse(JSON.stringify({ revision: window.peoplekeeper.revision,
      pending: window.peoplekeeper.pending, link: window.peoplekeeper.link })) : null; } catch (e) { pk = String(e); }
return {
  url: location.href,
  title: document.title,
  join: q('#join') ? shown(q('#join')) : 'missing',
  room: q('#room') ? shown(q('#room')) : 'missing',
  connection: q('#connection') ? q('#connection').getAttribute('data-state') : 'missing',
  waiting: txt('#waiting'),
  notice: txt('#notice'),
  undo: btn('#undo'),
  redo: btn('#redo'),
  people: [...document.querySelectorAll('#people li[data-tag]')].map((li) =>
    (li.getAttribute('aria-selected') === 'true' ? '*' : '') + li.getAttribute('data-tag') + ' ' +
    li.textContent.replace(/\s+/g, ' ').trim().slice(0, 60)),
  detail: q('#detail') ? q('#detail').getAttribute('data-tag') : 'missing',
  name: val('#name'), hairColor: val('#hairColor'), hairLength: val('#hairLength'), eyeColor: val('#eyeColor'),
  glasses: val('#glasses'),
  changed: [...document.querySelectorAll('.changed')].map((e) => (e.id || e.tagName.toLowerCase() +
    (e.getAttribute('data-tag') ? '[data-tag=' + e.getAttribute('data-tag') + ']' : '')) + ' by ' + e.getAttribute('data-by')),
  presence: [...document.querySelectorAll('#presence li')].map((e) => e.textContent.replace(/\s+/g, ' ').trim()),
  active: document.activeElement ? (document.activeElement.id || document.activeElement.tagName.toLowerCase()) : null,
  peoplekeeper: pk,
  body: shown(q('#room')) || shown(q('#join')) ? undefined : (document.body ? document.body.innerText.slice(0, 300) : null),
};
"""


class Browser:
    """One headless Chromium with a profile of its own. `label` names it in failure messages and in
    screenshot file names; `base` is the hub's http://HOST:PORT (https:// for a hub with TLS: the
    test's self-signed certificate is then taken without a trust store, `--ignore-certificate-errors`)."""

    def __init__(self, label: str, base: str, shots: Path, *, prefix: str = "", width: int = 1200,
                 height: int = 900, font_size: int | None = None, clock_offset_ms: int = 0):
        self.label = label
        self.base = base.rstrip("/")
        self.shots = shots
        self.prefix = prefix
        # One directory for the profile and for Chromium's own temporary files (it leaves an
        # org.chromium.Chromium.* directory in $TMPDIR when chromedriver ends it): `quit()` removes both.
        self.home = tempfile.mkdtemp(prefix="pk-chromium-")
        self.profile = os.path.join(self.home, "profile")
        os.mkdir(os.path.join(self.home, "tmp"))
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for arg in ("--headless=new", "--no-sandbox", f"--window-size={width},{height}",
                    f"--user-data-dir={self.profile}", "--disable-dev-shm-usage", "--disable-gpu",
                    "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                    "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                    "--disable-backgrounding-occluded-windows", "--disable-crash-reporter", "--lang=en-US"):
            opts.add_argument(arg)
        if base.startswith("https://"):
            opts.add_argument("--ignore-certificate-errors")
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        if font_size is not None:
            # The reader's text size (Settings → Appearance → Font size; 16 px by default): text-only
            # zoom, as a reader who needs bigger letters sets it once for every site.
            opts.add_experimental_option("prefs", {"webkit.webprefs.default_font_size": font_size})
        try:
            service = Service(CHROMEDRIVER, env={**os.environ, "TMPDIR": os.path.join(self.home, "tmp")})
            self.driver = webdriver.Chrome(options=opts, service=service)
        except WebDriverException:
            shutil.rmtree(self.home, ignore_errors=True)
            raise
        self.driver.set_script_timeout(10)
        self._console: list[dict] = []
        if clock_offset_ms:
            # A computer whose clock is off: every page's Date (now, and `new Date()`) runs that far
            # from the real time, from before the page's own scripts.
            self.driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": (
                "(() => { const skew = %d; const Real = Date;"
                " class Skewed extends Real {"
                "  constructor(...a) { if (a.length === 0) super(Real.now() + skew); else super(...a); }"
                "  static now() { return Real.now() + skew; } }"
                " globalThis.Date = Skewed; })();" % int(clock_offset_ms))})

    def __repr__(self):
        return f"<Browser {self.label}>"

    # -- plumbing --------------------------------------------------------------------------------------

    def quit(self) -> None:
        try:
            self.driver.quit()
        except Exception:
            pass
        shutil.rmtree(self.home, ignore_errors=True)

    def open(self, path: str) -> "Browser":
        self.driver.get(self.base + path)
        return self

    def js(self, script: str, *args) -> Any:
        return self.driver.execute_script(script, *args)

    def q(self, css: str) -> WebElement | None:
        found = self.driver.find_elements(By.CSS_SELECTOR, css)
        return found[0] if found else None

    def qa(self, css: str) -> list[WebElement]:
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def must(self, css: str) -> WebElement:
        """The element, waited for (a page renders asynchronously)."""
        return self.wait_for(lambda b: b.q(css), f"an element {css!r}")

    def text(self, css: str) -> str | None:
        """The element's text content with white space collapsed (hidden text included), or None."""
        return self.js("const e = document.querySelector(arguments[0]);"
                       "return e ? e.textContent.replace(/\\s+/g, ' ').trim() : null;", css)

    def summary(self) -> dict:
        try:
            return self.js(_SUMMARY_JS)
        except WebDriverException as e:
            return {"error": str(e).splitlines()[0]}

    def console(self) -> list[str]:
        """Console messages at WARNING or above since the browser started (page errors included)."""
        try:
            self._console += self.driver.get_log("browser")
        except WebDriverException:
            pass
        return [f"{m.get('level')}: {m.get('message')}" for m in self._console
                if m.get("level") in ("SEVERE", "WARNING")]

    def screenshot(self, name: str) -> Path:
        self.shots.mkdir(parents=True, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{self.prefix}{name}")[:150]
        path = self.shots / f"{safe}.png"
        self.driver.save_screenshot(str(path))
        return path

    def describe(self) -> str:
        s = self.summary()
        lines = [f"[{self.label}] the page: {json.dumps(s, ensure_ascii=False)}"]
        errors = self.console()
        if errors:
            lines.append(f"[{self.label}] console: " + " | ".join(errors[-8:]))
        try:
            lines.append(f"[{self.label}] screenshot: {self.screenshot(f'FAILED-{self.label}')}")
        except WebDriverException:
            pass
        return "\n".join(lines)

    # -- waiting ---------------------------------------------------------------------------------------

    def wait_for(self, pred: Callable[["Browser"], Any], what: str, timeout: float = WAIT) -> Any:
        """Poll `pred(self)` until it returns something truthy (returned); a page still re-rendering
        (stale or missing elements, a script error) counts as not yet."""
        start = time.monotonic()
        deadline = start + timeout
        last_error = None
        while True:
            try:
                v = pred(self)
                if v:
                    took = time.monotonic() - start
                    if took > SLOW:
                        print(f"[{self.label}] slow: {what} took {took:.1f}s")
                    return v
            except _TRANSIENT as e:
                last_error = e
            if time.monotonic() > deadline:
                extra = f"\n(last error while looking: {str(last_error).splitlines()[0]})" if last_error else ""
                raise AssertionError(f"[{self.label}] no {what} within {timeout}s{extra}\n{self.describe()}")
            time.sleep(POLL)

    # -- acting ----------------------------------------------------------------------------------------

    def click(self, target: str | WebElement) -> None:
        """Click like a user: scrolled into view, hovered (controls that show on hover), then clicked."""
        el = self.must(target) if isinstance(target, str) else target
        self.js("arguments[0].scrollIntoView({block: 'center', inline: 'nearest'});", el)
        try:
            ActionChains(self.driver).move_to_element(el).click(el).perform()
        except (ElementClickInterceptedException, ElementNotInteractableException):
            el.click()

    def network_offline(self, offline: bool) -> None:
        """Cut this browser off the network, or put it back (Chromium's own network emulation: new
        connections fail, as they do on a train; one already open stays open). The page also hears
        the `offline` / `online` events a real outage gives."""
        self.driver.execute_cdp_cmd("Network.enable", {})
        self.driver.execute_cdp_cmd("Network.emulateNetworkConditions", {
            "offline": offline, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1})

    def blur(self) -> None:
        """Move the focus off any control: keys then go to the document's body."""
        self.js("if (document.activeElement && document.activeElement !== document.body) document.activeElement.blur();")

    def keys(self, *keys: str, modifier: str | None = None) -> None:
        """Key presses to whatever has the focus (with `modifier` held down, e.g. Keys.CONTROL)."""
        chain = ActionChains(self.driver)
        if modifier:
            chain.key_down(modifier)
        for k in keys:
            chain.send_keys(k)
        if modifier:
            chain.key_up(modifier)
        chain.perform()


class PeoplePage(Browser):
    """The PeopleKeeper web client (docs/WEB.md), read and driven through its test hooks."""

    user: str | None = None

    # -- joining ---------------------------------------------------------------------------------------

    def wait_online(self, timeout: float = WAIT) -> dict:
        """The room screen shown, `#connection` online, nothing waiting."""
        return self.wait_for(lambda b: (lambda s: s if s["room"] is True and s["connection"] == "online"
                                        and not s["waiting"] else None)(b.summary()),
                             "room screen online (#room shown, #connection[data-state=online], #waiting empty)",
                             timeout)

    def join_with_form(self, room: str, user: str) -> None:
        """Open `/`, fill the join form (#join-room, #join-user) and press #join-submit; wait for the room
        screen online, and check the address bar then says `?room=…&user=…`."""
        self.user = user
        self.open("/")
        self.wait_for(lambda b: b.q("#join") and b.q("#join").is_displayed(), "the join screen (#join shown)")
        for css, value in (("#join-room", room), ("#join-user", user)):
            el = self.must(css)
            el.clear()
            el.send_keys(value)
        self.click("#join-submit")
        self.wait_online()
        self.wait_for(lambda b: query_of(b.driver.current_url) == {"room": room, "user": user},
                      f"the address bar with ?room={room}&user={user} after joining")

    def open_room(self, room: str, user: str) -> None:
        """Open the shared link `/?room=R&user=U` (joins at once) and wait for the room screen online."""
        self.user = user
        self.open("/?" + urllib.parse.urlencode({"room": room, "user": user}))
        self.wait_online()

    # -- the list and the selection -------------------------------------------------------------------

    def row(self, tag: int) -> str:
        return f'#people li[data-tag="{tag}"]'

    def list_tags(self) -> list[int]:
        return [int(t) for t in self.js("return [...document.querySelectorAll('#people li[data-tag]')]"
                                        ".map((li) => li.getAttribute('data-tag'));")]

    def selected_tag(self) -> int | None:
        t = self.js("const li = document.querySelector('#people li[data-tag][aria-selected=\"true\"]');"
                    "return li ? li.getAttribute('data-tag') : null;")
        return int(t) if t is not None else None

    def is_selected(self, tag: int) -> bool:
        return self.selected_tag() == tag and self.js(
            "const d = document.querySelector('#detail'); return d ? d.getAttribute('data-tag') : null;") == str(tag)

    def select(self, tag: int) -> None:
        """Click the person's row in the list (on its face, away from the row's buttons) and wait for it
        to be selected (aria-selected on the row, #detail[data-tag])."""
        if self.is_selected(tag):
            return
        row = self.must(self.row(tag))
        faces = row.find_elements(By.CSS_SELECTOR, ".face")
        self.click(faces[0] if faces else row)
        self.wait_for(lambda b: b.is_selected(tag),
                      f'person {tag} selected (#people li[data-tag="{tag}"][aria-selected="true"], '
                      f'#detail[data-tag="{tag}"])')

    def face_html(self, tag: int | None = None) -> str | None:
        """The outerHTML of a list row's face SVG (`tag`) or of the detail's large face (None)."""
        css = "#detail .face svg" if tag is None else f'{self.row(tag)} .face svg'
        return self.js("const e = document.querySelector(arguments[0]); return e ? e.outerHTML : null;", css)

    # -- the detail editor -----------------------------------------------------------------------------

    def value(self, css: str) -> Any:
        """A control's value (a checkbox's `checked`)."""
        return self.js("const e = document.querySelector(arguments[0]);"
                       "return e ? (e.type === 'checkbox' ? e.checked : e.value) : null;", css)

    def choose(self, field: str, value: str) -> None:
        """Pick `value` in select#FIELD, as a user does (the option is clicked: input and change fire)."""
        Select(self.must(f"select#{field}")).select_by_value(value)
        self.wait_for(lambda b: b.value(f"select#{field}") == value, f"select#{field} showing {value!r}")

    def toggle(self, css: str) -> bool:
        """Click a checkbox (or its label when the box itself is styled away); returns the new state."""
        el = self.must(css)
        before = el.is_selected()
        try:
            self.js("arguments[0].scrollIntoView({block: 'center'});", el)
            el.click()
        except (ElementNotInteractableException, ElementClickInterceptedException):
            self.click(f'label[for="{el.get_attribute("id")}"]')
        self.wait_for(lambda b: b.value(css) is (not before), f"{css} toggled to {not before}")
        return not before

    # -- undo ------------------------------------------------------------------------------------------

    def button(self, css: str) -> dict | None:
        return self.js("const e = document.querySelector(arguments[0]); return e ? {text: "
                       "e.textContent.replace(/\\s+/g, ' ').trim(), disabled: e.disabled} : null;", css)

    def undo_key(self) -> None:
        """Ctrl+Z with the focus on the page's body (not in the name field)."""
        self.blur()
        self.keys("z", modifier=Keys.CONTROL)

    def changed_by(self, user: str, tag: int) -> list[str]:
        """What carries the `.changed` highlight by `user` for person `tag`: the list row, or fields of the
        detail editor while it shows that person."""
        return self.js("""
            const [user, tag] = arguments;
            const out = [];
            for (const e of document.querySelectorAll('.changed')) {
              if (e.getAttribute('data-by') !== user) continue;
              const row = e.closest('#people li[data-tag]');
              const detail = e.closest('#detail');
              if (row && row.getAttribute('data-tag') === String(tag)) out.push('row ' + tag);
              else if (detail && detail.getAttribute('data-tag') === String(tag)) out.push('detail ' + (e.id || e.tagName.toLowerCase()));
            }
            return out;""", user, str(tag))

    # -- history (HISTORY.md §6) ---------------------------------------------------------------------

    def history_rows(self) -> list[dict]:
        """The history panel's rows as shown, top to bottom (#history-list li[data-rev]): rev (a run's
        newest revision), first (a run's oldest, else None), revText ("#3", a run's "#1–#3"), author,
        kind, entry (the undo entry this user may take back, else None), who / what / touched / when
        (texts), title and datetime of the time, and for each button (`undo`, `restore`) None when not
        shown, else whether it is enabled."""
        return self.js("""
            const shown = (e) => !!e && !e.hidden && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
            const t = (li, s) => { const e = li.querySelector(s); return e && shown(e) ? e.textContent.replace(/\\s+/g, ' ').trim() : ''; };
            const b = (li, s) => { const e = li.querySelector(s); return e && shown(e) ? !e.disabled : null; };
            return [...document.querySelectorAll('#history-list li[data-rev]')].map((li) => ({
              rev: Number(li.getAttribute('data-rev')), author: li.getAttribute('data-author'),
              first: li.hasAttribute('data-first') ? Number(li.getAttribute('data-first')) : null,
              revText: t(li, '.rev'),
              kind: li.getAttribute('data-kind'),
              entry: li.hasAttribute('data-entry') ? Number(li.getAttribute('data-entry')) : null,
              who: t(li, '.who'), what: t(li, '.what'), touched: t(li, '.touched'), when: t(li, 'time.when'),
              title: (li.querySelector('time.when') || {}).title || '',
              datetime: li.querySelector('time.when') ? li.querySelector('time.when').getAttribute('datetime') : null,
              undo: b(li, 'button.undo-entry'), restore: b(li, 'button.restore-here'),
            }));""")

    def history_row(self, rev: int) -> str:
        return f'#history-list li[data-rev="{rev}"]'

    def history_revs(self) -> list[int]:
        return [r["rev"] for r in self.history_rows()]

    def scroll_history_to_end(self) -> None:
        """Scroll the timeline (#history-list) to its end, as a user does with the wheel."""
        self.js("const l = document.getElementById('history-list'); l.scrollTop = l.scrollHeight;")

    def writer(self, key: str) -> dict | None:
        """Who last changed a field of the person in the editor, as shown beside it
        (`#detail .writer[data-writer=KEY]`): {text, user (None while not known), title}."""
        return self.js("""const e = document.querySelector('#detail .writer[data-writer="' + arguments[0] + '"]');
            return e ? {text: e.textContent.replace(/\\s+/g, ' ').trim(), user: e.getAttribute('data-user'),
                        title: e.getAttribute('title') || ''} : null;""", key)

    def peoplekeeper(self) -> dict | None:
        return self.js("const p = window.peoplekeeper; return p ? {revision: p.revision, pending: p.pending} : null;")


def query_of(url: str) -> dict:
    return {k: v[-1] for k, v in urllib.parse.parse_qs(urllib.parse.urlsplit(url).query).items()}

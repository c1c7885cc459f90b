"""Trust (issue 7): access tokens, roles, origins, and the audit trail.

Tokens (`auth.mode: token`: HS256 JWTs with `sub`, `rooms` patterns, `role`, `exp`) are made here with
Python's own HMAC (an independent implementation of RFC 7519 HS256), and by `peoplekeeper-hub token`;
the hub must accept exactly the valid ones. A viewer sees live changes and presence, and every edit,
undo and redo of theirs gets `forbidden` (the terminal client exits 77). Pages of other origins are
refused at the handshake. `peoplekeeper-hub history ROOM` prints the journal's revisions."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import subprocess
import time

import pytest

from conftest import HUB_BIN, REPO, SEED
from pkclient import HubClient, TLSWebSocket

SECRET = "a-test-secret-of-more-than-32-bytes-0123456789"
CLIENT_BIN = os.environ.get("PEOPLEKEEPER_CLIENT_BIN", str(REPO / ".build" / "debug" / "peoplekeeper"))


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def token(user: str, rooms: list[str], role: str = "editor", ttl: int = 3600, secret: str = SECRET,
          header: dict | None = None) -> str:
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"} if header is None else header).encode())
    payload = b64(json.dumps({"sub": user, "rooms": rooms, "role": role, "exp": int(time.time()) + ttl}).encode())
    signature = hmac.new(secret.encode(), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{b64(signature)}"


@pytest.fixture
def auth_hub(hub_factory, tmp_path):
    secret_file = tmp_path / "secret"
    secret_file.write_text(SECRET + "\n")
    return hub_factory({"auth": {"mode": "token", "secretFile": str(secret_file)}})


def hello(hub, room: str, user: str, tok: str | None) -> tuple[HubClient, dict]:
    """Says hello with `tok`; returns the client and the first answer (welcome or error)."""
    c = hub.connect(room, name=user)
    c.hello(user, expect_welcome=False, **({"token": tok} if tok is not None else {}))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for kind in ("welcome", "error"):
            if c.queues[kind]:
                return c, c.queues[kind].popleft()
        try:
            c._read(0.2)
        except TimeoutError:
            pass
    raise AssertionError(f"{user}: no welcome or error within 10 s; last frames {c.log[-4:]}")


def refused(hub, room: str, user: str, tok: str | None, why: str) -> None:
    c, first = hello(hub, room, user, tok)
    assert first["type"] == "error" and first["code"] == "unauthorized", first
    assert why in first["message"], first
    assert c.wait_closed() == 1008


def test_a_valid_token_joins_with_its_user_and_role(auth_hub, room):
    c, first = hello(auth_hub, room, "ann", token("ann", [room]))
    assert first["type"] == "welcome" and first["user"] == "ann" and first["role"] == "editor", first
    ack = c.edit([{"op": "set", "tag": 1, "field": "glasses", "value": True}])
    assert ack["rev"] == 1


def test_missing_wrong_expired_and_tampered_tokens_are_refused_with_1008(auth_hub, room):
    refused(auth_hub, room, "ann", None, "needs an access token")
    refused(auth_hub, room, "ann", token("ann", [room], secret="another-secret-of-more-than-32-bytes-xyz"), "not valid")
    refused(auth_hub, room, "ann", token("ann", [room], ttl=-10), "expired")
    good = token("ann", [room])
    head, payload, sig = good.split(".")
    forged = b64(json.dumps({"sub": "ann", "rooms": ["*"], "role": "editor", "exp": int(time.time()) + 60}).encode())
    refused(auth_hub, room, "ann", f"{head}.{forged}.{sig}", "not valid")     # payload changed, old signature
    refused(auth_hub, room, "ann", "not-a-token", "not valid")
    refused(auth_hub, room, "bob", good, "for ann, not bob")                   # someone else's token
    # The refusals left no trace in the room: a valid user finds it untouched.
    _, first = hello(auth_hub, room, "ann", good)
    assert first["type"] == "welcome" and first["rev"] == 0, first
    assert auth_hub.metrics().count("peoplekeeper_refused_tokens_total 6") == 1, \
        [line for line in auth_hub.metrics().splitlines() if "refused_tokens" in line]


def test_a_token_is_refused_without_alg_hs256_or_with_crit_and_its_user_must_match_byte_for_byte(auth_hub, room):
    """From a security review (session 19), each signed with the right secret: a header naming no
    `alg`, and one with `crit` (extensions this hub does not know; RFC 7515 says refuse), were taken;
    a token for "josé" (NFC) let a hello say "jose\u0301" (NFD: Swift's `==` is canonical
    equivalence), and the room recorded bytes the token never named."""
    refused(auth_hub, room, "ann", token("ann", [room], header={"typ": "JWT"}), "names no alg")
    refused(auth_hub, room, "ann", token("ann", [room], header={"alg": "HS256", "crit": ["exp"]}), "crit")
    nfc, nfd = "jos\u00e9", "jose\u0301"
    refused(auth_hub, room, nfd, token(nfc, [room]), "the token is for")
    c, first = hello(auth_hub, room, nfc, token(nfc, [room]))
    assert first["type"] == "welcome", first
    c.close()


def test_over_http_a_body_user_must_be_the_token_s_byte_for_byte_and_the_webhooks_state_needs_every_room(
        auth_hub, room):
    """From a security review (session 19): in token mode a body `user` that was not a string (`5`)
    was ignored, and one that was the token's name in another Unicode normalization passed; both are
    400 now, as a body naming someone else was. An admin whose token names some rooms read every
    room's webhook backlog and errors (`GET /v1/webhooks`) and could re-enable an endpoint for all of
    them: both need an admin for every room now."""
    from pkhttp import HubHTTP
    nfc, nfd = "jos\u00e9", "jose\u0301"
    c, first = hello(auth_hub, room, nfc, token(nfc, [room]))    # makes the room (HTTP writes do not)
    assert first["type"] == "welcome", first
    c.close()
    jose = HubHTTP(auth_hub.port, token=token(nfc, [room]))
    path = HubHTTP.room_path(room, "batches")
    glasses = [{"op": "set", "tag": 1, "field": "glasses", "value": True}]
    for n, (body_user, why) in enumerate([(5, "must be a string"), (nfd, "is not the caller"), ("bob", "is not the caller")]):
        r = jose.post(path, {"base": 0, "key": f"k{n}", "user": body_user, "ops": glasses})
        assert r.status == 400 and r.error_code() == "bad-message" and why in r.text, (body_user, r)
    r = jose.post(path, {"base": 0, "key": "k-ok", "user": nfc, "ops": glasses})
    assert r.status == 200, r
    some = HubHTTP(auth_hub.port, token=token("root", [room, "team-*"], role="admin"))
    every = HubHTTP(auth_hub.port, token=token("root", ["team-*", "*"], role="admin"))
    r = some.get("/v1/webhooks")
    assert r.status == 403 and r.error_code() == "forbidden" and "every room" in r.text, r
    r = some.post("/v1/webhooks/enable", {"url": "http://127.0.0.1:9/none"})
    assert r.status == 403 and r.error_code() == "forbidden", r
    r = every.get("/v1/webhooks")
    assert r.status == 200 and r.json == {"webhooks": []}, r


def test_nobody_can_write_a_line_of_their_own_into_the_hub_s_text_log(hub_factory, tmp_path, room):
    """From a security review (session 19): a hello's `user` (and a token's `sub`) is anyone's text,
    and the text log wrote it as it came, so a newline in it started a line the hub never wrote (at
    the default level, for anyone holding a token; at `debug`, for anyone). Control characters are
    written escaped now: each record stays one line."""
    secret_file = tmp_path / "secret"
    secret_file.write_text(SECRET + "\n")
    hub = hub_factory({"auth": {"mode": "token", "secretFile": str(secret_file)}, "logging": {"level": "debug"}})
    forged = "2026-11-29T09:00:00+0000 critical peoplekeeper.hub: FAKE-LINE"
    refused(hub, room, "x\n" + forged, token("ann", [room]), "the token is for ann")
    refused(hub, room, "y\r\n" + forged, None, "needs an access token")
    c, first = hello(hub, room, "a\nb\u2028c", token("a\nb\u2028c", [room]))
    assert first["type"] == "welcome", first
    c.close()
    deadline = time.monotonic() + 10
    while "a\\nb\\u{2028}c" not in hub.stderr() and time.monotonic() < deadline:
        time.sleep(0.1)
    log = hub.stderr()
    lines = log.splitlines()
    assert not [line for line in lines if line.startswith(forged) or line.startswith("b")], log[-3000:]
    assert "x\\n" + forged in log, log[-3000:]
    assert "a\\nb\\u{2028}c" in log, log[-3000:]


def test_a_room_outside_the_token_s_patterns_is_refused(auth_hub, rooms):
    team = rooms("-team-a")
    tok = token("ann", ["*-team-?", "exact-room"])
    _, first = hello(auth_hub, team, "ann", tok)
    assert first["type"] == "welcome", first
    refused(auth_hub, rooms("-team-ab"), "ann", tok, "does not give access to room")
    refused(auth_hub, rooms("-other"), "ann", tok, "does not give access to room")


def test_a_session_ends_when_its_token_expires_and_a_new_token_resumes_it(auth_hub, room):
    # A token checked only at hello kept its session for as long as the connection lasted, however
    # short its exp. Now the session ends at exp (unauthorized, 1008) even on a quiet connection.
    # 6 s: two hellos and an edit come before the expiry on a loaded machine too.
    ann, first = hello(auth_hub, room, "ann", token("ann", [room], ttl=6))
    assert first["type"] == "welcome", first
    bob, bfirst = hello(auth_hub, room, "bob", token("bob", [room]))
    assert bfirst["type"] == "welcome", bfirst
    ack = ann.edit([{"op": "set", "tag": 1, "field": "glasses", "value": True}])
    started = time.monotonic()
    err = ann.take("error", timeout=13)
    assert err["code"] == "unauthorized" and "expired" in err["message"], err
    assert ann.wait_closed() == 1008
    assert time.monotonic() - started <= 11, "ended about when its exp came (6 s at most after the edit)"
    assert bob.is_open(), "a teammate with a longer token goes on"
    assert "peoplekeeper_expired_sessions_total 1" in auth_hub.metrics().splitlines()
    # The old token is refused; a new one resumes the same session, with nothing lost.
    refused(auth_hub, room, "ann", token("ann", [room], ttl=-1), "expired")
    again = auth_hub.connect(room, name="ann")
    w = again.hello("ann", token=token("ann", [room]), resume=first["session"], since=ack["rev"],
                    people=ann.people)
    again.seq = ann.seq  # the session's seqs go on (a seq it used is answered from the hub's memory)
    assert w["session"] == first["session"] and w["rev"] == ack["rev"], w
    assert again.edit([{"op": "set", "tag": 1, "field": "glasses", "value": False}])["rev"] == ack["rev"] + 1


def test_a_token_whose_exp_is_beyond_the_hub_s_clock_joins_and_the_hub_stays_up(auth_hub, room):
    """Found by a tester (session 23): an `exp` of about 9.2e15 s or more (1e300 is a valid NumericDate)
    stopped the hub (a Double too big for the clock's Int64 milliseconds), taking every room with it.
    Such a token never expires now; the hub goes on."""
    for exp in (10**17, 2**63 - 1, 1e300):
        head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        body = b64(json.dumps({"sub": "ann", "rooms": [room], "role": "editor", "exp": exp}).encode())
        tok = f"{head}.{body}.{b64(hmac.new(SECRET.encode(), f'{head}.{body}'.encode(), hashlib.sha256).digest())}"
        c, first = hello(auth_hub, room, "ann", tok)
        assert first["type"] == "welcome", (exp, first)
        c.close()
    c, first = hello(auth_hub, room, "bob", token("bob", [room]))
    assert first["type"] == "welcome" and c.edit([{"op": "set", "tag": 1, "field": "glasses", "value": True}])["rev"] == 1
    env = {k: v for k, v in os.environ.items() if not k.startswith("PEOPLEKEEPER_")}
    r = subprocess.run([HUB_BIN, "token", "--user", "ann", "--room", room, "--ttl", "100000000000000000"],
                       capture_output=True, text=True, timeout=30, env={**env, "PEOPLEKEEPER_AUTH_SECRET": SECRET})
    assert r.returncode == 64 and "at most 3153600000" in r.stderr, (r.returncode, r.stderr)


def test_a_viewer_sees_changes_and_presence_but_every_edit_undo_and_redo_is_forbidden(auth_hub, room):
    editor, first = hello(auth_hub, room, "ann", token("ann", [room]))
    assert first["type"] == "welcome"
    viewer, vfirst = hello(auth_hub, room, "val", token("val", [room], role="viewer"))
    assert vfirst["type"] == "welcome" and vfirst["role"] == "viewer", vfirst
    ack = editor.edit([{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}])
    viewer.sync(ack["rev"])
    assert viewer.people[0]["hairColor"] == "red"
    viewer.send({"type": "presence", "viewing": 1})
    deadline = time.monotonic() + 10
    while not any(p.get("user") == "val" and p.get("viewing") == 1 for p in editor.presence or []):
        assert time.monotonic() < deadline, f"the viewer's presence never reached ann: {editor.presence}"
        editor.pump(0.1)
    for n, msg in enumerate([
        {"type": "submit", "seq": 1, "base": ack["rev"], "ops": [{"op": "set", "tag": 1, "field": "glasses", "value": True}]},
        {"type": "undo", "seq": 2},
        {"type": "redo", "seq": 3},
    ]):
        viewer.send(msg)
        err = viewer.take("error")
        assert err["code"] == "forbidden" and err["seq"] == msg["seq"], (msg, err)
    # Nothing the viewer sent changed the room; the connection is still open.
    fresh, f = hello(auth_hub, room, "ann", token("ann", [room]))
    assert f["rev"] == ack["rev"] and f["people"][0]["glasses"] is False, f
    assert viewer.is_open()


def test_minted_tokens_work_and_the_terminal_client_exits_77_for_a_viewer(auth_hub, room, tmp_path):
    secret_file = tmp_path / "secret"
    config = tmp_path / "hub.yaml"
    config.write_text(f"auth:\n  mode: token\n  secretFile: {tmp_path / 'secret'}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PEOPLEKEEPER_")}

    def mint(user, role):
        r = subprocess.run([HUB_BIN, "token", "--config", str(config), "--user", user, "--room", room,
                            "--role", role, "--ttl", "600"], capture_output=True, text=True, timeout=30, env=env)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    assert secret_file.read_text().strip() == SECRET
    url = f"ws://127.0.0.1:{auth_hub.port}"

    def pk(*args, tok):
        return subprocess.run([CLIENT_BIN, *args, "--url", url, "--room", room, "--token", tok], capture_output=True,
                              text=True, timeout=30, env=env)

    editor = pk("set", "1", "hairColor", "red", "--user", "ann", tok=mint("ann", "editor"))
    assert editor.returncode == 0, editor.stderr
    viewer_token = mint("val", "viewer")
    shown = pk("show", "1", "--json", "--user", "val", tok=viewer_token)
    assert shown.returncode == 0 and json.loads(shown.stdout)["hairColor"] == "red", shown
    for args in (["set", "1", "hairColor", "white"], ["undo"], ["redo"]):
        r = pk(*args, "--user", "val", tok=viewer_token)
        assert r.returncode == 77, (args, r.returncode, r.stderr)
        assert "forbidden" in r.stderr or "viewers cannot edit" in r.stderr, r.stderr
    wrong = pk("list", "--user", "ann", tok=viewer_token)
    assert wrong.returncode == 77 and "for val, not ann" in wrong.stderr, (wrong.returncode, wrong.stderr)


def test_token_mode_without_a_secret_stops_the_hub_with_78(start_hub_raw, tmp_path):
    env_has = "PEOPLEKEEPER_AUTH_SECRET" in os.environ
    r = start_hub_raw("auth:\n  mode: token\n")
    if env_has:
        pytest.fail("PEOPLEKEEPER_AUTH_SECRET is set in the test environment; unset it")
    assert r.returncode == 78 and "PEOPLEKEEPER_AUTH_SECRET or auth.secretFile" in r.stderr, (r.returncode, r.stderr)
    short = tmp_path / "short"
    short.write_text("too-short\n")
    r = start_hub_raw(f"auth:\n  mode: token\n  secretFile: {short}\n")
    assert r.returncode == 78 and "at least 32" in r.stderr, (r.returncode, r.stderr)


def test_a_seed_with_more_people_than_a_room_may_hold_stops_the_hub_with_78(start_hub_raw):
    """A code review of session 33: with `limits.maxPeoplePerRoom` below the seed's size, every room a
    hello made was full before anyone added a person. The start stops (78) and says why."""
    r = start_hub_raw("limits:\n  maxPeoplePerRoom: 2\n")
    assert r.returncode == 78 and "rooms.seed: tutorial holds 3 people, more than limits.maxPeoplePerRoom (2)" in r.stderr, \
        (r.returncode, r.stderr)


def test_with_metrics_token_file_set_metrics_asks_for_that_bearer_token(hub_factory, start_hub_raw, tmp_path):
    """Session 23: /metrics answered anyone who reached the port (its webhook metrics are labelled by
    endpoint URL, which can be a credential). With `metrics.tokenFile` it asks for that token, as
    Prometheus sends it (`authorization: credentials_file`); /healthz still answers anyone."""
    token_file = tmp_path / "metrics-token"
    secret = "scrape-" + "x" * 24
    token_file.write_text(secret + "\n")
    hub = hub_factory({"metrics": {"tokenFile": str(token_file)}})
    for headers in ({}, {"Authorization": "Bearer wrong-token-of-some-length"},
                    {"Authorization": f"Bearer {secret}x"}, {"Authorization": f"Bearer {secret[:-1]}"},
                    {"Authorization": f"Basic {secret}"}):
        status, answer_headers, body = hub.http("GET", "/metrics", headers)
        assert status == 401 and answer_headers.get("www-authenticate") == "Bearer", (headers, status, body)
        assert b"peoplekeeper_" not in body and b"metrics.tokenFile" in body, body
    status, _, body = hub.http("GET", "/metrics", {"Authorization": f"Bearer {secret}"})
    assert status == 200 and b"peoplekeeper_connections" in body, (status, body[:200])
    assert hub.http("GET", "/healthz")[0] == 200

    short = tmp_path / "short"
    short.write_text("short\n")
    r = start_hub_raw(f"metrics:\n  tokenFile: {short}\n")
    assert r.returncode == 78 and "metrics.tokenFile" in r.stderr and "at least 16" in r.stderr, (r.returncode, r.stderr)
    # Session 24: a file no Authorization header can carry (a tester wrote two lines) locked every
    # scraper out in silence; it stops the hub instead, saying why.
    for name, text in (("two-lines", "first-line-of-token\nsecond-line-of-it\n"), ("space", "a token with spaces in it\n"),
                       ("accent", "jos\u00e9-scrape-token-0123\n")):
        odd = tmp_path / name
        odd.write_text(text, encoding="utf-8")
        r = start_hub_raw(f"metrics:\n  tokenFile: {odd}\n")
        assert r.returncode == 78 and "metrics.tokenFile" in r.stderr and "one line of visible ASCII" in r.stderr, \
            (name, r.returncode, r.stderr)
    bom = tmp_path / "bom"
    bom.write_bytes(b"\xef\xbb\xbfscrape-token-0123456789\n")
    r = start_hub_raw(f"metrics:\n  tokenFile: {bom}\n")
    assert r.returncode == 78 and "byte-order mark" in r.stderr, (r.returncode, r.stderr)
    # Read before the store is opened: nothing is left behind, and one line says what is wrong.
    data = tmp_path / "data"
    r = start_hub_raw(f"metrics:\n  tokenFile: {tmp_path / 'missing'}\n"
                      f"storage:\n  kind: embedded\n  path: {data / 'pk.sqlite'}\n")
    assert r.returncode == 78 and "cannot read" in r.stderr, (r.returncode, r.stderr)
    assert not data.exists(), f"a config that stops the hub leaves no store: {list(data.iterdir())}"


# ----------------------------------------------------------------------------------------------------
# Origins: a page of another site may not open a WebSocket to the hub
# ----------------------------------------------------------------------------------------------------

def can_connect(hub, room: str, origin: str | None) -> bool:
    """Whether the WebSocket handshake succeeds with this Origin header (and a hello is welcomed)."""
    from websockets.exceptions import InvalidHandshake, ConnectionClosed
    from websockets.sync.client import connect
    try:
        with connect(hub.url(room), origin=origin, open_timeout=5) as ws:
            ws.send(json.dumps({"type": "hello", "protocol": 1, "user": "ann"}))
            return json.loads(ws.recv(timeout=5))["type"] == "welcome"
    except (InvalidHandshake, ConnectionClosed, EOFError, OSError):
        return False


def test_pages_of_other_origins_are_refused_at_the_handshake(hub_factory, room):
    hub = hub_factory({})
    assert can_connect(hub, room, None), "a client that sends no Origin (not a browser) is let in"
    assert can_connect(hub, room, f"http://127.0.0.1:{hub.port}"), "the hub's own pages are let in"
    assert not can_connect(hub, room, "http://evil.example"), "another site's page must be refused"
    assert not can_connect(hub, room, f"http://127.0.0.1:{hub.port + 1}"), "another port is another origin"
    text = hub.metrics()
    assert "peoplekeeper_refused_origins_total 2" in text, [l for l in text.splitlines() if "origins" in l]


def test_allowed_origins_let_listed_sites_in(hub_factory, room):
    hub = hub_factory({"auth": {"allowedOrigins": ["https://app.example", "http://localhost:3000"]}})
    assert can_connect(hub, room, "https://app.example")
    assert can_connect(hub, room, "http://localhost:3000")
    assert not can_connect(hub, room, "https://app.example.evil")
    # A default port listed is the origin a browser sends without it (an HTTPS pass, session 38:
    # "https://pk.example:443" matched nothing a browser sends).
    ported = hub_factory({"auth": {"allowedOrigins": ["https://pk.example:443", "http://plain.example:80"]}})
    assert can_connect(ported, room, "https://pk.example") and can_connect(ported, room, "http://plain.example")
    assert not can_connect(ported, room, "https://pk.example:8443")
    anyone = hub_factory({"auth": {"allowedOrigins": ["*"]}})
    assert can_connect(anyone, room, "http://evil.example")


def test_an_allowed_origin_that_is_not_an_origin_stops_the_hub(start_hub_raw):
    r = start_hub_raw("auth:\n  allowedOrigins: [app.example]\n")
    assert r.returncode == 78 and "auth.allowedOrigins" in r.stderr, (r.returncode, r.stderr)
    # A path, a query or a user matched no Origin a browser sends, and the hub started anyway (a CORS
    # pass, session 39): they stop it now, naming the entry.
    for entry in ("https://app.example/path", "https://app.example:8443/v1", "https://app.example?x=1",
                  "https://user@app.example", "https://"):
        r = start_hub_raw(f"auth:\n  allowedOrigins: ['{entry}']\n")
        assert r.returncode == 78 and f"'{entry}' is not an origin" in r.stderr, (entry, r.returncode, r.stderr)


def test_an_allowed_origin_pasted_with_its_trailing_slash_matches_the_page(hub_factory, room):
    """An address bar's URL ends with "/", which no Origin has: listed so, it matched nothing (a CORS
    pass, session 39); the slash is dropped now."""
    hub = hub_factory({"auth": {"allowedOrigins": ["https://app.example/", "http://tool.example:3000/"]}})
    assert can_connect(hub, room, "https://app.example") and can_connect(hub, room, "http://tool.example:3000")
    assert not can_connect(hub, room, "https://other.example")
    status, headers, _ = hub.http("OPTIONS", f"/v1/rooms/{room}", {"Origin": "http://tool.example:3000"})
    assert status == 200 and headers.get("access-control-allow-origin") == "http://tool.example:3000", (status, headers)


# ----------------------------------------------------------------------------------------------------
# The audit trail: `peoplekeeper-hub history ROOM`
# ----------------------------------------------------------------------------------------------------

def test_history_prints_each_revision_with_its_author_kind_and_label(hub_factory, room):
    hub = hub_factory({"storage": {"kind": "embedded", "path": "{workdir}/data/pk.sqlite"}})
    ann = hub.join(room, "ann")
    bob = hub.join(room, "bob")
    ann.edit([{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}], label="Change Hair Color")
    bob.sync(1)
    bob.edit([{"op": "set", "tag": 2, "field": "glasses", "value": True}], label="Toggle Glasses")
    ann.sync(2)
    ann.undo()

    def history(*args):
        return subprocess.run([HUB_BIN, "history", room, "--config", str(hub.config_path), *args],
                              cwd=str(REPO), capture_output=True, text=True, timeout=30)

    r = history("--json")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(x["rev"], x["author"], x["kind"], x["label"]) for x in rows] == [
        (1, "ann", "edit", "Change Hair Color"), (2, "bob", "edit", "Toggle Glasses"), (3, "ann", "undo", "Change Hair Color"),
    ], rows
    original = next(p for p in SEED if p["tag"] == 1)["hairColor"]
    assert rows[2]["ops"] == [{"op": "set", "tag": 1, "field": "hairColor", "value": original}], rows[2]
    assert all(x["at"].endswith("Z") for x in rows), rows
    plain = history("--last", "2")
    lines = plain.stdout.splitlines()
    assert plain.returncode == 0 and lines[0].split() == ["REV", "AT", "AUTHOR", "KIND", "LABEL", "OPS"], plain.stdout
    assert [line.split()[0] for line in lines[1:]] == ["2", "3"] and "bob" in lines[1] and "undo" in lines[2], plain.stdout
    missing = subprocess.run([HUB_BIN, "history", "no-such-room", "--config", str(hub.config_path)],
                             cwd=str(REPO), capture_output=True, text=True, timeout=30)
    assert missing.returncode == 66 and "no room no-such-room" in missing.stderr, (missing.returncode, missing.stderr)


# ----------------------------------------------------------------------------------------------------
# TLS: wss:// with a certificate made here
# ----------------------------------------------------------------------------------------------------

def self_signed(directory) -> tuple[str, str]:
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return str(cert), str(key)


def test_tls_serves_wss_with_the_configured_certificate_and_nothing_in_clear(hub_factory, room, tmp_path):
    import ssl
    from websockets.sync.client import connect
    cert, key = self_signed(tmp_path)
    hub = hub_factory({"tls": {"certFile": cert, "keyFile": key}})
    assert hub.stdout_lines[0].startswith("peoplekeeper-hub listening on https://"), hub.stdout_lines[0]
    assert "wss://" in hub.stdout_lines[0]
    trusting = ssl.create_default_context(cafile=cert)
    with TLSWebSocket(f"wss://127.0.0.1:{hub.port}/v1/rooms/{room}", trusting) as ws:
        ws.send(json.dumps({"type": "hello", "protocol": 1, "user": "ann"}))
        welcome = json.loads(ws.recv())
        assert welcome["type"] == "welcome", welcome
        ws.send(json.dumps({"type": "submit", "seq": 1, "base": 0,
                            "ops": [{"op": "set", "tag": 1, "field": "glasses", "value": True}]}))
        while True:
            m = json.loads(ws.recv())
            if m["type"] == "ack":
                assert m["rev"] == 1
                break
    # A client that does not trust the certificate is refused by its own TLS check; one that speaks
    # plain ws:// to the TLS port gets no WebSocket.
    with pytest.raises(ssl.SSLError):
        TLSWebSocket(f"wss://127.0.0.1:{hub.port}/v1/rooms/{room}", ssl.create_default_context())
    with pytest.raises(Exception):
        with connect(f"ws://127.0.0.1:{hub.port}/v1/rooms/{room}", open_timeout=5) as ws:
            ws.send(json.dumps({"type": "hello", "protocol": 1, "user": "ann"}))
            ws.recv(timeout=5)


def test_tls_1_2_takes_only_forward_secret_aead_suites(hub_factory, tmp_path):
    """A TLS port's TLS 1.2 suites are ECDHE with AES-GCM or ChaCha20-Poly1305 (docs/SECURITY.md, "TLS"):
    a client offering only a suite without forward secrecy (static RSA key exchange) or a CBC one is
    refused at the handshake; the usual suites and TLS 1.3 are taken.
    Before (an operator's pass, session 38): OpenSSL's defaults took `AES128-SHA` and the like."""
    import socket
    import ssl
    cert, key = self_signed(tmp_path)
    hub = hub_factory({"tls": {"certFile": cert, "keyFile": key}})

    def handshake(ciphers: str | None = None, version=ssl.TLSVersion.TLSv1_2) -> str:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.load_verify_locations(cert)
        context.minimum_version = context.maximum_version = version
        if ciphers:
            context.set_ciphers(ciphers + ":@SECLEVEL=0")   # this client offers them whatever its defaults
        with socket.create_connection(("127.0.0.1", hub.port), timeout=5) as raw:
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                return tls.cipher()[0]

    assert handshake() in ("ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-CHACHA20-POLY1305")
    assert handshake("ECDHE-RSA-CHACHA20-POLY1305") == "ECDHE-RSA-CHACHA20-POLY1305"
    for weak in ("AES128-SHA", "AES256-GCM-SHA384", "ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES256-SHA384",
                 "DHE-RSA-AES128-GCM-SHA256"):
        with pytest.raises(ssl.SSLError):
            handshake(weak)
    assert handshake(version=ssl.TLSVersion.TLSv1_3).startswith("TLS_")
    assert hub.alive()


def test_the_terminal_client_speaks_wss_and_checks_the_hub_s_certificate(hub_factory, room, tmp_path):
    cert, key = self_signed(tmp_path)
    hub = hub_factory({"tls": {"certFile": cert, "keyFile": key}})
    env = {k: v for k, v in os.environ.items() if not k.startswith("PEOPLEKEEPER_")}
    url = f"wss://127.0.0.1:{hub.port}"

    def pk(*args, extra_env=None):
        return subprocess.run([CLIENT_BIN, *args, "--url", url, "--room", room, "--user", "ann", "--timeout", "5"],
                              capture_output=True, text=True, timeout=30, env={**env, **(extra_env or {})})

    # Trusting the hub's certificate (flag or environment), edits go through and are read back.
    r = pk("set", "1", "hairColor", "red", "--ca-file", cert)
    assert r.returncode == 0, (r.returncode, r.stderr)
    shown = pk("show", "1", "--json", extra_env={"PEOPLEKEEPER_CA_FILE": cert})
    assert shown.returncode == 0 and json.loads(shown.stdout)["hairColor"] == "red", (shown.returncode, shown.stderr)
    # An independent client sees the same revision.
    import ssl
    with TLSWebSocket(f"wss://127.0.0.1:{hub.port}/v1/rooms/{room}", ssl.create_default_context(cafile=cert)) as ws:
        ws.send(json.dumps({"type": "hello", "protocol": 1, "user": "bob"}))
        welcome = json.loads(ws.recv())
        assert next(p for p in welcome["people"] if p["tag"] == 1)["hairColor"] == "red", welcome
    # Without trusting it (the system store does not know a self-signed certificate), the client
    # refuses the hub: unreachable (69), and nothing is sent.
    refused = pk("set", "1", "hairColor", "white")
    assert refused.returncode == 69, (refused.returncode, refused.stderr)
    assert "cannot reach the hub over TLS" in refused.stderr and "--ca-file" in refused.stderr, refused.stderr
    # Why, in words (lws's own read "connect SSL err 1: error:00000001:lib(0)::reason(1)", its reason
    # only on raw log lines, one per attempt: an operator's pass, session 38).
    assert "the hub's TLS certificate is not trusted: self-signed certificate" in refused.stderr, refused.stderr
    assert "SSL error" not in refused.stderr and "lib(0)" not in refused.stderr, refused.stderr
    # A --ca-file that does not hold the hub's certificate: the advice names the file, not the flag.
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    other, _ = self_signed(other_dir)
    wrong = pk("set", "1", "hairColor", "white", "--ca-file", other)
    assert wrong.returncode == 69 and f"none of the certificates in {other} signed it" in wrong.stderr, wrong.stderr
    # Plain ws:// to the TLS port gets no WebSocket either.
    clear = subprocess.run([CLIENT_BIN, "list", "--url", f"ws://127.0.0.1:{hub.port}", "--room", room, "--user", "ann",
                            "--timeout", "5"], capture_output=True, text=True, timeout=30, env=env)
    assert clear.returncode == 69, (clear.returncode, clear.stderr)
    after = pk("show", "1", "--json", "--ca-file", cert)
    assert json.loads(after.stdout)["hairColor"] == "red", after.stdout


def test_tls_needs_both_files(start_hub_raw, tmp_path):
    cert, _ = self_signed(tmp_path)
    r = start_hub_raw(f"tls:\n  certFile: {cert}\n")
    assert r.returncode == 78 and "tls.keyFile" in r.stderr, (r.returncode, r.stderr)


def test_tls_files_that_cannot_serve_are_named_at_start(start_hub_raw, tmp_path):
    """An HTTPS pass (session 38): a key with a pass phrase made OpenSSL ask for it on the terminal
    (the hub waited for ever, started by hand), and a key that is not the certificate's, or files
    swapped, stopped the hub with "is the port in use, or the open-file limit too low?". Each is named
    now: the files' contents at start (exit 78), a key of another certificate when the port opens."""
    cert, key = self_signed(tmp_path)
    (tmp_path / "other").mkdir()
    _, other_key = self_signed(tmp_path / "other")
    locked = tmp_path / "locked.key"
    subprocess.run(["openssl", "pkey", "-in", key, "-aes256", "-passout", "pass:secret", "-out", str(locked)],
                   check=True, capture_output=True, timeout=30)
    for cert_file, key_file, words in ((key, key, f"tls.certFile: {key} holds no PEM certificate"),
                                       (cert, cert, f"tls.keyFile: {cert} holds no PEM private key"),
                                       (cert, str(locked), f"tls.keyFile: {locked} is encrypted (it has a pass phrase)")):
        r = start_hub_raw(f"tls:\n  certFile: {cert_file}\n  keyFile: {key_file}\n")
        assert r.returncode == 78 and words in r.stderr, (cert_file, key_file, r.returncode, r.stderr)
    mismatched = start_hub_raw(f"listen:\n  port: 0\ntls:\n  certFile: {cert}\n  keyFile: {other_key}\n")
    assert mismatched.returncode != 0 and "is tls.keyFile the private key of tls.certFile?" in mismatched.stderr, \
        (mismatched.returncode, mismatched.stderr)


# ----------------------------------------------------------------------------------------------------
# Connections per IP
# ----------------------------------------------------------------------------------------------------

def test_connections_per_ip_are_bounded_and_freed_when_closed(hub_factory, room):
    """With limits.maxConnectionsPerIP 3, a fourth connection from 127.0.0.1 is refused at the
    handshake while the first three stay served; closing one lets a new one in."""
    hub = hub_factory({"limits": {"maxConnectionsPerIP": 3}})
    clients = [hub.join(room, f"u{n}") for n in range(3)]
    assert not can_connect(hub, room, None), "a fourth connection from the same address must be refused"
    ack = clients[0].edit([{"op": "set", "tag": 1, "field": "glasses", "value": True}])
    clients[1].sync(ack["rev"])          # the three are still served
    clients[2].close()
    deadline = time.monotonic() + 10
    while not can_connect(hub, room, None):
        assert time.monotonic() < deadline, "a closed connection's place was never freed"
        time.sleep(0.1)


def test_open_mode_refuses_other_sites_and_rebound_names_over_http_and_websocket(hub_factory, room):
    """Found by a hostile pass (session 14): in `auth.mode: open` the HTTP API took writes, restores and
    admin calls from pages of other sites (a cross-site "simple request": `Origin: https://evil.example`,
    `Content-Type: text/plain`, no preflight) and from a page whose name points at 127.0.0.1 (DNS
    rebinding: `Host: evil.example`). Now, as for a WebSocket, a request with another site's `Origin` is
    403, and in open mode a request from this machine that names the hub otherwise than `localhost`,
    `*.localhost` or a loopback address is 403 (HTTP and WebSocket), unless `auth.allowedOrigins` lists
    that host. Clients that send no `Origin` and address the hub by 127.0.0.1 or localhost are served
    as before; nothing refused was applied."""
    hub = hub_factory({})
    observe_ws = hub.join(room, "observer")
    body = json.dumps({"base": 0, "key": "x1", "ops": [{"op": "set", "tag": 1, "field": "glasses", "value": True}]})

    def post(headers):
        return request_as(hub.port, "POST", f"/v1/rooms/{room}/batches?user=victim", body.encode(),
                          {"Content-Type": "text/plain", **headers})

    status, text = post({"Origin": "https://evil.example"})
    assert status == 403 and "auth.allowedOrigins" in text, (status, text)
    status, text = post({"Host": "evil.example"})
    assert status == 403 and "localhost" in text, (status, text)
    status, _ = request_as(hub.port, "GET", "/v1/rooms", b"", {"Host": f"evil.example:{hub.port}"})
    assert status == 403, status
    status, _ = request_as(hub.port, "GET", "/metrics", b"", {"Host": f"evil.example:{hub.port}"})
    assert status == 403, "the metrics are not for a rebound page either"
    assert request_as(hub.port, "GET", "/metrics", b"", {"Host": f"localhost:{hub.port}"})[0] == 200
    assert not can_connect_as(hub, room, host=f"evil.example:{hub.port}", origin=f"http://evil.example:{hub.port}")
    for host in (f"localhost:{hub.port}", f"127.0.0.1:{hub.port}", f"app.localhost:{hub.port}"):
        status, text = request_as(hub.port, "GET", f"/v1/rooms/{room}", b"", {"Host": host})
        assert status == 200, (host, status, text)
    assert can_connect_as(hub, room, host=f"localhost:{hub.port}", origin=f"http://localhost:{hub.port}")
    ok = post({"Origin": f"http://127.0.0.1:{hub.port}", "Host": f"127.0.0.1:{hub.port}"})
    assert ok[0] == 200, ok
    observe_ws.sync(1)
    assert observe_ws.rev == 1, "only the same-origin write was applied"

    listed = hub_factory({"auth": {"allowedOrigins": [f"http://pk.example:{hub.port + 1}"]}})
    status, _ = request_as(listed.port, "GET", "/v1/rooms", b"", {"Host": f"pk.example:{hub.port + 1}"})
    assert status == 200, status


def can_connect_as(hub, room: str, *, host: str, origin: str) -> bool:
    """A WebSocket upgrade with exactly this Host and Origin: answered 101?"""
    import socket
    head = (f"GET /v1/rooms/{room} HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    with socket.create_connection(("127.0.0.1", hub.port), timeout=10) as s:
        s.sendall(head.encode())
        status = s.recv(4096).split(b"\r\n", 1)[0]
    return status.split()[1] == b"101"


def request_as(port: int, method: str, path: str, body: bytes, headers: dict) -> tuple[int, str]:
    """One HTTP/1.1 request with exactly these headers (Host defaults to 127.0.0.1:port): (status, body)."""
    import socket
    fields = {"Host": f"127.0.0.1:{port}", "Content-Length": str(len(body)), "Connection": "close", **headers}
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head.encode() + body)
        raw = b""
        while chunk := s.recv(65536):
            raw += chunk
    status_line, _, rest = raw.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2].decode("utf-8", "replace")


def test_http_tokens_are_held_to_the_websocket_s_rules(auth_hub, room):
    """Found by a hostile pass (session 14): over HTTP a token whose `sub` is not 1–64 bytes was taken
    (its revisions then could not be imported back), a header naming another `alg` than HS256 was
    taken when the HS256 signature was right, and `nbf` was ignored. Each is now 401, with a sentence
    saying which; the same token done right is taken."""
    def signed(payload: dict, header: dict | None = None) -> str:
        head = b64(json.dumps(header or {"alg": "HS256", "typ": "JWT"}).encode())
        body = b64(json.dumps(payload).encode())
        sig = hmac.new(SECRET.encode(), f"{head}.{body}".encode(), hashlib.sha256).digest()
        return f"{head}.{body}.{b64(sig)}"

    def get(tok: str) -> tuple[int, str]:
        return request_as(auth_hub.port, "GET", f"/v1/rooms/{room}", b"", {"Authorization": f"Bearer {tok}"})

    auth_hub.join(room, "observer", token=token("observer", [room]))
    claims = {"sub": "ann", "rooms": [room], "role": "editor", "exp": int(time.time()) + 600}
    assert get(signed(claims))[0] == 200
    for what, tok, why in [
        ("a 65-byte sub", signed({**claims, "sub": "a" * 65}), "1 to 64 bytes"),
        ("an empty sub", signed({**claims, "sub": ""}), "1 to 64 bytes"),
        ("alg none, signed HS256", signed(claims, {"alg": "none", "typ": "JWT"}), "alg none"),
        ("alg HS512, signed HS256", signed(claims, {"alg": "HS512", "typ": "JWT"}), "alg HS512"),
        ("nbf in an hour", signed({**claims, "nbf": int(time.time()) + 3600}), "not valid yet"),
    ]:
        status, text = get(tok)
        assert status == 401 and why in text, (what, status, text)
    assert get(signed({**claims, "nbf": int(time.time()) - 60}))[0] == 200


def test_with_an_issuer_and_an_audience_set_a_token_must_name_both(hub_factory, tmp_path, room):
    """Session 23: `auth.issuer` / `auth.audience`. Unset (every test above), `iss` and `aud` are not
    read. Set, a token over WebSocket or HTTP must carry that `iss` and an `aud` naming the audience
    (a string or a list), byte for byte; `peoplekeeper-hub token` writes both."""
    secret_file = tmp_path / "secret"
    secret_file.write_text(SECRET + "\n")
    issuer, audience = "https://id.example", "peoplekeeper-staging"
    config = tmp_path / "hub.yaml"
    config.write_text(f"auth:\n  mode: token\n  secretFile: {secret_file}\n  issuer: {issuer}\n  audience: {audience}\n")
    hub = hub_factory({"auth": {"mode": "token", "secretFile": str(secret_file), "issuer": issuer, "audience": audience}})

    def signed(**extra) -> str:
        head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        body = b64(json.dumps({"sub": "ann", "rooms": [room], "role": "editor", "exp": int(time.time()) + 600,
                               **extra}).encode())
        return f"{head}.{body}.{b64(hmac.new(SECRET.encode(), f'{head}.{body}'.encode(), hashlib.sha256).digest())}"

    refused(hub, room, "ann", signed(), "names no issuer")
    refused(hub, room, "ann", signed(iss="https://other.example", aud=audience), "issuer (iss) is not")
    refused(hub, room, "ann", signed(iss=issuer), "audience (aud)")
    refused(hub, room, "ann", signed(iss=issuer, aud="peoplekeeper-production"), "audience (aud)")
    refused(hub, room, "ann", signed(iss=issuer, aud=["PeopleKeeper-Staging"]), "audience (aud)")
    for good in (signed(iss=issuer, aud=audience), signed(iss=issuer, aud=["another", audience])):
        c, first = hello(hub, room, "ann", good)
        assert first["type"] == "welcome", first
        c.close()

    def get(tok: str) -> tuple[int, str]:
        return request_as(hub.port, "GET", f"/v1/rooms/{room}", b"", {"Authorization": f"Bearer {tok}"})
    status, text = get(signed(iss=issuer))
    assert status == 401 and "audience" in text, (status, text)
    assert get(signed(iss=issuer, aud=audience))[0] == 200

    env = {k: v for k, v in os.environ.items() if not k.startswith("PEOPLEKEEPER_")}
    r = subprocess.run([HUB_BIN, "token", "--config", str(config), "--user", "ann", "--room", room, "--ttl", "600"],
                       capture_output=True, text=True, timeout=30, env=env)
    assert r.returncode == 0, r.stderr
    minted = r.stdout.strip()
    payload = json.loads(base64.urlsafe_b64decode(minted.split(".")[1] + "=="))
    assert payload["iss"] == issuer and audience in ([payload["aud"]] if isinstance(payload["aud"], str) else payload["aud"]), payload
    c, first = hello(hub, room, "ann", minted)
    assert first["type"] == "welcome", first


def test_a_change_feed_long_poll_ends_when_its_token_expires(auth_hub, room):
    """Session 23 (a tester): a long poll (`wait`) whose token expired meanwhile still answered with a
    revision made after `exp`. It waits no longer than its token lasts now: an empty page at `exp`,
    and the next request with that token is 401."""
    obs, first = hello(auth_hub, room, "obs", token("obs", [room]))
    assert first["type"] == "welcome", first
    short = token("ann", [room], ttl=3)
    started = time.monotonic()
    status, body = request_as(auth_hub.port, "GET", f"/v1/rooms/{room}/revisions?after=0&wait=30", b"",
                              {"Authorization": f"Bearer {short}"})
    assert status == 200 and json.loads(body)["revisions"] == [], (status, body)
    assert time.monotonic() - started < 20, "answered at the token's exp (3 s at most), not after the 30 s wait"
    obs.edit([{"op": "set", "tag": 1, "field": "glasses", "value": True}])
    status, body = request_as(auth_hub.port, "GET", f"/v1/rooms/{room}/revisions?after=0&wait=30", b"",
                              {"Authorization": f"Bearer {short}"})
    assert status == 401 and "expired" in body, (status, body)

"""A small client of the hub's HTTP API (shared/spec/HTTP.md; docs/openapi.yaml), for the tests.

Written from the contract only. Plain `http.client` over one keep-alive connection per HubHTTP (a
request on a connection the hub has meanwhile closed is sent again once on a new one, as every
keep-alive client does; `connections` counts how many were opened). Bodies are JSON; every answer is
kept whole (status, headers, raw body) so a failing test can show exactly what the hub said.

Also here: HS256 tokens made with Python's own HMAC (RFC 7519; the same secret file the hub reads), the
token-mode hub fixture, and a validator for docs/openapi.yaml's schemas (webhook bodies have no
other check).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import json
import socket
import time
import urllib.parse
import uuid
from functools import lru_cache
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
OPENAPI = REPO / "docs" / "openapi.yaml"

# The token secret (32 bytes at least, as the hub requires). Its file ends with a newline, which the hub
# strips, as test_trust.py relies on.
SECRET = "an-http-test-secret-of-more-than-32-bytes-0123456789"

CSV_HEADER = ["tag", "name", "hairColor", "hairLength", "eyeColor", "glasses", "facialHair", "likes", "dislikes"]


# ----------------------------------------------------------------------------------------------------
# Tokens
# ----------------------------------------------------------------------------------------------------

def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def mint(user: str, rooms: list[str], role: str = "editor", ttl: int = 3600, secret: str = SECRET) -> str:
    """An HS256 JWT {sub, rooms, role, exp}, as `peoplekeeper-hub token` makes them."""
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = _b64(json.dumps({"sub": user, "rooms": rooms, "role": role,
                               "exp": int(time.time()) + ttl}).encode())
    sig = hmac.new(secret.encode(), f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{_b64(sig)}"


# ----------------------------------------------------------------------------------------------------
# Answers
# ----------------------------------------------------------------------------------------------------

class Response:
    def __init__(self, method: str, path: str, status: int, reason: str, headers: dict, body: bytes):
        self.method, self.path, self.status, self.reason = method, path, status, reason
        self.headers = headers          # lower-cased names
        self.body = body
        self._json = None

    def __repr__(self) -> str:
        text = self.body[:600].decode("utf-8", "replace")
        more = "…" if len(self.body) > 600 else ""
        return f"<{self.method} {self.path} → {self.status} {self.reason}: {text}{more}>"

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")

    @property
    def json(self):
        if self._json is None:
            assert self.content_type.split(";")[0].strip() == "application/json", \
                f"expected a JSON answer (Content-Type: application/json): {self!r}, headers {self.headers}"
            try:
                self._json = json.loads(self.body)
            except ValueError:
                raise AssertionError(f"the answer is not JSON: {self!r}") from None
        return self._json

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")

    def error_code(self) -> str:
        """The `error.code` of an error answer (checked to be `{"error":{"code","message"}}`)."""
        doc = self.json
        assert isinstance(doc, dict) and isinstance(doc.get("error"), dict), \
            f"an error answer is {{\"error\":{{\"code\",\"message\"}}}}: {self!r}"
        err = doc["error"]
        assert isinstance(err.get("code"), str) and isinstance(err.get("message"), str), \
            f"error.code and error.message are strings: {self!r}"
        return err["code"]


def expect(resp: Response, status: int, what: str = ""):
    """Assert the status; returns the JSON body (None for an empty one, e.g. 204)."""
    assert resp.status == status, f"{what + ': ' if what else ''}expected HTTP {status}, got {resp!r}"
    if not resp.body:
        return None
    return resp.json


def expect_error(resp: Response, status: int, code: str, what: str = "") -> dict:
    """Assert an error answer with this status and `error.code`; returns the error object."""
    prefix = what + ": " if what else ""
    assert resp.status == status, f"{prefix}expected HTTP {status} `{code}`, got {resp!r}"
    got = resp.error_code()
    assert got == code, f"{prefix}expected error code `{code}` (HTTP {status}), got `{got}`: {resp!r}"
    return resp.json["error"]


def new_key() -> str:
    return uuid.uuid4().hex


# ----------------------------------------------------------------------------------------------------
# The client
# ----------------------------------------------------------------------------------------------------

_RETRYABLE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
              http.client.CannotSendRequest, http.client.BadStatusLine)


class HubHTTP:
    """One keep-alive HTTP/1.1 connection to a hub, as `user` (open mode) or with `token`."""

    def __init__(self, port: int, *, user: str | None = None, token: str | None = None, timeout: float = 15.0,
                 host: str = "127.0.0.1"):
        self.host, self.port, self.user, self.token, self.timeout = host, port, user, token, timeout
        self.conn: http.client.HTTPConnection | None = None
        self.connections = 0            # connections opened so far
        self.requests = 0

    def __repr__(self) -> str:
        who = self.user or ("token" if self.token else "anonymous")
        return f"<HubHTTP {who} 127.0.0.1:{self.port}>"

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def _connect(self, timeout: float) -> http.client.HTTPConnection:
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
            self.connections += 1
        else:
            self.conn.timeout = timeout
            if self.conn.sock is not None:
                self.conn.sock.settimeout(timeout)
        return self.conn

    # -- the one way requests go -----------------------------------------------------------------------

    def request(self, method: str, path: str, *, body=None, query: dict | None = None,
                headers: dict | None = None, token: str | None = ..., user: str | None = ...,
                timeout: float | None = None) -> Response:
        """Send one request. `body`: a dict / list (sent as JSON), str or bytes (sent as is). `query`:
        None values are left out. `user` (default: this client's) is added as the `user` query
        parameter; `token` (default: this client's) as `Authorization: Bearer`."""
        q = dict(query or {})
        u = self.user if user is ... else user
        if u is not None and "user" not in q:
            q["user"] = u
        q = {k: ("true" if v is True else "false" if v is False else v) for k, v in q.items() if v is not None}
        full = path + ("?" + urllib.parse.urlencode(q) if q else "")
        h = {"Accept": "application/json"}
        tok = self.token if token is ... else token
        if tok is not None:
            h["Authorization"] = f"Bearer {tok}"
        data = None
        if body is not None:
            if isinstance(body, (dict, list)):
                data = json.dumps(body, ensure_ascii=False).encode()
            elif isinstance(body, str):
                data = body.encode()
            else:
                data = bytes(body)
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        t = self.timeout if timeout is None else timeout
        for attempt in (1, 2):
            reused = self.conn is not None
            conn = self._connect(t)
            try:
                conn.request(method, full, body=data, headers=h)
                r = conn.getresponse()
                payload = r.read()
            except _RETRYABLE as e:
                self.close()
                if reused and attempt == 1:
                    continue        # the hub closed an idle keep-alive connection: once more on a new one
                raise AssertionError(f"{method} {full}: the hub closed the connection without an answer "
                                     f"({type(e).__name__}: {e})") from None
            except (socket.timeout, TimeoutError):
                self.close()
                raise AssertionError(f"{method} {full}: no answer within {t} s") from None
            except ConnectionRefusedError:
                self.close()
                raise AssertionError(f"{method} {full}: connection refused (is the hub running?)") from None
            self.requests += 1
            resp = Response(method, full, r.status, r.reason,
                            {k.lower(): v for k, v in r.getheaders()}, payload)
            if r.will_close:
                self.close()
            return resp
        raise AssertionError("unreachable")

    def get(self, path: str, **kw) -> Response:
        return self.request("GET", path, **kw)

    def post(self, path: str, body, **kw) -> Response:
        return self.request("POST", path, body=body, **kw)

    def put(self, path: str, body, **kw) -> Response:
        return self.request("PUT", path, body=body, **kw)

    def delete(self, path: str, **kw) -> Response:
        return self.request("DELETE", path, **kw)

    # -- the routes (raw: each returns the Response) -----------------------------------------------------

    @staticmethod
    def room_path(room: str, *rest) -> str:
        return "/v1/rooms/" + urllib.parse.quote(room, safe="") + "".join("/" + str(p) for p in rest)

    def state(self, room: str, at: int | None = None, **kw) -> Response:
        return self.get(self.room_path(room), query={"at": at}, **kw)

    def batch(self, room: str, ops: list, base: int, *, key: str | None = None, label: str | None = None,
              coalesce: str | None = None, **kw) -> Response:
        body = {"base": base, "ops": ops, "key": key or new_key()}
        if label is not None:
            body["label"] = label
        if coalesce is not None:
            body["coalesce"] = coalesce
        return self.post(self.room_path(room, "batches"), body, **kw)

    def undo(self, room: str, *, key: str | None = None, scope: int | None = None, entry: int | None = None,
             **kw) -> Response:
        body = {"key": key or new_key()}
        if scope is not None:
            body["scope"] = scope
        if entry is not None:
            body["entry"] = entry
        return self.post(self.room_path(room, "undo"), body, **kw)

    def redo(self, room: str, *, key: str | None = None, scope: int | None = None, **kw) -> Response:
        body = {"key": key or new_key()}
        if scope is not None:
            body["scope"] = scope
        return self.post(self.room_path(room, "redo"), body, **kw)

    def restore(self, room: str, rev: int, *, key: str | None = None, label: str | None = None, **kw) -> Response:
        body = {"rev": rev, "key": key or new_key()}
        if label is not None:
            body["label"] = label
        return self.post(self.room_path(room, "restore"), body, **kw)

    def log(self, room: str, *, before: int | None = None, limit: int | None = None, tag: int | None = None,
            **kw) -> Response:
        return self.get(self.room_path(room, "log"), query={"before": before, "limit": limit, "tag": tag}, **kw)

    def blame(self, room: str, tag, **kw) -> Response:
        return self.get(self.room_path(room, "people", tag, "blame"), **kw)

    def feed(self, room: str, after: int | None = None, *, limit: int | None = None, wait: float | None = None,
             **kw) -> Response:
        if wait is not None:
            kw.setdefault("timeout", float(wait) + 15.0)
        return self.get(self.room_path(room, "revisions"), query={"after": after, "limit": limit, "wait": wait},
                        **kw)

    def rooms(self, *, after: str | None = None, limit: int | None = None, prefix: str | None = None,
              **kw) -> Response:
        return self.get("/v1/rooms", query={"after": after, "limit": limit, "prefix": prefix}, **kw)

    def create(self, room: str, body: dict, **kw) -> Response:
        return self.put(self.room_path(room), body, **kw)

    def remove_room(self, room: str, **kw) -> Response:
        return self.delete(self.room_path(room), **kw)

    def export(self, room: str, *, history: bool = False, csv: bool = False, **kw) -> Response:
        headers = {"Accept": "text/csv"} if csv else {}
        return self.get(self.room_path(room, "export"), query={"history": True if history else None},
                        headers=headers, **kw)

    def webhooks(self, **kw) -> Response:
        return self.get("/v1/webhooks", **kw)

    # -- conveniences that require success ---------------------------------------------------------------

    def head(self, room: str) -> int:
        return expect(self.state(room), 200, f"GET {room}")["rev"]

    def people(self, room: str, at: int | None = None) -> list:
        return expect(self.state(room, at), 200, f"GET {room}" + (f"?at={at}" if at is not None else ""))["people"]

    def edit(self, room: str, ops: list, base: int | None = None, **kw) -> dict:
        """A batch that must be answered 200 (at the current head unless `base` is given)."""
        if base is None:
            base = self.head(room)
        return expect(self.batch(room, ops, base, **kw), 200, f"batch {ops} in {room}")

    def feed_all(self, room: str, after: int = 0, limit: int | None = None) -> tuple[list, int]:
        """Every revision after `after`, page by page (keeping `after` = the last rev seen). Returns
        (revisions, head of the last page)."""
        out: list = []
        while True:
            page = expect(self.feed(room, after, limit=limit), 200, f"feed of {room} after {after}")
            revs = page["revisions"]
            for r in revs:
                assert r["rev"] == after + 1, f"the feed skipped or repeated a revision after {after}: {page}"
                after = r["rev"]
                out.append(r)
            if not revs or after >= page["head"]:
                return out, page["head"]


def raw_request(port: int, method: str, path: str, body, *, headers: dict | None = None,
                timeout: float = 15.0) -> Response:
    """One request on a fresh socket that keeps reading the answer even when the hub stops reading the
    body early (a hub may answer 413 before a big body is all in, and close): http.client would only
    see the broken pipe. The body (dict → JSON) is sent in chunks; a send that fails ends the sending."""
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else (
        body.encode() if isinstance(body, str) else bytes(body))
    head = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Content-Type: application/json",
            f"Content-Length: {len(data)}", "Connection: close"]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        try:
            s.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
            for i in range(0, len(data), 64 * 1024):
                s.sendall(data[i:i + 64 * 1024])
        except (BrokenPipeError, ConnectionResetError):
            pass                        # the hub answered (and closed) before the body was all sent
        raw = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            except (socket.timeout, TimeoutError):
                break
            if not chunk:
                break
            raw += chunk
            if b"\r\n\r\n" in raw:
                top, _, rest = raw.partition(b"\r\n\r\n")
                length = next((int(line.split(b":", 1)[1]) for line in top.split(b"\r\n")[1:]
                               if line.lower().startswith(b"content-length:")), None)
                if length is not None and len(rest) >= length:
                    break
    finally:
        s.close()
    assert raw, f"{method} {path}: the hub closed the connection without an answer"
    top, _, rest = raw.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    assert len(parts) >= 2 and parts[0].startswith("HTTP/"), f"{method} {path}: not an HTTP answer: {raw[:200]!r}"
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    if "content-length" in hdrs:
        rest = rest[:int(hdrs["content-length"])]
    elif hdrs.get("transfer-encoding", "").lower() == "chunked":
        body_out, buf = b"", rest
        while buf:
            size_line, _, buf = buf.partition(b"\r\n")
            size = int(size_line.split(b";")[0] or b"0", 16)
            if size == 0:
                break
            body_out, buf = body_out + buf[:size], buf[size + 2:]
        rest = body_out
    return Response(method, path, int(parts[1]), parts[2] if len(parts) > 2 else "", hdrs, rest)


# ----------------------------------------------------------------------------------------------------
# Fixtures (imported by the test modules that use them)
# ----------------------------------------------------------------------------------------------------

def secret_file(directory: Path, secret: str = SECRET) -> Path:
    path = directory / "token.secret"
    path.write_text(secret + "\n")
    return path


@pytest.fixture
def token_hub(hub_factory, tmp_path):
    """A hub in `auth.mode: token` whose secret is SECRET (tokens from `mint`)."""
    return hub_factory({"auth": {"mode": "token", "secretFile": str(secret_file(tmp_path))}})


@pytest.fixture
def clients():
    """A factory of HubHTTP clients, closed at teardown: clients(hub, user=..., token=...)."""
    made: list[HubHTTP] = []

    def make(hub, **kw) -> HubHTTP:
        c = HubHTTP(hub.port, **kw)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


# ----------------------------------------------------------------------------------------------------
# docs/openapi.yaml's schemas
# ----------------------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def openapi() -> dict:
    import yaml
    return yaml.safe_load(OPENAPI.read_text())


def schema_errors(instance, pointer: str) -> list[str]:
    """What is wrong with `instance` against the schema at `pointer` of docs/openapi.yaml (e.g.
    "#/components/schemas/WebhookRevision"): [] when it conforms. OpenAPI 3.1 schemas are JSON Schema
    2020-12."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012
    doc = openapi()
    uri = "urn:peoplekeeper:openapi"
    registry = Registry().with_resource(uri, Resource(contents=doc, specification=DRAFT202012))
    validator = Draft202012Validator({"$ref": uri + pointer}, registry=registry)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}"
            for e in validator.iter_errors(instance)]

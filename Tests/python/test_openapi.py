"""docs/openapi.yaml: a valid OpenAPI 3.1 description of every route of shared/spec/HTTP.md §2 (plus
GET /v1/webhooks, /healthz, /metrics and the webhook deliveries), and the real hub keeps to it.

1. openapi-spec-validator accepts the file; it describes every route, status and security scheme the
   contract names, and its examples match their own schemas.
2. schemathesis (the CLI of the venv's package, fixed seed, deterministic, a bounded number of examples
   per operation) sends generated requests — valid ones and, for the error paths, invalid ones — to a
   real hub, once in open mode and once in token mode with an admin token. Checks: no answer is a 5xx,
   every status is one the description lists for that operation, every body matches its schema and
   content type, and the documented headers (Retry-After on 429, Location on 307) are there. Path
   parameters are steered, most of the time, to rooms and people that exist (`team-a`, `team-b`; tags
   1-3), so the requests reach the rooms' logic rather than stopping at 404; long polls are not
   waited for (`wait=0`). No NUL bytes are generated: the transport (libwebsockets) closes the
   connection, without an HTTP answer, on a request line holding `%00` (even `GET /healthz?x=%00`),
   before the hub sees it.
   PEOPLEKEEPER_OPENAPI_EXAMPLES sets the examples per operation (default 80).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from pkhttp import OPENAPI, REPO, mint, openapi, schema_errors, token_hub  # noqa: F401 (token_hub: a fixture)

SEED = 20261125
MAX_EXAMPLES = int(os.environ.get("PEOPLEKEEPER_OPENAPI_EXAMPLES", "80"))
FUZZ_ROOMS = ["team-a", "team-b"]
CHECKS = ["not_a_server_error", "status_code_conformance", "content_type_conformance",
          "response_schema_conformance", "response_headers_conformance"]

# Every route of HTTP.md §2, plus what the implementer added (GET /v1/webhooks) and the plain endpoints.
ROUTES = {
    ("get", "/v1/rooms/{room}"), ("post", "/v1/rooms/{room}/batches"), ("post", "/v1/rooms/{room}/undo"),
    ("post", "/v1/rooms/{room}/redo"), ("post", "/v1/rooms/{room}/restore"), ("get", "/v1/rooms/{room}/log"),
    ("get", "/v1/rooms/{room}/people/{tag}/blame"), ("get", "/v1/rooms/{room}/revisions"), ("get", "/v1/rooms"),
    ("put", "/v1/rooms/{room}"), ("delete", "/v1/rooms/{room}"), ("get", "/v1/rooms/{room}/export"),
    ("get", "/v1/webhooks"), ("get", "/healthz"),
}
ADMIN = {("get", "/v1/rooms"), ("put", "/v1/rooms/{room}"), ("delete", "/v1/rooms/{room}"),
         ("get", "/v1/rooms/{room}/export"), ("get", "/v1/webhooks")}
WRITES = {("post", "/v1/rooms/{room}/batches"), ("post", "/v1/rooms/{room}/undo"), ("post", "/v1/rooms/{room}/redo"),
          ("post", "/v1/rooms/{room}/restore"), ("put", "/v1/rooms/{room}")}


def operations(doc: dict):
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method in ("get", "put", "post", "delete", "patch"):
                yield method, path, op


# ----------------------------------------------------------------------------------------------------
# 1. The file itself
# ----------------------------------------------------------------------------------------------------

def test_the_description_is_valid_openapi_3_1():
    from openapi_spec_validator import validate
    from openapi_spec_validator.validation.validators import OpenAPIV31SpecValidator
    doc = openapi()
    assert str(doc.get("openapi", "")).startswith("3.1"), doc.get("openapi")
    problems = [f"{'/'.join(map(str, e.path))}: {e.message[:300]}" for e in OpenAPIV31SpecValidator(doc).iter_errors()]
    assert not problems, "docs/openapi.yaml is not valid OpenAPI 3.1:\n" + "\n".join(problems[:20])
    validate(doc)


def test_the_description_has_every_route_status_and_security_scheme_of_the_contract():
    doc = openapi()
    described = {(m, p) for m, p, _ in operations(doc)}
    assert ROUTES <= described, f"routes missing from docs/openapi.yaml: {sorted(ROUTES - described)}"
    contract = REPO.parent / "shared" / "spec" / "HTTP.md"
    if contract.exists():                   # the contract beside the repo (as CI has it): its §2 table
        table = contract.read_text().split("## 2. Routes", 1)[1].split("##", 1)[0]
        for method, path in re.findall(r"`(GET|POST|PUT|DELETE) (/v1/[^`?]*)`", table):
            route = (method.lower(), re.sub(r"\bROOM\b", "{room}", re.sub(r"\bTAG\b", "{tag}", path)))
            assert route in described, f"HTTP.md §2 names {method} {path}; docs/openapi.yaml does not describe it"

    schemes = doc["components"]["securitySchemes"]
    assert schemes["bearerAuth"]["type"] == "http" and schemes["bearerAuth"]["scheme"] == "bearer", schemes
    assert {"bearerAuth": []} in doc["security"] and {} in doc["security"], \
        "token mode (bearer) and open mode (no scheme) are both described"
    assert "auth.mode: open" in doc["info"]["description"], "open mode is described"

    for method, path, op in operations(doc):
        if path in ("/healthz", "/metrics"):
            continue
        statuses = set(op["responses"])
        need = {"400", "401", "403", "429", "503"}
        if "{room}" in path and method != "put":
            need |= {"404"}
        if (method, path) in WRITES:
            need |= {"413", "422"}
        if (method, path) in {("post", "/v1/rooms/{room}/batches"), ("put", "/v1/rooms/{room}")}:
            need |= {"409"}
        assert need <= statuses, f"{method.upper()} {path} does not list {sorted(need - statuses)}"
        ok = {"put": "201", "delete": "204"}.get(method, "200")
        assert ok in statuses, f"{method.upper()} {path} does not list its success status {ok}"
        if (method, path) in WRITES - {("put", "/v1/rooms/{room}")}:
            body = op["requestBody"]["content"]["application/json"]["schema"]
            target = doc["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]
            assert "key" in target.get("required", []), f"{method.upper()} {path}: `key` is required"
        if (method, path) in ADMIN:
            assert "admin" in op.get("tags", []), f"{method.upper()} {path} is an admin route"
    rate = doc["components"]["responses"]["RateLimited"]
    assert "Retry-After" in rate["headers"], rate
    assert set(doc.get("webhooks", {})) == {"revision", "room.created", "room.deleted"}, doc.get("webhooks")
    assert doc["webhooks"]["revision"]["post"]["parameters"][0]["$ref"].endswith("/Signature")


def test_the_description_s_examples_match_its_schemas():
    doc = openapi()
    checked = 0
    for method, path, op in operations(doc):
        for media, content in op.get("requestBody", {}).get("content", {}).items():
            pointer = "#/paths/" + path.replace("~", "~0").replace("/", "~1") + f"/{method}/requestBody/content/" \
                      + media.replace("/", "~1") + "/schema"
            for name, example in content.get("examples", {}).items():
                errors = schema_errors(example["value"], pointer)
                assert not errors, f"{method.upper()} {path} example {name!r}: {errors}"
                checked += 1
    assert checked >= 5, f"only {checked} examples"
    # The shapes the contract gives, as documents (PROTOCOL.md / HISTORY.md examples, HTTP answers).
    ack = {"rev": 42, "time": 1795616005892, "ops": [{"op": "set", "tag": 2, "field": "hairColor", "value": "blonde"},
                                                     {"op": "facialHair", "tag": 2, "style": "goatee", "present": True}]}
    assert not schema_errors(ack, "#/components/schemas/Ack")
    assert not schema_errors({"rev": 42, "time": 1, "ops": [], "noop": [{"reason": "targetRemoved", "tag": 2, "by": "ben"}]},
                             "#/components/schemas/Ack")
    assert not schema_errors({"ops": [], "label": "Change hair colour", "skipped": [
        {"reason": "overwritten", "tag": 1, "field": "hairColor", "by": "bob"}]}, "#/components/schemas/Undone")
    assert not schema_errors({"created": {"user": None, "rev": 0}, "tag": 1, "fields": {
        "name": {"user": None, "rev": 0}, "hairColor": {"user": "ann", "rev": 3, "time": 1795616016277},
        "hairLength": {"user": None, "rev": 0}, "eyeColor": {"user": "ann", "rev": 2, "time": 1795616015474},
        "glasses": {"user": None, "rev": 0}, "position": {"user": None, "rev": 0},
        "facialHair": {"beard": {"user": None, "rev": 0}}, "preference": {"sports": {"user": None, "rev": 0}}}},
        "#/components/schemas/Blame")
    # ... and what they rule out.
    assert schema_errors({"rev": 1, "ops": [{"op": "set", "tag": 1, "field": "hairColor", "value": "purple"}]},
                         "#/components/schemas/Ack"), "an unknown hairColor must not pass"
    assert schema_errors({"rev": 1, "ops": [{"op": "insert", "at": 0, "person": {"name": "Kim"}}]},
                         "#/components/schemas/Ack"), "an applied insert has a complete person with its tag"
    assert schema_errors({"error": {"code": "oops", "message": "x"}}, "#/components/schemas/Error")


# ----------------------------------------------------------------------------------------------------
# 2. The hub keeps to it (schemathesis)
# ----------------------------------------------------------------------------------------------------

def schemathesis_config(path: Path, *, user: str | None) -> Path:
    """schemathesis.toml: steer path / body parameters to what exists most of the time, never long-poll."""
    user_line = f'"query.user" = "{user}"\n' if user else ""
    path.write_text(f"""\
[dictionaries.rooms]
values = {json.dumps(FUZZ_ROOMS)}

[dictionaries.tags]
values = [1, 2, 3]

[dictionaries.revs]
values = [0, 1, 2]

[parameters]
"path.room" = {{ dictionary = "rooms", probability = 0.85 }}
"path.tag" = {{ dictionary = "tags", probability = 0.8 }}
"body.ops[*].tag" = {{ dictionary = "tags", probability = 0.8 }}
"body.base" = {{ dictionary = "revs", probability = 0.7 }}
"body.rev" = {{ dictionary = "revs", probability = 0.7 }}
"query.wait" = 0
{user_line}""")
    return path


# A key is meant for one request. The contract gives the same key (same user, same room) the first answer
# again; what a key first used on another route gets is the first answer too, of that other route's shape,
# which the description cannot type. Generated keys are short and repeat across operations, so each is
# made that route's own here (an empty or over-long key is left as it is, for the 400 paths).
HOOKS = """\
import schemathesis


@schemathesis.hook
def before_call(context, case, kwargs):
    body = case.body
    if isinstance(body, dict) and isinstance(body.get("key"), str) and 1 <= len(body["key"]) <= 128:
        route = case.operation.path.rsplit("/", 1)[-1]
        body["key"] = (route + ":" + body["key"])[:128]
"""


def prepare_rooms(hub, token_for=None) -> None:
    """team-a and team-b exist, with a little history by two users."""
    for room in FUZZ_ROOMS:
        extra = {"token": token_for("ann", room)} if token_for else {}
        ann = hub.join(room, "ann", **extra)
        ann.edit([{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}], label="Change Hair Color")
        ann.edit([{"op": "preference", "tag": 2, "topic": "art", "value": "like"}], label="Like")
        ann.close()


def run_schemathesis(hub, tmp_path: Path, *, user: str | None, headers: dict | None = None) -> None:
    config = schemathesis_config(tmp_path / "schemathesis.toml", user=user)
    hooks = tmp_path / "pk_hooks.py"
    hooks.write_text(HOOKS)
    argv = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "--no-color", "run", str(OPENAPI),
            "--url", f"http://127.0.0.1:{hub.port}", "--checks", ",".join(CHECKS),
            "--phases", "examples,coverage,fuzzing", "--max-examples", str(MAX_EXAMPLES), "--seed", str(SEED),
            "--generation-deterministic", "--generation-allow-x00", "false", "--workers", "1",
            "--request-timeout", "10", "--max-redirects", "0", "--suppress-health-check", "all",
            "--output-truncate", "false"]
    for k, v in (headers or {}).items():
        argv += ["-H", f"{k}: {v}"]
    t0 = time.monotonic()
    r = subprocess.run(argv, cwd=str(tmp_path), capture_output=True, text=True, timeout=240,
                       env={**os.environ, "NO_COLOR": "1", "SCHEMATHESIS_HOOKS": str(hooks)})
    took = time.monotonic() - t0
    out = r.stdout + r.stderr
    if not hub.alive():
        hub.exit_code = hub.proc.returncode      # reported here, not again at teardown
        raise AssertionError(f"the hub died under schemathesis (exit {hub.proc.returncode}); schemathesis said:\n"
                             f"{_summary(out, 4000)}\nthe hub's stderr (tail):\n{hub.stderr()[-4000:]}")
    status, _, _ = hub.http("GET", "/healthz")
    assert status == 200, f"the hub is not healthy after schemathesis: {status}"
    assert r.returncode == 0, (f"schemathesis found the hub departing from docs/openapi.yaml (exit {r.returncode}, "
                               f"{took:.0f} s):\n{_summary(out)}")
    assert re.search(r"\b\d+ passed\b|\bpassed\b", out), f"schemathesis ran nothing?\n{out[-3000:]}"


def _summary(out: str, limit: int = 12000) -> str:
    """schemathesis's report from its errors / failures on, else its tail."""
    found = [i for i in (out.find("= ERRORS ="), out.find("= FAILURES =")) if i >= 0]
    text = out[min(found):] if found else out[-limit:]
    return text[:limit] + ("\n…" if len(text) > limit else "")


def test_the_hub_in_open_mode_keeps_to_the_description(hub_factory, tmp_path):
    hub = hub_factory()
    prepare_rooms(hub)
    run_schemathesis(hub, tmp_path, user="fuzz")


def test_the_hub_in_token_mode_keeps_to_the_description(token_hub, tmp_path):
    prepare_rooms(token_hub, token_for=lambda user, room: mint(user, [room], "editor"))
    run_schemathesis(token_hub, tmp_path, user=None,
                     headers={"Authorization": f"Bearer {mint('fuzz', ['*'], 'admin')}"})

"""The docs against the code: a key, a flag or an error code that one has and the other lacks fails here.

- Every config key the hub reads (`peoplekeeper-hub config-keys --json`, the table the hub itself reads
  its settings by) is documented in docs/CONFIG.md (as `key`) and present in Config/peoplekeeper.yaml,
  set or as a commented example (`# key: value` under its section).
- Every flag of `peoplekeeper-hub serve --help`, and of every other subcommand's help, appears in
  docs/CONFIG.md (as `--flag`).
- The error codes of Sources/PeopleCore/Wire/ErrorCode.swift and the table of docs/PROTOCOL.md's
  "Error codes" section are the same set.
- Every HTTP route the hub registers (`routes.add("METHOD", "/path")` in Sources/PeopleHub/HTTP/) is in
  docs/HTTP.md's route table and in docs/openapi.yaml (with that method); every error code the HTTP
  API answers with is in docs/HTTP.md's error table.
- Every key of a `webhooks` entry (WebhookSettings.keys) is documented in docs/CONFIG.md.

Each test fails naming everything missing, not only the first thing.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from conftest import HUB_BIN, REPO

CONFIG_MD = REPO / "docs" / "CONFIG.md"
PROTOCOL_MD = REPO / "docs" / "PROTOCOL.md"
EXAMPLE_YAML = REPO / "Config" / "peoplekeeper.yaml"
ERROR_CODE_SWIFT = REPO / "Sources" / "PeopleCore" / "Wire" / "ErrorCode.swift"
HTTP_MD = REPO / "docs" / "HTTP.md"
OPENAPI = REPO / "docs" / "openapi.yaml"
HTTP_SOURCES = REPO / "Sources" / "PeopleHub" / "HTTP"
WEBHOOK_SETTINGS = REPO / "Sources" / "peoplekeeper-hub" / "WebhookSettings.swift"


def hub(*args: str) -> str:
    r = subprocess.run([HUB_BIN, *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, (args, r.returncode, r.stderr[-2000:])
    return r.stdout


def config_keys() -> list[dict]:
    rows = json.loads(hub("config-keys", "--json"))
    assert rows and all({"key", "type", "default", "doc"} <= row.keys() for row in rows), rows[:2]
    return rows


def yaml_keys(text: str) -> set[str]:
    """`section.key` for every key the file sets or shows as a commented example. Sections start at
    column 0 (`listen:`, or commented out: `# tls:`); keys are indented under them (`  port: 8080`), or
    commented out in place (`  # port: 8080`) or with their section (`#   certFile: x`)."""
    keys, section = set(), None
    for line in text.splitlines():
        if line.startswith("#"):  # a line commented out at column 0: read what follows `# `
            line = line[2:] if line.startswith("# ") else line[1:]
        top = re.match(r"^([A-Za-z][A-Za-z0-9]*):\s*(?:#.*)?$", line)
        if top:
            section = top.group(1)
            continue
        entry = re.match(r"^\s+(?:#\s*)?([A-Za-z][A-Za-z0-9]*):(?:\s|$)", line)
        if entry and section:
            keys.add(f"{section}.{entry.group(1)}")
    return keys


def help_flags(text: str) -> set[str]:
    """The long flags an argument-parser help lists under OPTIONS (`--help` itself left out)."""
    options = text.split("OPTIONS:", 1)[1] if "OPTIONS:" in text else ""
    flags = set(re.findall(r"^\s+(?:-\w, )?(--[a-z0-9][a-z0-9-]*)", options, re.MULTILINE))
    return flags - {"--help"}


def subcommands(*parent: str) -> list[str]:
    """Every command under `parent` (the hub's: all of them), each a space-separated path, nested ones
    (`webhooks forget`) too."""
    text = hub(*parent, "--help")
    if "SUBCOMMANDS:" not in text:
        return []
    block = text.split("SUBCOMMANDS:", 1)[1].split("\n\n", 1)[0]
    # A command's line is indented two spaces; its description's continuation lines further.
    found = []
    for name in re.findall(r"^  ([a-z][a-z0-9-]*)(?:\s|$)", block, re.MULTILINE):
        path = [*parent, name]
        found.append(" ".join(path))
        found += subcommands(*path)
    return found


def test_every_config_key_is_documented_and_in_the_example_config():
    rows = config_keys()
    doc = CONFIG_MD.read_text(encoding="utf-8")
    example = yaml_keys(EXAMPLE_YAML.read_text(encoding="utf-8"))
    undocumented = [row["key"] for row in rows if f"`{row['key']}`" not in doc]
    not_in_example = [row["key"] for row in rows if row["key"] not in example]
    assert not undocumented and not not_in_example, (
        f"config keys missing from docs/CONFIG.md: {undocumented or 'none'}; "
        f"missing from Config/peoplekeeper.yaml (as a key or a commented example): {not_in_example or 'none'}")


def test_every_flag_of_every_subcommand_is_in_config_md():
    doc = CONFIG_MD.read_text(encoding="utf-8")
    commands = subcommands()
    assert "serve" in commands and "webhooks forget" in commands, commands
    missing = []
    for command in commands:
        for flag in sorted(help_flags(hub(*command.split(), "--help"))):
            if not re.search(re.escape(flag) + r"(?![a-z0-9-])", doc):
                missing.append(f"{command} {flag}")
    assert not missing, f"flags missing from docs/CONFIG.md: {', '.join(missing)}"


def test_error_codes_in_the_code_and_in_protocol_md_are_the_same():
    swift = ERROR_CODE_SWIFT.read_text(encoding="utf-8")
    body = swift.split("enum ErrorCode", 1)[1].split("\n}", 1)[0]
    in_code = set()
    for names in re.findall(r"^\s*case\s+([^\n/]+)", body, re.MULTILINE):
        for case in names.split(","):
            m = re.match(r"\s*(\w+)\s*(?:=\s*\"([^\"]+)\")?\s*$", case)
            assert m, f"cannot read the case {case!r} in ErrorCode.swift"
            in_code.add(m.group(2) or m.group(1))
    protocol = PROTOCOL_MD.read_text(encoding="utf-8")
    section = re.split(r"^## Error codes\s*$", protocol, maxsplit=1, flags=re.MULTILINE)
    assert len(section) == 2, "docs/PROTOCOL.md has no '## Error codes' section"
    section = re.split(r"^## ", section[1], maxsplit=1, flags=re.MULTILINE)[0]
    in_doc = set(re.findall(r"^\|\s*`([a-z][a-z-]*)`\s*\|", section, re.MULTILINE))
    assert in_code, "no error codes read from ErrorCode.swift"
    assert in_code == in_doc, (
        f"error codes in ErrorCode.swift but not in PROTOCOL.md's table: {sorted(in_code - in_doc) or 'none'}; "
        f"in PROTOCOL.md's table but not in the code: {sorted(in_doc - in_code) or 'none'}")


def hub_routes() -> list[tuple[str, str]]:
    """(method, path pattern) of every route the hub registers, `:name` parameters kept."""
    routes = []
    for source in sorted(HTTP_SOURCES.glob("*.swift")):
        routes += re.findall(r'routes\.add\("([A-Z]+)", "([^"]+)"\)', source.read_text(encoding="utf-8"))
    assert len(routes) >= 14, routes
    return routes


def test_every_http_route_is_in_http_md_and_openapi():
    doc = HTTP_MD.read_text(encoding="utf-8")
    spec = OPENAPI.read_text(encoding="utf-8")
    missing_doc, missing_spec = [], []
    for method, pattern in hub_routes():
        if pattern in ("/healthz", "/metrics"):
            continue  # the operator's endpoints: docs/CONFIG.md's Endpoints
        shown = re.sub(r":(\w+)", lambda m: m.group(1).upper(), pattern)
        if f"`{method} {shown}`" not in doc:
            missing_doc.append(f"{method} {shown}")
        templated = re.sub(r":(\w+)", r"{\1}", pattern)
        block = re.split(rf"^  {re.escape(templated)}:\s*$", spec, maxsplit=1, flags=re.MULTILINE)
        if len(block) != 2 or not re.search(rf"^    {method.lower()}:", re.split(r"^  /", block[1], maxsplit=1,
                                                                            flags=re.MULTILINE)[0], re.MULTILINE):
            missing_spec.append(f"{method} {templated}")
    assert not missing_doc and not missing_spec, (
        f"routes missing from docs/HTTP.md: {missing_doc or 'none'}; from docs/openapi.yaml: {missing_spec or 'none'}")


def test_every_http_error_code_is_in_http_md():
    codes = set()
    for source in HTTP_SOURCES.glob("*.swift"):
        codes |= set(re.findall(r'code: "([a-z][a-z-]*)"', source.read_text(encoding="utf-8")))
    # The transport answers a few requests itself (framing, too-large) with errorBody("code", …).
    transport = (REPO / "Sources" / "WebSocketTransport" / "WebSocketServer.swift").read_text(encoding="utf-8")
    from_transport = set(re.findall(r'errorBody\(\s*"([a-z][a-z-]*)"', transport))
    assert {"length-required", "too-large"} <= from_transport, from_transport
    codes |= from_transport
    swift = ERROR_CODE_SWIFT.read_text(encoding="utf-8")
    codes |= {m.group(2) or m.group(1) for m in re.finditer(r"case (\w+)(?: = \"([a-z-]+)\")?", swift)}
    codes -= {"unsupported-protocol", "not-hello", "unsupportedProtocol", "notHello", "badJSON", "badMessage",
              "invalidOp", "staleBase", "tooLarge", "rateLimited", "roomFull", "serverError", "noEntry", "noRoom"}
    table = re.split(r"^## Errors\s*$", HTTP_MD.read_text(encoding="utf-8"), maxsplit=1, flags=re.MULTILINE)
    assert len(table) == 2, "docs/HTTP.md has no '## Errors' section"
    documented = set(re.findall(r"^\|\s*\d{3}\s*\|\s*`([a-z][a-z-]*)`", table[1], re.MULTILINE))
    assert not codes - documented, f"HTTP error codes missing from docs/HTTP.md's table: {sorted(codes - documented)}"


def test_every_webhook_key_is_in_config_md():
    keys = re.search(r'static let keys = \[([^\]]+)\]', WEBHOOK_SETTINGS.read_text(encoding="utf-8"))
    assert keys, "cannot find WebhookSettings.keys"
    names = re.findall(r'"(\w+)"', keys.group(1))
    doc = CONFIG_MD.read_text(encoding="utf-8")
    missing = [name for name in names if f"`webhooks[].{name}`" not in doc]
    assert names and not missing, f"webhook keys missing from docs/CONFIG.md: {missing}"

"""Fixtures: a PeopleKeeper hub process per config, and clients connected to it.

The binary is PEOPLEKEEPER_HUB_BIN, or ../../.build/debug/peoplekeeper-hub relative to this file.
Each hub gets a temporary YAML config; it is started with `--port 0 --storage memory` from the repo
root, its port is parsed from the first stdout line, and at teardown it is sent SIGTERM and must exit 0.
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pkclient import HubClient  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
HUB_BIN = os.environ.get("PEOPLEKEEPER_HUB_BIN", str(HERE / ".." / ".." / ".build" / "debug" / "peoplekeeper-hub"))

START_TIMEOUT = 15.0
STOP_TIMEOUT = 10.0

LISTEN_RE = re.compile(r"^peoplekeeper-hub listening on http://127\.0\.0\.1:(\d+)/ "
                       r"\(WebSocket ws://127\.0\.0\.1:(\d+)/v1/rooms/ROOM\)$")

# The seed every test hub starts rooms from: P1, P2, P3 of SEMANTICS §5 (P1 "Ann" dislikes weather, for
# cases 7 and 8; P2 "Joan", for case 12).
SEED = [
    {"tag": 1, "name": "Ann", "hairColor": "brown", "hairLength": "short", "eyeColor": "brown",
     "glasses": False, "facialHair": [], "likes": [], "dislikes": ["weather"]},
    {"tag": 2, "name": "Joan", "hairColor": "black", "hairLength": "long", "eyeColor": "blue",
     "glasses": False, "facialHair": [], "likes": [], "dislikes": []},
    {"tag": 3, "name": "Sam", "hairColor": "blonde", "hairLength": "medium", "eyeColor": "green",
     "glasses": True, "facialHair": ["beard"], "likes": ["sports"], "dislikes": ["weather"]},
]

BASE_CONFIG = {
    "listen": {"host": "127.0.0.1", "port": 0},
    "rooms": {},          # seed filled in per hub
    "undo": {"conflicts": "skip", "cascade": True},
    "logging": {"level": "warning", "format": "text"},
    "metrics": {"enabled": True},
    "storage": {"kind": "memory"},
}


def _yaml_scalar(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    return json.dumps(str(v))  # a JSON string is a valid double-quoted YAML scalar


def to_yaml(cfg: dict) -> str:
    lines = []
    for section, body in cfg.items():
        if isinstance(body, dict):
            if not body:
                continue
            lines.append(f"{section}:")
            for k, v in body.items():
                lines.append(f"  {k}: {_yaml_scalar(v)}")
        else:
            lines.append(f"{section}: {body}")
    return "\n".join(lines) + "\n"


def merge(base: dict, over: dict) -> dict:
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in base.items()}
    for k, v in (over or {}).items():
        if isinstance(v, dict):
            out.setdefault(k, {})
            out[k].update(v)
        else:
            out[k] = v
    return out


class Hub:
    """A running hub process."""

    def __init__(self, config: dict, workdir: Path):
        if not os.access(HUB_BIN, os.X_OK):
            raise RuntimeError(f"no hub binary at {HUB_BIN}: build it, or set PEOPLEKEEPER_HUB_BIN")
        self.workdir = workdir
        seed_path = workdir / "seed.json"
        seed_path.write_text(json.dumps(SEED))
        cfg = merge(BASE_CONFIG, {"rooms": {"seed": str(seed_path)}})
        cfg = merge(cfg, config)
        self.config = cfg
        self.config_path = workdir / "hub.yaml"
        self.config_path.write_text(to_yaml(cfg))
        self.stderr_path = workdir / "hub.stderr"
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            [HUB_BIN, "--config", str(self.config_path), "--port", "0", "--storage", "memory"],
            cwd=str(REPO), stdout=subprocess.PIPE, stderr=self._stderr, stdin=subprocess.DEVNULL)
        self.stdout_lines: list[str] = []
        first = threading.Event()

        def drain():
            for line in self.proc.stdout:
                self.stdout_lines.append(line.decode("utf-8", "replace").rstrip("\n"))
                first.set()
            first.set()

        threading.Thread(target=drain, daemon=True).start()
        if not first.wait(START_TIMEOUT) or not self.stdout_lines:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"hub did not start (exit {self.proc.returncode}); stderr:\n{self.stderr()}")
        m = LISTEN_RE.match(self.stdout_lines[0])
        assert m, f"unexpected first stdout line: {self.stdout_lines[0]!r}"
        assert m.group(1) == m.group(2)
        self.port = int(m.group(1))
        self.clients: list[HubClient] = []
        self.exit_code: int | None = None

    # -- access ----------------------------------------------------------------------------------------

    def url(self, room: str) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/rooms/{room}"

    def connect(self, room: str, name: str = "", **kw) -> HubClient:
        c = HubClient(self.url(room), name=name, **kw)
        self.clients.append(c)
        return c

    def join(self, room: str, user: str, **hello) -> HubClient:
        """Connect and say hello; the welcome is consumed (and available as client.welcome)."""
        c = self.connect(room, name=user)
        c.hello(user, **hello)
        return c

    def http(self, method: str, path: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            conn.request(method, path, headers=headers or {})
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def metrics(self) -> str:
        status, headers, body = self.http("GET", "/metrics")
        assert status == 200, (status, body[:200])
        return body.decode()

    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    # -- stopping --------------------------------------------------------------------------------------

    def terminate(self, timeout: float = STOP_TIMEOUT) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.exit_code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"hub did not exit within {timeout}s of SIGTERM")
        finally:
            self._stderr.close()
        return self.exit_code

    def stop(self) -> None:
        """Teardown: close our clients, SIGTERM, and require exit status 0."""
        for c in self.clients:
            c.close()
        if self.exit_code is not None:      # already stopped by the test (and checked there)
            shutil.rmtree(self.workdir, ignore_errors=True)
            return
        code = self.terminate()
        assert code == 0, f"hub exited {code} after SIGTERM; stderr tail:\n{self.stderr()[-3000:]}"
        shutil.rmtree(self.workdir, ignore_errors=True)


_room_counter = itertools.count(1)


def unique_room(hint: str = "room") -> str:
    clean = re.sub(r"[^A-Za-z0-9_.-]", "-", hint)
    return f"{next(_room_counter)}-{clean}"[:64]


@pytest.fixture
def room(request) -> str:
    return unique_room(request.node.name)


@pytest.fixture
def rooms(request):
    """A factory of more unique room names for the current test."""
    return lambda suffix="": unique_room(f"{request.node.name}{suffix}")


def _start(config: dict | None = None) -> Hub:
    workdir = Path(tempfile.mkdtemp(prefix="pkhub-"))
    return Hub(config or {}, workdir)


@pytest.fixture(scope="session")
def hub():
    """The shared hub: policy skip, cascade on, default limits, the §5 seed."""
    h = _start()
    yield h
    h.stop()


@pytest.fixture(scope="session")
def force_hub():
    """A hub with undo.conflicts: force."""
    h = _start({"undo": {"conflicts": "force"}})
    yield h
    h.stop()


@pytest.fixture
def hub_factory():
    """Start hubs with config overrides; each is stopped (SIGTERM, exit 0 required) at teardown."""
    started: list[Hub] = []

    def make(config: dict | None = None) -> Hub:
        h = _start(config)
        started.append(h)
        return h

    yield make
    errors = []
    for h in started:
        try:
            h.stop()
        except AssertionError as e:
            errors.append(str(e))
    assert not errors, errors


@pytest.fixture
def start_hub_raw():
    """Run the binary with a given YAML text (and extra args) and wait for it to exit. For bad configs."""
    def run(yaml_text: str, *args: str, timeout: float = 15.0) -> subprocess.CompletedProcess:
        workdir = Path(tempfile.mkdtemp(prefix="pkhub-bad-"))
        path = workdir / "bad.yaml"
        path.write_text(yaml_text)
        try:
            return subprocess.run([HUB_BIN, "--config", str(path), "--storage", "memory", *args],
                                  cwd=str(REPO), capture_output=True, timeout=timeout, text=True)
        except subprocess.TimeoutExpired as e:
            raise AssertionError(f"the hub kept running with a bad config:\n{yaml_text}") from e
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    return run

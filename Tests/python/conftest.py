"""Fixtures: a PeopleKeeper hub process per config, and clients connected to it.

The binary is PEOPLEKEEPER_HUB_BIN, or ../../.build/debug/peoplekeeper-hub relative to this file.
Each hub gets a temporary YAML config; it is started with `--port 0` from the repo root (plus
`--storage memory` unless the test's config sets `storage.kind`), its port is parsed from the first
stdout line, and at teardown it is sent SIGTERM and must exit 0. A hub can be crashed (`kill()`: SIGKILL)
and started again on the same config and working directory (`restart()`), so a SQLite file survives.
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
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pkclient import HubClient  # noqa: E402
from pgserver import PostgresServer, PostgresUnavailable  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
HUB_BIN = os.environ.get("PEOPLEKEEPER_HUB_BIN", str(HERE / ".." / ".." / ".build" / "debug" / "peoplekeeper-hub"))

START_TIMEOUT = 15.0
STOP_TIMEOUT = 10.0

LISTEN_RE = re.compile(r"^peoplekeeper-hub listening on https?://127\.0\.0\.1:(\d+)/ "
                       r"\(WebSocket wss?://127\.0\.0\.1:(\d+)/v1/rooms/ROOM\)$")

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
    if isinstance(v, list):
        return json.dumps([str(x) for x in v])  # a JSON array of strings is a valid YAML flow sequence
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
    """A running hub process (restartable on the same config and working directory)."""

    def __init__(self, config: dict, workdir: Path):
        if not os.access(HUB_BIN, os.X_OK):
            raise RuntimeError(f"no hub binary at {HUB_BIN}: build it, or set PEOPLEKEEPER_HUB_BIN")
        self.workdir = workdir
        seed_path = workdir / "seed.json"
        seed_path.write_text(json.dumps(SEED))
        cfg = merge(BASE_CONFIG, {"rooms": {"seed": str(seed_path)}})
        cfg = merge(cfg, config)
        # "{workdir}" in a string value is this hub's working directory (e.g. a SQLite file that lives,
        # and dies, with the hub: storage.path "{workdir}/data/pk.sqlite").
        cfg = {k: {kk: vv.replace("{workdir}", str(workdir)) if isinstance(vv, str) else vv
                   for kk, vv in v.items()} if isinstance(v, dict) else v for k, v in cfg.items()}
        self.config = cfg
        self.config_path = workdir / "hub.yaml"
        self.config_path.write_text(to_yaml(cfg))
        # The flag overrides the YAML: pass it only when the test leaves the storage to the default
        # (memory), so a test that asks for `embedded` / `postgres` gets it.
        self.storage_flag = not isinstance((config or {}).get("storage"), dict) or "kind" not in config["storage"]
        self.stderr_path = workdir / "hub.stderr"
        self._stderr = None
        self.clients: list[HubClient] = []
        self.exit_code: int | None = None
        self.starts = 0          # how many processes this Hub has launched (1 + restarts)
        _STARTED_HUBS.append(self)
        self._launch()

    def _launch(self, port: int = 0) -> None:
        """Start one process on the config (every start appends to the same hub.stderr)."""
        self.starts += 1
        self._stderr = open(self.stderr_path, "ab")
        if self.starts > 1:
            self._stderr.write(f"--- start #{self.starts} ---\n".encode())
            self._stderr.flush()
        args = [HUB_BIN, "--config", str(self.config_path), "--port", str(port)]
        if self.storage_flag:
            args += ["--storage", "memory"]
        self.proc = subprocess.Popen(args, cwd=str(REPO), stdout=subprocess.PIPE, stderr=self._stderr,
                                     stdin=subprocess.DEVNULL)
        self.exit_code = None
        self.stdout_lines: list[str] = []
        first = threading.Event()
        proc, lines = self.proc, self.stdout_lines

        def drain():
            for line in proc.stdout:
                lines.append(line.decode("utf-8", "replace").rstrip("\n"))
                first.set()
            first.set()

        threading.Thread(target=drain, daemon=True).start()
        if not first.wait(START_TIMEOUT) or not self.stdout_lines:
            self.proc.kill()
            self.proc.wait()
            self.exit_code = self.proc.returncode
            self._stderr.close()
            raise RuntimeError(f"hub did not start (exit {self.proc.returncode}); stderr:\n{self.stderr()[-3000:]}")
        m = LISTEN_RE.match(self.stdout_lines[0])
        assert m, f"unexpected first stdout line: {self.stdout_lines[0]!r}"
        assert m.group(1) == m.group(2)
        self.port = int(m.group(1))

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

    def http(self, method: str, path: str, headers: dict | None = None, *,
             timeout: float = 5) -> tuple[int, dict, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
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

    # -- freezing (a paused machine) ---------------------------------------------------------------------

    def freeze(self, timeout: float = 5) -> None:
        """SIGSTOP, and return once every thread of the process is stopped. The stop is not done when
        `kill` returns: the kernel wakes one thread to take the signal, and that thread stops the
        others, so on a busy machine the service threads ran on for milliseconds (300 tries here found
        the threads not all stopped 73 times). A test that sent a request right after `kill` had it
        answered before the freeze, and took that answer for one given after it (a CI failure,
        session 45)."""
        self.proc.send_signal(signal.SIGSTOP)
        deadline = time.monotonic() + timeout
        while running := self._running_threads():
            assert time.monotonic() < deadline, f"the hub's threads {running} did not stop"
            time.sleep(0.001)

    def thaw(self) -> None:
        """SIGCONT: the frozen process goes on."""
        self.proc.send_signal(signal.SIGCONT)

    def _running_threads(self) -> list[int]:
        """The process's threads not stopped ('T', or 't' under a tracer) nor gone."""
        running = []
        for entry in os.listdir(f"/proc/{self.proc.pid}/task"):
            try:
                with open(f"/proc/{self.proc.pid}/task/{entry}/stat") as stat:
                    state = stat.read().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state not in "TtZX":
                running.append(int(entry))
        return running

    # -- stopping --------------------------------------------------------------------------------------

    def kill(self, timeout: float = STOP_TIMEOUT) -> None:
        """A crash: SIGKILL (nothing is flushed but what the hub had committed), then wait for the exit.
        The working directory (config, seed, SQLite file, stderr) stays for `restart()`."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        try:
            self.proc.wait(timeout)
        finally:
            self.exit_code = self.proc.returncode
            if self._stderr is not None and not self._stderr.closed:
                self._stderr.close()

    def restart(self, *, same_port: bool = False) -> "Hub":
        """Start the hub again on the same config and working directory (crashing the running process
        first, if any). The port is a new free one unless `same_port`. Returns self."""
        if self.exit_code is None:
            self.kill()
        self._launch(self.port if same_port else 0)
        return self

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
            if not self._stderr.closed:
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


# Every Hub made in this process, in order: a failing test's report carries the log of each hub it
# started (or shared), so a failure seen only in CI says what the hub said.
_STARTED_HUBS: list[Hub] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.failed or call.when == "teardown":
        return
    first = getattr(item, "_pk_first_hub", len(_STARTED_HUBS))
    shared = [v for v in getattr(item, "funcargs", {}).values() if isinstance(v, Hub)]
    for h in shared + [h for h in _STARTED_HUBS[first:] if h not in shared]:
        text = h.stderr()
        if text:
            report.sections.append((f"hub on port {getattr(h, 'port', '?')}: stderr (last 4 KB)", text[-4096:]))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item._pk_first_hub = len(_STARTED_HUBS)


def pytest_configure(config):
    config.addinivalue_line("markers", "soak: the long soak of test_soak.py (PEOPLEKEEPER_SOAK_SECONDS, default 120; "
                                       "`-m 'not soak'` leaves it out)")


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


@pytest.fixture(scope="session")
def pg_server():
    """A throwaway PostgreSQL 15 server (pgserver.py) for cluster tests, with an empty database
    `peoplekeeper`; its `url` is a `storage.postgresURL`. Missing PostgreSQL fails the test (no skip)."""
    server = PostgresServer()
    try:
        server.start()
    except PostgresUnavailable as e:
        pytest.fail(f"this test needs a real PostgreSQL 15 server: {e}", pytrace=False)
    try:
        yield server
    finally:
        server.stop()


def room_state(hub, room: str) -> tuple[int, list]:
    """The room's (rev, people) from the welcome of a fresh HubClient."""
    c = hub.join(room, "probe")
    try:
        return c.welcome["rev"], c.welcome["people"]
    finally:
        c.close()

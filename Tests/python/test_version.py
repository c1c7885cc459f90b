"""Which binary runs: `--version` of both programs, the hub's `starting` log line and its
`peoplekeeper_build_info` metric all name the release and the executable's build id, the one `readelf -n`
shows (an operator's pass: nothing told which hub binary a running process or its log came from)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time

from conftest import HUB_BIN, REPO
from test_client_cli import CLIENT_BIN
from test_http_lifecycle import _free_port, _wait_for_healthz, metric

VERSION_LINE = re.compile(r"^(peoplekeeper(?:-hub)?) (\d+\.\d+\.\d+) \(build ([0-9a-f]{40})\)$")


def build_id(path: str) -> str:
    """The GNU build id of the ELF file at `path`, as binutils reads it."""
    notes = subprocess.run(["readelf", "-n", path], capture_output=True, text=True, check=True).stdout
    found = re.search(r"Build ID: ([0-9a-f]+)", notes)
    assert found, notes
    return found.group(1)


def version(binary: str) -> tuple[str, str, str]:
    """(program, release, build) from `binary --version`, which exits 0 with one line on stdout."""
    run = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    assert run.returncode == 0 and run.stderr == "", (run.returncode, run.stderr)
    found = VERSION_LINE.match(run.stdout.rstrip("\n"))
    assert found and run.stdout.count("\n") == 1, run.stdout
    return found.group(1), found.group(2), found.group(3)


def test_both_programs_name_their_release_and_their_own_build():
    hub_name, hub_release, hub_build = version(HUB_BIN)
    client_name, client_release, client_build = version(CLIENT_BIN)
    assert (hub_name, client_name) == ("peoplekeeper-hub", "peoplekeeper")
    assert hub_release == client_release
    assert hub_build == build_id(HUB_BIN)
    assert client_build == build_id(CLIENT_BIN)
    assert hub_build != client_build


def test_the_start_log_and_metrics_name_the_running_binary_even_after_it_is_replaced(tmp_path):
    """The build id is read from the file the process runs, not the path: a binary replaced on disk
    under a running hub (an upgrade half done) still reports its own, so the log and the metric say
    what runs, and `--version` of the path says what the next start will run."""
    binary = tmp_path / "peoplekeeper-hub"
    shutil.copy(HUB_BIN, binary)
    _, release, build = version(str(binary))
    port = _free_port()
    log = tmp_path / "hub.log"
    with open(log, "wb") as stderr:
        proc = subprocess.Popen([str(binary), "serve", "--port", str(port), "--storage", "memory",
                                 "--log-format", "json"], cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        _wait_for_healthz(proc, port)
        binary.unlink()
        shutil.copy(CLIENT_BIN, binary)      # another build at the same path
        assert version(str(binary))[2] != build

        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        assert "# TYPE peoplekeeper_build_info gauge" in text
        assert metric(text, "peoplekeeper_build_info", f'{{version="{release}",build="{build}"}}') == 1.0, text
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0, proc.returncode
    records = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    assert records and records[0]["msg"] == "starting", records[:3]
    assert (records[0]["version"], records[0]["build"], records[0]["pid"]) == (release, build, str(proc.pid))

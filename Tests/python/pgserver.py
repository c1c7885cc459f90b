"""A real, throwaway PostgreSQL server for the hub's cluster tests.

`PostgresServer.start()` runs `initdb` into a fresh temporary directory (which also holds the Unix socket
and `server.log`), starts `postgres` on a free port of 127.0.0.1 with trust authentication, waits until
it accepts connections (`pg_isready`) and creates the database `peoplekeeper`, owned by the superuser
role `peoplekeeper`. PostgreSQL refuses to run as root, so when the tests do, the directory is given to
the `postgres` OS user and initdb and the server run as that user (`runuser -u postgres --`).
`stop()` sends SIGINT (fast shutdown) to the postmaster, whose pid is read from `postmaster.pid`
(runuser forks, so the child we started is only its parent), waits, and deletes the directory.

The binaries are taken from PEOPLEKEEPER_PG_BIN, else /usr/lib/postgresql/15/bin. If they are missing,
`start()` raises `PostgresUnavailable` with a message saying so: the tests that need PostgreSQL fail,
they are not skipped.

`start(tls=…)` also turns TLS on with the given server certificate and key (and `ssl_ca_file`, for
servers that check client certificates), and `hba=[…]` replaces pg_hba.conf's TCP rules (e.g. TLS only,
or client certificates): the harness's own tools then use the Unix socket, which stays `trust`.

Only the standard library is used (the suite has no PostgreSQL driver): SQL goes through `psql`.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

PG_BIN = Path(os.environ.get("PEOPLEKEEPER_PG_BIN", "/usr/lib/postgresql/15/bin"))
USER = "peoplekeeper"
DATABASE = "peoplekeeper"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0


class PostgresUnavailable(RuntimeError):
    """PostgreSQL is not installed here, or could not be started."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class PostgresServer:
    host = "127.0.0.1"
    user = USER
    database = DATABASE

    def __init__(self):
        self.dir: Path | None = None
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None
        self._log = None
        self._as_server_user: list[str] = []
        self._via_socket = False

    @property
    def url(self) -> str:
        return f"postgres://{self.user}@{self.host}:{self.port}/{self.database}"

    # -- running tools ---------------------------------------------------------------------------------

    def _bin(self, name: str) -> str:
        return str(PG_BIN / name)

    def _tool(self, name: str, *args: str, as_server_user: bool = False, timeout: float = 60.0,
              check: bool = True) -> subprocess.CompletedProcess:
        cmd = (self._as_server_user if as_server_user else []) + [self._bin(name), *args]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if check and r.returncode != 0:
            raise PostgresUnavailable(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
        return r

    @property
    def _tool_host(self) -> str:
        """Where the harness's own tools connect: TCP, or the socket when pg_hba was replaced."""
        return str(self.dir) if self._via_socket else self.host

    def psql(self, sql: str, timeout: float = 15.0) -> str:
        """Run SQL in the database; returns psql's unaligned, tuples-only output."""
        r = self._tool("psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", self._tool_host,
                       "-p", str(self.port), "-U", self.user, "-d", self.database, "-c", sql, timeout=timeout)
        return r.stdout.strip()

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return (self.dir / "server.log").read_text(errors="replace")[-chars:]
        except (OSError, TypeError):
            return ""

    # -- lifecycle -------------------------------------------------------------------------------------

    def start(self, tls: dict[str, Path] | None = None, hba: list[str] | None = None) -> "PostgresServer":
        """`tls`: {"cert": …, "key": …, "ca": …} PEM files ("ca" optional); `hba`: TCP lines for pg_hba.conf."""
        for tool in ("initdb", "postgres", "pg_isready", "createdb", "psql"):
            if not os.access(PG_BIN / tool, os.X_OK):
                raise PostgresUnavailable(
                    f"PostgreSQL 15 is needed for this test but {PG_BIN / tool} is missing "
                    f"(install postgresql-15, or point PEOPLEKEEPER_PG_BIN at its bin directory)")
        if os.geteuid() == 0:
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                raise PostgresUnavailable("running as root, but there is no `postgres` OS user to run "
                                          "PostgreSQL as (it refuses to run as root)")
            if shutil.which("runuser") is None:
                raise PostgresUnavailable("running as root, but `runuser` is missing")
            self._as_server_user = ["runuser", "-u", "postgres", "--"]
        self.dir = Path(tempfile.mkdtemp(prefix="pk-pg-"))
        try:
            if self._as_server_user:
                os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            self._tool("initdb", "-D", str(self.dir), "-U", self.user, "--auth=trust", "-E", "UTF8",
                       "--no-locale", "--no-sync", as_server_user=True)
            if tls is not None:
                self._configure_tls(tls, pw if self._as_server_user else None)
            if hba is not None:
                (self.dir / "pg_hba.conf").write_text("local all all trust\n" + "".join(f"{line}\n" for line in hba))
                self._via_socket = True
            self.port = _free_port()
            self._launch()
            self._tool("createdb", "-h", self._tool_host, "-p", str(self.port), "-U", self.user, self.database)
        except BaseException:
            self.stop()
            raise
        return self

    def _configure_tls(self, tls: dict[str, Path], owner) -> None:
        """Copy the certificate files into the data directory (the key readable by the server only)."""
        lines = ["ssl = on"]
        for name, setting in (("cert", "ssl_cert_file"), ("key", "ssl_key_file"), ("ca", "ssl_ca_file")):
            if name not in tls:
                continue
            target = self.dir / f"tls-{name}.pem"
            shutil.copyfile(tls[name], target)
            os.chmod(target, 0o600)
            if owner is not None:
                os.chown(target, owner.pw_uid, owner.pw_gid)
            lines.append(f"{setting} = '{target.name}'")
        with open(self.dir / "postgresql.conf", "a") as conf:
            conf.write("\n".join(lines) + "\n")

    def _launch(self) -> None:
        """Start the postmaster on the data directory and port and wait until it accepts connections."""
        self._log = open(self.dir / "server.log", "ab")
        self.proc = subprocess.Popen(
            self._as_server_user + [self._bin("postgres"), "-D", str(self.dir), "-p", str(self.port),
                                    "-k", str(self.dir), "-c", f"listen_addresses={self.host}"],
            stdout=self._log, stderr=self._log, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while self._tool("pg_isready", "-q", "-h", self.host, "-p", str(self.port), "-U", self.user,
                         "-d", "postgres", check=False, timeout=10).returncode != 0:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                why = "exited while starting" if self.proc.poll() is not None else \
                    f"did not accept connections within {START_TIMEOUT:.0f}s"
                raise PostgresUnavailable(f"postgres {why}; server.log:\n{self.log_tail()}")
            time.sleep(0.1)

    def halt(self) -> None:
        """Shut the server down (fast) but keep its data directory and port, for `relaunch`."""
        self._shutdown()
        if self._log is not None:
            self._log.close()
            self._log = None

    def relaunch(self) -> None:
        """Start a halted server again, on the same data and port."""
        self._launch()

    def pause(self, paused: bool = True) -> None:
        """Stop (SIGSTOP) or resume (SIGCONT) the postmaster and every process it started: a server
        that is there but answers nothing (its processes stopped or stuck), its kernel still answering
        TCP. Its children are each a session of their own, so they are found by parent."""
        postmaster = self._postmaster_pid()
        assert postmaster is not None, "no postmaster to pause"
        sig = signal.SIGSTOP if paused else signal.SIGCONT

        def children() -> dict[int, str]:  # pid → state letter
            found = {}
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    try:
                        with open(f"/proc/{entry}/stat") as stat:
                            fields = stat.read().rsplit(")", 1)[1].split()
                        if int(fields[1]) == postmaster:
                            found[int(entry)] = fields[0]
                    except (OSError, IndexError, ValueError):
                        pass
            return found

        if paused:
            os.kill(postmaster, sig)  # first: it starts no backend while its children are listed
        for pid in children():
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        if not paused:
            os.kill(postmaster, sig)
            return
        # SIGSTOP takes effect asynchronously, and a backend forked just before the postmaster stopped
        # may be listed late: every child is seen stopped ('T') before this returns (a test of a node
        # that PostgreSQL stopped answering once saw its heartbeats answered after the pause).
        deadline = time.monotonic() + 5
        while running := [pid for pid, state in children().items() if state not in "TtZX"]:
            assert time.monotonic() < deadline, f"PostgreSQL's processes {running} did not stop"
            for pid in running:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)

    def _postmaster_pid(self) -> int | None:
        try:
            first = (self.dir / "postmaster.pid").read_text().split("\n", 1)[0].strip()
            return int(first)
        except (OSError, ValueError, TypeError):
            return None

    def stop(self) -> None:
        """Fast shutdown (SIGINT to the postmaster; SIGKILL to its process group after STOP_TIMEOUT),
        then delete the data directory. Idempotent."""
        try:
            self._shutdown()
        finally:
            self.proc = None
            if self._log is not None:
                self._log.close()
                self._log = None
            if self.dir is not None:
                shutil.rmtree(self.dir, ignore_errors=True)
                self.dir = None

    def _shutdown(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            pid = self._postmaster_pid() or self.proc.pid
            try:
                os.kill(pid, signal.SIGINT)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)   # the session runuser leads
                except ProcessLookupError:
                    pass
                self.proc.wait(5)
            deadline = time.monotonic() + STOP_TIMEOUT
            while _pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
        self.proc = None

    def __enter__(self) -> "PostgresServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

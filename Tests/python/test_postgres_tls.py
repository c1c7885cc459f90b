"""TLS between the hub and PostgreSQL, as docs/CONFIG.md ("storage.postgresURL") describes it.

The hub reads libpq's `sslmode`, `sslrootcert`, `sslcert` and `sslkey` from `storage.postgresURL`. These
tests run a real PostgreSQL 15 (pgserver.py) with TLS on, certificates made here with the `openssl`
command (a test CA, a server certificate for the name `localhost` only, a client certificate for the role
`peoplekeeper`, and a second CA nobody trusts), and check from the server's side (`pg_stat_ssl`) that
the hub's connections are encrypted, that every mode checks what libpq's does, and that a wrong setting
stops the hub at start with a sentence, never a silent plain-text connection.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import HUB_BIN, REPO, to_yaml
from pgserver import PostgresServer, PostgresUnavailable

EDIT = [{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}]


def _openssl(*args: str, cwd: Path) -> None:
    r = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, (args, r.stderr)


def _ca(directory: Path, name: str) -> None:
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2", "-subj", f"/CN={name}",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
             cwd=directory)


def _leaf(directory: Path, name: str, subject: str, extensions: str, ca: str = "ca") -> None:
    (directory / f"{name}.ext").write_text(extensions)
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=directory)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
             "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext", cwd=directory)


@pytest.fixture(scope="module")
def certs():
    directory = Path(tempfile.mkdtemp(prefix="pk-tls-"))
    try:
        _ca(directory, "ca")
        _ca(directory, "stranger")
        _leaf(directory, "server", "/CN=pk-test-server",
              "basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n")
        _leaf(directory, "client", "/CN=peoplekeeper",
              "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")
        _leaf(directory, "impostor", "/CN=peoplekeeper",
              "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n", ca="stranger")
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _server(certs: Path, hba: list[str]) -> PostgresServer:
    server = PostgresServer()
    try:
        return server.start(tls={"cert": certs / "server.pem", "key": certs / "server.key", "ca": certs / "ca.pem"},
                            hba=hba)
    except PostgresUnavailable as e:
        pytest.fail(f"this test needs a real PostgreSQL 15 server: {e}", pytrace=False)


@pytest.fixture(scope="module")
def tls_only(certs):
    """PostgreSQL that refuses every TCP connection without TLS."""
    server = _server(certs, ["hostssl all all 127.0.0.1/32 trust", "hostnossl all all 127.0.0.1/32 reject"])
    yield server
    server.stop()


def _url(server: PostgresServer, host: str = "127.0.0.1", **params: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"postgres://peoplekeeper@{host}:{server.port}/peoplekeeper" + (f"?{query}" if query else "")


def _config(url: str, node: str) -> dict:
    return {"storage": {"kind": "postgres", "postgresURL": url}, "cluster": {"nodeId": node}}


def _hub_connections(server: PostgresServer) -> list[tuple[bool, str]]:
    """(encrypted, TLS version) of every TCP client connection: the hub's (the harness uses the socket)."""
    rows = server.psql("SELECT s.ssl, coalesce(s.version, '') FROM pg_stat_activity a JOIN pg_stat_ssl s "
                       "USING (pid) WHERE a.client_addr IS NOT NULL AND a.backend_type = 'client backend'")
    return [(ssl == "t", version) for ssl, version in (row.split("|") for row in rows.splitlines() if row)]


def _edit_and_check(hub, room: str) -> int:
    ann = hub.join(room, "ann")
    try:
        return ann.edit(EDIT)["rev"]
    finally:
        ann.close()


def _start_failing(url: str, timeout: float = 30.0) -> subprocess.CompletedProcess:
    """Run a hub on `url` that must stop at start; returns its exit status and output."""
    workdir = Path(tempfile.mkdtemp(prefix="pkhub-tls-"))
    try:
        path = workdir / "hub.yaml"
        path.write_text(to_yaml({"listen": {"host": "127.0.0.1", "port": 0}, **_config(url, "x"),
                                 "logging": {"level": "warning", "format": "text"}}))
        try:
            return subprocess.run([HUB_BIN, "--config", str(path)], cwd=str(REPO), capture_output=True,
                                  text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise AssertionError(f"the hub kept running on {url}") from e
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def test_verify_full_encrypts_every_connection_of_the_hub(hub_factory, tls_only, certs, room):
    """sslmode verify-full with the test CA: the hub starts, edits are durable, and PostgreSQL sees only
    encrypted connections from it; a second hub on the same database, with the default sslmode
    (prefer), is encrypted too and serves the room after the first stops (nothing acked lost)."""
    a = hub_factory(_config(_url(tls_only, host="localhost", sslmode="verify-full", sslrootcert=certs / "ca.pem"), "a"))
    rev = _edit_and_check(a, room)
    seen = _hub_connections(tls_only)
    assert seen and all(encrypted and version.startswith("TLS") for encrypted, version in seen), seen
    a.stop()
    b = hub_factory(_config(_url(tls_only), "b"))
    bob = b.join(room, "bob")
    try:
        assert bob.welcome["rev"] == rev, bob.welcome
        assert bob.welcome["people"][0]["hairColor"] == "red"
    finally:
        bob.close()
    seen = _hub_connections(tls_only)
    assert seen and all(encrypted for encrypted, _ in seen), seen


def test_verify_ca_checks_the_signer_and_verify_full_the_name_too(hub_factory, tls_only, certs, room):
    """The server's certificate names `localhost` only. Reached as 127.0.0.1, verify-ca (signer only)
    connects and verify-full (signer and name) refuses; a certificate from a CA that is not trusted is
    refused by both, and by `require` with that CA as sslrootcert (as libpq)."""
    ca = certs / "ca.pem"
    hub = hub_factory(_config(_url(tls_only, sslmode="verify-ca", sslrootcert=ca), "a"))
    _edit_and_check(hub, room)
    hub.stop()

    r = _start_failing(_url(tls_only, sslmode="verify-full", sslrootcert=ca))
    assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
    assert "cannot open the PostgreSQL store" in r.stderr and "sslmode verify-full" in r.stderr, r.stderr[-2000:]
    assert "the server's certificate is for another name than 127.0.0.1" in r.stderr, r.stderr[-2000:]

    for mode in ("verify-ca", "verify-full", "require"):
        r = _start_failing(_url(tls_only, host="localhost", sslmode=mode, sslrootcert=certs / "stranger.pem"))
        assert r.returncode == 1, (mode, r.returncode, r.stderr[-2000:])
        assert f"sslmode {mode}" in r.stderr, (mode, r.stderr[-2000:])
        assert f"is not signed by a root in sslrootcert {certs / 'stranger.pem'}" in r.stderr, (mode, r.stderr[-2000:])


def test_disable_is_refused_by_a_server_that_wants_tls(tls_only):
    """sslmode disable really sends plain text: a TLS-only server refuses it, and the hub says so."""
    r = _start_failing(_url(tls_only, sslmode="disable"))
    assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
    assert "sslmode disable" in r.stderr and "no encryption" in r.stderr, r.stderr[-2000:]


def test_prefer_falls_back_to_plain_text_when_the_server_refuses_tls_for_the_user(hub_factory, certs, room):
    """As libpq's `prefer`: the server offers TLS but pg_hba.conf refuses the user over it and lets it in
    without; the hub (no sslmode) connects in plain text and says so, and `require` stops."""
    server = _server(certs, ["hostssl all all 127.0.0.1/32 reject", "hostnossl all all 127.0.0.1/32 trust"])
    try:
        hub = hub_factory(_config(_url(server), "a"))
        _edit_and_check(hub, room)
        seen = _hub_connections(server)
        assert seen and not any(encrypted for encrypted, _ in seen), seen
        assert "connected in plain text, as sslmode prefer allows" in hub.stderr(), hub.stderr()[-2000:]
        hub.stop()
        r = _start_failing(_url(server, sslmode="require"))
        assert r.returncode == 1 and "rejects connection" in r.stderr, (r.returncode, r.stderr[-2000:])
    finally:
        server.stop()


def test_require_refuses_a_server_without_tls(pg_server):
    """The suite's usual server has TLS off: `require` stops the hub instead of falling back to plain
    text (the default, prefer, falls back: every other cluster test runs that way)."""
    r = _start_failing(_url(pg_server, sslmode="require"))
    assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
    assert "(sslmode require): the server does not offer TLS" in r.stderr, r.stderr[-2000:]


def test_a_client_certificate_is_sent_when_the_server_asks(hub_factory, certs, room):
    """A server that authenticates by client certificate (pg_hba `cert`): the hub with sslcert + sslkey
    is let in; without them, or with a certificate from a CA the server does not trust, it is refused
    saying which; a key that is not the certificate's stops it at start (exit 78)."""
    server = _server(certs, ["hostssl all all 127.0.0.1/32 cert", "hostnossl all all 127.0.0.1/32 reject"])
    try:
        r = _start_failing(_url(server, host="localhost", sslmode="verify-full", sslrootcert=certs / "ca.pem"))
        assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
        r = _start_failing(_url(server, host="localhost", sslmode="verify-full", sslrootcert=certs / "ca.pem",
                                sslcert=certs / "impostor.pem", sslkey=certs / "impostor.key"))
        assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
        assert f"the server does not accept the client certificate in sslcert {certs / 'impostor.pem'}" in r.stderr, r.stderr[-2000:]
        r = _start_failing(_url(server, host="localhost", sslmode="verify-full", sslrootcert=certs / "ca.pem",
                                sslcert=certs / "client.pem", sslkey=certs / "impostor.key"))
        assert r.returncode == 78, (r.returncode, r.stderr[-2000:])
        assert f"sslkey {certs / 'impostor.key'} is not the private key of sslcert {certs / 'client.pem'}" in r.stderr, r.stderr[-2000:]
        hub = hub_factory(_config(_url(server, host="localhost", sslmode="verify-full", sslrootcert=certs / "ca.pem",
                                       sslcert=certs / "client.pem", sslkey=certs / "client.key"), "a"))
        _edit_and_check(hub, room)
        assert all(encrypted for encrypted, _ in _hub_connections(server))
        hub.stop()
    finally:
        server.stop()


@pytest.mark.parametrize("query, words", [
    ("sslmode=allow", "sslmode allow is not one of disable, prefer, require, verify-ca, verify-full"),
    ("sslmode=", "sslmode (empty) is not one of"),
    ("application_name=x", "the parameter application_name is not supported (sslmode, sslrootcert, sslcert, sslkey are)"),
    ("sslmode=require&sslmode=disable", "sslmode is given twice"),
    ("sslmode=verify-full&sslrootcert=/nonexistent/ca.pem", "sslrootcert /nonexistent/ca.pem cannot be read"),
    ("sslmode=prefer&sslrootcert=system", "sslrootcert is only read with sslmode require, verify-ca or verify-full"),
    ("sslmode=require&sslcert=/etc/hostname", "sslcert and sslkey go together"),
    ("sslmode=disable&sslcert=/etc/hostname&sslkey=/etc/hostname", "sslcert and sslkey need TLS"),
])
def test_a_bad_url_stops_the_hub_with_exit_78_naming_the_key(query, words):
    """Settings that look like security and would do nothing are refused at start (EX_CONFIG), before
    any connection: the port is one nothing listens on."""
    r = _start_failing(f"postgres://peoplekeeper@127.0.0.1:9/peoplekeeper?{query}")
    assert r.returncode == 78, (query, r.returncode, r.stderr[-2000:])
    assert f"config: storage.postgresURL: {words}" in r.stderr, (query, r.stderr[-2000:])


def test_a_server_that_wants_a_password_says_so_in_words(certs):
    """A server asking for a password (pg_hba `scram-sha-256`) that the hub was not given: the hub stops
    naming the setting, not with the driver's token (`authMechanismRequiresPassword`)."""
    server = _server(certs, ["host all all 127.0.0.1/32 scram-sha-256"])
    try:
        r = _start_failing(_url(server))
        assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
        assert "the server asks for a password: put it in storage.postgresPasswordFile" in r.stderr, r.stderr[-2000:]
    finally:
        server.stop()

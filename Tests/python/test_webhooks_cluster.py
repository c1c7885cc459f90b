"""Webhooks in cluster mode (HTTP.md §3 on PostgreSQL with two hub nodes): one node delivers a room at a
time, the one holding its lease, and nothing is lost when that node unloads the room with deliveries
left or dies with them.

The implementer's reading (docs/HTTP.md, docs/CONFIG.md `cluster.webhookScanSeconds`): a node keeps the
lease of a room it unloaded until the room's deliveries are made (so another node cannot load it and
deliver the same revisions beside it, out of order), and every node looks for rooms with deliveries
left that no node holds (their node died) and takes them.
"""

from __future__ import annotations

import http.client
import time
from urllib.parse import urlsplit

from pkhttp import HubHTTP
from test_webhooks import check_deliveries, receiver_factory, set_op, wait_for, webhook_config  # noqa: F401


def get(port: int, path: str) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}
    finally:
        conn.close()


def unloads(hub) -> float:
    total = 0.0
    for line in hub.metrics().splitlines():
        if line.startswith("peoplekeeper_room_unloads_total"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_a_backlog_stays_with_its_node_after_unload_and_is_taken_over_when_the_node_dies(
        hub_factory, pg_server, receiver_factory, tmp_path, room):
    receiver, secrets = receiver_factory("/c")
    hooks = webhook_config(tmp_path, receiver, secrets, [{"path": "/c", "rooms": ["*"], "events": ["revision"]}])

    def node(node_id):
        return {"storage": {"kind": "postgres", "postgresURL": pg_server.url}, "cluster": {"nodeId": node_id,
                "webhookScanSeconds": 1}, "rooms": {"unloadAfterSeconds": 1}, "webhooks": hooks}

    a = hub_factory(node("a"))
    b = hub_factory(node("b"))
    receiver.down()                                  # the endpoint is down from the start
    ann = a.join(room, "ann")
    for i in range(12):
        ann.edit([set_op(1 + i % 3, "name", f"Name {i}")])
    ann.sync(12)
    ann.close()

    # a unloads the idle room, but keeps its lease while its 12 deliveries wait: b sends callers to a.
    wait_for(lambda: unloads(a) >= 1, 15, "node a never unloaded the idle room")
    time.sleep(2.5)                                  # two of b's scans, and a's release check
    status, headers = get(b.port, f"/v1/rooms/{room}?user=dan")
    assert status == 307, f"b answered {status} for a room whose deliveries node a has not made (want 307 to a)"
    assert urlsplit(headers["location"]).port == a.port, headers["location"]

    # a dies with the deliveries not made; the endpoint comes back; b finds the room and delivers it all.
    a.kill()
    receiver.up()
    web = HubHTTP(b.port, user="dan")
    wait_for(lambda: len(receiver.delivered("/c", room)) >= 12, 30,
             lambda: f"{len(receiver.delivered('/c', room))} of 12 revisions delivered after node a died")
    feed, head = web.feed_all(room)
    assert head == 12, head
    time.sleep(0.5)
    assert not receiver.problems(), receiver.problems()
    check_deliveries(receiver, "/c", room, feed)


def test_a_node_with_no_endpoint_keeps_what_a_room_it_deletes_owed_another_nodes_endpoint(
        hub_factory, pg_server, receiver_factory, tmp_path, room):
    """HTTP.md, "An endpoint taken out of the config": a deletion keeps, for every endpoint the store
    keeps state for, the revisions after its cursor in the room. Node a lists /c, node b lists none,
    and both start before the store holds anything for /c. /c follows the room through a; the room
    then goes to b, which makes revisions 4 and 5 (not delivered: b does not deliver /c, and a may
    not while b holds the room) and deletes it. b keeps them for /c, and a delivers them.
    Before (session 33): a node with no endpoint and nothing kept at its start read the store's
    endpoints never, so its deletion kept nothing (/c had [1, 2, 3])."""
    receiver, secrets = receiver_factory("/c")
    hooks = webhook_config(tmp_path, receiver, secrets, [{"path": "/c", "rooms": ["*"], "events": ["revision"]}])
    storage = {"kind": "postgres", "postgresURL": pg_server.url}
    # a lets the room go a second after its deliveries; b keeps it (unloaded and let go, a would take
    # it back and deliver 4 and 5 itself, and b's DELETE would be sent to a or find nothing owed).
    a = hub_factory({"storage": storage, "rooms": {"unloadAfterSeconds": 1},
                     "cluster": {"nodeId": "a", "webhookScanSeconds": 1}, "webhooks": hooks})
    b = hub_factory({"storage": storage, "rooms": {"unloadAfterSeconds": 60}, "cluster": {"nodeId": "b", "webhookScanSeconds": 1}})
    revs = lambda: [d["rev"] for d in receiver.delivered("/c", room)]  # noqa: E731

    ann = a.join(room, "ann")
    for i in range(3):
        ann.edit([set_op(1, "name", f"Ann {i}")])
    ann.sync(3)
    ann.close()
    wait_for(lambda: revs() == [1, 2, 3], 20, lambda: f"/c given {revs()} through node a")
    # a unloads the idle room and, its deliveries made, lets it go: b can take it.
    wait_for(lambda: get(b.port, f"/v1/rooms/{room}?user=dan")[0] == 200, 30,
             lambda: f"node b still sends callers elsewhere: {get(b.port, f'/v1/rooms/{room}?user=dan')}")
    bob = b.join(room, "bob")
    for i in range(2):
        bob.edit([set_op(1, "name", f"Bob {i}")])
    bob.sync(5)
    bob.close()
    time.sleep(1.5)                                  # b's next read of the store's endpoints
    assert HubHTTP(b.port, user="dan").remove_room(room).status == 204
    wait_for(lambda: revs() == [1, 2, 3, 4, 5], 30, lambda: f"/c given {revs()} after node b deleted the room")
    time.sleep(0.5)
    assert revs() == [1, 2, 3, 4, 5] and not receiver.problems(), (revs(), receiver.problems())


def test_an_endpoint_another_node_lists_is_neither_warned_of_as_gone_nor_forgotten(
        hub_factory, pg_server, receiver_factory, tmp_path, room):
    """An operator's pass (session 34): with /c in node a's config only, node b's start said the store
    keeps state "for endpoints no longer in the config" and pointed at `webhooks forget --unconfigured`,
    which, run with b's config, removed /c's cursors while a delivered to it: revisions were never sent.
    Each node's heartbeat now says which endpoints its config lists. b's start warns that its webhooks
    differ from node a's (every node must list the same) and not that /c is gone; `webhooks` says node a
    lists it; `forget --unconfigured` keeps it, and `forget URL` refuses it (64)."""
    from test_export_import import command
    receiver, secrets = receiver_factory("/c")
    hooks = webhook_config(tmp_path, receiver, secrets, [{"path": "/c", "rooms": ["*"], "events": ["revision"]}])
    storage = {"kind": "postgres", "postgresURL": pg_server.url}
    a = hub_factory({"storage": storage, "cluster": {"nodeId": "a"}, "webhooks": hooks})
    ann = a.join(room, "ann")
    ann.edit([set_op(1, "glasses", True)])
    ann.close()
    wait_for(lambda: len(receiver.delivered("/c", room)) == 1, 20, lambda: f"/c: {receiver.snapshot()}")
    time.sleep(0.5)                                   # the cursor written (every 250 ms)
    b = hub_factory({"storage": storage, "cluster": {"nodeId": "b"}})
    start = b.stderr()
    assert "differ from those of node a" in start, start[-2000:]
    url = receiver.url("/c")
    listed = command(b, "webhooks")
    assert listed.returncode == 0 and f"{url}  not in the config; node a of the cluster lists it" in listed.stdout, listed
    # The database is the file's: earlier tests' endpoints, in no live node's config, are gone indeed.
    stale = [line for line in listed.stdout.splitlines() if "not in the config" in line and "lists it" not in line]
    warned = next((line for line in start.splitlines() if "no longer in the config" in line), "")
    assert (f"endpoints={len(stale)} " in warned) if stale else not warned, (warned, stale)
    forgot = command(b, "webhooks", "forget", "--unconfigured")
    assert forgot.returncode == 0 and f"kept {url}: node a of the cluster lists it" in forgot.stdout, forgot
    assert f"forgot {url}" not in forgot.stdout, forgot
    refused = command(b, "webhooks", "forget", url)
    assert refused.returncode == 64 and "node a" in refused.stderr, refused
    ours = [line for line in command(b, "webhooks").stdout.splitlines() if line.startswith(url + " ")]
    assert len(ours) == 1 and "cursors in 1 room" in ours[0], ("the cursor is still there", ours)
    ann = a.join(room, "ann")
    ann.edit([set_op(2, "glasses", True)])
    ann.close()
    wait_for(lambda: [d["rev"] for d in receiver.delivered("/c", room)] == [1, 2], 20, lambda: f"/c: {receiver.snapshot()}")


def test_while_a_node_of_an_older_version_runs_no_endpoint_is_forgotten(
        hub_factory, pg_server, receiver_factory, tmp_path, room):
    """A review of the heartbeat's webhooks (session 34): a node of an older version writes no list, and
    read as "none" it made every endpoint look unlisted, so in a rolling upgrade `forget --unconfigured`
    would remove what that node delivers from. A session that writes a `nodes` row as an older node
    does (no webhooks) stands in for one. While it is there, `webhooks forget` removes nothing (64,
    naming it) and `webhooks` says it cannot tell; once it has gone, the forget is done."""
    import subprocess
    from pgserver import PG_BIN
    from test_export_import import command
    receiver, secrets = receiver_factory("/gone")
    hooks = webhook_config(tmp_path, receiver, secrets, [{"path": "/gone", "rooms": ["*"], "events": ["revision"]}])
    storage = {"kind": "postgres", "postgresURL": pg_server.url}
    a = hub_factory({"storage": storage, "cluster": {"nodeId": "a"}, "webhooks": hooks})
    ann = a.join(room, "ann")
    ann.edit([set_op(1, "glasses", True)])
    ann.close()
    wait_for(lambda: len(receiver.delivered("/gone", room)) == 1, 20, lambda: f"/gone: {receiver.snapshot()}")
    a.stop()                                          # /gone is now in no running node's config
    old = subprocess.Popen([str(PG_BIN / "psql"), "-X", "-q", pg_server.url], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        old.stdin.write("INSERT INTO nodes (node, pid, seen) VALUES ('old', pg_backend_pid(), now()) "
                        "ON CONFLICT (node) DO UPDATE SET pid = EXCLUDED.pid, seen = EXCLUDED.seen, webhooks = NULL;\n")
        old.stdin.flush()                             # psql's output to a pipe comes only at its end
        wait_for(lambda: pg_server.psql("SELECT count(*) FROM nodes WHERE node = 'old' AND webhooks IS NULL") == "1", 10,
                 "the older node's row")
        b = hub_factory({"storage": storage, "cluster": {"nodeId": "b"}})
        listed = command(b, "webhooks")
        assert "node old of the cluster runs an older version" in listed.stdout, listed
        refused = command(b, "webhooks", "forget", "--unconfigured")
        assert refused.returncode == 64 and "node old" in refused.stderr and "nothing is removed" in refused.stderr, refused
        assert receiver.url("/gone") in command(b, "webhooks").stdout, "still kept"
    finally:
        old.stdin.close()
        old.wait(timeout=10)
    forgot = command(b, "webhooks", "forget", "--unconfigured")
    assert forgot.returncode == 0 and f"forgot {receiver.url('/gone')}" in forgot.stdout, forgot

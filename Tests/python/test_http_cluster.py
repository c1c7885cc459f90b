"""The HTTP API in cluster mode (docs/HTTP.md): two nodes on one real PostgreSQL. A room owned by node A
is answered 307 at node B, with `Location` the same request at A (path and query kept); following it
works, and the write is durable and in A's change feed. Only the owner delivers the room's webhooks
(not checked here: test_webhooks.py runs one node)."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

from pkhttp import HubHTTP


def raw(port: int, method: str, path: str, body: dict | None = None) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def test_a_room_owned_by_another_node_is_redirected_with_307(hub_factory, pg_server, room):
    def node(node_id):
        return {"storage": {"kind": "postgres", "postgresURL": pg_server.url}, "cluster": {"nodeId": node_id}}

    a = hub_factory(node("a"))
    b = hub_factory(node("b"))
    ann = a.join(room, "ann")                      # A loads the room and holds its lease
    path = f"/v1/rooms/{room}/batches?user=bob"
    status, headers, body = raw(b.port, "POST", path,
                                {"base": 0, "key": "k1", "ops": [{"op": "set", "tag": 1, "field": "glasses", "value": True}]})
    assert status == 307, (status, body)
    assert json.loads(body)["error"]["code"] == "elsewhere", body
    location = urlsplit(headers["location"])
    assert (location.hostname, location.port) == ("127.0.0.1", a.port), headers["location"]
    assert location.path == f"/v1/rooms/{room}/batches" and location.query == "user=bob", headers["location"]

    # following it (as an HTTP client does for 307: same method, same body) writes at the owner
    status, _, body = raw(a.port, "POST", location.path + "?" + location.query,
                          {"base": 0, "key": "k1", "ops": [{"op": "set", "tag": 1, "field": "glasses", "value": True}]})
    assert status == 200 and json.loads(body)["rev"] == 1, (status, body)
    ann.sync(1)
    feed = HubHTTP(a.port).feed(room, 0).json
    assert [r["rev"] for r in feed["revisions"]] == [1] and feed["revisions"][0]["author"] == "bob", feed
    status, headers, _ = raw(b.port, "GET", f"/v1/rooms/{room}/revisions?after=0")
    assert status == 307 and urlsplit(headers["location"]).query == "after=0", headers

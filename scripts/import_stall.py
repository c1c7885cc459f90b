"""An import of a long history and what others on the hub feel meanwhile (docs/PERFORMANCE.md, "Imports").

    import_stall.py PORT OUT.json REVISIONS [REVISIONS ...]

For each REVISIONS: an export (the tutorial's three people, every revision a rename) is `PUT` as a new
room while two probes ask, one request at a time, for `/healthz` and for another room's state; printed:
the PUT's time, the probes' slowest answer and count during it (and a third probe's: writes to the
other room, each answered once its commit is durable, so it feels the import's own commit), `GET ?at=` half-way into the
imported history (checkpoints make it read at most storage.snapshotEvery revisions), and the export
of the room with its history, probed the same way. Run it against a
hub with one service thread, so that the probes share the import's thread. Standard library only.
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time


def export(count: int) -> bytes:
    initial = [{"tag": i + 1, "name": f"P{i}", "hairColor": "black", "hairLength": "short", "eyeColor": "brown",
                "glasses": False, "facialHair": [], "likes": [], "dislikes": []} for i in range(3)]
    names, revisions, t0 = {}, [], 1_700_000_000_000
    for rev in range(1, count + 1):
        tag = rev % 3 + 1
        names[tag] = f"n{rev}"
        revisions.append({"rev": rev, "time": t0 + rev, "author": "ann", "kind": "edit",
                          "ops": [{"op": "set", "tag": tag, "field": "name", "value": names[tag]}]})
    people = [dict(p, name=names.get(p["tag"], p["name"])) for p in initial]
    return json.dumps({"people": people, "initial": initial, "revisions": revisions}).encode()


def request(conn: http.client.HTTPConnection, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
    conn.request(method, path, body, {"Content-Type": "application/json", "Host": "localhost"})
    answer = conn.getresponse()
    return answer.status, answer.read()


def main() -> None:
    port, out, counts = int(sys.argv[1]), sys.argv[2], [int(n) for n in sys.argv[3:]]
    setup = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    other = f"probe-{int(time.time())}"
    person = {"tag": 1, "name": "w0", "hairColor": "black", "hairLength": "short", "eyeColor": "brown",
              "glasses": False, "facialHair": [], "likes": [], "dislikes": []}
    status, _ = request(setup, "PUT", f"/v1/rooms/{other}", json.dumps({"people": [person]}).encode())
    assert status == 201, status
    writes = {"rev": 0, "n": 0}

    def write(conn: http.client.HTTPConnection) -> None:
        """One rename in the other room (answered once durable); 20 ms apart, under the rate limit."""
        writes["n"] += 1
        body = json.dumps({"base": writes["rev"], "key": f"w{writes['n']}",
                           "ops": [{"op": "set", "tag": 1, "field": "name", "value": f"w{writes['n']}"}]}).encode()
        status, answer = request(conn, "POST", f"/v1/rooms/{other}/batches?user=probe", body)
        assert status == 200, (status, answer[:200])
        writes["rev"] = json.loads(answer)["rev"]
        time.sleep(0.018)
    results = []

    def probed(method: str, path: str, body: bytes | None = None) -> tuple[int, bytes, float, dict]:
        """One request on `setup` while two probes ask for /healthz and the other room meanwhile."""
        stop = threading.Event()
        probes = {"/healthz": [], f"/v1/rooms/{other}": [], "writes": []}

        def probe(target: str) -> None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            while not stop.is_set():
                start = time.perf_counter()
                if target == "writes":
                    write(conn)
                    probes[target].append(time.perf_counter() - start - 0.018)
                    continue
                request(conn, "GET", target)
                probes[target].append(time.perf_counter() - start)
                time.sleep(0.002)

        threads = [threading.Thread(target=probe, args=(target,)) for target in probes]
        for t in threads:
            t.start()
        time.sleep(0.3)
        for samples in probes.values():
            samples.clear()
        start = time.perf_counter()
        status, answer = request(setup, method, path, body)
        seconds = time.perf_counter() - start
        stop.set()
        for t in threads:
            t.join()
        return status, answer, seconds, {target: {"answers": len(s), "worst_ms": round(max(s, default=0) * 1000, 1)}
                                         for target, s in probes.items()}

    def worst(p: dict) -> str:
        return ", ".join(f"{target} worst {v['worst_ms']} ms over {v['answers']}" for target, v in p.items())

    for count in counts:
        body = export(count)
        room = f"import-{count}-{int(time.time() * 1000)}"
        status, answer, seconds, put_probes = probed("PUT", f"/v1/rooms/{room}", body)
        assert status == 201, (status, answer[:200])
        start = time.perf_counter()
        status, _ = request(setup, "GET", f"/v1/rooms/{room}?at={count // 2}")
        at_ms = (time.perf_counter() - start) * 1000
        assert status == 200, status
        status, answer, export_s, export_probes = probed("GET", f"/v1/rooms/{room}/export?history=true")
        assert status == 200 and len(json.loads(answer)["revisions"]) == count, status
        results.append({"revisions": count, "body_bytes": len(body), "put_s": round(seconds, 3), "put_probes": put_probes,
                        "at_half_ms": round(at_ms, 1), "export_s": round(export_s, 3), "export_probes": export_probes})
        print(f"  {count:>7} revisions ({len(body) / 1e6:.1f} MB): PUT {seconds:.2f} s ({worst(put_probes)}); "
              f"GET ?at={count // 2} {at_ms:.1f} ms; export with history {export_s:.2f} s ({worst(export_probes)})")
    with open(out, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""How much of a busy room's snapshot is the blame of people removed (docs/SEMANTICS.md decision 22).

usage: snapshot_blame.py HUB_BIN [REVISIONS]

Generates a room of REVISIONS (default 100,000) revisions where people come and go
(scripts/gen_export.py, seed 7), imports it into a fresh SQLite store with `HUB_BIN import`, and prints
the latest snapshot's size, the removed people's records in it (`blameDeparted`) and their bytes.
Everything stays in a temporary directory; nothing listens on a port.
"""
import json
import pathlib
import sqlite3
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent


def main() -> None:
    hub = sys.argv[1]
    revisions = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)
        export = work / "churn.json"
        subprocess.run([sys.executable, str(HERE / "gen_export.py"), str(revisions), str(export), "churn", "7"], check=True)
        config = work / "hub.yaml"
        config.write_text(f"storage:\n  kind: embedded\n  path: {work / 'pk.sqlite'}\n")
        subprocess.run([hub, "import", "--config", str(config), "churn", str(export)], check=True)
        db = sqlite3.connect(work / "pk.sqlite")
        (position, state), = db.execute("SELECT position, state FROM snapshots WHERE room = 'churn'")
        departed = json.loads(state).get("blameDeparted", [])
        print(f"snapshot at position {position}: {len(state):,} bytes; {len(departed):,} removed people's "
              f"records, {len(json.dumps(departed, separators=(',', ':'))):,} bytes of it")


if __name__ == "__main__":
    main()

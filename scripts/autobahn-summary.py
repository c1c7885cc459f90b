#!/usr/bin/env python3
"""Compact summary of an Autobahn TestSuite run made by scripts/conformance.sh, and that script's
bookkeeping between hub starts.

    scripts/autobahn-summary.py [REPORTS-DIR]        (default .build/autobahn/reports): the summary
    scripts/autobahn-summary.py --remaining PASS-DIR  the JSON list of the pass's cases not yet run
    scripts/autobahn-summary.py --crashed PASS-DIR N STATUS HUB-LOG
                                                      hub start N ended with the hub dead: records it

Each pass directory (echo/, echo-deflate/) holds expected.json (the case ids the patterns selected, in
wstest's order), run-N/index.json (wstest's report index, one per hub start) with the per-case JSON
reports it names, and crashes.tsv (hub starts that ended with the hub dead, and the case it died in).
When the hub dies, wstest still reports the next case, whose opening handshake never completed (the
dying server's socket accepted, then reset the connection): such cases in a crashed run, after the
case the hub died in, are written to run-N/not-run.json and run again on the next hub start.

The summary prints per case group the counts of OK / NON-STRICT / INFORMATIONAL / UNIMPLEMENTED /
FAILED (and NOT RUN: selected but never reported, e.g. after the hub died for good), the time the group
took, every FAILED case with what was sent, expected and observed, and every hub crash. Exit status 1
if any case FAILED or was not run or the hub crashed, except FAILED cases listed in
$AUTOBAHN_KNOWN_FAILURES (case ids separated by spaces or commas, empty by default): those are still
counted and listed, marked "known", but do not change the exit status.
"""
import fnmatch
import glob
import json
import os
import re
import signal
import sys

COLUMNS = ["OK", "NON-STRICT", "INFORMATIONAL", "UNIMPLEMENTED", "FAILED", "NOT RUN"]
KNOWN = set(re.split(r"[\s,]+", os.environ.get("AUTOBAHN_KNOWN_FAILURES", "").strip())) - {""}
PASS_LABEL = {"echo": "peoplekeeper-hub echo", "echo-deflate": "peoplekeeper-hub echo --deflate"}


def case_key(case_id):
    return [int(x) if x.isdigit() else x for x in case_id.split(".")]


def group_of(case_id, patterns):
    for p in patterns:
        if fnmatch.fnmatchcase(case_id, p):
            return p[:-2] if p.endswith(".*") else p.rstrip("*").rstrip(".") or p
    return ".".join(case_id.split(".")[:2])


def short(value, limit=240):
    s = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    s = s.replace("\n", "\\n")
    return s if len(s) <= limit else s[: limit - 5] + " ...]"


def events(evts, limit=6):
    """wstest's event list ([kind, payload, binary] / [kind, payload] / ["timeout", ...]) in one line."""
    if not evts:
        return "(nothing)"
    out = []
    for e in evts[:limit]:
        if isinstance(e, list) and e and e[0] == "message":
            kind = "binary" if len(e) > 2 and e[2] else "text"
            out.append("%s message %s" % (kind, short(e[1], 90)))
        elif isinstance(e, list) and e:
            out.append(" ".join(short(x, 90) for x in e))
        else:
            out.append(short(e, 90))
    if len(evts) > limit:
        out.append("... %d more" % (len(evts) - limit))
    return "; ".join(out)


def frames(report, kind, limit=4):
    """The first frames from the wire log: "TF" sent by wstest, "RF" received from the hub."""
    out = []
    for w in report.get("wirelog") or []:
        if w and w[0] == kind:
            # ["TF", [len, payload], opcode, fin, rsv, mask, sync]
            payload = w[1] if isinstance(w[1], list) else [None, w[1]]
            out.append("opcode %s fin %s rsv %s len %s payload %s" % (
                w[2], w[3], w[4], payload[0], short(payload[1], 60)))
            if len(out) >= limit:
                out.append("...")
                break
    return out


def hub_log_tail(path, lines=6):
    try:
        text = open(path, errors="replace").read().splitlines()
    except OSError:
        return []
    hits = [l for l in text if re.search(r"assert|abort|fatal|signal|crash|error", l, re.I)]
    return (hits[-lines:] if hits else text[-lines:])


def run_number(index_path):
    return int(index_path.split("run-")[-1].split(os.sep)[0])


def load_runs(d):
    """{case id: (index entry, run dir)} over the pass's runs, later runs winning; cases listed in a
    run's not-run.json are left out. Also {run dir: [case ids in run order]}."""
    got, per_run = {}, {}
    for idx in sorted(glob.glob(os.path.join(d, "run-*", "index.json")), key=run_number):
        run = os.path.dirname(idx)
        skip = set()
        if os.path.exists(os.path.join(run, "not-run.json")):
            skip = set(json.load(open(os.path.join(run, "not-run.json"))))
        ids = []
        for agent_cases in json.load(open(idx)).values():
            for cid, entry in agent_cases.items():
                if cid not in skip:
                    got[cid] = (entry, run)
                    ids.append(cid)
        per_run[run] = sorted(ids, key=case_key)
    return got, per_run


def handshake_completed(run, entry):
    try:
        rep = json.load(open(os.path.join(run, entry["reportfile"])))
    except (OSError, ValueError):
        return True
    return "opening handshake was never completed" not in (rep.get("resultClose") or "")


def remaining(d):
    exp = json.load(open(os.path.join(d, "expected.json")))
    got, _ = load_runs(d)
    print(json.dumps([c for c in exp["cases"] if c not in got]))
    return 0


def crashed(d, attempt, status, log):
    """Hub start ATTEMPT ended with the hub dead: the case it died in is the last one of that run whose
    opening handshake completed (or, if none did, the first one); later cases were never really run."""
    run = os.path.join(d, "run-%s" % attempt)
    ids, entries = [], {}
    if os.path.exists(os.path.join(run, "index.json")):
        for agent_cases in json.load(open(os.path.join(run, "index.json"))).values():
            entries.update(agent_cases)
        ids = sorted(entries, key=case_key)
    completed = [c for c in ids if handshake_completed(run, entries[c])]
    died_in = completed[-1] if completed else (ids[0] if ids else "")
    not_run = [c for c in ids if case_key(c) > case_key(died_in)] if died_in else []
    if ids:
        json.dump(not_run, open(os.path.join(run, "not-run.json"), "w"))
    with open(os.path.join(d, "crashes.tsv"), "a") as f:
        f.write("%s\t%s\t%s\t%s\n" % (attempt, status, log, died_in))
    print(died_in or "?")
    return 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--remaining":
        return remaining(sys.argv[2])
    if len(sys.argv) == 6 and sys.argv[1] == "--crashed":
        return crashed(*sys.argv[2:6])
    reports = sys.argv[1] if len(sys.argv) > 1 else ".build/autobahn/reports"
    passes = sorted(d for d in os.listdir(reports) if os.path.isfile(os.path.join(reports, d, "expected.json"))) \
        if os.path.isdir(reports) else []
    if not passes:
        print("autobahn-summary: no reports under %s" % reports)
        return 2

    rows = {}          # (pass, group) -> counts
    order = []
    failed, close_notes, crashes, html = [], [], [], []
    for name in passes:
        d = os.path.join(reports, name)
        exp = json.load(open(os.path.join(d, "expected.json")))
        patterns = exp["patterns"]
        got, per_run = load_runs(d)
        html.extend(os.path.join(run, "index.html") for run in sorted(per_run, key=lambda r: int(r.split("run-")[-1])))
        for cid in exp["cases"]:
            key = (name, group_of(cid, patterns))
            if key not in rows:
                rows[key] = dict.fromkeys(COLUMNS, 0)
                rows[key]["cases"] = 0
                rows[key]["ms"] = 0
                order.append(key)
            r = rows[key]
            r["cases"] += 1
            if cid not in got:
                r["NOT RUN"] += 1
                failed.append((name, cid, None, None))
                continue
            entry, run = got[cid]
            duration = entry.get("duration") or 0
            r["ms"] += duration if duration < 10 ** 9 else 0   # no opening handshake: no start time
            beh = entry["behavior"]
            if beh in COLUMNS:
                r[beh] += 1
            else:                      # NO CLOSE or anything wstest may add: not a pass
                r["FAILED"] += 1
            if beh not in ("OK", "NON-STRICT", "INFORMATIONAL", "UNIMPLEMENTED"):
                failed.append((name, cid, entry, run))
            elif entry.get("behaviorClose") not in ("OK", "INFORMATIONAL") and beh != "UNIMPLEMENTED":
                close_notes.append((name, cid, entry))
        tsv = os.path.join(d, "crashes.tsv")
        if os.path.exists(tsv):
            for line in open(tsv):
                attempt, status, log, died_in = (line.rstrip("\n").split("\t") + [""])[:4]
                crashes.append((name, int(status), log, died_in))

    print("Autobahn TestSuite fuzzing client (wstest) against the hub's echo mode")
    head = "%-8s %-13s %5s" % ("group", "pass", "cases") + "".join(" %*s" % (len(c), c) for c in COLUMNS) + "  %8s" % "time"
    print(head)
    print("-" * len(head))
    total = dict.fromkeys(COLUMNS + ["cases", "ms"], 0)
    for key in sorted(order, key=lambda k: (case_key(k[1]), k[0])):
        r = rows[key]
        for c in total:
            total[c] += r[c]
        print("%-8s %-13s %5d" % (key[1], key[0], r["cases"]) + "".join(" %*d" % (len(c), r[c]) for c in COLUMNS)
              + "  %7.1fs" % (r["ms"] / 1000.0))
    print("-" * len(head))
    print("%-8s %-13s %5d" % ("total", "", total["cases"]) + "".join(" %*d" % (len(c), total[c]) for c in COLUMNS)
          + "  %7.1fs" % (total["ms"] / 1000.0))

    if crashes:
        print("\nHUB CRASHES (%d):" % len(crashes))
        for name, status, log, last in crashes:
            sig = ""
            if status > 128:
                try:
                    sig = " (%s)" % signal.Signals(status - 128).name
                except ValueError:
                    sig = " (signal %d)" % (status - 128)
            print("  %s: exit status %d%s in case %s; log %s" % (
                PASS_LABEL.get(name, name), status, sig, last or "? (none reported)", log))
            for l in hub_log_tail(log):
                print("      | " + short(l, 200))

    died = {(name, last) for name, _, _, last in crashes}
    if failed:
        print("\nFAILED (%d):" % len(failed))
        for name, cid, entry, run in sorted(failed, key=lambda f: (case_key(f[1]), f[0])):
            if entry is None:
                print("  %s [%s]: NOT RUN (no report: the hub was gone or wstest stopped)" % (cid, name))
                continue
            rep = {}
            try:
                rep = json.load(open(os.path.join(run, entry["reportfile"])))
            except (OSError, ValueError):
                pass
            print("  %s [%s] %s%s%s: %s" % (cid, name, entry["behavior"], " (known)" if cid in KNOWN else "",
                                            " (THE HUB DIED IN THIS CASE)" if (name, cid) in died else "",
                                            short(rep.get("description", ""), 300)))
            if rep:
                print("      expectation: %s" % short(rep.get("expectation", ""), 300))
                for f in frames(rep, "TF"):
                    print("      sent frame:  %s" % f)
                for f in frames(rep, "RF"):
                    print("      got frame:   %s" % f)
                for beh, evts in sorted((rep.get("expected") or {}).items()):
                    print("      expected (%s): %s" % (beh, events(evts)))
                print("      observed:    %s" % events(rep.get("received")))
                print("      result:      %s" % short(rep.get("result", ""), 300))
                print("      close:       %s (%s); remote close code %s %s; %s" % (
                    rep.get("behaviorClose"), rep.get("resultClose"), rep.get("remoteCloseCode"),
                    short(rep.get("remoteCloseReason") or "", 80),
                    "clean" if rep.get("wasClean") else "unclean: %s" % rep.get("wasNotCleanReason")))
            print("      report:      %s" % os.path.join(run, entry["reportfile"]).replace(".json", ".html"))

    if close_notes:
        print("\nPassed, with a non-OK closing behaviour (%d):" % len(close_notes))
        for name, cid, entry in sorted(close_notes, key=lambda f: (case_key(f[1]), f[0])):
            print("  %s [%s] close %s, remote code %s" % (cid, name, entry.get("behaviorClose"),
                                                        entry.get("remoteCloseCode")))

    print("\nReports: " + ", ".join(html))
    known_failed = [f for f in failed if f[2] is not None and f[1] in KNOWN]
    unexpected = total["FAILED"] - len(known_failed)
    bad = unexpected + total["NOT RUN"] + len(crashes)
    if not bad:
        verdict = "PASS (no case FAILED)" if not known_failed else \
            "PASS apart from %d known FAILED case(s) in AUTOBAHN_KNOWN_FAILURES: %s" % (
                len(known_failed), " ".join(sorted((f[1] for f in known_failed), key=case_key)))
    else:
        verdict = "FAIL: %d FAILED (%d of them known), %d not run, %d hub crash(es)" % (
            total["FAILED"], len(known_failed), total["NOT RUN"], len(crashes))
    print("conformance: " + verdict)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""Where the page's main thread goes while teammates edit: a Chromium trace of a few seconds.
usage: python web_trace.py ROOM USER --port P [--rate 60] [--secs 3] [--select 500] [--out trace.json]
Needs the hub up and the room filled (fill.py); starts teammates.py itself. Selects the person at
--select, lets the teammates (4, --rate edits/s in all, never that person) run 2 s, then traces
--secs seconds over the DevTools protocol (the `devtools.timeline` categories and Blink's invalidation
tracking) and prints, per second of trace: the main thread's top events (style is UpdateLayoutTree;
Paint nests), then the commonest reasons elements were restyled or laid out again. Session 32 found
with it that the list's highlight fade ran for rows out of view (docs/PERFORMANCE.md)."""
import argparse, collections, json, os, subprocess, sys, time, urllib.request
import websocket  # websocket-client, a dependency of selenium
from selenium import webdriver

ap = argparse.ArgumentParser(); ap.add_argument("room"); ap.add_argument("user"); ap.add_argument("--port", required=True)
ap.add_argument("--rate", type=float, default=60); ap.add_argument("--secs", type=float, default=3)
ap.add_argument("--select", type=int, default=500); ap.add_argument("--out")
a = ap.parse_args()
HERE = os.path.dirname(os.path.abspath(__file__))

o = webdriver.ChromeOptions(); o.binary_location = "/usr/bin/chromium"
for f in ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,900", "--disable-dev-shm-usage"]: o.add_argument(f)
d = webdriver.Chrome(service=webdriver.ChromeService("/usr/bin/chromedriver"), options=o)
try:
    d.get(f"http://127.0.0.1:{a.port}/?room={a.room}&user={a.user}")
    d.execute_async_script("""const done = arguments[0];
      (function poll() { const room = document.getElementById('room');
        if (room && !room.hidden && document.querySelectorAll('#people li').length > 1) done(); else setTimeout(poll, 20); })();""")
    tag = d.execute_script(f"const li = document.querySelectorAll('#people li'); return Number(li[Math.min({a.select}, li.length - 1)].dataset.tag)")
    d.execute_script(f"document.querySelector('#people li[data-tag=\"{tag}\"] .pick').click()")
    mates = subprocess.Popen([sys.executable, os.path.join(HERE, "teammates.py"), a.room, "--n", "4", "--rate", str(a.rate),
                              "--secs", str(a.secs + 3), "--avoid", str(tag), "--port", a.port],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2)
    # The page's own DevTools target: selenium cannot receive the protocol's events, this socket can.
    address = d.capabilities["goog:chromeOptions"]["debuggerAddress"]
    page = [t for t in json.load(urllib.request.urlopen(f"http://{address}/json")) if t["type"] == "page"][0]
    ws = websocket.create_connection(page["webSocketDebuggerUrl"], suppress_origin=True)
    categories = ("devtools.timeline,disabled-by-default-devtools.timeline,"
                  "disabled-by-default-devtools.timeline.invalidationTracking")
    ws.send(json.dumps({"id": 1, "method": "Tracing.start", "params": {"categories": categories, "transferMode": "ReportEvents"}}))
    time.sleep(a.secs)
    ws.send(json.dumps({"id": 2, "method": "Tracing.end"}))
    events = []
    while True:
        m = json.loads(ws.recv())
        if m.get("method") == "Tracing.dataCollected": events += m["params"]["value"]
        if m.get("method") == "Tracing.tracingComplete": break
    mates.wait()
finally:
    d.quit()

if a.out:
    json.dump(events, open(a.out, "w"))
threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
main = {k for k, v in threads.items() if v == "CrRendererMain"}
took = collections.Counter(); times = collections.Counter()
for e in events:
    if (e["pid"], e["tid"]) in main and e.get("ph") == "X" and "dur" in e:
        took[e["name"]] += e["dur"]; times[e["name"]] += 1
print(f"main thread, per second of a {a.secs:g} s trace ({a.rate:g} edits/s):")
for name, us in took.most_common(14):
    print(f"  {name:58s} {us / 1000 / a.secs:7.1f} ms {times[name] / a.secs:7.1f} times")
why = collections.Counter()
for e in events:
    if e["name"] in ("StyleRecalcInvalidationTracking", "LayoutInvalidationTracking", "StyleInvalidatorInvalidationTracking"):
        data = e["args"]["data"]
        why[(e["name"].replace("InvalidationTracking", ""), data.get("nodeName", ""), data.get("reason", ""))] += 1
print("restyled or laid out again, per second (kind, element, reason):")
for (kind, node, reason), n in why.most_common(12):
    print(f"  {n / a.secs:8.0f}  {kind:16s} {node[:40]:40s} {reason}")

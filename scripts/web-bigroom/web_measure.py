"""Black-box measurements of the web page in a big room (headless Chromium through selenium).
usage: python web_measure.py ROOM USER [--port 18431] [--width 1400] [--height 900] [--mates 4] [--rate 6] [--secs 40]
Needs the hub up and the room filled (fill.py). Starts teammates.py itself for the typing phase. Prints JSON lines."""
import argparse, json, os, statistics, subprocess, sys, time
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
ap = argparse.ArgumentParser(); ap.add_argument("room"); ap.add_argument("user"); ap.add_argument("--port", default="18431")
ap.add_argument("--width", type=int, default=1400); ap.add_argument("--height", type=int, default=900)
ap.add_argument("--mates", type=int, default=4); ap.add_argument("--rate", type=float, default=6); ap.add_argument("--secs", type=float, default=40)
ap.add_argument("--burst-rate", type=float, default=60)
ap.add_argument("--restore-rev", type=int, default=50); ap.add_argument("--rows", type=int, default=1000); ap.add_argument("--soak", type=float, default=120); ap.add_argument("--select", type=int, default=500, help="index of the person to edit"); ap.add_argument("--phases", default="open,history,idle,type,reorder,delete,restore")
a = ap.parse_args()
HERE = os.path.dirname(os.path.abspath(__file__)); PY = sys.executable
# Screenshots go to $PEOPLEKEEPER_BENCH_OUT (scripts/bench-web.sh: .build/bench-web), else the current directory.
SHOTS = os.environ.get("PEOPLEKEEPER_BENCH_OUT", "."); os.makedirs(SHOTS, exist_ok=True)
def out(name, **kw): print(json.dumps({"phase": name, **kw}), flush=True)
def pct(xs, p): xs = sorted(xs); return round(xs[min(len(xs) - 1, int(p / 100 * len(xs)))], 1) if xs else None
def summ(xs): return {"n": len(xs), "median": pct(xs, 50), "p95": pct(xs, 95), "max": round(max(xs), 1) if xs else None}

o = webdriver.ChromeOptions(); o.binary_location = "/usr/bin/chromium"
for f in ["--headless=new", "--no-sandbox", "--disable-gpu", f"--window-size={a.width},{a.height}", "--enable-precise-memory-info", "--disable-dev-shm-usage"]: o.add_argument(f)
d = webdriver.Chrome(service=webdriver.ChromeService("/usr/bin/chromedriver"), options=o)
d.set_script_timeout(120)
d.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": open(os.path.join(HERE, "instrument.js")).read()})
d.execute_cdp_cmd("Performance.enable", {})
def metrics(): return {m["name"]: m["value"] for m in d.execute_cdp_cmd("Performance.getMetrics", {})["metrics"]}
def js(s, *args): return d.execute_script(s, *args)
def renderer_rss_mb():
    # Only this driver's Chromium: the descendants of our chromedriver whose command line says renderer.
    kids = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try: kids.setdefault(int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1]), []).append(int(p))
            except Exception: pass
    todo = [d.service.process.pid]; mine = []
    while todo:
        x = todo.pop(); mine.append(x); todo += kids.get(x, [])
    pids = [p for p in mine if b"--type=renderer" in open(f"/proc/{p}/cmdline", "rb").read()] if mine else []
    tot = 0
    for p in pids:
        try: tot += int(open(f"/proc/{p}/status").read().split("VmRSS:")[1].split()[0])
        except Exception: pass
    return round(tot / 1024)
def lt_since(t): return [x for x in js("return window.__lt") if x["start"] >= t]
try:
    # 1. Open the room.
    t0 = time.time()
    d.get(f"http://127.0.0.1:{a.port}/?room={a.room}&user={a.user}")
    r = d.execute_async_script("""const done = arguments[1]; const ROWS = arguments[0]; const t = performance.now();
      (function poll() { const room = document.getElementById('room');
        if (room && !room.hidden && document.querySelectorAll('#people li').length >= ROWS)
          requestAnimationFrame(() => setTimeout(() => done({listed: performance.now(), rows: document.querySelectorAll('#people li').length}), 0));
        else setTimeout(poll, 10); })();""", a.rows)
    wall = time.time() - t0
    time.sleep(2)
    m = metrics()
    lt = js("return window.__lt")
    welcome = [x for x in js("return window.__msg") if x["type"].startswith("welcome")]
    out("open", wall_s=round(wall, 2), listed_ms_from_navigation=round(r["listed"]), rows=r["rows"],
        welcome_handler_ms=[round(x["dur"]) for x in welcome], welcome_bytes=[x["bytes"] for x in welcome],
        longtasks_ms=[round(x["dur"]) for x in lt], js_heap_mb=round(m["JSHeapUsedSize"] / 2**20, 1), dom_nodes=int(m["Nodes"]),
        renderer_rss_mb=renderer_rss_mb(), page_height_px=js("return document.documentElement.scrollHeight"),
        history_rows=js("return document.querySelectorAll('#history-list li').length"))
    # Where the history panel and the editor are.
    out("layout", history_top_px=js("return Math.round(document.getElementById('history').getBoundingClientRect().top + scrollY)"),
        detail_top_px=js("return Math.round(document.getElementById('detail').getBoundingClientRect().top + scrollY)"),
        history_visible=js("const r = document.getElementById('history').getBoundingClientRect(); return r.top < innerHeight && r.bottom > 0"))
    d.save_screenshot(os.path.join(SHOTS, f"open-{a.width}.png"))

    # The cost of one render with nothing changing: a click on the selected row re-renders.
    if "history" in a.phases:
        t = js("return performance.now()")
        n0 = js("return document.querySelectorAll('#history-list li').length")
        r = d.execute_async_script("""const done = arguments[0]; const list = document.getElementById('history-list'); const t0 = performance.now(); let pages = 0;
          (function step() { const end = document.getElementById('history-end');
            if (end && !end.hidden) return done({ms: performance.now() - t0, pages, rows: list.querySelectorAll('li').length});
            if (performance.now() - t0 > 60000) return done({timeout: true, rows: list.querySelectorAll('li').length});
            list.scrollTop = list.scrollHeight; pages++; setTimeout(step, 300); })();""")
        out("history_all", first_page_rows=n0, **r, longtasks_ms=[round(x["dur"]) for x in lt_since(t)])

    # Select a person far down the list (click its row, as a user would after scrolling).
    tag = js(f"return Number(document.querySelectorAll('#people li')[{a.select}].dataset.tag)")
    li = d.find_element(By.CSS_SELECTOR, f'#people li[data-tag="{tag}"] .pick')
    d.execute_script("arguments[0].scrollIntoView({block:'center'})", li); time.sleep(0.3)
    t = js("return performance.now()")
    li.click()
    r = d.execute_async_script(f"""const done = arguments[0]; const t0 = performance.now();
       (function poll() {{ if (document.getElementById('detail').dataset.tag === '{tag}') requestAnimationFrame(() => setTimeout(() => done(performance.now() - t0), 0)); else setTimeout(poll, 5); }})();""")
    out("select", tag=tag, index=a.select, click_to_editor_ms_after_click_returned=round(r), longtasks_ms=[round(x["dur"]) for x in lt_since(t)],
        scrollY=js("return scrollY"), detail_in_view=js("const r = document.getElementById('detail').getBoundingClientRect(); return r.top < innerHeight && r.bottom > 0"),
        name_in_view=js("const r = document.getElementById('name').getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight"))
    d.save_screenshot(os.path.join(SHOTS, f"selected-{a.width}.png"))

    if "idle" in a.phases:
        t = js("return performance.now()"); m0 = metrics(); time.sleep(10); m1 = metrics()
        out("idle_10s", longtasks=len(lt_since(t)), script_ms=round((m1["ScriptDuration"] - m0["ScriptDuration"]) * 1000), task_ms=round((m1["TaskDuration"] - m0["TaskDuration"]) * 1000))

    if "profile" in a.phases:
        # CPU profile of the page while teammates edit (nobody typing): self time by function, and total (inclusive) time.
        d.execute_cdp_cmd("Profiler.enable", {}); d.execute_cdp_cmd("Profiler.setSamplingInterval", {"interval": 200})
        mates = subprocess.Popen([PY, os.path.join(HERE, "teammates.py"), a.room, "--n", str(a.mates), "--rate", str(a.rate), "--secs", "15", "--avoid", str(tag), "--port", a.port], stdout=subprocess.PIPE, text=True)
        time.sleep(2); js("window.__msg.length = 0"); d.execute_cdp_cmd("Profiler.start", {}); time.sleep(12)
        prof = d.execute_cdp_cmd("Profiler.stop", {})["profile"]; mates.wait()
        msgs = js("return window.__msg")
        nodes = {n["id"]: n for n in prof["nodes"]}; parent = {}
        for n in prof["nodes"]:
            for c in n.get("children", []): parent[c] = n["id"]
        dt = {}; 
        for sid, delta in zip(prof["samples"], prof["timeDeltas"]): dt[sid] = dt.get(sid, 0) + delta
        selft = {}; incl = {}
        def key(n):
            cf = n["callFrame"]; return f'{cf["functionName"] or "(anon)"} {cf["url"].rsplit("/", 1)[-1]}:{cf["lineNumber"] + 1}'
        for sid, t in dt.items():
            k = key(nodes[sid]); selft[k] = selft.get(k, 0) + t
            seen = set(); x = sid
            while x is not None:
                k = key(nodes[x])
                if k not in seen: incl[k] = incl.get(k, 0) + t; seen.add(k)
                x = parent.get(x)
        tot = sum(dt.values())
        top = lambda m: [(k, round(v / 1000)) for k, v in sorted(m.items(), key=lambda kv: -kv[1]) if "(idle)" not in k and "(program)" not in k][:25]
        out("profile_12s", total_ms=round(tot / 1000), ops_frames=sum(1 for x in msgs if x["type"].startswith("ops")), presence_frames=sum(1 for x in msgs if x["type"].startswith("presence")),
            self_ms=top(selft), inclusive_ms=top(incl))
    if "soak" in a.phases:
        # Teammates edit for --soak seconds; every 10 s: how far the page is behind the hub, the cost of an ops frame, history rows, heap.
        import urllib.request
        mates = subprocess.Popen([PY, os.path.join(HERE, "teammates.py"), a.room, "--n", str(a.mates), "--rate", str(a.rate), "--secs", str(a.soak), "--avoid", str(tag), "--port", a.port], stdout=subprocess.PIPE, text=True)
        t_start = time.time(); rows = []
        while mates.poll() is None:
            js("window.__msg.length = 0"); m0 = metrics(); time.sleep(10); m1 = metrics()
            hub = json.load(urllib.request.urlopen(f"http://127.0.0.1:{a.port}/v1/rooms/{a.room}"))["rev"]
            page = js("return window.peoplekeeper.revision"); msgs = js("return window.__msg")
            ops = [x["dur"] for x in msgs if x["type"].startswith("ops")]
            rows.append({"t": round(time.time() - t_start), "hub_rev": hub, "page_rev": page, "behind": hub - page, "ops_handled": len(ops),
                         "ops_ms_median": pct(ops, 50), "busy_pct": round(100 * (m1["TaskDuration"] - m0["TaskDuration"]) / (m1["Timestamp"] - m0["Timestamp"])),
                         "history_rows": js("return document.querySelectorAll('#history-list li').length"), "heap_mb": round(m1["JSHeapUsedSize"] / 2**20, 1), "nodes": int(m1["Nodes"])})
            print(json.dumps(rows[-1]), flush=True)
        t_caught = time.time()
        while True:
            hub = json.load(urllib.request.urlopen(f"http://127.0.0.1:{a.port}/v1/rooms/{a.room}"))["rev"]
            if js("return window.peoplekeeper.revision") >= hub or time.time() - t_caught > 120: break
            time.sleep(0.5)
        out("soak", mates_result=mates.communicate()[0].strip(), catch_up_after_mates_stopped_s=round(time.time() - t_caught, 1), renderer_rss_mb=renderer_rss_mb())
    if "type" in a.phases:
        # Teammates edit other people while this user types into the name of the selected person.
        mates = subprocess.Popen([PY, os.path.join(HERE, "teammates.py"), a.room, "--n", str(a.mates), "--rate", str(a.rate), "--secs", str(a.secs), "--avoid", str(tag), "--port", a.port],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(3)
        name = d.find_element(By.ID, "name")
        d.execute_script("arguments[0].scrollIntoView({block:'center'})", name)
        name.click(); name.send_keys(Keys.END)
        js("window.__keys.length = 0; window.__msg.length = 0; window.__frames.length = 0")
        t = js("return performance.now()"); m0 = metrics(); sy0 = js("return scrollY"); before = name.get_attribute("value")
        typed = "Typing in a big room"; problems = []; changed_counts = []; scrolls = []
        for i, ch in enumerate(typed):
            name.send_keys(ch); time.sleep(0.15)
            st = js("const e = document.activeElement; const n = document.getElementById('name'); return {focus: e && e.id, caret: n.selectionStart, len: n.value.length, value: n.value, changed: document.querySelectorAll('.changed').length, scrollY: scrollY}")
            changed_counts.append(st["changed"]); scrolls.append(st["scrollY"])
            if st["focus"] != "name" or st["caret"] != st["len"]: problems.append({"i": i, **{k: st[k] for k in ("focus", "caret", "len")}})
        time.sleep(1)
        final = name.get_attribute("value")
        # Keep watching without typing until the teammates stop.
        samples = []
        while mates.poll() is None:
            samples.append(js("return {changed: document.querySelectorAll('.changed').length, scrollY: scrollY, focus: document.activeElement && document.activeElement.id}")); time.sleep(1)
        m1 = metrics(); mo, me = mates.communicate()
        msgs = js("return window.__msg"); ops = [x["dur"] for x in msgs if x["type"].startswith("ops")]
        from collections import Counter; print(json.dumps({"frame_types": Counter(x["type"] for x in msgs)}), flush=True)
        pres = [x["dur"] for x in msgs if x["type"].startswith("presence")]
        keys = [x["lat"] for x in js("return window.__keys")]
        drawn = [x["dur"] for x in js("return window.__frames")]
        lts = lt_since(t); span = (m1["Timestamp"] - m0["Timestamp"])
        out("type_while_mates_edit", mates=a.mates, rate=a.rate, mates_result=mo.strip(), key_to_paint_ms=summ(keys),
            ops_frame_handler_ms=summ(ops), presence_frame_handler_ms=summ(pres), frames_seen=len(msgs),
            animation_frame_ms=summ(drawn), script_ms_per_message=round((sum(ops) + sum(pres) + sum(drawn)) / max(1, len(ops) + len(pres)), 2),
            longtasks={"n": len(lts), "total_ms": round(sum(x["dur"] for x in lts)), "max_ms": round(max([x["dur"] for x in lts] or [0]))},
            main_thread_busy_pct=round(100 * (m1["TaskDuration"] - m0["TaskDuration"]) / span, 1),
            script_ms_per_s=round(1000 * (m1["ScriptDuration"] - m0["ScriptDuration"]) / span), layout_ms_per_s=round(1000 * (m1["LayoutDuration"] - m0["LayoutDuration"]) / span),
            style_ms_per_s=round(1000 * (m1["RecalcStyleDuration"] - m0["RecalcStyleDuration"]) / span), span_s=round(span, 1),
            name_ok=final == before + typed, final_suffix=final[-len(typed) - 3:], caret_or_focus_problems=problems[:5], n_problems=len(problems),
            changed_max=max(changed_counts + [s["changed"] for s in samples]), scroll_moved=sorted(set(scrolls + [s["scrollY"] for s in samples])) [:6] if len(set(scrolls + [s["scrollY"] for s in samples])) > 1 else "no",
            focus_after=sorted(set(str(s["focus"]) for s in samples)), js_heap_mb=round(m1["JSHeapUsedSize"] / 2**20, 1), dom_nodes=int(m1["Nodes"]),
            history_rows=js("return document.querySelectorAll('#history-list li').length"), renderer_rss_mb=renderer_rss_mb())

    if "burst" in a.phases:
        # Teammates at --burst-rate edits/s for 10 s (each with a presence update) while the user watches:
        # the page's script time per second and per message, and how many frames drew them.
        mates = subprocess.Popen([PY, os.path.join(HERE, "teammates.py"), a.room, "--n", str(a.mates), "--rate", str(a.burst_rate), "--secs", "12", "--avoid", str(tag), "--port", a.port],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1)
        js("window.__msg.length = 0; window.__frames.length = 0"); t = js("return performance.now()"); m0 = metrics(); time.sleep(10); m1 = metrics()
        import urllib.request
        shown = js("return window.peoplekeeper.revision")
        behind = json.load(urllib.request.urlopen(f"http://127.0.0.1:{a.port}/v1/rooms/{a.room}"))["rev"] - shown
        msgs = js("return window.__msg"); drawn = [x["dur"] for x in js("return window.__frames")]; lts = lt_since(t)
        handled = [x["dur"] for x in msgs]; span = m1["Timestamp"] - m0["Timestamp"]
        mo, _ = mates.communicate()
        out("burst", mates=a.mates, rate=a.burst_rate, messages=len(msgs), animation_frames=len(drawn), revisions_behind_at_end=behind,
            longtasks={"n": len(lts), "max_ms": round(max([x["dur"] for x in lts] or [0]))},
            script_ms_per_s=round(1000 * (m1["ScriptDuration"] - m0["ScriptDuration"]) / span),
            layout_ms_per_s=round(1000 * (m1["LayoutDuration"] - m0["LayoutDuration"]) / span),
            layouts_per_s=round((m1["LayoutCount"] - m0["LayoutCount"]) / span, 1),
            style_ms_per_s=round(1000 * (m1["RecalcStyleDuration"] - m0["RecalcStyleDuration"]) / span),
            main_thread_busy_pct=round(100 * (m1["TaskDuration"] - m0["TaskDuration"]) / span, 1),
            script_ms_per_message=round((sum(handled) + sum(drawn)) / max(1, len(msgs)), 2), mates_result=mo.strip())

    if "reorder" in a.phases:
        # Alt+Down on the selected row, 5 times; time from key to the row's new place.
        lat = []
        for i in range(5):
            li = d.find_element(By.CSS_SELECTOR, f'#people li[data-tag="{tag}"] .pick'); li.click() if i == 0 else None
            idx0 = js(f"return [...document.querySelectorAll('#people li')].findIndex(l => l.dataset.tag === '{tag}')")
            t = js("return performance.now()")
            d.switch_to.active_element.send_keys(Keys.ALT, Keys.ARROW_DOWN)
            r = d.execute_async_script(f"""const done = arguments[arguments.length - 1]; const t0 = arguments[0];
              (function poll() {{ const i = [...document.querySelectorAll('#people li')].findIndex(l => l.dataset.tag === '{tag}');
                if (i !== {idx0}) requestAnimationFrame(() => setTimeout(() => done({{ms: performance.now() - t0, idx: i}}), 0)); else if (performance.now() - t0 > 5000) done({{timeout: 1}}); else setTimeout(poll, 2); }})();""", t)
            lat.append(r); time.sleep(0.3)
        out("reorder_alt_down", results=lat, focus=js("return document.activeElement && document.activeElement.className"), longtasks_ms=[round(x["dur"]) for x in lt_since(t - 3000)])
    if "delete" in a.phases:
        n0 = js("return document.querySelectorAll('#people li').length")
        victim = js("return Number(document.querySelectorAll('#people li')[Math.min(700, document.querySelectorAll('#people li').length - 2)].dataset.tag)")
        d.execute_script("arguments[0].click()", d.find_element(By.CSS_SELECTOR, f'#people li[data-tag="{victim}"] .delete'))
        time.sleep(0.3)
        t = js("return performance.now()")
        d.find_element(By.ID, "confirm-delete").click()
        r1 = d.execute_async_script(f"""const done = arguments[arguments.length - 1]; const t0 = arguments[0];
          (function poll() {{ if (!document.querySelector('#people li[data-tag="{victim}"]')) requestAnimationFrame(() => setTimeout(() => done(performance.now() - t0), 0)); else setTimeout(poll, 2); }})();""", t)
        time.sleep(0.5)
        t = js("return performance.now()")
        d.find_element(By.ID, "undo").click()
        r2 = d.execute_async_script(f"""const done = arguments[arguments.length - 1]; const t0 = arguments[0];
          (function poll() {{ if (document.querySelector('#people li[data-tag="{victim}"]')) requestAnimationFrame(() => setTimeout(() => done(performance.now() - t0), 0)); else if (performance.now()-t0 > 5000) done(-1); else setTimeout(poll, 2); }})();""", t)
        time.sleep(0.5)
        t = js("return performance.now()")
        d.find_element(By.ID, "redo").click()
        r3 = d.execute_async_script(f"""const done = arguments[arguments.length - 1]; const t0 = arguments[0];
          (function poll() {{ if (!document.querySelector('#people li[data-tag="{victim}"]')) requestAnimationFrame(() => setTimeout(() => done(performance.now() - t0), 0)); else if (performance.now()-t0 > 5000) done(-1); else setTimeout(poll, 2); }})();""", t)
        out("delete_undo_redo", rows_before=n0, confirm_to_gone_ms=round(r1), undo_to_back_ms=round(r2), redo_to_gone_ms=round(r3),
            rows_after=js("return document.querySelectorAll('#people li').length"), scrollY=js("return scrollY"), longtasks_ms=[round(x["dur"]) for x in lt_since(t - 2000)])
    if "restore" in a.phases:
        # "Restore to here" on revision 50 (the history panel), then confirm; then Undo the restore.
        d.execute_script("document.getElementById('history').scrollIntoView()")
        row = None
        for _ in range(40):
            rows = d.find_elements(By.CSS_SELECTOR, '#history-list li[data-rev="' + str(a.restore_rev) + '"] button.restore-here')
            if rows: row = rows[0]; break
            js("const l = document.getElementById('history-list'); l.scrollTop = l.scrollHeight"); time.sleep(0.3)
        t = js("return performance.now()")
        d.execute_script("arguments[0].click()", row)
        r1 = d.execute_async_script("""const done = arguments[arguments.length - 1]; const t0 = arguments[0];
          (function poll() { const dl = document.getElementById('restore-dialog'); if (dl.open && dl.dataset.count) done({ms: performance.now() - t0, count: dl.dataset.count, text: document.getElementById('restore-text').textContent}); else if (performance.now()-t0 > 10000) done({timeout: 1}); else setTimeout(poll, 5); })();""", t)
        n_before = js("return document.querySelectorAll('#people li').length")
        t = js("return performance.now()")
        d.find_element(By.ID, "confirm-restore").click()
        r2 = d.execute_async_script("""const done = arguments[arguments.length - 1]; const t0 = arguments[0]; const n0 = arguments[1];
          (function poll() { const n = document.querySelectorAll('#people li').length; if (n !== n0) requestAnimationFrame(() => setTimeout(() => done({ms: performance.now() - t0, rows: n}), 0)); else if (performance.now()-t0 > 10000) done({timeout: 1, rows: n}); else setTimeout(poll, 5); })();""", t, n_before)
        time.sleep(1)
        lt1 = lt_since(t)
        t = js("return performance.now()")
        d.find_element(By.ID, "undo").click()
        r3 = d.execute_async_script("""const done = arguments[arguments.length - 1]; const t0 = arguments[0]; const n0 = arguments[1];
          (function poll() { const n = document.querySelectorAll('#people li').length; if (n !== n0) requestAnimationFrame(() => setTimeout(() => done({ms: performance.now() - t0, rows: n}), 0)); else if (performance.now()-t0 > 10000) done({timeout: 1, rows: n}); else setTimeout(poll, 5); })();""", t, r2.get("rows"))
        out("restore", dialog=r1, restore_applied=r2, restore_longtasks_ms=[round(x["dur"]) for x in lt1], undo_restore=r3, longtasks_ms=[round(x["dur"]) for x in lt_since(t)])
finally:
    d.quit()

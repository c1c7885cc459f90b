"""Simulated teammates editing other people in a room over the WebSocket protocol.
usage: python teammates.py ROOM [--n 4] [--rate 6] [--secs 60] [--avoid TAG,...] [--port 18431] [--kinds set,pref,text,move]
rate = edits per second in total across all teammates. Prints counts at the end."""
import asyncio, json, random, sys, time, argparse, websockets
ap = argparse.ArgumentParser(); ap.add_argument("room"); ap.add_argument("--n", type=int, default=4)
ap.add_argument("--rate", type=float, default=6); ap.add_argument("--secs", type=float, default=60)
ap.add_argument("--avoid", default=""); ap.add_argument("--port", default="18431"); ap.add_argument("--kinds", default="set,pref,text")
ap.add_argument("--near", type=int, default=0, help="if >0, only edit people among the first NEAR rows")
a = ap.parse_args()
avoid = {int(x) for x in a.avoid.split(",") if x}
HC = "black brown blonde red gray white".split(); EC = "black brown blue green gray hazel".split()
TOP = "sports music movies books travel food art weather politics technology".split()
stats = {"sent": 0, "acked": 0, "errors": 0}
async def mate(name, delay):
    rnd = random.Random(f"{name}{time.time()}")
    async with websockets.connect(f"ws://127.0.0.1:{a.port}/v1/rooms/{a.room}", max_size=None) as ws:
        await ws.send(json.dumps({"type": "hello", "protocol": 1, "user": name}))
        w = json.loads(await ws.recv()); rev = w["rev"]; people = [p for p in w["people"]]
        order = [p["tag"] for p in people]; names = {p["tag"]: p["name"] for p in people}
        seq = 0; state = {"rev": rev}; sent_ops = {}
        async def reader():
            async for m in ws:
                m = json.loads(m)
                if "rev" in m and m["type"] in ("ops", "ack"): state["rev"] = max(state["rev"], m["rev"])
                if m["type"] == "ack": stats["acked"] += 1; stats["noop"] = stats.get("noop", 0) + (not m["ops"]); (not m["ops"]) and stats["noop"] < 6 and print(sent_ops.get(m["seq"]), m, file=sys.stderr)
                if m["type"] == "error": stats["errors"] += 1; print(name, m, file=sys.stderr)
                for op in m.get("ops", []) if m["type"] in ("ops", "ack") else []:
                    if op["op"] == "text":
                        pass
        rt = asyncio.create_task(reader())
        t_end = time.time() + a.secs; await asyncio.sleep(rnd.random() * delay)
        while time.time() < t_end:
            pool = order[:a.near] if a.near else order
            tag = rnd.choice([t for t in pool if t not in avoid] if avoid else pool)
            kind = rnd.choice(a.kinds.split(","))
            if kind == "set":
                f = rnd.choice(["hairColor", "eyeColor", "glasses"])
                v = rnd.random() < .5 if f == "glasses" else rnd.choice(HC if f == "hairColor" else EC)
                ops = [{"op": "set", "tag": tag, "field": f, "value": v}]; label = "Change " + f
            elif kind == "pref":
                ops = [{"op": "preference", "tag": tag, "topic": rnd.choice(TOP), "value": rnd.choice(["like", "dislike", "none"])}]; label = "Change preference"
            elif kind == "move":
                ops = [{"op": "move", "tag": tag, "to": rnd.randrange(len(order))}]; label = "Move person"
            else:
                ops = [{"op": "text", "tag": tag, "edits": [{"retain": 1}, {"insert": rnd.choice("aeiou")}]}]; label = "Edit name"
            seq += 1
            sent_ops[seq] = ops
            await ws.send(json.dumps({"type": "presence", "viewing": tag}))
            await ws.send(json.dumps({"type": "submit", "seq": seq, "base": state["rev"], "ops": ops, "label": label}))
            stats["sent"] += 1
            await asyncio.sleep(delay * (0.5 + rnd.random()))
        rt.cancel()
async def main():
    delay = a.n / a.rate
    await asyncio.gather(*(mate(f"mate{i+1}", delay) for i in range(a.n)))
    print(json.dumps(stats))
asyncio.run(main())

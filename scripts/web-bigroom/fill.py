"""Fill a room with N people over the HTTP API (batches of 10 inserts, as several users), then a few edits.
usage: python fill.py ROOM [N] [PORT]"""
import json, random, sys, urllib.request, time
room = sys.argv[1]; N = int(sys.argv[2]) if len(sys.argv) > 2 else 1000; port = sys.argv[3] if len(sys.argv) > 3 else "18431"
base = f"http://127.0.0.1:{port}/v1/rooms/{room}"
HC = "black brown blonde red gray white".split(); HL = "bald short medium long".split()
EC = "black brown blue green gray hazel".split(); FH = "mustache beard goatee sideburns stubble".split()
TOP = "sports music movies books travel food art weather politics technology".split()
FIRST = "Ada Linus Grace Alan Joan Sam Kim Bob Ann Ben Carol Dana Eve Fay Gus Hal Ivy Jay Kai Lea".split()
LAST = "Smith Jones Brown Lee Wong Garcia Müller Rossi Kowalski Novak Silva Dubois".split()
rnd = random.Random(7)
def post(user, body):
    req = urllib.request.Request(f"{base}/batches?user={user}", data=json.dumps(body).encode(), method="POST")
    while True:
        try:
            return json.load(urllib.request.urlopen(req))
        except urllib.error.HTTPError as e:
            if e.code == 429: time.sleep(0.5); continue
            raise
def person(i):
    t = rnd.sample(TOP, 4)
    return {"name": f"{rnd.choice(FIRST)} {rnd.choice(LAST)} {i}", "hairColor": rnd.choice(HC), "hairLength": rnd.choice(HL),
            "eyeColor": rnd.choice(EC), "glasses": rnd.random() < .4, "facialHair": sorted(rnd.sample(FH, rnd.randint(0, 2)), key=FH.index),
            "likes": sorted(t[:2], key=TOP.index), "dislikes": sorted(t[2:3], key=TOP.index)}
urllib.request.urlopen(urllib.request.Request(base, data=b"{\"people\":[]}", method="PUT")).read()
rev = 0; i = 0; users = ["ann", "bob", "carol", "dana"]
while i < N:
    k = min(10, N - i)
    ops = [{"op": "insert", "at": i + j, "person": person(i + j + 1)} for j in range(k)]
    r = post(users[(i // 10) % 4], {"base": rev, "key": f"fill-{i}", "label": "Add people", "ops": ops})
    rev = r["rev"]; i += k
print("rev", rev, "people", len(json.load(urllib.request.urlopen(base))["people"]))

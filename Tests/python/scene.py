"""A room with named users (one connection each) that records every revision made, so a test can check
at the end that every connection saw exactly the other users' revisions, in order, with the ops as
applied, and that every local model (and a fresh hello) agrees on the final state."""

from __future__ import annotations

import copy
import time

from pkclient import HubClient, norm


class Scene:
    def __init__(self, hub, room: str, users=("A", "B", "C"), seed=None):
        self.hub = hub
        self.room = room
        self.clients: dict[str, HubClient] = {}
        self.revlog: list[tuple[int, str, str, list]] = []  # (rev, user, kind, ops as applied)
        for u in users:
            c = hub.join(room, u)
            self.clients[u] = c
            assert c.welcome["rev"] == 0, c.welcome
            assert "people" in c.welcome, c.welcome
            if seed is not None:
                assert norm(c.people) == norm(seed)
            assert c.welcome["history"].get("canUndo") is False, c.welcome
            assert c.welcome["history"].get("canRedo") is False, c.welcome
        self.start = copy.deepcopy(self.clients[users[0]].people)

    def __getitem__(self, user: str) -> HubClient:
        return self.clients[user]

    @property
    def rev(self) -> int:
        return self.revlog[-1][0] if self.revlog else 0

    def _record(self, user, kind, reply):
        if "rev" in reply and reply["ops"]:
            assert reply["rev"] == self.rev + 1, (reply, self.revlog)
            self.revlog.append((reply["rev"], user, kind, reply["ops"]))

    def edit(self, user: str, ops: list, **kw) -> dict:
        ack = self.clients[user].edit(ops, **kw)
        self._record(user, "edit", ack)
        return ack

    def undo(self, user: str, **kw) -> dict:
        r = self.clients[user].undo(**kw)
        self._record(user, "undo", r)
        return r

    def redo(self, user: str, **kw) -> dict:
        r = self.clients[user].redo(**kw)
        self._record(user, "redo", r)
        return r

    def sync(self, *users: str) -> None:
        for u in users or self.clients:
            self.clients[u].sync(self.rev)

    def people(self, user: str = "A") -> list:
        c = self.clients[user]
        c.sync(self.rev)
        return c.people

    def check(self, expected: list) -> None:
        """Every connection converged on `expected`, saw every other user's revision exactly once, in
        order, with the same ops as applied; a fresh hello gets the same people at the same rev."""
        for c in self.clients.values():
            c.sync(self.rev)
        time.sleep(0.15)  # let any extra (wrong) frame arrive
        for u, c in self.clients.items():
            c.pump(0.01)
            assert c.rev == self.rev, (u, c.rev, self.rev)
            assert norm(c.people) == norm(expected), f"{u}'s model: {c.people}\nexpected: {expected}"
            got = [(m["rev"], m["author"], m["kind"], m["ops"]) for m in c.log if m["type"] == "ops"]
            want = [x for x in self.revlog if x[1] != u]
            assert got == want, f"{u} received ops frames {got}\nexpected {want}"
        fresh = self.hub.join(self.room, "observer-fresh")
        try:
            assert fresh.welcome["rev"] == self.rev, fresh.welcome
            assert norm(fresh.welcome["people"]) == norm(expected), fresh.welcome["people"]
        finally:
            fresh.close()

    def close(self) -> None:
        for c in self.clients.values():
            c.close()

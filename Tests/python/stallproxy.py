"""A TCP proxy on loopback that can go silent: a network that stalls without closing anything.

`StallProxy(target_port)` listens on 127.0.0.1 (`.port`) and passes bytes both ways to the target. After
`stall()`, nothing passes any more on the connections open then (they stay open, silent, as over a dead
Wi-Fi: neither side hears a close), and connections accepted while stalled are held open and never
connected on (an upgrade that is never answered). `resume()` lets new connections through again; the
ones that went silent stay silent. `close()` ends everything. `delay` (seconds) holds each new
connection that long before connecting it on: a hub slow to answer the upgrade. `hold_down()` keeps
what the target sends (the client's sends still go), `held_down()` says what is kept, and
`release_down()` passes it on in one write: frames the target sent apart reach the client together.
"""

from __future__ import annotations

import select
import socket
import threading


class StallProxy:
    def __init__(self, target_port: int, delay: float = 0.0):
        self.target = ("127.0.0.1", target_port)
        self.delay = delay
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.stalled = False
        self.closed = False
        self.accepted = 0
        self.pairs: list[dict] = []   # {"sockets": [...], "silent": bool, "held": bytearray}
        self.holding_down = False
        threading.Thread(target=self._accept, daemon=True).start()

    def stall(self) -> None:
        with self.lock:
            self.stalled = True
            for pair in self.pairs:
                pair["silent"] = True

    def resume(self) -> None:
        with self.lock:
            self.stalled = False

    def hold_down(self) -> None:
        with self.lock:
            self.holding_down = True

    def held_down(self) -> bytes:
        with self.lock:
            return b"".join(bytes(pair.get("held", b"")) for pair in self.pairs)

    def release_down(self) -> None:
        """What was kept goes on (each connection's in one write, by its pump) and nothing more is kept."""
        with self.lock:
            self.holding_down = False

    def close(self) -> None:
        with self.lock:
            self.closed = True
            pairs, self.pairs = self.pairs, []
        self.listener.close()
        for pair in pairs:
            for s in pair["sockets"]:
                s.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.accepted += 1
                if self.closed:
                    client.close()
                    return
                if self.stalled:
                    self.pairs.append({"sockets": [client], "silent": True})
                    continue
            threading.Thread(target=self._connect_on, args=(client,), daemon=True).start()

    def _connect_on(self, client: socket.socket) -> None:
        if self.delay:
            threading.Event().wait(self.delay)
        try:
            upstream = socket.create_connection(self.target, timeout=5)
        except OSError:
            client.close()
            return
        pair = {"sockets": [client, upstream], "silent": False, "held": bytearray()}
        with self.lock:
            self.pairs.append(pair)
        self._pump(pair)

    def _pump(self, pair: dict) -> None:
        client, upstream = pair["sockets"]
        other = {client: upstream, upstream: client}
        # poll, not select: a pytest worker that ran many tests before may hand out descriptors past
        # select's 1024 (the whole suite's run failed so, session 22).
        poller = select.poll()
        for s in (client, upstream):
            poller.register(s, select.POLLIN)
        by_fd = {client.fileno(): client, upstream.fileno(): upstream}
        while True:
            with self.lock:
                if self.closed:
                    return
                silent = pair["silent"]
                flush = bytes(pair["held"]) if not self.holding_down and pair["held"] else b""
                if flush:
                    pair["held"].clear()
            if flush:
                try:
                    client.sendall(flush)
                except OSError:
                    return self._finish(pair)
            if silent:
                # Silent for good: read nothing (so no close is seen either), send nothing.
                threading.Event().wait(0.2)
                continue
            try:
                ready = [by_fd[fd] for fd, _ in poller.poll(100)]
                for s in ready:
                    with self.lock:
                        if pair["silent"]:
                            break
                    data = s.recv(65536)
                    if not data:
                        other[s].shutdown(socket.SHUT_WR)
                        return self._finish(pair)
                    if s is upstream:
                        # Decided as the bytes come (a hold that began during the poll holds them).
                        with self.lock:
                            if self.holding_down or pair["held"]:
                                pair["held"] += data
                                if self.holding_down:
                                    continue
                                data = bytes(pair["held"])
                                pair["held"].clear()
                    other[s].sendall(data)
            except OSError:
                return self._finish(pair)

    def _finish(self, pair: dict) -> None:
        for s in pair["sockets"]:
            try:
                s.close()
            except OSError:
                pass

#!/usr/bin/env python3
"""Webhook endpoints for scripts/bench-http.sh (part 2): one process, one asyncio loop, one port each.

    webhook_receiver.py PORTS_FILE RECORDS_FILE SLOW_SECONDS FAST_COUNT SLOW_COUNT

Listens on FAST_COUNT + SLOW_COUNT free ports of 127.0.0.1 and writes them to PORTS_FILE once
listening, one `PORT fast|slow` per line, fast ones first. A fast endpoint answers `200` as soon as a request is whole; a
slow one answers each request SLOW_SECONDS after it arrived. For every request it keeps the time the
request was whole (time.time(), before any sleep), the PeopleKeeper-Signature header and the raw body;
nothing is parsed on the hot path. On SIGUSR1 it writes them to RECORDS_FILE as JSON lines
`[endpoint, received_ms, signature, body]` (written beside it, then renamed) and goes on answering,
so the hub can be stopped before the endpoints go away; SIGTERM ends it.

A hand-written HTTP/1.1 parser on asyncio.Protocol (keep-alive, Content-Length bodies only, which is
what AsyncHTTPClient sends here), because a framework's per-request cost would be charged to the
hub's lag at ~3,000 POST/s.
"""
import asyncio, json, os, signal, socket, sys, time

ports_file, records_file, slow_seconds, fast_count, slow_count = (sys.argv[1], sys.argv[2], float(sys.argv[3]),
                                                                    int(sys.argv[4]), int(sys.argv[5]))
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
BAD = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
records = []


class Endpoint(asyncio.Protocol):
    def __init__(self, index, slow):
        self.index, self.slow, self.buf = index, slow, b""

    def connection_made(self, transport):
        self.transport = transport
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data):
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end].lower()
            at = head.find(b"content-length:")
            line_end = head.find(b"\r\n", at)
            length = int(head[at + 15:line_end if line_end > 0 else len(head)]) if at >= 0 else -1
            if length < 0:
                self.transport.write(BAD)
                self.transport.close()
                return
            if len(self.buf) < end + 4 + length:
                return
            now = time.time() * 1000
            body = self.buf[end + 4:end + 4 + length]
            at = head.find(b"peoplekeeper-signature:")
            signature = self.buf[at + 23:self.buf.find(b"\r\n", at)].strip().decode() if at >= 0 else ""
            self.buf = self.buf[end + 4 + length:]
            records.append((self.index, now, signature, body))
            if self.slow:
                asyncio.get_running_loop().call_later(slow_seconds, self.answer)
            else:
                self.transport.write(OK)

    def answer(self):
        if not self.transport.is_closing():
            self.transport.write(OK)


async def main():
    loop = asyncio.get_running_loop()
    servers = []
    for index in range(fast_count + slow_count):
        servers.append(await loop.create_server(lambda i=index: Endpoint(i, i >= fast_count), "127.0.0.1", 0, backlog=128))
    with open(ports_file + ".tmp", "w") as f:
        f.write("".join(f"{s.sockets[0].getsockname()[1]} {'slow' if i >= fast_count else 'fast'}\n"
                        for i, s in enumerate(servers)))
    os.replace(ports_file + ".tmp", ports_file)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, dump)
    await stop.wait()


def dump():
    with open(records_file + ".tmp", "w") as f:
        for index, received, signature, body in records:
            f.write(json.dumps([index, received, signature, body.decode()]) + "\n")
    os.replace(records_file + ".tmp", records_file)


asyncio.run(main())

#!/usr/bin/env python3
# pycrdt-websocket's WebsocketServer (the Yjs sync server from PyPI) on a websockets >= 14 listener,
# the peer of issue 8's side-by-side benchmark. A room is the request path, as in pycrdt-websocket's
# own examples; nothing is persisted (no YStore). Prints `pycrdt listening on ws://127.0.0.1:PORT/`
# as its first stdout line; SIGTERM / SIGINT stop it (exit 0).
#
#   .build/bench-venv/bin/python scripts/pycrdt_server.py [--port PORT] [--no-join-lock]
#
# --port 0 (the default) takes a free port. Run from the bench venv (scripts/bench-venv.sh).
#
# Two things pycrdt-websocket 0.16.5 needs around it (both seen with this script; see
# docs/PERFORMANCE.md):
#   - Its `serve` takes a pycrdt Channel (path, send, recv, async iteration). The documented one-liner
#     `websockets.serve(server.serve, ...)` passes a websockets connection, which since websockets 14
#     has no `.path` (it is `connection.request.path`), so every join fails with AttributeError.
#     WebsocketsChannel adapts the connection.
#   - WebsocketServer.get_room / start_room are not safe when clients join a room that does not exist
#     yet at the same moment: each sees the room not started and calls `room.start`; the first holds
#     the room's start lock for the room's lifetime, so the others wait for ever and their clients
#     hang after the WebSocket handshake (no sync step 1). The first join of a room is serialised with
#     one asyncio.Lock per room name (--no-join-lock turns this off, to show the hang).
import argparse
import asyncio
import logging
import os
import signal
import sys

from pycrdt.websocket import WebsocketServer, exception_logger
from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed


class WebsocketsChannel:
    """A websockets (>= 14, asyncio) server connection as the pycrdt Channel that
    WebsocketServer.serve / YRoom.serve expect."""

    __slots__ = ("_connection", "_path")

    def __init__(self, connection):
        self._connection = connection
        self._path = connection.request.path

    @property
    def path(self) -> str:
        return self._path

    def __aiter__(self):
        return self

    async def __anext__(self) -> bytes:
        try:
            return await self.recv()
        except ConnectionClosed:
            raise StopAsyncIteration() from None

    async def send(self, message: bytes) -> None:
        # YRoom broadcasts with one task per client per update; a client that has gone must not take
        # the room's task group (and with it the room) down.
        try:
            await self._connection.send(message)
        except ConnectionClosed:
            pass

    async def recv(self) -> bytes:
        message = await self._connection.recv()
        return message if isinstance(message, bytes) else message.encode()


async def main() -> None:
    parser = argparse.ArgumentParser(description="pycrdt-websocket server for the benchmark")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--no-join-lock", action="store_true",
                        help="do not serialise a room's first join (shows pycrdt-websocket's hang)")
    args = parser.parse_args()

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    log = logging.getLogger("pycrdt_server")
    join_locks: dict[str, asyncio.Lock] = {}

    async with WebsocketServer(exception_handler=exception_logger, log=log) as ywss:

        async def handler(connection) -> None:
            channel = WebsocketsChannel(connection)
            if not args.no_join_lock:
                # Create and start the room once; WebsocketServer.serve then finds it started.
                lock = join_locks.setdefault(channel.path, asyncio.Lock())
                async with lock:
                    await ywss.get_room(channel.path)
            await ywss.serve(channel)

        stop = asyncio.get_running_loop().create_future()
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, lambda: stop.done() or stop.set_result(None))
        async with serve(handler, args.host, args.port, max_size=None) as listener:
            port = listener.sockets[0].getsockname()[1]
            print(f"pycrdt listening on ws://{args.host}:{port}/", flush=True)
            await stop
            # Close every connection (1001); a handler stuck in pycrdt-websocket (the join hang, with
            # --no-join-lock) never returns, so give up after 3 s: nothing here is persisted.
            listener.close()
            try:
                await asyncio.wait_for(listener.wait_closed(), 3)
            except TimeoutError:
                pass
            os._exit(0)


if __name__ == "__main__":
    asyncio.run(main())

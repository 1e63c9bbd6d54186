"""A TCP proxy in front of Postgres that can lose the answer to a commit.

What a failover does to a client: the statement reached the server and was
committed, and the connection died before the answer came back. `lose_answer(marker)`
arms it: the next message a client sends that contains `marker` goes through,
and so does everything until the server reports that message's transaction ended
(ReadyForQuery, idle): that answer is dropped and the client's connection closed.
The commit has happened (a statement on its own, or the COMMIT that follows it in
a transaction) and the client never hears of it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

_COMMITTED = b"Z\x00\x00\x00\x05I"
"""ReadyForQuery with the transaction status idle: whatever ran is committed."""


@dataclass
class LossyProxy:
    upstream: tuple[str, int]
    port: int = 0
    marker: bytes | None = None
    lost: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once an answer was lost (the commit happened, the client was cut off)."""
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def lose_answer(self, marker: bytes) -> None:
        self.marker, self.lost = marker, asyncio.Event()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        armed = asyncio.Event()

        async def client_to_server() -> None:
            while data := await reader.read(65536):
                if self.marker is not None and self.marker in data:
                    self.marker = None
                    armed.set()
                up_writer.write(data)
                await up_writer.drain()

        async def server_to_client() -> None:
            while data := await up_reader.read(65536):
                if armed.is_set() and _COMMITTED in data:
                    self.lost.set()
                    return  # the transaction is committed; its answer goes nowhere
                writer.write(data)
                await writer.drain()

        pumps = [asyncio.ensure_future(client_to_server()),
                 asyncio.ensure_future(server_to_client())]  # fmt: skip
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            for closing in (writer, up_writer):
                closing.close()
                with contextlib.suppress(Exception):
                    await closing.wait_closed()

    def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(self._serve(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @classmethod
    @contextlib.asynccontextmanager
    async def running(cls, host: str, port: int) -> AsyncIterator[LossyProxy]:
        proxy = cls((host, port))
        proxy._server = await asyncio.start_server(proxy._accepted, "127.0.0.1", 0)
        proxy.port = proxy._server.sockets[0].getsockname()[1]
        try:
            yield proxy
        finally:
            proxy._server.close()
            for task in list(proxy._tasks):
                task.cancel()
            await asyncio.gather(*proxy._tasks, return_exceptions=True)

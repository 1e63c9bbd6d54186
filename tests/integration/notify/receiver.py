"""A real local HTTP server that receives notifications, answering as a test scripts it.

    async with Receiver.running(answers=[500, 200]) as receiver:
        ...                                   # point a webhook at receiver.url
        [first, second] = await receiver.received(2)

Each answer is a status code, HANG (hold the request until the server
closes) or Slow(status, seconds). After the script runs out it answers 200.
Every request is kept with its headers and body exactly as they arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

HANG = -1


@dataclass(frozen=True)
class Slow:
    """Answer `status`, `seconds` after the request arrived."""

    status: int
    seconds: float


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    url: str
    answers: list[int | Slow]
    requests: list[Received] = field(default_factory=list)
    _arrived: asyncio.Condition = field(default_factory=asyncio.Condition)
    _closing: asyncio.Event = field(default_factory=asyncio.Event)

    @classmethod
    @contextlib.asynccontextmanager
    async def running(
        cls, answers: Sequence[int | Slow] = (), path: str = "/hook"
    ) -> AsyncIterator[Receiver]:
        receiver: Receiver | None = None

        async def handle(request: web.Request) -> web.StreamResponse:
            assert receiver is not None
            kept = Received(request.path_qs, dict(request.headers), await request.read())
            async with receiver._arrived:
                receiver.requests.append(kept)
                receiver._arrived.notify_all()
            answer = receiver.answers.pop(0) if receiver.answers else 200
            if isinstance(answer, Slow):
                await asyncio.sleep(answer.seconds)  # the scripted delay is the behaviour
                answer = answer.status
            if answer == HANG:
                await receiver._closing.wait()
            if 300 <= answer < 400:
                return web.Response(status=answer, headers={"Location": "http://127.0.0.1:9/"})
            return web.Response(status=max(answer, 200), text="ok")

        app = web.Application()
        app.router.add_post(path, handle)
        runner = web.AppRunner(app, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        receiver = cls(f"http://127.0.0.1:{port}{path}", list(answers))
        try:
            yield receiver
        finally:
            receiver._closing.set()
            await runner.cleanup()

    async def received(self, count: int, within: float = 20.0) -> list[Received]:
        """The first `count` requests, once that many have arrived."""
        async with asyncio.timeout(within), self._arrived:
            await self._arrived.wait_for(lambda: len(self.requests) >= count)
            return self.requests[:count]

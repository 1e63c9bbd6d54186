"""A loopback HTTP endpoint that answers each POST with the next status of a script.

async with answering([503, 204]) as url:
    ...   # the first POST to url gets 503, every later one 204

`heard`, when given, gets each request's headers in the order they came.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator, Mapping, Sequence

from aiohttp import web


@contextlib.asynccontextmanager
async def answering(
    statuses: Sequence[int], heard: list[Mapping[str, str]] | None = None
) -> AsyncIterator[str]:
    script = list(statuses)

    async def handle(request: web.Request) -> web.Response:
        await request.read()
        if heard is not None:
            heard.append(dict(request.headers))
        return web.Response(status=script.pop(0) if len(script) > 1 else script[0])

    app = web.Application()
    app.router.add_post("/hook", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/hook"
    finally:
        await runner.cleanup()


def refusing_url() -> str:
    """A loopback URL where nothing listens: connecting is refused."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"

"""wheel runs on uvloop where it is installed, in tests as in production."""

from __future__ import annotations

import asyncio

import uvloop

from wheel import eventloop


async def test_async_tests_run_on_uvloop() -> None:
    assert isinstance(asyncio.get_running_loop(), uvloop.Loop)


def test_run_uses_uvloop() -> None:
    async def which() -> type[asyncio.AbstractEventLoop]:
        return type(asyncio.get_running_loop())

    assert eventloop.run(which()) is uvloop.Loop

"""Waiting for the signal that stops a long-running command (SIGINT or SIGTERM)."""

from __future__ import annotations

import asyncio
import signal

SIGNALS = (signal.SIGINT, signal.SIGTERM)


async def wait_for_stop_signal() -> signal.Signals:
    """Return the first SIGINT or SIGTERM received."""
    loop = asyncio.get_running_loop()
    received: asyncio.Future[signal.Signals] = loop.create_future()

    def on_signal(sig: signal.Signals) -> None:
        if not received.done():
            received.set_result(sig)

    for sig in SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        return await received
    finally:
        for sig in SIGNALS:
            loop.remove_signal_handler(sig)

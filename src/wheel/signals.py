"""The signals that stop a long-running command (SIGINT or SIGTERM): waiting for the
first, and `wheel dev`'s two-step stop (in order, then at once)."""

from __future__ import annotations

import asyncio
import signal
from types import FrameType

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


class StopSignals:
    """SIGINT and SIGTERM for the whole of `wheel dev`: the first asks it to stop in order,
    a second to stop now (what is left is killed).

    Plain signal handlers, not the loop's: they note the signal at once even while
    the main thread blocks starting etcd and Postgres (which must start on it), and
    raise nothing, so no half-started server is left behind by an exception.
    """

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.received: signal.Signals | None = None
        self.first: asyncio.Future[signal.Signals] = self._loop.create_future()
        self.again = asyncio.Event()
        self._announced = False
        self._previous = {sig: signal.signal(sig, self._handle) for sig in SIGNALS}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        sig = signal.Signals(signum)
        if self.received is None:
            self.received = sig
            self._loop.call_soon_threadsafe(self._first, sig)
        else:
            self._loop.call_soon_threadsafe(self._again, sig)

    def _first(self, sig: signal.Signals) -> None:
        if not self.first.done():
            self.first.set_result(sig)

    def _again(self, sig: signal.Signals) -> None:
        if not self.again.is_set():
            print(f"wheel dev: {sig.name} again, killing what is left", flush=True)
            self.again.set()

    @property
    def stopping(self) -> bool:
        return self.received is not None

    def announce(self) -> None:
        """Say, once, which signal is stopping us."""
        if self.received is not None and not self._announced:
            self._announced = True
            print(f"wheel dev: {self.received.name} received, stopping", flush=True)

    def remove(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)

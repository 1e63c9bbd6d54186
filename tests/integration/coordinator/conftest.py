"""An etcd of a test's own, for tests that stop, pause or restart it."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator

import pytest

from tests.services import service_data_root
from wheel.local import EtcdServer


@pytest.fixture
def own_etcd() -> Iterator[EtcdServer]:
    root = service_data_root()
    server = EtcdServer.start(root / "etcd", durable=False)
    try:
        yield server
    finally:
        if server.process.poll() is None:
            os.kill(server.process.pid, signal.SIGCONT)  # a test may have left it stopped
        server.stop()
        shutil.rmtree(root, ignore_errors=True)

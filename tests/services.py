"""The local servers' shared facts for tests: where their data lives, the template
database, cleaning a cluster's etcd keys, and a Postgres to crash."""

from __future__ import annotations

import asyncio
import functools
import shutil
import signal
import tempfile
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from wheel.coordinator.etcd import Etcd
from wheel.errors import StoreError
from wheel.local import LocalServices, process
from wheel.local.postgres import PostgresServer
from wheel.store.pool import Pool
from wheel.store.translate import translated

TEMPLATE_DATABASE = "wheel_template"
WHEEL_DATABASE = "wheel"


def service_data_root() -> Path:
    """A fresh directory for server data that Postgres's user can reach when we are root.

    Not pytest's tmp_path: /tmp/pytest-of-root is private to root by design.
    """
    root = Path(tempfile.mkdtemp(prefix="wheel-test-"))
    root.chmod(0o755)  # ours, made for this; nothing above it is loosened
    return root


async def delete_cluster_keys(local_services: LocalServices, cluster: str) -> None:
    """Remove everything a cluster of that name left in etcd (`/wheel/<cluster>/`)."""
    client = await Etcd.connect(local_services.etcd.endpoint)
    try:
        await client.delete_prefix(f"/wheel/{cluster}/")
    finally:
        await client.close()


class CrashablePostgres:
    """A durable Postgres of its own that can be crashed and started again on its port.

    Durable (fsync, synchronous commit): a crash loses nothing it acknowledged, as in
    production; the suite's shared server trades that for speed. It is started and
    restarted on a thread of its own, which it dies with (its death signal is tied to the
    thread that spawned it), so the event loop runs on while it starts.

        postgres = await CrashablePostgres.start()
        await postgres.crash()
        back_at = await postgres.restart()
    """

    def __init__(self, root: Path, server: PostgresServer, spawner: ThreadPoolExecutor) -> None:
        self._root = root
        self.server = server
        self._spawner = spawner
        self.dsn = server.dsn(WHEEL_DATABASE)

    @classmethod
    async def start(cls) -> CrashablePostgres:
        root, spawner = service_data_root(), ThreadPoolExecutor(1, "postgres")
        server = await asyncio.get_running_loop().run_in_executor(
            spawner, functools.partial(PostgresServer.start, root / "postgres")
        )
        server.ensure_database(WHEEL_DATABASE)
        return cls(root, server, spawner)

    async def crash(self) -> None:
        """Immediate shutdown (SIGQUIT): every backend dies, nothing is checkpointed."""
        await asyncio.to_thread(process.stop, self.server.process, signal.SIGQUIT, 15)

    async def restart(self) -> datetime:
        """Start it again on the same port; returns when it accepts connections."""
        start = functools.partial(
            PostgresServer.start, self._root / "postgres", port=self.server.port
        )
        self.server = await asyncio.get_running_loop().run_in_executor(self._spawner, start)
        return datetime.now(UTC)

    async def close(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._spawner, self.server.stop)
        self._spawner.shutdown()
        shutil.rmtree(self._root, ignore_errors=True)


async def until_answered(pool: Pool, every_s: float = 0.05) -> float:
    """Ask `SELECT 1` through the pool until Postgres answers, as a node's loops keep doing;
    when it did (the loop's clock)."""
    while True:
        try:
            async with translated(), pool.connection() as conn:
                await conn.execute("SELECT 1")
            return asyncio.get_running_loop().time()
        except StoreError:
            await asyncio.sleep(every_s)  # a caller's own retry, not a wait for an event

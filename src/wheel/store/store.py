"""The store: one connection pool and the operations on it, by concern."""

from __future__ import annotations

from dataclasses import dataclass

from wheel.store.calendars import Calendars
from wheel.store.clock import DatabaseClock
from wheel.store.deadlines import Deadlines
from wheel.store.durability import DurabilityReader
from wheel.store.executions import Executions
from wheel.store.jobs import Jobs
from wheel.store.materialising import Materialising
from wheel.store.occurrences import Occurrences
from wheel.store.outbox import Outbox
from wheel.store.pool import Pool, open_pool
from wheel.store.tenants import Tenants
from wheel.store.time_partitions import TimePartitions
from wheel.store.webhooks import Webhooks


@dataclass
class Store:
    """Everything wheel keeps in Postgres.

    store = await Store.open(dsn)
    job = await store.jobs.get(tenant_id, job_id)
    await store.close()
    """

    pool: Pool
    time_partitions: TimePartitions
    occurrences: Occurrences
    jobs: Jobs
    executions: Executions
    tenants: Tenants
    materialising: Materialising
    clock: DatabaseClock
    durability: DurabilityReader
    webhooks: Webhooks
    outbox: Outbox
    deadlines: Deadlines
    calendars: Calendars

    @classmethod
    def over(cls, pool: Pool) -> Store:
        partitions = TimePartitions(pool)
        occurrences = Occurrences(pool, partitions)
        return cls(
            pool=pool,
            time_partitions=partitions,
            occurrences=occurrences,
            jobs=Jobs(pool, occurrences),
            executions=Executions(pool),
            tenants=Tenants(pool),
            materialising=Materialising(pool),
            clock=DatabaseClock(pool),
            durability=DurabilityReader(pool),
            webhooks=Webhooks(pool),
            outbox=Outbox(pool),
            deadlines=Deadlines(pool),
            calendars=Calendars(pool),
        )

    @classmethod
    async def open(
        cls,
        dsn: str,
        *,
        min_size: int = 2,
        max_size: int = 10,
        timeout_s: float = 30,
        name: str = "wheel",
    ) -> Store:
        """`name` names its pool in logs."""
        pool = await open_pool(
            dsn, min_size=min_size, max_size=max_size, timeout_s=timeout_s, name=name
        )
        return cls.over(pool)

    async def close(self) -> None:
        await self.pool.close()

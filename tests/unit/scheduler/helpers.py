"""What the scheduler's unit tests share: runs, executors' hellos, and an engine on a manual
clock over an in-memory stand-in for the store's occurrence operations (the engine's
collaborator; the statements themselves are tested against Postgres)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from wheel.model.executions import (
    AttemptResult,
    Claimed,
    ClaimState,
    DueOccurrence,
    ExecutionStatus,
    Fenced,
    Outcome,
    Recorded,
    Unclaimed,
)
from wheel.model.ids import ExecutionKey, JobId, PartitionId, TenantId
from wheel.scheduler.config import SchedulerConfig
from wheel.scheduler.engine import Engine
from wheel.scheduler.links import Links
from wheel.scheduler.messages import Hello
from wheel.scheduler.ready import Ready
from wheel.store import Store
from wheel.store.occurrences import ClaimOutcome, ExecutorBinding, RecordOutcome
from wheel.timingwheel import ManualClock

T0 = datetime(2026, 1, 1, tzinfo=UTC)
A, B, C = (TenantId(uuid.UUID(int=n)) for n in (1, 2, 3))
TOKEN = uuid.uuid4()
PARTITION = PartitionId(3)


def item(
    tenant: TenantId,
    n: int,
    *,
    priority: int = 0,
    pool: str = "default",
    overlap: str = "allow",
    job: JobId | None = None,
    partition: int = 0,
) -> Ready:
    at = T0 + timedelta(seconds=n)
    key = ExecutionKey(job or JobId(uuid.uuid4()), at)
    return Ready(key, PartitionId(partition), tenant, pool, "task", priority, overlap,
                 int(at.timestamp() * 1000))  # fmt: skip


def unlimited(_: TenantId) -> int:
    return 1_000_000


def hello(executor_id: str, task_types: tuple[str, ...] = ("report",), **fields: Any) -> Hello:
    settings: dict[str, Any] = {"pools": ("default",), "capacity": 10, "instance_id": "i1"}
    settings.update(fields)
    return Hello(executor_id, task_types=task_types, **settings)


def due_runs(
    job: uuid.UUID,
    count: int,
    *,
    task_type: str = "report",
    overlap: str = "wait",
    fire_at: datetime | None = None,
) -> list[DueOccurrence]:
    """`count` runs of one job an hour apart, all due at `fire_at` (default: now)."""
    return [
        DueOccurrence(
            key=ExecutionKey(JobId(job), T0 + timedelta(hours=n)),
            partition=PARTITION,
            fire_at=fire_at or datetime.now(UTC),
            priority=0,
            job_version=1,
            tenant_id=A,
            pool="default",
            task_type=task_type,
            overlap=overlap,
        )
        for n in range(count)
    ]


@dataclass
class MemoryOccurrences:
    """Claims every key it is asked for (fence 1, then one more per claim of it); records
    every result: success is final, anything else goes back to pending at once."""

    timeout_s: float = 60.0
    claims: list[list[ExecutionKey]] = field(default_factory=list)
    waited: list[list[str]] = field(default_factory=list)
    """Per claim: what each key said it waited for."""
    recorded: list[AttemptResult] = field(default_factory=list)
    fences: dict[ExecutionKey, int] = field(default_factory=dict)
    due: dict[ExecutionKey, DueOccurrence] = field(default_factory=dict)
    answers: dict[ExecutionKey, ClaimState] = field(default_factory=dict)
    """Keys the claim sees and does not take, and why (the rest it claims)."""
    asked: asyncio.Event = field(default_factory=asyncio.Event)
    """Set by every claim."""
    lapsed: list[Fenced] = field(default_factory=list)
    """Attempts whose lease has lapsed: the next reap takes those it does not spare."""
    spared: list[set[Fenced]] = field(default_factory=list)
    """What each reap was asked to spare."""
    heartbeats_open: asyncio.Event = field(default_factory=asyncio.Event)
    """Heartbeats wait for this (`bench` sets it; clear it and they wait: the store away)."""
    records_open: asyncio.Event = field(default_factory=asyncio.Event)
    """Results wait for this, as heartbeats do."""

    async def claim_batch(
        self,
        keys: Sequence[ExecutionKey],
        epochs: Mapping[PartitionId, int],
        *,
        lease_s: float,
        ahead_s: float,
        executors: Sequence[ExecutorBinding] | None = None,
        tenant_ids: Collection[TenantId] | None = None,
        waited: Sequence[str] | None = None,
    ) -> ClaimOutcome:
        self.claims.append(list(keys))
        self.waited.append(list(waited or [""] * len(keys)))
        self.asked.set()
        claimed = []
        unclaimed = [Unclaimed(k, self.answers[k], self.due[k].fire_at)
                     for k in keys if k in self.answers]  # fmt: skip
        for key in (k for k in keys if k not in self.answers):
            fence = self.fences[key] = self.fences.get(key, 0) + 1
            due = self.due[key]
            claimed.append(
                Claimed(
                    key=key,
                    tenant_id=due.tenant_id,
                    partition=due.partition,
                    fence=fence,
                    attempt=fence,
                    lease_until=due.fire_at + timedelta(seconds=lease_s),
                    job_version=1,
                    task_type=due.task_type,
                    payload=b"p",
                    pool=due.pool,
                    priority=0,
                    timeout_s=self.timeout_s,
                    fire_at=due.fire_at,
                )
            )
        return ClaimOutcome(claimed, unclaimed)

    async def record_results(self, results: Iterable[AttemptResult]) -> RecordOutcome:
        await self.records_open.wait()
        recorded = []
        for result in results:
            self.recorded.append(result)
            final = result.outcome is Outcome.SUCCEEDED
            status = ExecutionStatus.SUCCEEDED if final else ExecutionStatus.PENDING
            fire_at = self.due[result.key].fire_at
            recorded.append(Recorded(result.key, result.fence, status, fire_at, result.fence))
        return RecordOutcome(recorded, [])

    async def heartbeat(
        self, items: Sequence[Fenced], *, executor: ExecutorBinding, lease_s: float
    ) -> list[Fenced]:
        await self.heartbeats_open.wait()
        return []

    async def reap(
        self,
        epochs: Mapping[PartitionId, int],
        *,
        limit: int = 1000,
        spare: Collection[Fenced] = (),
    ) -> list[Recorded]:
        """The lapsed attempts not spared, each its run's last (dead: nothing is retried)."""
        self.spared.append(set(spare))
        taken = [f for f in self.lapsed if f not in spare]
        self.lapsed = [f for f in self.lapsed if f in spare]
        return [Recorded(f.key, f.fence, ExecutionStatus.DEAD, self.due[f.key].fire_at, f.fence)
                for f in taken]  # fmt: skip

    async def skip(self, keys: Sequence[ExecutionKey], reason: str) -> list[ExecutionKey]:
        return list(keys)

    async def skip_queued(
        self, pairs: Sequence[tuple[ExecutionKey, ExecutionKey]]
    ) -> list[ExecutionKey]:
        return [key for key, _ in pairs]


@dataclass
class Bench:
    """An engine on a manual clock over `MemoryOccurrences`, owning `PARTITION`."""

    engine: Engine
    clock: ManualClock
    occurrences: MemoryOccurrences
    links: Links

    def add(self, due: Sequence[DueOccurrence]) -> int:
        for occurrence in due:
            self.occurrences.due[occurrence.key] = occurrence
        return self.engine.add_due(due)

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock.wall_ms() / 1000, UTC)


@dataclass
class Heard:
    """An observer that keeps what it hears (the metrics' seat)."""

    events: list[tuple[str, object]] = field(default_factory=list)

    def claimed(self, seconds: float, size: int) -> None:
        self.events.append(("claimed", size))

    def recorded(self, seconds: float, size: int) -> None:
        self.events.append(("recorded", size))

    def dispatched(self, lateness_s: float) -> None:
        self.events.append(("dispatched", lateness_s))

    def refused(self, kind: str, reason: str, count: int) -> None:
        self.events.append(("refused", (kind, reason, count)))

    def attempt_recorded(self, outcome: Outcome) -> None:
        self.events.append(("attempt", outcome))

    def execution_finished(self, status: ExecutionStatus) -> None:
        self.events.append(("finished", status))

    def skipped(self, reason: str, count: int) -> None:
        self.events.append(("skipped", (reason, count)))


def bench(*, observer: Heard | None = None, **settings: Any) -> Bench:
    config = SchedulerConfig(
        node_id="n", postgres_dsn="postgresql://x", etcd_endpoint="e:1", **settings
    )
    clock = ManualClock(wall_ms=int(T0.timestamp() * 1000))
    occurrences = MemoryOccurrences()
    occurrences.heartbeats_open.set()
    occurrences.records_open.set()
    store = cast(Store, type("MemoryStore", (), {"occurrences": occurrences})())
    links = Links(clock=clock)
    engine = Engine(config, store, links, clock=clock, alarm=clock, observer=observer)
    engine.own(PARTITION, 1)
    return Bench(engine, clock, occurrences, links)

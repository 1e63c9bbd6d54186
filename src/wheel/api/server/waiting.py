"""Why a run that is not running yet is not running: one word and its sentence.

    reader = WaitingReader(store, etcd, layout, served=served)
    why = (await reader.of_page(tenant, executions))[execution.key]
    why.word  # Waiting.UNSERVED
    why.detail  # "due 4.0 s ago; no connected executor serves task type 'x'; ..."

The classification is `classify`, a pure function of the run, its job and the facts
that hold now (`Facts`): the list APIs show its word beside every pending run and
`explain` answers with its sentence, so the two never disagree. It checks, in this
order, what holds now: the job is paused; the run is not due yet (waiting, or
retrying after a failed attempt); a schedule edit is being carried over; no node
owns its partition; no executor is connected to the owner; none there serves its
task type (unserved); the task type's circuit breaker is open (parked); another run
of the job is in flight and the overlap policy makes it wait (behind a running run);
the tenant is at its in-flight cap (capped); it has just become due (due); it waits
for executor capacity (queued) — overdue once that has lasted OVERDUE_AFTER_S.

The facts cost a fixed number of round trips whatever the page holds: the
partitions' owners and the open breakers (two etcd prefix reads), the executors
(`ServedView`, cached), the runs in flight of the page's jobs and the tenant's
in-flight count (one statement each). None are read for a page without due runs.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from wheel.api.server.served import Served, ServedView
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout, decode
from wheel.errors import first_line
from wheel.model.executions import (
    OVERDUE_AFTER_S,
    Execution,
    ExecutionStatus,
    RunsToWatch,
    Trigger,
    of_try,
)
from wheel.model.http_tasks import HTTP_POOL, is_http_task_type
from wheel.model.ids import ExecutionKey, JobId, TenantId
from wheel.model.jobs import Job, JobStatus, OverlapPolicy, ScheduleKind
from wheel.model.pauses import Pause
from wheel.model.tenants import Tenant
from wheel.store import Store

JUST_DUE_S = 1.0
"""A run due less than this long ago is being claimed, not waiting for anything."""


class Waiting(enum.StrEnum):
    """Why a pending run is not running, in a word (what lists show instead of "pending")."""

    PAUSED = "paused"
    WAITING = "waiting"
    """Not due yet."""
    RETRYING = "retrying"
    """An attempt failed; the next fires after its backoff."""
    NO_NODE = "no node"
    NO_EXECUTOR = "no executor"
    UNSERVED = "unserved"
    """No connected executor serves its task type (in its pool)."""
    PARKED = "parked"
    BEHIND = "behind a running run"
    CAPPED = "capped"
    """Its tenant is at its in-flight cap."""
    DUE = "due"
    """Just due: being claimed."""
    QUEUED = "queued"
    """Waiting for executor capacity."""
    OVERDUE = "overdue"
    """Queued for longer than OVERDUE_AFTER_S."""


@dataclass(frozen=True, slots=True)
class Why:
    word: Waiting
    detail: str


@dataclass(frozen=True, slots=True)
class Facts:
    """What holds now, beyond the run and its job (see `WaitingReader`)."""

    now: datetime
    owners: Mapping[int, str] = field(default_factory=dict)
    """By partition: the node that owns it (absent: none does)."""
    served: Served = field(default_factory=Served)
    open_breakers: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """By node: the task types whose circuit breaker is open there."""
    in_flight: Mapping[JobId, Execution] = field(default_factory=dict)
    """By job: a run of it dispatched or running now."""
    tenant: Tenant | None = None


def when(instant: datetime) -> str:
    """An instant as the lists and explain write it: UTC, milliseconds, "Z"."""
    return instant.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def paused_detail(job: Job) -> str:
    """A paused job's run, in the words lists and explain share: who paused the job,
    when and why ("its job was paused by alice at …Z: vendor outage, INC-123; it runs
    (or the misfire policy decides) on resume")."""
    said = (job.pause or Pause()).said()
    return f"its job was {said}; it runs (or the misfire policy decides) on resume"


def not_due(job: Job, execution: Execution, now: datetime) -> Why | None:
    """The reasons that need no fact beyond the run and its job, or None when it is due."""
    if job.status is JobStatus.PAUSED:
        return Why(Waiting.PAUSED, paused_detail(job))
    if execution.fire_at > now:
        if execution.try_attempt > 0:
            attempt, tried = execution.try_attempt, of_try(execution.tries)
            return Why(
                Waiting.RETRYING,
                f"attempt {attempt}{tried} failed ({first_line(execution.error)}); "
                f"attempt {attempt + 1} fires at {when(execution.fire_at)}",
            )
        return Why(Waiting.WAITING, f"fires at {when(execution.fire_at)}")
    if (
        job.spec.schedule.kind is ScheduleKind.CRON
        and execution.trigger is Trigger.SCHEDULE
        and execution.attempt == 0
        and execution.job_version != job.version
    ):
        return Why(
            Waiting.WAITING,
            f"made from version {execution.job_version}; the job is at {job.version}: "
            "the materialiser carries it over or supersedes it",
        )
    return None


def classify(job: Job, execution: Execution, facts: Facts) -> Why:
    """The one reason a pending run of `job` is not running, checked in the order they hold."""
    early = not_due(job, execution, facts.now)
    if early is not None:
        return early
    due = (facts.now - execution.fire_at).total_seconds()
    ago = f"due {due:.1f} s ago"
    owner = facts.owners.get(execution.partition)
    if owner is None:
        return Why(
            Waiting.NO_NODE, f"{ago}; waiting for a node to take partition {execution.partition}"
        )
    served = facts.served
    pool, task_type = job.spec.policies.pool, job.spec.task_type
    http = is_http_task_type(task_type)
    if not http and not served.on(owner):
        return Why(
            Waiting.NO_EXECUTOR,
            f"{ago}; no executor is connected to {owner}, which owns "
            f"partition {execution.partition}",
        )
    if not served.serves(pool, task_type, owner):
        reason = served.unserved(pool, task_type) or (
            f"the executors connected to {owner} do not serve task type {task_type!r}"
        )
        return Why(Waiting.UNSERVED, f"{ago}; {reason}")
    if task_type in facts.open_breakers.get(owner, frozenset()):
        return Why(
            Waiting.PARKED,
            f"the circuit breaker for task type {task_type!r} is open on {owner}: "
            "it is parked until a probe succeeds",
        )
    running = facts.in_flight.get(job.id)
    if (
        job.spec.policies.overlap is not OverlapPolicy.ALLOW
        and running is not None
        and running.key != execution.key
    ):
        rule = (
            "runs asked for by a person and retries wait for it"
            if execution.trigger is not Trigger.SCHEDULE or execution.attempt > 0
            else f"the job's overlap policy is {job.spec.policies.overlap.value}"
        )
        where = f" on {running.executor_id}" if running.executor_id else ""
        return Why(
            Waiting.BEHIND,
            f"{ago}; waiting for run {running.key.id} ({running.status.value}{where}) "
            f"to finish: {rule}",
        )
    tenant = facts.tenant
    if tenant is not None and tenant.in_flight >= tenant.max_in_flight:
        return Why(
            Waiting.CAPPED,
            f"{ago}; the tenant has {tenant.in_flight} runs in flight, its cap"
            f" (max_in_flight {tenant.max_in_flight}): it is claimed when one finishes",
        )
    if due < JUST_DUE_S:
        return Why(Waiting.DUE, f"due {due * 1000:.0f} ms ago: {owner} is claiming it now")
    queued = Waiting.OVERDUE if due > OVERDUE_AFTER_S else Waiting.QUEUED
    if http:
        waiting = served.ready.get(owner, {}).get(HTTP_POOL, 0)
        return Why(
            queued,
            f"{ago}; waiting for {owner}'s HTTP runner (its concurrency): "
            f"{waiting} HTTP tasks' runs ready there",
        )
    serving = [e for e in served.on(owner) if e.serves(pool, task_type)]
    usable = [e for e in serving if not e.held_back_since]
    if not usable:
        held = ", ".join(
            f"{e.executor_id} (since {e.held_back_since}, {e.probes} probes unanswered)"
            for e in serving
        )
        return Why(
            Waiting.NO_EXECUTOR,
            f"{ago}; every executor on {owner} that serves it is held back "
            f"after a lease lapsed while it was silent (paused, frozen or cut off): {held}; "
            f"{owner} dispatches to one again once it answers",
        )
    stalled = served.stalled.get(owner)
    if stalled:
        return Why(queued, f"{ago}; {owner} reports {stalled}")
    credit = sum(e.credit.get(pool, 0) for e in usable)
    waiting = served.ready.get(owner, {}).get(pool, 0)
    return Why(
        queued,
        f"{ago}; waiting for executor capacity in pool {pool!r} on {owner}: "
        f"{waiting} runs ready there, free credit {credit}",
    )


class WaitingReader:
    """Gathers `Facts` for pending runs (a fixed number of round trips) and classifies them."""

    def __init__(
        self,
        store: Store,
        etcd: Etcd,
        layout: Layout,
        *,
        served: ServedView | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._store = store
        self._etcd = etcd
        self._layout = layout
        self._served = served or ServedView(etcd, layout)
        self._clock = clock

    async def of_page(
        self, tenant: TenantId, executions: Iterable[Execution]
    ) -> dict[ExecutionKey, Why]:
        """Why each pending run of the page is not running (runs in other states are left out;
        so is a run whose job is gone)."""
        pending = [e for e in executions if e.status is ExecutionStatus.PENDING]
        if not pending:
            return {}
        now = self._clock()
        jobs = await self._store.jobs.many(tenant, {e.key.job_id for e in pending})
        found: dict[ExecutionKey, Why] = {}
        due: list[tuple[Job, Execution]] = []
        for execution in pending:
            job = jobs.get(execution.key.job_id)
            if job is None:
                continue
            early = not_due(job, execution, now)
            if early is not None:
                found[execution.key] = early
            else:
                due.append((job, execution))
        if due:
            facts = await self.facts(tenant, [job for job, _ in due], now=now)
            for job, execution in due:
                found[execution.key] = classify(job, execution, facts)
        return found

    async def of_one(self, job: Job, execution: Execution) -> Why:
        """Why this pending run is not running (what `explain` answers)."""
        now = self._clock()
        early = not_due(job, execution, now)
        if early is not None:
            return early
        facts = await self.facts(job.tenant_id, [job], now=now, partition=execution.partition)
        return classify(job, execution, facts)

    async def facts(
        self, tenant: TenantId, jobs: list[Job], *, now: datetime, partition: int | None = None
    ) -> Facts:
        """What holds now for due runs of `jobs`; with `partition`, only its owner is read."""
        if partition is None:
            kvs, _ = await self._etcd.get_prefix(self._layout.partitions)
        else:
            kv = await self._etcd.get(self._layout.partition(partition))
            kvs = [kv] if kv is not None else []
        owners: dict[int, str] = {}
        for kv in kvs:
            try:
                owners[self._layout.partition_of(kv.key)] = str(decode(kv.value)["node"])
            except (ValueError, KeyError, TypeError):
                continue  # a document this version cannot read names no owner
        breakers, _ = await self._etcd.get_prefix(self._layout.breakers)
        open_breakers: dict[str, frozenset[str]] = {}
        for kv in breakers:
            try:
                opened = frozenset(str(t) for t in decode(kv.value).get("open", {}))
            except (ValueError, TypeError, AttributeError):
                continue
            open_breakers[kv.key.removeprefix(self._layout.breakers)] = opened
        limited = {j.id for j in jobs if j.spec.policies.overlap is not OverlapPolicy.ALLOW}
        in_flight = await self._store.executions.in_flight_of_jobs(tenant, limited)
        return Facts(
            now=now,
            owners=owners,
            served=await self._served.now(),
            open_breakers=open_breakers,
            in_flight=in_flight,
            tenant=await self._store.tenants.load(tenant),
        )


# -- a job's attention ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Attention:
    """A job's runs that go nowhere or keep failing (what the Jobs lists flag)."""

    unserved: int = 0
    overdue: int = 0
    failing: int = 0

    @property
    def needed(self) -> bool:
        return bool(self.unserved or self.overdue or self.failing)

    @property
    def summary(self) -> str:
        """'3 unserved, 1 overdue, 2 failing', naming only what is there."""
        parts = [(self.unserved, "unserved"), (self.overdue, "overdue"), (self.failing, "failing")]
        return ", ".join(f"{n} {word}" for n, word in parts if n)


def attention(job: Job, counts: RunsToWatch | None, served: Served | None) -> Attention:
    """What of a job's counted runs needs a person: its due runs are unserved when no
    connected executor serves its task type (`served` None: not known, none are), else
    those due over OVERDUE_AFTER_S are overdue; a paused job's runs wait by choice."""
    if counts is None or job.status is JobStatus.DELETED:
        return Attention()
    if job.status is JobStatus.PAUSED:
        return Attention(failing=counts.failing)
    pool, task_type = job.spec.policies.pool, job.spec.task_type
    if served is not None and served.unserved(pool, task_type) is not None:
        return Attention(unserved=counts.due, failing=counts.failing)
    return Attention(overdue=counts.overdue, failing=counts.failing)

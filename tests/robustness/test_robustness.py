"""wheel under faults, its history checked against the model of its promises.

A cluster of real processes (two scheduler nodes, two executors, an etcd and a durable
Postgres of the test's own) runs jobs a client creates through the API while a seeded
plan kills and pauses nodes and executors and restarts etcd and Postgres. Afterwards the
history (what the API acknowledged, what the executors started, what the store holds) is
written as JSON lines and checked by tests/robustness/model.py.

    WHEEL_ROBUSTNESS_SEED=<n>        replay one seed's plan (printed by every run)
    WHEEL_ROBUSTNESS_SEEDS=<count>   how many fresh seeds to run (default 1)
    WHEEL_ROBUSTNESS_DURATION=<s>    the faults' span per seed (default 20)

A failure keeps the history and the processes' logs and names both.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import tempfile
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import wheel
from tests.e2e.cluster import Cluster
from tests.robustness import history, model
from tests.robustness.cluster import Injector, RestartableEtcd, executor_events, start_executor
from tests.robustness.history import Event, iso
from tests.robustness.journal import FIELDS, READ, keep_journal
from tests.robustness.plan import EXECUTORS, NODES, NewJob, Plan, plan
from tests.services import CrashablePostgres
from wheel.errors import WheelError
from wheel.model.jobs import MisfirePolicy, OverlapPolicy, Policies
from wheel.store import Store, migrate

DURATION_S = float(os.environ.get("WHEEL_ROBUSTNESS_DURATION", "20"))
SETTLE_S = 60.0
"""After the last fault, how long every promised run has to end (leases and sessions
are 3 s; a loaded machine takes longer)."""


def seeds() -> list[int]:
    chosen = os.environ.get("WHEEL_ROBUSTNESS_SEED")
    if chosen:
        return [int(chosen)]
    return [secrets.randbelow(2**31) for _ in range(int(os.environ.get("WHEEL_ROBUSTNESS_SEEDS",
                                                                        "1")))]  # fmt: skip


@dataclass
class Run:
    plan: Plan
    cluster: Cluster
    etcd: RestartableEtcd
    postgres: CrashablePostgres
    workdir: Path
    tenant_id: uuid.UUID
    token: str


@contextlib.asynccontextmanager
async def running(chosen: Plan) -> AsyncIterator[Run]:
    workdir = Path(tempfile.mkdtemp(prefix=f"wheel-robustness-{chosen.seed}-"))
    async with contextlib.AsyncExitStack() as stack:
        etcd = await RestartableEtcd.start()
        stack.push_async_callback(etcd.close)
        postgres = await CrashablePostgres.start()
        stack.push_async_callback(postgres.close)
        await migrate(postgres.dsn)
        await keep_journal(postgres)
        store = await Store.open(postgres.dsn, min_size=1, max_size=1)
        try:
            tenant = await store.tenants.create("robustness")
            token = (await store.tenants.create_token(tenant.id, "robustness"))[1]
        finally:
            await store.close()
        cluster = Cluster(postgres.dsn, etcd.port, f"robust-{chosen.seed}", logs=workdir)
        stack.callback(cluster.stop)
        for node in NODES:
            cluster.start_node(node)
        for executor in EXECUTORS:
            start_executor(cluster, executor, workdir / f"starts-{executor}.jsonl")
        try:
            await cluster.ready()
        except TimeoutError:
            pytest.fail(f"the cluster did not settle\n{cluster.dump_logs()}")
        yield Run(chosen, cluster, etcd, postgres, workdir, tenant.id, token)


def ceil_second(moment: datetime) -> datetime:
    return moment.replace(microsecond=0) + timedelta(seconds=1 if moment.microsecond else 0)


def cron_instants(start: datetime, end: datetime, every_s: int) -> list[datetime]:
    """`*/every_s` in the seconds field, strictly between `start` and `end`."""
    first = ceil_second(start + timedelta(microseconds=1))
    moments = (first + timedelta(seconds=n) for n in range(int((end - first).total_seconds())))
    return [m for m in moments if m.second % every_s == 0 and start < m < end]


async def create(client: wheel.AsyncClient, job: NewJob, ends: datetime) -> Event:
    """Create one job through the API; what it promises and whether the API said yes."""
    job_id, sent = uuid.uuid4(), datetime.now(UTC)
    policies = Policies(idempotent=job.idempotent, overlap=OverlapPolicy(job.overlap),
                        misfire=MisfirePolicy(job.misfire),
                        misfire_grace=timedelta(seconds=job.misfire_grace_s), max_attempts=3,
                        backoff_base=timedelta(seconds=0.2))  # fmt: skip
    if job.kind == "at":
        due = sent + timedelta(seconds=job.due_in_s)
        schedule, instants = wheel.at(due), [due]
    else:
        start = ceil_second(sent + timedelta(seconds=1))
        ends = max(ends, start + timedelta(seconds=2 * job.every_s))  # a create that came late
        schedule = wheel.cron(f"*/{job.every_s} * * * * *", start=start, end=ends)
        instants = cron_instants(start, ends, job.every_s)
    record: Event = {
        "kind": "create", "job_id": str(job_id), "sent": iso(sent), "task": job.task,
        "schedule": job.kind, "every_s": job.every_s, "idempotent": job.idempotent,
        "overlap": job.overlap, "misfire": job.misfire, "misfire_grace_s": job.misfire_grace_s,
        "instants": [iso(i) for i in instants],
    }  # fmt: skip
    try:
        await client.create_job(f"{job.kind}-{job_id.hex[:8]}", job.task, schedule,
                                payload=b"%.2f" % job.hold_s, policies=policies,
                                job_id=str(job_id))  # fmt: skip
    except WheelError as exc:
        return {**record, "acked": False, "error": f"{type(exc).__name__}: {exc}"}
    return {**record, "acked": True, "answered": iso(datetime.now(UTC))}


async def at_offset(began: float, offset_s: float) -> None:
    """Until `offset_s` into the run: the plan's clock, not a wait for an event."""
    await asyncio.sleep(max(0.0, began + offset_s - asyncio.get_running_loop().time()))


async def exercise(run: Run) -> list[Event]:
    """The plan's creates and faults, side by side; their events."""
    loop = asyncio.get_running_loop()
    began, began_at = loop.time(), datetime.now(UTC)
    ends = began_at + timedelta(seconds=run.plan.duration_s)
    endpoints = ",".join(node.address for node in run.cluster.nodes.values())
    creates: list[Event] = []
    injector = Injector(run.cluster, run.etcd, run.postgres)

    async def client_side() -> None:
        client = wheel.AsyncClient(endpoints, token=run.token, timeout_s=2, retries=3,
                                   deadline_s=6)  # fmt: skip
        async with client:
            for job in run.plan.jobs:
                await at_offset(began, job.at_s)
                creates.append(await create(client, job, ends))

    async def faults() -> None:
        for fault in run.plan.faults:
            await at_offset(began, fault.at_s)
            await injector.inject(fault)

    await asyncio.gather(client_side(), faults())
    await at_offset(began, run.plan.duration_s)
    return [*creates, *injector.done]


def promised(events: list[Event], due_until: datetime) -> list[tuple[str, datetime]]:
    return [(str(e["job_id"]), history.instant(i)) for e in events
            if e["kind"] == "create" and e["acked"] for i in e["instants"]
            if history.instant(i) <= due_until]  # fmt: skip


def unfinished(run: Run, keys: list[tuple[str, datetime]]) -> int:
    rows = run.cluster.query(
        "SELECT count(*) FROM executions e JOIN unnest(%s::uuid[], %s::timestamptz[])"
        " AS k (job_id, scheduled_for) USING (job_id, scheduled_for)"
        " WHERE e.status IN ('succeeded', 'dead', 'skipped', 'needs_review', 'cancelled')",
        [k[0] for k in keys],
        [k[1] for k in keys],
    )
    return len(keys) - int(rows[0][0])


def stored(run: Run) -> list[Event]:
    """The store's executions and attempts of the run's tenant, as history events."""
    executions = run.cluster.query(
        "SELECT 'execution', job_id, scheduled_for, status::text, fence, attempt, reason,"
        " fire_at, finished_at, jsonb_array_length(retries), executor_id FROM executions"
        " WHERE tenant_id = %s",
        run.tenant_id,
    )
    attempts = run.cluster.query(
        "SELECT 'attempt', a.job_id, a.scheduled_for, a.number, a.fence, a.executor_id,"
        " a.started_at, a.finished_at, a.outcome::text FROM attempts a"
        " JOIN executions e USING (job_id, scheduled_for) WHERE e.tenant_id = %s",
        run.tenant_id,
    )
    transitions = run.cluster.query(READ, run.tenant_id)
    fields = {
        "transition": FIELDS,
        "execution": ("kind", "job_id", "scheduled_for", "status", "fence", "attempt",
                      "reason", "fire_at", "finished_at", "retries", "executor"),
        "attempt": ("kind", "job_id", "scheduled_for", "number", "fence", "executor",
                    "started_at", "finished_at", "outcome"),
    }  # fmt: skip

    def plain(value: object) -> object:
        if isinstance(value, datetime):
            return iso(value)
        return str(value) if isinstance(value, uuid.UUID) else value

    return [
        {name: plain(value) for name, value in zip(fields[row[0]], row, strict=True)}
        for row in [*executions, *attempts, *transitions]
    ]


@pytest.mark.timeout(int(DURATION_S + SETTLE_S + 150))
@pytest.mark.parametrize("seed", seeds(), ids=lambda seed: f"seed={seed}")
async def test_the_history_under_faults_keeps_every_promise(seed: int) -> None:
    chosen = plan(seed, DURATION_S)
    print(chosen.describe())
    async with running(chosen) as run:
        events = await exercise(run)
        due_until = datetime.now(UTC)
        keys = promised(events, due_until)
        with contextlib.suppress(TimeoutError):  # what is left unfinished is a finding
            await run.cluster.wait_until(lambda: unfinished(run, keys) == 0, SETTLE_S)
        run.cluster.stop()  # nothing moves while the store is read
        events += stored(run)
        events += executor_events(run.cluster)
        for starts in sorted(run.workdir.glob("starts-*.jsonl")):
            events += history.read(starts)
        events.append({"kind": "end", "due_until": iso(due_until), "seed": seed})
    path = run.workdir / "history.jsonl"
    history.write(path, events)
    findings = model.check(events)
    acked = sum(1 for e in events if e["kind"] == "create" and e["acked"])
    ended = Counter(str(e["status"]) for e in events if e["kind"] == "execution")
    print(
        f"seed {seed}: {acked} jobs acknowledged, {len(keys)} runs promised,"
        f" {sum(1 for e in events if e['kind'] == 'start')} starts, runs {dict(ended)},"
        f" {len(findings)} findings"
    )
    if findings:
        shown = "\n".join(f"  - {f}" for f in findings[:30])
        pytest.fail(f"{chosen.describe()}\n{len(findings)} broken promises:\n{shown}\n"
                    f"history: {path}\nlogs: {run.workdir}")  # fmt: skip
    shutil.rmtree(run.workdir, ignore_errors=True)

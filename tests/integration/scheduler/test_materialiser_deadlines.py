"""The materialiser stamps each scheduled run with its job's deadline, and an edit gives
the runs it keeps the new one (a run already marked missed keeps its deadline)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from tests.integration.store import factories as make
from wheel.model.executions import Execution, ExecutionStatus
from wheel.model.ids import PartitionId, TenantId, new_job_id
from wheel.model.jobs import Job, JobSpec, Policies, Schedule, ScheduleKind
from wheel.scheduler.materialiser import Materialiser
from wheel.store import Store

S = ExecutionStatus


async def _runs(store: Store, tenant: TenantId, job: Job) -> list[Execution]:
    runs, _ = await store.executions.list(tenant, job_id=job.id, page_size=100)
    return runs


async def test_an_edit_gives_kept_runs_the_new_deadline_and_made_runs_have_it(
    store: Store,
) -> None:
    owner = await make.tenant(store)
    spec = JobSpec("ten", "report", Schedule(ScheduleKind.CRON, cron="*/10 * * * *"),
                   policies=Policies(deadline=timedelta(hours=1)))  # fmt: skip
    job = await store.jobs.create(owner.id, new_job_id(), PartitionId(0), spec)
    now = datetime.now(UTC).replace(second=30, microsecond=0)
    materialiser = Materialiser(store, horizon=timedelta(hours=1), clock=lambda: now)
    await materialiser.run([PartitionId(0)])
    made = await _runs(store, owner.id, job)
    assert made
    assert {e.deadline_at - e.key.scheduled_for for e in made} == {timedelta(hours=1)}

    longer = dataclasses.replace(spec, policies=Policies(deadline=timedelta(hours=2)))
    await store.jobs.update(owner.id, job.id, job.version, longer)
    await materialiser.run([PartitionId(0)])
    kept = [e for e in await _runs(store, owner.id, job) if e.status is S.PENDING]
    assert {e.deadline_at - e.key.scheduled_for for e in kept} == {timedelta(hours=2)}

    none = dataclasses.replace(spec, policies=Policies())
    await store.jobs.update(owner.id, job.id, job.version + 1, none)
    await materialiser.run([PartitionId(0)])
    kept = [e for e in await _runs(store, owner.id, job) if e.status is S.PENDING]
    assert {e.deadline_at for e in kept} == {None}

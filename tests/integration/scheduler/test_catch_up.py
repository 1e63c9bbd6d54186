"""A run nobody was told about (a lost notification) is found by the catch-up and runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg

from tests.integration.nodes import NodeFactory
from tests.integration.scheduler.scripted_executor import connected
from wheel.api.server.registration import register_job
from wheel.model.executions import ExecutionStatus
from wheel.model.ids import ExecutionKey
from wheel.model.jobs import JobSpec, Schedule, ScheduleKind
from wheel.store import Store


async def test_a_run_inserted_without_a_notification_is_caught_up_and_run(
    store: Store, database_dsn: str, start_node: NodeFactory
) -> None:
    node = await start_node()
    executor = await connected(node)
    owner = await store.tenants.create("quiet")
    later = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=0)
    spec = JobSpec("later", "work", Schedule(kind=ScheduleKind.AT, at=later))
    job = (await register_job(store, owner.id, spec, partitions=node.config.partitions)).job
    soon = (datetime.now(UTC) + timedelta(seconds=1)).replace(microsecond=0)
    with psycopg.connect(database_dsn, autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")  # no trigger: no notification
        conn.execute(
            "INSERT INTO executions (job_id, scheduled_for, tenant_id, partition, job_version,"
            " fire_at, trigger) VALUES (%s, %s, %s, %s, 1, %s, 'manual')",
            (job.id, soon, owner.id, job.partition, soon),
        )
    await executor.wait_for(lambda: len(executor.accepted) == 1, within=30)
    assert executor.runs[0].execution_id == ExecutionKey(job.id, soon).id
    run = await store.executions.get(owner.id, ExecutionKey(job.id, soon))
    assert run.status is ExecutionStatus.SUCCEEDED
    await executor.stop()

"""Runs for end-to-end tests: one-off jobs registered in the cluster's database, and their
statuses read back."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from tests.e2e.cluster import FAST, Cluster
from wheel.api.server.registration import register_jobs
from wheel.model.ids import TenantId
from wheel.model.jobs import Job, JobSpec, Policies, Schedule, ScheduleKind
from wheel.store import Store

PARTITIONS = int(FAST["partitions"])


async def jobs(
    store: Store,
    tenant: TenantId,
    task: str,
    instants: Sequence[datetime],
    payload: bytes = b"",
    **policies: Any,
) -> list[Job]:
    specs = [
        JobSpec(name=f"{task}-{uuid.uuid4().hex[:8]}", task_type=task,
                schedule=Schedule(kind=ScheduleKind.AT, at=instant),
                payload=payload, policies=Policies(**policies))
        for instant in instants
    ]  # fmt: skip
    registered = await register_jobs(store, tenant, specs, partitions=PARTITIONS)
    return [r.job for r in registered.registered]


def statuses(cluster: Cluster, job_ids: Sequence[object]) -> dict[str, int]:
    rows = cluster.query(
        "SELECT status::text, count(*) FROM executions WHERE job_id = ANY(%s) GROUP BY 1",
        list(job_ids),
    )
    return {status: count for status, count in rows}

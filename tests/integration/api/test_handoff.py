"""A node's API hands the runs of the one-offs it creates to its own engine: a run-now job
is claimable when its create commits, not when its notification has been read back."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from tests.integration.api.helpers import create, cron
from wheel._proto.wheel.v1 import api_pb2 as apb
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.api.server.jobs import JobsApi
from wheel.model.executions import DueOccurrence
from wheel.model.ids import partition_of
from wheel.store import Store
from wheel.timestamps import to_timestamp

PARTITIONS = 8


async def test_created_one_offs_are_handed_over_with_their_routing_once(store: Store) -> None:
    handed: list[DueOccurrence] = []
    api = JobsApi(store, partitions=PARTITIONS, handoff=handed.extend)
    tenant = (await store.tenants.create("handoff")).id
    in_an_hour = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1)
    now_job = create("now", pb.Schedule(now=pb.RunNow()), job_id=str(uuid.uuid4()),
                     policies=pb.JobPolicies(priority=7, pool="fast"))  # fmt: skip
    later = create("later", pb.Schedule(at=to_timestamp(in_an_hour)), job_id=str(uuid.uuid4()))
    nightly = create("nightly", cron("30 1 * * *", "Europe/London"))
    batch = apb.CreateJobsRequest(jobs=[now_job, later, nightly])
    answer = await api.create_many(batch, tenant)

    by_job = {str(d.key.job_id): d for d in handed}
    assert set(by_job) == {now_job.job_id, later.job_id}, "one-offs only: cron is materialised"
    first = by_job[now_job.job_id]
    assert (first.tenant_id, first.pool, first.task_type, first.priority, first.overlap) == (
        tenant,
        "fast",
        "report",
        7,
        "allow",
    )
    assert first.partition == partition_of(first.key.job_id, PARTITIONS)
    assert first.key.scheduled_for <= datetime.now(UTC)
    assert first.fire_at == first.key.scheduled_for
    assert by_job[later.job_id].fire_at == in_an_hour
    assert [j.id for j in answer.jobs[:2]] == [now_job.job_id, later.job_id]

    handed.clear()
    again = await api.create_many(batch, tenant)
    assert list(again.existed) == [0, 1, 2]
    assert handed == [], "a repeated create made nothing new: nothing is handed over"

    single = create("single", pb.Schedule(now=pb.RunNow()), job_id=str(uuid.uuid4()))
    await api.create(single, tenant)
    assert [str(d.key.job_id) for d in handed] == [single.job_id]

"""A run held back at its concurrency key's limit: the word, explain's sentence, its place in
the order of reasons."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime, timedelta

from wheel.api.server.served import ExecutorOnNode, Served
from wheel.api.server.waiting import Facts, Waiting, classify
from wheel.model.executions import Execution, ExecutionStatus, KeyHolders, Trigger
from wheel.model.ids import ExecutionKey, JobId, PartitionId, TenantId
from wheel.model.jobs import (
    Job,
    JobSpec,
    JobStatus,
    OverlapPolicy,
    Policies,
    Schedule,
    ScheduleKind,
)
from wheel.model.tenants import Tenant

NOW = datetime.now(UTC)
TENANT = TenantId(uuid.uuid4())
NODE = "node-a"
PART = PartitionId(3)
KEYED = Policies(overlap=OverlapPolicy.ALLOW, concurrency_key="billing", concurrency_limit=1)


def job() -> Job:
    every_minute = Schedule(kind=ScheduleKind.CRON, cron="* * * * *")
    spec = JobSpec(name="charge", task_type="charge", schedule=every_minute, policies=KEYED)
    return Job(JobId(uuid.uuid4()), TENANT, spec, JobStatus.ACTIVE, 1, PART, None, 1,
               NOW - timedelta(days=1), NOW - timedelta(days=1))  # fmt: skip


def run(of: Job, due_s: float, **changes: object) -> Execution:
    at = NOW - timedelta(seconds=due_s)
    base = Execution(
        key=ExecutionKey(of.id, at.replace(microsecond=0)), tenant_id=TENANT, partition=PART,
        job_version=1, status=ExecutionStatus.PENDING, fire_at=at, attempt=0, fence=0,
        lease_until=None, executor_id=None, priority=0, trigger=Trigger.SCHEDULE, reason=None,
        error=None, created_at=at, started_at=None, finished_at=None,
    )  # fmt: skip
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def facts(**changes: object) -> Facts:
    served = Served((ExecutorOnNode(NODE, "ex", ("default",), ("charge",), 4, {"default": 4}, ""),))
    base = Facts(now=NOW, owners={PART: NODE}, served=served,
                 tenant=Tenant(TENANT, "t", max_in_flight=10, created_at=NOW))  # fmt: skip
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def holders(count: int) -> KeyHolders:
    runs = tuple(ExecutionKey(JobId(uuid.uuid4()), NOW - timedelta(minutes=n))
                 for n in range(min(count, 3)))  # fmt: skip
    return KeyHolders(count, runs)


def test_a_run_at_its_keys_limit_says_which_runs_hold_it() -> None:
    j = job()
    pending = run(j, 5, concurrency_key="billing")
    one = holders(1)
    why = classify(j, pending, facts(key_holders={"billing": one}))
    assert why.word is Waiting.AT_KEY_LIMIT
    assert why.word.value == "at key limit"
    assert why.detail == f"AT_KEY_LIMIT: key 'billing' has 1 of 1 running (run {one.runs[0].id})"
    assert why.key_holders == one

    wider = dataclasses.replace(j, spec=dataclasses.replace(
        j.spec, policies=dataclasses.replace(KEYED, concurrency_limit=5)))  # fmt: skip
    five = holders(5)
    detail = classify(wider, pending, facts(key_holders={"billing": five})).detail
    named = ", ".join(r.id for r in five.runs)
    assert detail == f"AT_KEY_LIMIT: key 'billing' has 5 of 5 running (runs {named} and 2 more)"

    assert classify(wider, pending, facts(key_holders={"billing": holders(4)})).word is not (
        Waiting.AT_KEY_LIMIT
    ), "room left under the job's limit"
    assert classify(j, run(j, 5), facts(key_holders={"billing": one})).word is not (
        Waiting.AT_KEY_LIMIT
    ), "a run without a key never waits for one"
    capped = Tenant(TENANT, "t", max_in_flight=1, created_at=NOW, in_flight=1)
    assert classify(j, pending, facts(key_holders={"billing": one}, tenant=capped)).word is (
        Waiting.AT_KEY_LIMIT
    ), "the key is decided before the tenant's cap, as the claim does"

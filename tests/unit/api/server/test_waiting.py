"""The one classification of why a pending run is not running: each word in its order."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime, timedelta

from wheel.api.server.served import ExecutorOnNode, Served
from wheel.api.server.waiting import Attention, Facts, Waiting, attention, classify, when
from wheel.model.executions import (
    OVERDUE_AFTER_S,
    Execution,
    ExecutionStatus,
    RunsToWatch,
    Trigger,
)
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
from wheel.model.pauses import Pause
from wheel.model.tenants import Tenant

NOW = datetime.now(UTC)
TENANT = TenantId(uuid.uuid4())
NODE = "node-a"
PART = PartitionId(3)


def job(**changes: object) -> Job:
    spec = JobSpec(
        name="tick", task_type="tick",
        schedule=Schedule(kind=ScheduleKind.CRON, cron="* * * * *"),
        payload=b"", policies=Policies(overlap=OverlapPolicy.QUEUE),
    )  # fmt: skip
    base = Job(JobId(uuid.uuid4()), TENANT, spec, JobStatus.ACTIVE, 1, PART, None, 1,
               NOW - timedelta(days=1), NOW - timedelta(days=1))  # fmt: skip
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def run(of: Job, due_s: float, **changes: object) -> Execution:
    at = NOW - timedelta(seconds=due_s)
    base = Execution(
        key=ExecutionKey(of.id, at.replace(microsecond=0)), tenant_id=TENANT, partition=PART,
        job_version=1, status=ExecutionStatus.PENDING, fire_at=at, attempt=0, fence=0,
        lease_until=None, executor_id=None, priority=0, trigger=Trigger.SCHEDULE, reason=None,
        error=None, created_at=at, started_at=None, finished_at=None,
    )  # fmt: skip
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def executor(task_types: tuple[str, ...] = ("tick",), **changes: object) -> ExecutorOnNode:
    base = ExecutorOnNode(NODE, "ex", ("default",), task_types, 4, {"default": 4}, "")
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def facts(**changes: object) -> Facts:
    base = Facts(now=NOW, owners={PART: NODE}, served=Served((executor(),)),
                 tenant=Tenant(TENANT, "t", max_in_flight=10, created_at=NOW))  # fmt: skip
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def word(of: Job, execution: Execution, held: Facts | None = None) -> Waiting:
    return classify(of, execution, held or facts()).word


def test_not_due_yet_paused_and_retrying_need_no_facts() -> None:
    j = job()
    assert word(j, run(j, -30)) is Waiting.WAITING
    assert word(j, run(j, -30, attempt=1, error="boom")) is Waiting.RETRYING
    assert word(job(status=JobStatus.PAUSED), run(j, 30)) is Waiting.PAUSED


def test_each_fact_in_its_order() -> None:
    j = job()
    due = run(j, 5)
    assert word(j, due, facts(owners={})) is Waiting.NO_NODE
    assert word(j, due, facts(served=Served())) is Waiting.NO_EXECUTOR
    others = facts(served=Served((executor(("other",)),)))
    assert word(j, due, others) is Waiting.UNSERVED
    assert "no connected executor serves task type 'tick'" in classify(j, due, others).detail
    assert word(j, due, facts(open_breakers={NODE: frozenset({"tick"})})) is Waiting.PARKED
    running = run(j, 65, status=ExecutionStatus.RUNNING, executor_id="ex")
    assert word(j, due, facts(in_flight={j.id: running})) is Waiting.BEHIND
    capped = Tenant(TENANT, "t", max_in_flight=2, created_at=NOW, in_flight=2)
    assert word(j, due, facts(tenant=capped)) is Waiting.CAPPED
    assert word(j, run(j, 0.2)) is Waiting.DUE
    assert word(j, due) is Waiting.QUEUED
    held = facts(served=Served((executor(held_back_since="then"),)))
    assert word(j, due, held) is Waiting.NO_EXECUTOR


def test_queued_for_longer_than_the_limit_is_overdue() -> None:
    j = job()
    assert word(j, run(j, OVERDUE_AFTER_S - 1)) is Waiting.QUEUED
    assert word(j, run(j, OVERDUE_AFTER_S + 1)) is Waiting.OVERDUE
    # An unserved run long due stays unserved: that says what to fix.
    others = facts(served=Served((executor(("other",)),)))
    assert word(j, run(j, OVERDUE_AFTER_S * 10), others) is Waiting.UNSERVED


def test_a_jobs_attention_splits_due_runs_into_unserved_or_overdue() -> None:
    counts = RunsToWatch(due=3, overdue=2, failing=1)
    served = Served((executor(),))
    assert attention(job(), counts, served) == Attention(overdue=2, failing=1)
    unserved = Served((executor(("other",)),))
    assert attention(job(), counts, unserved) == Attention(unserved=3, failing=1)
    assert attention(job(status=JobStatus.PAUSED), counts, unserved) == Attention(failing=1)
    assert attention(job(), None, served) == Attention()
    assert not Attention().needed
    assert Attention(unserved=3, failing=1).summary == "3 unserved, 1 failing"


def test_a_paused_jobs_run_says_who_paused_it_when_and_why() -> None:
    at = NOW - timedelta(hours=2)
    paused = job(status=JobStatus.PAUSED, pause=Pause("vendor outage, INC-123", "alice", at))
    why = classify(paused, run(paused, 30), facts())
    assert why.word is Waiting.PAUSED
    assert why.detail == (
        f"its job was paused by alice at {when(at)}: vendor outage, INC-123; "
        "it runs (or the misfire policy decides) on resume"
    )
    unknown = job(status=JobStatus.PAUSED)  # paused before pauses kept who and why
    assert classify(unknown, run(unknown, 30), facts()).detail == (
        "its job was paused; it runs (or the misfire policy decides) on resume"
    )

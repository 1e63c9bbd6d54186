"""Catch-up tells the truth: each skip's reason is checked against what really ran.

An executor goes away for longer than a job's misfire grace and comes back: the
runs that waited past the grace meet the misfire policy (saying how long they
waited, and for what), the ones within it run late, one after another, and none
is skipped as overlapping a run that was not in flight at its instant. A job
whose handler outlasts its period is skipped for overlap, and each skip names a
run the executor really was running at that moment.
"""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta

from tests.integration.nodes import NodeFactory
from tests.integration.scheduler.helpers import create_job, tenant
from tests.integration.scheduler.scripted_executor import connected
from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel.model.executions import Execution, ExecutionStatus
from wheel.model.ids import ExecutionKey
from wheel.model.jobs import Job, MisfirePolicy, OverlapPolicy, Schedule, ScheduleKind
from wheel.store import Store

GRACE = timedelta(seconds=3)
AWAY_S = 8.0
"""How long the executor is away (the fault): well past the grace."""
EVERY_SECOND = Schedule(kind=ScheduleKind.CRON, cron="* * * * * *")


async def history(store: Store, job: Job, after: datetime, before: datetime) -> list[Execution]:
    """The job's runs in (after, before), each with its attempts, oldest first."""
    page, _ = await store.executions.list(
        job.tenant_id, job_id=job.id, scheduled_after=after, scheduled_before=before,
        page_size=1000, oldest_first=True,
    )  # fmt: skip
    return [await store.executions.get(job.tenant_id, e.key) for e in page]


def stated_wait_s(reason: str) -> float:
    match = re.match(r"misfire: waited (?:(\d+) min)? ?(?:([\d.]+) s)?", reason)
    assert match is not None, reason
    return int(match[1] or 0) * 60 + float(match[2] or 0)


async def check_skips(store: Store, job: Job, runs: list[Execution]) -> None:
    """Every skip's reason holds of the moment it was made (its finished_at)."""
    for run in runs:
        if run.status is not ExecutionStatus.SKIPPED:
            continue
        reason, at = run.reason or "", run.finished_at
        assert at is not None
        if reason.startswith("misfire"):
            waited = (at - run.fire_at).total_seconds()
            assert waited > GRACE.total_seconds(), f"{run.key.id}: within its grace: {reason}"
            assert abs(stated_wait_s(reason) - waited) <= 0.1, (reason, waited)
            continue
        match = re.match(r"overlap: run (\S+) was (in flight|still running)", reason)
        assert match is not None, f"{run.key.id}: {reason}"
        named = await store.executions.get(job.tenant_id, ExecutionKey.parse(match[1]))
        assert named.key != run.key
        assert named.dispatched_at is not None
        assert named.dispatched_at <= run.fire_at, f"{reason}: not in flight at its instant"
        (attempt,) = [a for a in named.attempts if a.number == 1]
        # The executor's own account: it finished after the skip was decided.
        assert attempt.finished_at >= at, f"{reason}: it had finished at {attempt.finished_at}"
        if match[2] == "still running":
            assert attempt.started_at is not None
            assert attempt.started_at <= at


async def test_an_executor_back_after_the_grace_fires_no_stale_runs_and_no_false_overlaps(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node()
    executor = await connected(node)
    owner = await tenant(store)
    job = await create_job(
        store, owner, EVERY_SECOND, overlap=OverlapPolicy.SKIP,
        misfire=MisfirePolicy.FIRE_ONCE, misfire_grace=GRACE,
    )  # fmt: skip
    await executor.wait_for(lambda: len(executor.accepted) >= 2)
    await executor.stop()
    gone = datetime.now(UTC)
    await asyncio.sleep(AWAY_S)  # the outage itself
    back = datetime.now(UTC)
    executor = await connected(node)
    settled = back + timedelta(seconds=2)
    await executor.wait_for(lambda: any(r.scheduled_for > settled for r in executor.runs))
    runs = await history(store, job, gone + timedelta(seconds=1), settled)
    assert len(runs) >= AWAY_S - 1
    await check_skips(store, job, runs)
    missed = [r for r in runs if back - r.fire_at > GRACE + timedelta(seconds=1)]
    assert missed, "runs waited past the grace"
    for run in missed:
        assert run.status is ExecutionStatus.SKIPPED, f"{run.key.id} ran {run.status}"
        assert re.fullmatch(
            r"misfire: waited [\d.]+ s for an executor, past its 3.0 s grace; "
            r"a later run fires instead \(policy fire_once\)",
            run.reason or "",
        ), run.reason
    ran = [r for r in runs if r.status is ExecutionStatus.SUCCEEDED]
    assert ran, "the runs within the grace fire, late"
    for run in ran:
        assert run.dispatched_at is not None
        assert run.dispatched_at - run.fire_at <= GRACE, f"{run.key.id} ran past its grace"
    assert not [r for r in runs if (r.reason or "").startswith("overlap")], [
        (r.key.id, r.reason) for r in runs if r.status is ExecutionStatus.SKIPPED
    ]
    await executor.stop()


async def test_overlap_skips_name_a_run_the_executor_was_running(
    store: Store, start_node: NodeFactory
) -> None:
    node = await start_node()

    async def slow(_: pb.Dispatch) -> tuple[int, str]:
        await asyncio.sleep(2.2)  # the handler outlasts two periods
        return pb.Result.OUTCOME_SUCCEEDED, ""

    executor = await connected(node, behaviour=slow)
    owner = await tenant(store)
    job = await create_job(
        store, owner, EVERY_SECOND, overlap=OverlapPolicy.SKIP, misfire_grace=GRACE
    )
    await executor.wait_for(lambda: len(executor.accepted) >= 3, within=30)
    first = min(r.scheduled_for for r in executor.runs)
    last = max(r.scheduled_for for r in executor.runs)
    runs = await history(store, job, first - timedelta(milliseconds=1), last)
    skipped = [r for r in runs if r.status is ExecutionStatus.SKIPPED]
    assert skipped, "runs came due while the previous one ran"
    assert all((r.reason or "").startswith("overlap: run ") for r in skipped)
    await check_skips(store, job, runs)
    await executor.stop()

"""Business calendars on a job, on a real node: the materialiser records the runs of closed
days skipped with the calendar's reason, previews and explain say the same, an edit of
the calendar re-plans the runs, and a calendar in use cannot be deleted."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta

import grpc

from tests.integration.api.helpers import Api, Caller, create, cron, rpc_error
from wheel._proto.wheel.v1 import api_pb2 as apb
from wheel._proto.wheel.v1 import calendars_pb2 as cpb
from wheel._proto.wheel.v1 import calendars_pb2_grpc
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.schedule.calendars import day_text
from wheel.timestamps import to_timestamp

V = apb.Explanation
NAME = "closed-now"


def closing(first: date, last: date, version: int = 0) -> cpb.Calendar:
    return cpb.Calendar(
        name=NAME,
        dates=[cpb.CalendarDateRange(first=first.isoformat(), last=last.isoformat())],
        version=version,
    )


async def runs_of(caller: Caller, job: pb.Job, after: datetime) -> Sequence[pb.Execution]:
    found = await caller.executions.ListExecutions(
        apb.ListExecutionsRequest(job_id=job.id, scheduled_after=to_timestamp(after)),
        metadata=caller.metadata,
    )
    return list(found.executions)


async def until_runs(
    caller: Caller, job: pb.Job, after: datetime, status: int, within: float = 20.0
) -> Sequence[pb.Execution]:
    """The job's runs after `after` once there are some and all have `status` (the node
    materialises and re-plans on its own time)."""
    async with asyncio.timeout(within):
        while True:
            runs = await runs_of(caller, job, after)
            if runs and all(run.status == status for run in runs):
                return runs
            await asyncio.sleep(0.1)  # polling a remote state: there is no event to await


async def test_a_closed_day_skips_its_runs_and_the_calendars_edit_replans_them(api: Api) -> None:
    alice = api.alice
    calendars = calendars_pb2_grpc.CalendarsStub(api.channel)
    now = datetime.now(UTC)
    today = now.date()
    # Today and the next two days (UTC, the job's zone): every run the horizon holds.
    made = await calendars.CreateCalendar(
        cpb.CreateCalendarRequest(calendar=closing(today, today + timedelta(days=2))),
        metadata=alice.metadata,
    )
    policies = pb.JobPolicies(calendars=[NAME])
    created = await alice.jobs.CreateJob(
        create("minutely", cron("* * * * *"), policies=policies, preview=3),
        metadata=alice.metadata,
    )
    job = created.job
    assert list(job.policies.calendars) == [NAME]
    why = f"a listed date ({day_text(today)} \N{EN DASH} {day_text(today + timedelta(days=2))})"
    first = created.next_runs[0]
    assert first.skipped
    assert (first.calendar, first.calendar_reason) == (NAME, why)
    assert first.note.startswith(f"skipped: {day_text(today)} is {why} (calendar {NAME})")

    skipped = await until_runs(alice, job, now, pb.EXECUTION_STATUS_SKIPPED)
    run = skipped[0]
    day = run.scheduled_for.ToDatetime(UTC).date()
    assert run.reason == f"calendar {NAME}: {day_text(day)} is {why}"

    explained = await alice.executions.ExplainExecution(
        apb.ExplainExecutionRequest(execution_id=run.id), metadata=alice.metadata
    )
    assert explained.verdict == V.SKIPPED_CALENDAR
    assert (explained.calendar, explained.calendar_reason) == (NAME, why)
    preview = await alice.jobs.PreviewSchedule(
        apb.PreviewScheduleRequest(schedule=job.schedule, count=2, job_id=job.id),
        metadata=alice.metadata,
    )
    assert all(line.skipped and line.calendar == NAME for line in preview.next_runs)
    bare = await alice.jobs.PreviewSchedule(
        apb.PreviewScheduleRequest(
            schedule=job.schedule, count=2, job_id=job.id, without_calendars=True
        ),
        metadata=alice.metadata,
    )
    assert [line.skipped for line in bare.next_runs] == [False, False]

    # next_business_day: a yearly run in the closed days fires on the first open day.
    at = (now + timedelta(minutes=2)).replace(second=0, microsecond=0)
    yearly = await alice.jobs.CreateJob(
        create(
            "yearly",
            cron(f"{at.minute} {at.hour} {at.day} {at.month} *"),
            policies=pb.JobPolicies(
                calendars=[NAME], calendar_policy=pb.CALENDAR_POLICY_NEXT_BUSINESS_DAY
            ),
        ),
        metadata=alice.metadata,
    )
    opens = today + timedelta(days=3)
    moved_to = datetime.combine(opens, at.time(), UTC)
    assert yearly.next_runs[0].moved_from.ToDatetime(UTC) == at
    assert yearly.next_runs[0].instant.ToDatetime(UTC) == moved_to
    (pending,) = await until_runs(alice, yearly.job, now, pb.EXECUTION_STATUS_PENDING)
    assert pending.scheduled_for.ToDatetime(UTC) == at  # its identity stays
    assert pending.fire_at.ToDatetime(UTC) == moved_to
    explained = await alice.executions.ExplainExecution(
        apb.ExplainExecutionRequest(execution_id=pending.id), metadata=alice.metadata
    )
    (step,) = [s for s in explained.steps if s.what == "moved"]
    assert step.detail.startswith(f"moved from {at:%a} {at.day} {at:%b} {at:%H:%M} by calendar")
    assert explained.moved_to.ToDatetime(UTC) == moved_to
    await alice.jobs.DeleteJob(apb.JobRef(id=yearly.job.id), metadata=alice.metadata)

    # In use: not deleted, and the refusal names the job.
    refused = await rpc_error(
        calendars.DeleteCalendar(cpb.CalendarRef(id=NAME), metadata=alice.metadata)
    )
    assert refused.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "'minutely'" in (refused.details() or "")

    # The edit opens these days: the runs still to come run again, under a new version.
    edited_at = datetime.now(UTC)
    far = today + timedelta(days=300)
    await calendars.UpdateCalendar(
        cpb.UpdateCalendarRequest(calendar=closing(far, far, version=made.version)),
        metadata=alice.metadata,
    )
    after = edited_at + timedelta(minutes=1)
    replanned = await until_runs(alice, job, after, pb.EXECUTION_STATUS_PENDING)
    current = await alice.jobs.GetJob(apb.GetJobRequest(id=job.id), metadata=alice.metadata)
    assert current.version == job.version + 1
    assert all(r.job_version == current.version for r in replanned)


async def test_a_job_names_only_calendars_its_tenant_has(api: Api) -> None:
    calendars = calendars_pb2_grpc.CalendarsStub(api.channel)
    today = datetime.now(UTC).date()
    await calendars.CreateCalendar(
        cpb.CreateCalendarRequest(calendar=closing(today, today)), metadata=api.alice.metadata
    )
    for caller, name in ((api.bob, NAME), (api.alice, "no-such-calendar")):
        refused = await rpc_error(
            caller.jobs.CreateJob(
                create("daily", cron("0 9 * * *"), policies=pb.JobPolicies(calendars=[name])),
                metadata=caller.metadata,
            )
        )
        assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert (refused.details() or "").startswith("policies.calendars: no calendar named")
        listed = await caller.jobs.ListJobs(apb.ListJobsRequest(), metadata=caller.metadata)
        assert not listed.jobs  # nothing written
    refused = await rpc_error(
        api.alice.jobs.PreviewSchedule(
            apb.PreviewScheduleRequest(schedule=cron("0 9 * * *"), calendars=["nope"]),
            metadata=api.alice.metadata,
        )
    )
    assert (refused.details() or "").startswith("calendars: no calendar named")
    alone = await rpc_error(
        api.alice.jobs.PreviewSchedule(
            apb.PreviewScheduleRequest(
                schedule=cron("0 9 * * *"),
                calendar_policy=pb.CALENDAR_POLICY_NEXT_BUSINESS_DAY,
            ),
            metadata=api.alice.metadata,
        )
    )
    assert (alone.details() or "").startswith("calendar_policy: goes with calendars")

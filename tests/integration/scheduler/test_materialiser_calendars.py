"""The materialiser under business calendars, against real Postgres: runs of closed days
skipped with the calendar's reason, a run scheduled past the horizon that moves before it
made in time, and a calendar's edit re-planning what is made. The clock is injected: the
days are ten days from now, their hours chosen around the horizon."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from tests.integration.scheduler.test_materialiser import PARTITION, executions
from tests.integration.store import factories as make
from wheel.model.executions import ExecutionStatus
from wheel.model.ids import new_job_id
from wheel.model.jobs import CalendarPolicy, Job, JobSpec, Policies, Schedule, ScheduleKind
from wheel.model.tenants import Tenant
from wheel.schedule.calendars import Calendar, DateRange, day_text
from wheel.scheduler.materialiser import Materialiser
from wheel.store import Store

DAY = timedelta(days=1)


async def job(
    store: Store, owner: Tenant, name: str, expression: str, calendar: str, policy: CalendarPolicy
) -> Job:
    spec = JobSpec(
        name,
        "report",
        Schedule(ScheduleKind.CRON, cron=expression),
        policies=Policies(calendars=(calendar,), calendar_policy=policy),
    )
    return await store.jobs.create(owner.id, new_job_id(), PARTITION, spec)


def closing(name: str, day: date) -> Calendar:
    return Calendar(name, dates=(DateRange(day, day),))


async def test_closed_days_skip_move_and_replan_as_their_calendars_say(store: Store) -> None:
    owner = await make.tenant(store)
    open_day = datetime.now(UTC).date() + 10 * DAY
    closed = open_day + DAY
    now = datetime.combine(open_day, time(8), UTC)
    moves = await store.calendars.create(owner.id, closing("moves", closed))
    skips = await store.calendars.create(owner.id, closing("skips", open_day))
    # Once a year, on the closed day after the horizon's: it moves back into the horizon.
    yearly = await job(store, owner, "yearly", f"0 9 {closed.day} {closed.month} *", "moves",
                       CalendarPolicy.PREVIOUS_BUSINESS_DAY)  # fmt: skip
    half_hourly = await job(store, owner, "half-hourly", "*/30 * * * *", "skips",
                            CalendarPolicy.SKIP)  # fmt: skip
    materialiser = Materialiser(store, horizon=2 * timedelta(hours=1), clock=lambda: now)

    await materialiser.run([PARTITION])

    (moved,) = await executions(store, yearly)
    assert moved.key.scheduled_for == datetime.combine(closed, time(9), UTC)
    assert moved.fire_at == datetime.combine(open_day, time(9), UTC)
    assert moved.status is ExecutionStatus.PENDING
    # (The days between the job's creation and `now` were missed: misfire skips them.)
    skipped = [e for e in await executions(store, half_hourly) if e.key.scheduled_for >= now]
    assert [e.status for e in skipped] == [ExecutionStatus.SKIPPED] * 4  # 08:00 .. 09:30
    why = f"a listed date ({day_text(open_day)})"
    assert {e.reason for e in skipped} == {f"calendar skips: {day_text(open_day)} is {why}"}

    # Both calendars now close a day far away: the runs are re-planned at their instants.
    far = closing("moves", open_day + 100 * DAY)
    await store.calendars.update(owner.id, moves.id, moves.version, far)
    far = closing("skips", open_day + 100 * DAY)
    await store.calendars.update(owner.id, skips.id, skips.version, far)
    assert (await store.jobs.get(owner.id, yearly.id)).version == yearly.version + 1

    report = await materialiser.run([PARTITION])

    assert report.superseded == 0
    (carried,) = await executions(store, yearly)
    assert carried.fire_at == carried.key.scheduled_for
    assert carried.job_version == yearly.version + 1
    revived = [e for e in await executions(store, half_hourly) if e.key.scheduled_for >= now]
    # The run at `now` (08:00) is not still to come: it stays skipped.
    assert [e.status for e in revived] == [ExecutionStatus.SKIPPED] + [ExecutionStatus.PENDING] * 3
    assert all(e.reason is None for e in revived[1:])

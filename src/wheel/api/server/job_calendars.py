"""The business calendars jobs name, as the API reads them: checked when a job is saved,
applied to previews and explain (wheel.schedule.business_days).

A job names its own tenant's calendars only: a name the tenant has no calendar
of is refused, naming the field, and nothing is written. One statement reads
the calendars of a whole page of jobs.
"""

from __future__ import annotations

from collections.abc import Sequence

from wheel.errors import InvalidArgument, excerpt
from wheel.model.ids import TenantId
from wheel.model.jobs import CalendarPolicy, Job, JobSpec
from wheel.schedule import SchedulePlan
from wheel.schedule.business_days import BusinessDays
from wheel.schedule.calendars import Calendar
from wheel.store import Store


async def check_calendars(
    store: Store, tenant_id: TenantId, specs: Sequence[tuple[str, JobSpec]]
) -> None:
    """InvalidArgument (`<prefix>policies.calendars`) for a calendar the tenant does not
    have; nothing to read when no spec names one."""
    await calendars_named(
        store, tenant_id, [(f"{p}policies.calendars", s.policies.calendars) for p, s in specs]
    )


async def calendars_named(
    store: Store, tenant_id: TenantId, named: Sequence[tuple[str, Sequence[str]]]
) -> dict[str, Calendar]:
    """The tenant's calendars by name, for (field, names) pairs; InvalidArgument naming the
    field for a name the tenant has no calendar of."""
    wanted = {name for _, names in named for name in names}
    if not wanted:
        return {}
    found = await store.calendars.by_names(tenant_id, wanted)
    for field, names in named:
        for name in names:
            if name not in found:
                raise InvalidArgument(
                    field, f"no calendar named {excerpt(name)} (see `wheel calendars list`)"
                )
    return {name: stored.calendar for name, stored in found.items()}


def under(
    plan: SchedulePlan, calendars: dict[str, Calendar], names: Sequence[str], policy: CalendarPolicy
) -> BusinessDays | None:
    """`plan` under the named calendars (those `calendars` holds); None when it names none."""
    if not names:
        return None
    return BusinessDays(plan, [calendars[n] for n in names if n in calendars], policy)


async def of_jobs(store: Store, jobs: Sequence[Job]) -> dict[str, Calendar]:
    """The calendars a page of one tenant's jobs name, by name (one statement, or none)."""
    named = {name for job in jobs for name in job.spec.policies.calendars}
    if not named:
        return {}
    found = await store.calendars.by_names(jobs[0].tenant_id, named)
    return {name: stored.calendar for name, stored in found.items()}


async def of_job(store: Store, job: Job, plan: SchedulePlan) -> BusinessDays | None:
    """`job`'s schedule under its calendars; None when it names none."""
    policies = job.spec.policies
    return under(plan, await of_jobs(store, [job]), policies.calendars, policies.calendar_policy)

"""Making a tenant's jobs match a list of definitions: `client.apply_jobs(jobs)`.

The list is the whole truth for the names it holds, as a file kept in git is:

    plan = await client.apply_jobs(jobs, dry_run=True)   # the difference, nothing written
    plan = await client.apply_jobs(jobs, prune=True)     # and make it so

Each definition is matched to the tenant's job of the same name:

- **create**: no job of that name;
- **unchanged**: the same definition;
- **update**: a recurring schedule (cron or interval) to a recurring one, or other
  fields;
- **replace**: a one-off's instant changed, or a one-off became recurring or back (a
  one-off's instant is its identity, so the job is deleted and created again);
- **delete** (`prune`): a job the list does not name.

An update names the version that the plan read, so two applies at once cannot
silently overwrite each other: the one that loses is refused with a
`VersionConflict`. A create that loses to another one is refused with
`NameTaken`. Run the apply again to see the new difference. A job deleted by
prune is checked for the version read first. Applying the same list twice
changes nothing the second time.

Calendars given with the jobs (`calendars=`) are applied first, so the jobs that
name them find them: each is created, updated (naming the version read) or left
unchanged. Prune never deletes a calendar: jobs outside the list may name it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from wheel.api import calendars as cal
from wheel.client import types as t
from wheel.errors import InvalidArgument, VersionConflict
from wheel.model.jobs import JobStatus, Policies

if TYPE_CHECKING:
    from wheel.client.aio import AsyncClient

_READ_CONCURRENCY = 8


class Action(StrEnum):
    CREATE = "create"
    UPDATE = "update"
    REPLACE = "replace"
    UNCHANGED = "unchanged"
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class Change:
    """What applying does to one job."""

    name: str
    action: Action
    fields: tuple[str, ...] = ()
    """For update and replace: the fields that differ (`schedule.cron`, `policies.max_attempts`)."""
    current: t.Job | None = None
    """The job as the plan read it (None for a create)."""
    wanted: t.NewJob | None = None
    """The definition given (None for a delete)."""


@dataclass(frozen=True, slots=True)
class ApplyPlan:
    """The difference between the tenant's jobs and the list; `applied` once written."""

    changes: tuple[Change, ...]
    applied: bool = False
    calendars: tuple[CalendarChange, ...] = ()
    """What applying does to each calendar given (applied before the jobs)."""

    def of(self, action: Action) -> list[Change]:
        return [change for change in self.changes if change.action is action]

    @property
    def changed(self) -> bool:
        return any(change.action is not Action.UNCHANGED for change in self.changes) or any(
            change.action is not Action.UNCHANGED for change in self.calendars
        )


async def plan(
    client: AsyncClient,
    jobs: Iterable[t.NewJob],
    *,
    prune: bool,
    calendars: Iterable[cal.Calendar] = (),
) -> ApplyPlan:
    """Read the tenant's jobs and compare them with `jobs` (nothing is written)."""
    calendar_changes = await plan_calendars(client, calendars)
    wanted = _checked(list(jobs))
    existing = {job.name: job async for job in client.jobs() if job.status is not JobStatus.DELETED}
    gate = asyncio.Semaphore(_READ_CONCURRENCY)

    async def read(name: str) -> t.Job:
        async with gate:  # the list leaves payloads out: read each job the list names
            return await client.get_job(existing[name].id)

    named = [job.name for job in wanted if job.name in existing]
    current = dict(zip(named, await asyncio.gather(*(read(n) for n in named)), strict=True))
    changes = [_compare(job, current.get(job.name)) for job in wanted]
    if prune:
        given = {job.name for job in wanted}
        changes += [Change(name, Action.DELETE, current=job)
                    for name, job in sorted(existing.items()) if name not in given]  # fmt: skip
    return ApplyPlan(tuple(changes), calendars=calendar_changes)


async def apply(client: AsyncClient, planned: ApplyPlan) -> ApplyPlan:
    """Write the plan's changes: calendars first (jobs name them), then the jobs' deletes and
    replacements, so names are free."""
    await apply_calendars(client, planned.calendars)
    for change in planned.changes:
        if change.action in (Action.DELETE, Action.REPLACE) and change.current is not None:
            await _delete(client, change.current)
    for change in planned.changes:
        wanted, current = change.wanted, change.current
        if wanted is None:
            continue
        if change.action in (Action.CREATE, Action.REPLACE):
            spec = wanted.as_spec()
            await client.create_job(
                wanted.name, spec.task_type, wanted.schedule, payload=wanted.payload,
                policies=wanted.policies, job_id=wanted.job_id, http=wanted.http,
            )  # fmt: skip
        elif change.action is Action.UPDATE and current is not None:
            await client.update_job(
                current.id, expected_version=current.version,
                task_type=wanted.as_spec().task_type, payload=wanted.payload,
                schedule=wanted.schedule, policies=wanted.policies or Policies(),
                http=wanted.http,
            )  # fmt: skip
    return dataclasses.replace(planned, applied=True)


async def _delete(client: AsyncClient, job: t.Job) -> None:
    now = await client.get_job(job.id)
    if now.version != job.version:
        raise VersionConflict("job", job.id, job.version, now.version)
    await client.delete_job(job.id)


def _checked(jobs: Sequence[t.NewJob]) -> list[t.NewJob]:
    seen: dict[str, int] = {}
    for index, job in enumerate(jobs):
        if job.name in seen:
            raise InvalidArgument(f"jobs[{index}].name", f"repeats jobs[{seen[job.name]}].name")
        seen[job.name] = index
        job.as_spec()
    return list(jobs)


def _compare(wanted: t.NewJob, current: t.Job | None) -> Change:
    if current is None:
        return Change(wanted.name, Action.CREATE, wanted=wanted)
    fields = _differences(wanted, current)
    if not fields:
        return Change(wanted.name, Action.UNCHANGED, current=current, wanted=wanted)
    recurring = wanted.schedule.recurring and current.schedule.recurring
    action = Action.UPDATE if recurring else Action.REPLACE
    return Change(wanted.name, action, tuple(fields), current, wanted)


def _differences(wanted: t.NewJob, current: t.Job) -> list[str]:
    fields = []
    if wanted.as_spec().task_type != current.task_type:
        fields.append("task_type")
    if wanted.http != current.http:
        fields.append("http")
    if wanted.payload != current.payload:
        fields.append("payload")
    for part in dataclasses.fields(wanted.schedule):
        if getattr(wanted.schedule, part.name) != getattr(current.schedule, part.name):
            fields.append(f"schedule.{part.name}")
    policies = wanted.policies or Policies()
    for part in dataclasses.fields(policies):
        if getattr(policies, part.name) != getattr(current.policies, part.name):
            fields.append(f"policies.{part.name}")
    return fields


# -- calendars ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CalendarChange:
    """What applying does to one calendar: create, update or unchanged."""

    name: str
    action: Action
    fields: tuple[str, ...] = ()
    """For update: the parts that differ (`dates`, `weekdays`, `holidays`, `description`)."""
    current: t.Calendar | None = None
    wanted: cal.Calendar | None = None


async def plan_calendars(
    client: AsyncClient, calendars: Iterable[cal.Calendar]
) -> tuple[CalendarChange, ...]:
    wanted = list(calendars)
    seen: dict[str, int] = {}
    for index, calendar in enumerate(wanted):
        if calendar.name in seen:
            raise InvalidArgument(
                f"calendars[{index}].name", f"repeats calendars[{seen[calendar.name]}].name"
            )
        seen[calendar.name] = index
    if not wanted:
        return ()
    existing = {found.name: found async for found in client.calendars()}
    changes = []
    for calendar in wanted:
        current = existing.get(calendar.name)
        if current is None:
            changes.append(CalendarChange(calendar.name, Action.CREATE, wanted=calendar))
            continue
        fields = _calendar_differences(calendar, current.definition())
        action = Action.UPDATE if fields else Action.UNCHANGED
        changes.append(CalendarChange(calendar.name, action, fields, current, calendar))
    return tuple(changes)


def _calendar_differences(wanted: cal.Calendar, current: cal.Calendar) -> tuple[str, ...]:
    return tuple(
        part
        for part in ("dates", "weekdays", "holidays", "description")
        if getattr(wanted, part) != getattr(current, part)
    )


async def apply_calendars(client: AsyncClient, changes: Iterable[CalendarChange]) -> None:
    for change in changes:
        wanted, current = change.wanted, change.current
        if wanted is None or change.action is Action.UNCHANGED:
            continue
        if change.action is Action.CREATE:
            await client.create_calendar(
                wanted.name, dates=wanted.dates, weekdays=wanted.weekdays,
                holidays=wanted.holidays, description=wanted.description,
            )  # fmt: skip
        elif current is not None:
            await client.update_calendar(
                str(current.id), expected_version=current.version, dates=wanted.dates,
                weekdays=wanted.weekdays, holidays=wanted.holidays,
                description=wanted.description, base=current,
            )  # fmt: skip

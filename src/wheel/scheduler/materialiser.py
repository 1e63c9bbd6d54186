"""The materialiser: recurring jobs become dated occurrence rows up to a horizon.

Run by the owner of a partition, every few seconds. For each active recurring job
(cron or interval) whose cursor (`materialised_to`) stops short of now + horizon, it expands the
schedule from the cursor to the horizon and inserts the runs in batches; the
unique (job, instant) key makes a second or concurrent run write nothing
new. Never "create the next run when this one finishes": a missed cycle is
caught up on the next one.

Runs already in the past by more than the job's misfire grace were missed
(the cluster was down, or the job paused): the job's misfire policy decides —
`skip` records each as skipped, `fire_once` fires only the latest, `fire_all`
replays the latest `misfire_replay_cap` — and every missed run not fired is
recorded as skipped with the reason. After an edit, pending occurrences made
from the old version are carried over where the new schedule still has them
and skipped as `superseded` where it does not.

A job naming business calendars (wheel.schedule.business_days) has its runs
placed under them: a run on a closed day is made skipped, its reason naming the
calendar, or made to fire on the nearest open day while keeping its scheduled
instant as its key; under `previous_business_day` the runs scheduled in the
closed days just past the horizon that move before it are made now, so a run
that moves earlier is never made after its new instant. A calendar's edit grows
the version of the jobs naming it: their pending runs are carried or skipped
as after any edit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from wheel.durations import readable
from wheel.errors import InvalidArgument
from wheel.model.executions import ExecutionStatus, NewOccurrence
from wheel.model.ids import ExecutionKey, JobId, PartitionId
from wheel.model.jobs import Job, MisfirePolicy
from wheel.schedule import SchedulePlan, compile_schedule
from wheel.schedule.business_days import BusinessDays, Placed
from wheel.store import Store
from wheel.store.materialising import Carry

log = logging.getLogger(__name__)

_EPSILON = timedelta(microseconds=1)
# Compiled plans kept per (job, version); past this many the cache starts over.
_PLAN_CACHE_LIMIT = 50_000


@dataclass
class MaterialiseReport:
    jobs: int = 0
    pending: int = 0
    """Occurrences inserted to fire."""
    skipped: int = 0
    """Missed occurrences recorded as skipped by the misfire policy."""
    carried: int = 0
    superseded: int = 0
    invalid: list[JobId] = field(default_factory=list)
    """Jobs whose stored schedule no longer compiles (logged, left alone)."""


class Materialiser:
    """Expands the recurring jobs of the partitions it is given."""

    def __init__(
        self,
        store: Store,
        *,
        horizon: timedelta,
        clock: Callable[[], datetime],
        jobs_per_batch: int = 500,
        rows_per_insert: int = 5000,
    ) -> None:
        self._store = store
        self._horizon = horizon
        self._clock = clock
        self._jobs_per_batch = jobs_per_batch
        self._rows_per_insert = rows_per_insert
        self._plans: dict[tuple[JobId, int], SchedulePlan] = {}
        self._days: dict[tuple[JobId, int], BusinessDays] = {}
        """Jobs' schedules under their business calendars, per (job, version): a calendar's
        edit grows the version of every job naming it."""

    async def run(self, partitions: Collection[PartitionId]) -> MaterialiseReport:
        """Bring every active recurring job of `partitions` up to now + horizon."""
        now = self._clock()
        target = now + self._horizon
        report = MaterialiseReport()
        after: JobId | None = None
        while True:
            jobs = await self._store.materialising.jobs_due(
                partitions, target, after=after, limit=self._jobs_per_batch
            )
            if not jobs:
                return report
            await self._batch(jobs, now, target, report)
            after = jobs[-1].id

    async def horizon_lag(self, partitions: Collection[PartitionId]) -> timedelta:
        """How far the least materialised active job is behind now (zero: none is)."""
        oldest = await self._store.materialising.oldest_cursor(partitions)
        if oldest is None:
            return timedelta(0)
        return max(timedelta(0), self._clock() - oldest)

    async def _batch(
        self, jobs: Sequence[Job], now: datetime, target: datetime, report: MaterialiseReport
    ) -> None:
        plans = {job.id: plan for job in jobs if (plan := self._plan(job, report)) is not None}
        # materialised_version 0 counts too: an edit during a job's first run leaves v1 rows.
        edited = [j for j in jobs if j.id in plans and j.materialised_version != j.version]
        edited_ids = {j.id for j in edited}
        days = await self._business_days(jobs, plans)
        await self._supersede(edited, plans, days, report)
        await self._replan_calendar_skips(edited, now, plans, days)
        rows: list[NewOccurrence] = []
        cursors: list[tuple[Job, datetime]] = []
        for job in jobs:
            plan = plans.get(job.id)
            if plan is None:
                continue
            start = job.materialised_to or job.created_at
            if job.id in edited_ids:
                start = min(start, now)
            rows.extend(self._occurrences(job, plan, days.get(job.id), start, now, target))
            cursors.append((job, target))
        for first in range(0, len(rows), self._rows_per_insert):
            chunk = rows[first : first + self._rows_per_insert]
            inserted = set(await self._store.occurrences.insert(chunk))
            for row in chunk:
                if row.key in inserted:
                    if row.status is ExecutionStatus.PENDING:
                        report.pending += 1
                    else:
                        report.skipped += 1
        await self._store.materialising.advance(cursors)
        report.jobs += len(cursors)

    def _plan(self, job: Job, report: MaterialiseReport) -> SchedulePlan | None:
        cached = self._plans.get((job.id, job.version))
        if cached is not None:
            return cached
        try:
            plan = compile_schedule(job.spec.schedule, job.id, now=job.created_at)
        except InvalidArgument as exc:
            log.warning(
                "materialiser.invalid_schedule", extra={"job": str(job.id), "error": str(exc)}
            )
            report.invalid.append(job.id)
            return None
        if len(self._plans) >= _PLAN_CACHE_LIMIT:
            self._plans.clear()
        self._plans[(job.id, job.version)] = plan
        return plan

    async def _business_days(
        self, jobs: Sequence[Job], plans: dict[JobId, SchedulePlan]
    ) -> dict[JobId, BusinessDays]:
        """The jobs that name business calendars, under them: one statement for the
        calendars of those not seen at their version yet."""
        named = [j for j in jobs if j.id in plans and j.spec.policies.calendars]
        wanted = [j for j in named if (j.id, j.version) not in self._days]
        if wanted:
            loaded = await self._store.materialising.calendars_of(wanted)
            if len(self._days) + len(wanted) > _PLAN_CACHE_LIMIT:
                self._days.clear()
            for job in wanted:
                names = job.spec.policies.calendars
                missing = [name for name in names if (job.tenant_id, name) not in loaded]
                if missing:  # deleted as the job was saved naming it: a job names only its own
                    log.warning(
                        "materialiser.missing_calendar",
                        extra={"job": str(job.id), "calendars": missing},
                    )
                calendars = [loaded[(job.tenant_id, n)] for n in names if n not in missing]
                self._days[(job.id, job.version)] = BusinessDays(
                    plans[job.id], calendars, job.spec.policies.calendar_policy
                )
        return {
            j.id: self._days[(j.id, j.version)] for j in named if (j.id, j.version) in self._days
        }

    def _occurrences(
        self,
        job: Job,
        plan: SchedulePlan,
        days: BusinessDays | None,
        start: datetime,
        now: datetime,
        target: datetime,
    ) -> list[NewOccurrence]:
        policies = job.spec.policies
        # (scheduled instant: the run's identity, the instant it runs, why a calendar skips it)
        runs: list[tuple[datetime, datetime, str | None]]
        if days is None:
            runs = [(r.instant, r.instant, None) for r in plan.runs(start, target)]
        else:
            # A run scheduled past the target that moves before it is made now, not when
            # the cursor reaches its scheduled instant (previous_business_day).
            placed = [*days.runs(start, target), *days.moved_in(target)]
            runs = [(p.occurrence.instant, p.instant, p.reason(plan.tz)) for p in placed]
        missed_before = now - policies.misfire_grace
        missed = sorted(at for _, at, skip in runs if skip is None and at < missed_before)
        fired = set(_fired_missed(missed, policies.misfire, policies.misfire_replay_cap))
        occurrences = []
        for scheduled_for, instant, skip in runs:
            status, reason = ExecutionStatus.PENDING, skip
            if skip is not None:
                status = ExecutionStatus.SKIPPED
            elif instant < missed_before and instant not in fired:
                status = ExecutionStatus.SKIPPED
                reason = missed_reason(
                    (now - plan.fire_at(instant)).total_seconds(), policies.misfire_grace,
                    policies.misfire, policies.misfire_replay_cap,
                )  # fmt: skip
            occurrences.append(
                NewOccurrence(
                    key=ExecutionKey(job.id, scheduled_for),
                    tenant_id=job.tenant_id,
                    partition=job.partition,
                    job_version=job.version,
                    fire_at=plan.fire_at(instant),
                    priority=policies.priority,
                    status=status,
                    reason=reason,
                )
            )
        return occurrences

    async def _supersede(
        self,
        edited: Sequence[Job],
        plans: dict[JobId, SchedulePlan],
        days: dict[JobId, BusinessDays],
        report: MaterialiseReport,
    ) -> None:
        outdated = await self._store.materialising.outdated_pending(edited)
        if not outdated:
            return
        by_job: dict[JobId, list[ExecutionKey]] = {}
        for key in outdated:
            by_job.setdefault(key.job_id, []).append(key)
        jobs = {job.id: job for job in edited}
        decisions = []
        for job_id, keys in by_job.items():
            job, plan = jobs[job_id], plans[job_id]
            low = min(k.scheduled_for for k in keys)
            high = max(k.scheduled_for for k in keys) + _EPSILON
            under = days.get(job_id)
            still: dict[datetime, tuple[datetime, str | None]]
            if under is None:
                still = {r.instant: (r.instant, None) for r in plan.runs(low, high)}
            else:  # where each run now runs, or why a calendar now skips it
                still = {
                    p.occurrence.instant: (p.instant, p.reason(plan.tz))
                    for p in under.runs(low, high)
                }
            for key in keys:
                instant, skip = still.get(key.scheduled_for, (key.scheduled_for, None))
                keep = key.scheduled_for in still and skip is None
                decisions.append(
                    Carry(
                        key,
                        job.version,
                        keep,
                        plan.fire_at(instant),
                        job.spec.policies.priority,
                        job.spec.policies.deadline,
                        skip,
                    )
                )
                report.carried += keep
                report.superseded += not keep
        await self._store.materialising.supersede(decisions)

    async def _replan_calendar_skips(
        self,
        edited: Sequence[Job],
        now: datetime,
        plans: dict[JobId, SchedulePlan],
        days: dict[JobId, BusinessDays],
    ) -> None:
        """Runs still to come that a calendar skipped: an edited job (a calendar's edit
        grows the version of the jobs naming it) runs them again where its calendars now
        let it, and says the new reason where they still skip it."""
        skipped = await self._store.materialising.calendar_skips(edited, now)
        if not skipped:
            return
        jobs = {job.id: job for job in edited}
        decisions = []
        for key in skipped:
            job, plan = jobs[key.job_id], plans[key.job_id]
            at = key.scheduled_for
            runs = plan.runs(at, at + _EPSILON)
            if not runs:
                continue  # the schedule has no run there now: it stays as it was
            under = days.get(key.job_id)  # None: the job names no calendar any more
            placed = under.place(runs[0]) if under is not None else Placed(runs[0], at)
            decisions.append(
                Carry(
                    key,
                    job.version,
                    not placed.skipped,
                    plan.fire_at(placed.instant),
                    job.spec.policies.priority,
                    job.spec.policies.deadline,
                    placed.reason(plan.tz),
                )
            )
        await self._store.materialising.replan_calendar_skips(decisions)


def _fired_missed(missed: list[datetime], policy: MisfirePolicy, cap: int) -> list[datetime]:
    """Which missed runs still fire under the misfire policy."""
    if not missed or policy is MisfirePolicy.SKIP:
        return []
    if policy is MisfirePolicy.FIRE_ONCE:
        return [missed[-1]]
    return missed[-cap:]


def missed_reason(late_s: float, grace: timedelta, policy: MisfirePolicy, cap: int) -> str:
    """Why a run that came due `late_s` before it was materialised is skipped (in the
    words the store's misfire rule and claim use)."""
    if policy is MisfirePolicy.SKIP:
        rule = " (policy skip)"
    elif policy is MisfirePolicy.FIRE_ONCE:
        rule = "; a later run fires instead (policy fire_once)"
    else:
        rule = f"; the latest {cap} fire instead, the replay cap (policy fire_all)"
    return (
        f"misfire: came due {readable(late_s)} before it was materialised, past its "
        f"{readable(grace.total_seconds())} grace{rule}"
    )

"""Explain one occurrence: the path it took, or why it did not run.

Read from what is durable (the job, the execution and its attempts, the
claiming node, another run of the job in flight, the tenant's in-flight
count) plus live facts from etcd: who owns the occurrence's partition now,
which executors stream to that node and what they serve (`links/<node>`),
and whether its circuit breaker for the task type is open (`breakers/<node>`),
both published by the nodes on their session leases. A pending run gets the
one reason that holds now from `waiting.classify` (paused, not due, no owner,
no executor, its task type unserved, breaker open, behind a running run, tenant
at its cap, its concurrency key at its limit, just due, waiting for capacity), the
same the lists show as a word;
a scheduled run that has waited past its misfire grace adds that its claim
applies the misfire policy, and a skipped one shows the reason the claim wrote.
An occurrence that has no row is explained from the job's schedule: not an
instant of it, outside its bounds, before the job existed, or not materialised
yet. A run a business calendar skipped or moved names the calendar and what it
says of the day (SKIPPED_CALENDAR; a "moved" step). A run that notified (a
webhook, `wheel.notify`) shows each notification's delivery as a step.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from wheel._proto.wheel.v1 import api_pb2 as api
from wheel.api import convert
from wheel.api.server import job_calendars
from wheel.api.server.explain_deadlines import deadline_clause, deadline_step
from wheel.api.server.served import ServedView
from wheel.api.server.waiting import Waiting, WaitingReader, when
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout, decode
from wheel.durations import readable
from wheel.errors import NotFound, first_line
from wheel.model.executions import (
    Execution,
    ExecutionStatus,
    Trigger,
    lateness_s,
    not_late_because,
    of_try,
    ordinal,
)
from wheel.model.ids import ExecutionKey, TenantId
from wheel.model.jobs import IntervalDst, Job, JobStatus, Schedule, ScheduleKind
from wheel.model.notifications import Delivery, DeliveryState, redacted
from wheel.model.pauses import Pause
from wheel.model.summaries import settled
from wheel.schedule import compile_schedule, smear_offset
from wheel.schedule.business_days import Placed
from wheel.schedule.interval import describe_interval
from wheel.schedule.zones import zone
from wheel.store import Store
from wheel.timestamps import to_timestamp

V = api.Explanation
_MADE = {
    Trigger.SCHEDULE: "materialised",
    Trigger.MANUAL: "triggered",
    Trigger.BACKFILL: "backfilled",
}


_VERDICT = {
    Waiting.PAUSED: V.PAUSED,
    Waiting.WAITING: V.WAITING,
    Waiting.RETRYING: V.WAITING,
    Waiting.NO_NODE: V.QUEUED,
    Waiting.NO_EXECUTOR: V.NO_EXECUTOR,
    Waiting.UNSERVED: V.UNSERVED,
    Waiting.PARKED: V.PARKED,
    Waiting.BEHIND: V.BEHIND_RUNNING,
    Waiting.CAPPED: V.AT_TENANT_CAP,
    Waiting.AT_KEY_LIMIT: V.AT_KEY_LIMIT,
    Waiting.DUE: V.QUEUED,
    Waiting.QUEUED: V.QUEUED,
    Waiting.OVERDUE: V.QUEUED,
}


_JUST_DUE_S = 1.0
"""A run due less than this long ago is being claimed, not waiting for anything."""
_CLAIMING = timedelta(seconds=_JUST_DUE_S)
"""Nor is it missed, whatever its grace (the claim's misfire rule draws the same line)."""


class Explainer:
    def __init__(
        self,
        store: Store,
        etcd: Etcd,
        layout: Layout,
        *,
        served: ServedView | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._store = store
        self._etcd = etcd
        self._layout = layout
        self._served = served or ServedView(etcd, layout)
        self._clock = clock
        self._waiting = WaitingReader(store, etcd, layout, served=self._served, clock=clock)

    @property
    def waiting(self) -> WaitingReader:
        """The classification its pending verdicts come from, for the lists to share."""
        return self._waiting

    async def explain(self, tenant: TenantId, key: ExecutionKey) -> api.Explanation:
        job = await self._store.jobs.get(tenant, key.job_id)
        try:
            execution: Execution | None = await self._store.executions.get(tenant, key)
        except NotFound:
            execution = None
        result = api.Explanation(
            execution_id=key.id,
            job_id=str(key.job_id),
            scheduled_for=to_timestamp(key.scheduled_for),
        )
        placed = await self._placed(job, key)
        if execution is None:
            verdict, summary = self._absent(job, key)
            if placed is not None and placed.skipped and verdict is V.NOT_MATERIALISED:
                verdict, summary = _calendar_skips(result, job, placed)
        else:
            result.execution.CopyFrom(convert.execution_to(execution))
            for delivery in await self._store.outbox.of_run(tenant, key):
                _notified(result, delivery)
            deadline_step(result, execution)
            self._path(result, execution, job.spec.policies.max_attempts)
            _moved(result, job, execution, placed)
            verdict, summary = await self._state(result, job, execution)
            summary += deadline_clause(execution)
            if verdict is V.SKIPPED and (execution.reason or "").startswith("calendar "):
                verdict = V.SKIPPED_CALENDAR
                _calendar_named(result, execution.reason or "", placed)
        result.verdict = verdict
        result.summary = summary
        return result

    async def _placed(self, job: Job, key: ExecutionKey) -> Placed | None:
        """What the job's business calendars make of the run scheduled at `key`'s instant
        (None: it names none, or the schedule has no run then)."""
        if not job.spec.policies.calendars:
            return None
        plan = compile_schedule(job.spec.schedule, job.id, now=job.created_at)
        days = await job_calendars.of_job(self._store, job, plan)
        instant = key.scheduled_for
        runs = plan.runs(instant, instant + timedelta(microseconds=1))
        if days is None or not runs:
            return None
        return days.place(runs[0])

    # -- an occurrence with a row ------------------------------------------------------------

    def _path(self, result: api.Explanation, execution: Execution, max_attempts: int) -> None:
        made = _MADE[execution.trigger]
        # fire_at moves with a backoff or a person's retry: once it has, the made step
        # names the run's instant, not the later time as if it were made to fire then.
        moved = execution.attempt > 0 or execution.retries
        to_fire = (
            f"for {when(execution.key.scheduled_for)}"
            if moved
            else f"to fire at {when(execution.fire_at)}"
        )
        _step(
            result,
            execution.created_at,
            made,
            f"from job version {execution.job_version}, {to_fire}",
        )
        starts = [0] + [r.after_attempt for r in execution.retries]
        for tried, retry in enumerate(execution.retries, start=2):
            _step(
                result,
                retry.at,
                "retried",
                f"by {retry.by} at {when(retry.at)}: its {ordinal(tried)} try, "
                f"with the job's {max_attempts} attempts",
            )
        for attempt in execution.attempts:
            where = f"on executor {attempt.executor_id}" if attempt.executor_id else "unassigned"
            detail = f"fence {attempt.fence}, {where}: {attempt.outcome.value}"
            if attempt.error:
                detail += f" ({first_line(attempt.error)})"
            tries = sum(1 for start in starts if attempt.number > start) or 1
            _step(
                result,
                attempt.started_at or attempt.finished_at,
                f"attempt {attempt.number - starts[tries - 1]}{of_try(tries)}",
                detail,
            )
        if execution.dispatched_at is not None and execution.status in (
            ExecutionStatus.DISPATCHED,
            ExecutionStatus.RUNNING,
            ExecutionStatus.SUCCEEDED,
        ):
            node = execution.claimed_by or "a node"
            _step(
                result,
                execution.dispatched_at,
                "claimed",
                f"fired by {node}, fence {execution.fence} "
                f"(attempt {execution.try_attempt}{of_try(execution.tries)})",
            )
            if execution.executor_id and execution.status is not ExecutionStatus.SUCCEEDED:
                _step(
                    result,
                    execution.started_at,
                    "dispatched",
                    f"to executor {execution.executor_id}",
                )
        if execution.status is ExecutionStatus.SUCCEEDED:
            late = ""
            late_s = lateness_s(execution)
            if late_s is not None:
                late = f", started {readable(late_s)} after its instant"
            elif (because := not_late_because(execution)) is not None:
                late = f" ({because})"
            _step(
                result,
                execution.finished_at,
                "succeeded",
                f"on executor {execution.executor_id or '?'}{late}",
            )
        _in_order(result)

    async def _state(
        self, result: api.Explanation, job: Job, execution: Execution
    ) -> tuple[api.Explanation.Verdict, str]:
        status = execution.status
        reason = execution.reason or ""
        attempt, tries = execution.try_attempt, execution.tries
        if status is ExecutionStatus.SUCCEEDED:
            return V.SUCCEEDED, f"ran and succeeded on attempt {attempt}{of_try(tries)}"
        if status in (ExecutionStatus.DISPATCHED, ExecutionStatus.RUNNING):
            where = execution.executor_id or "an executor"
            return V.IN_FLIGHT, (
                f"{status.value} on {where}, fired by {execution.claimed_by or 'a node'} with "
                f"fence {execution.fence}; its lease runs to "
                f"{when(execution.lease_until or execution.fire_at)}"
            )
        said = settled(status, attempt=attempt, error=execution.error, reason=reason, tries=tries)
        if status is ExecutionStatus.DEAD:
            return V.DEAD, said or ""
        if status is ExecutionStatus.NEEDS_REVIEW:
            return V.NEEDS_REVIEW, said or ""
        if status is ExecutionStatus.CANCELLED:
            return V.CANCELLED, f"cancelled: {reason or 'by a user'}"
        if status is ExecutionStatus.SKIPPED:
            _step(result, execution.finished_at, "skipped", reason)
            if reason.startswith("misfire"):
                return V.SKIPPED_MISFIRE, said or ""
            if reason.startswith("overlap"):
                return V.SKIPPED_OVERLAP, said or ""
            return V.SKIPPED, said or ""
        return await self._pending(result, job, execution)

    async def _pending(
        self, result: api.Explanation, job: Job, execution: Execution
    ) -> tuple[api.Explanation.Verdict, str]:
        """The one reason a pending run has not run yet: the lists' word (`waiting.classify`),
        as a verdict and its sentence; for a scheduled run past its misfire grace, what its
        claim will do about it."""
        verdict, why = await self._pending_reason(result, job, execution)
        if verdict not in (V.PAUSED, V.WAITING):
            why += self._missed(job, execution)
        return verdict, why

    def _missed(self, job: Job, execution: Execution) -> str:
        """A note on a due run that waited past its grace ("" for one that did not)."""
        policies = job.spec.policies
        late = self._clock() - execution.fire_at
        if execution.trigger is not Trigger.SCHEDULE or execution.attempt > 0:
            return ""
        if late <= max(policies.misfire_grace, _CLAIMING):
            return ""
        return (
            f"; it has waited past its {readable(policies.misfire_grace.total_seconds())} "
            f"misfire grace: when it is claimed, its policy ({policies.misfire.value}) decides "
            "whether it still runs"
        )

    async def _pending_reason(
        self, result: api.Explanation, job: Job, execution: Execution
    ) -> tuple[api.Explanation.Verdict, str]:
        owner, epoch = await self._owner(execution.partition)
        held = f"node {owner} (epoch {epoch})" if owner else "no node right now"
        _step(result, None, "partition", f"partition {execution.partition} is held by {held}")
        why = await self._waiting.of_one(job, execution)
        if why.word is Waiting.PAUSED:
            # When, by whom and why, among the run's steps (the verdict says it too).
            pause = job.pause or Pause()
            _step(result, pause.at, "paused", f"its job was {pause.said()}")
            _in_order(result)
        if why.key_holders is not None:  # AT_KEY_LIMIT's facts as fields too
            result.concurrency_key = execution.concurrency_key or ""
            result.concurrency_limit = job.spec.policies.concurrency_limit
            result.key_holders.extend(run.id for run in why.key_holders.runs)
        return _VERDICT[why.word], why.detail

    async def _owner(self, partition: int) -> tuple[str | None, int | None]:
        kv = await self._etcd.get(self._layout.partition(partition))
        if kv is None:
            return None, None
        return str(decode(kv.value).get("node")), kv.create_revision

    # -- an occurrence without a row ---------------------------------------------------------

    def _absent(self, job: Job, key: ExecutionKey) -> tuple[api.Explanation.Verdict, str]:
        instant = key.scheduled_for
        schedule = job.spec.schedule
        plan = compile_schedule(schedule, job.id, now=job.created_at)
        if plan.one_off is not None:
            return V.NOT_AN_OCCURRENCE, f"the job runs once, at {when(plan.one_off)}"
        if schedule.starts_at is not None and instant < schedule.starts_at:
            return V.OUTSIDE_BOUNDS, f"before the job's start, {when(schedule.starts_at)}"
        if schedule.ends_at is not None and instant > schedule.ends_at:
            return V.OUTSIDE_BOUNDS, f"after the job's end, {when(schedule.ends_at)}"
        found = [o for o in plan.runs(instant, instant + timedelta(microseconds=1), skipped=True)
                 if o.instant == instant]  # fmt: skip
        if not found:
            following = plan.next_runs(instant, 1)
            hint = f"; the next is at {when(following[0].instant)}" if following else ""
            return V.NOT_AN_OCCURRENCE, f"{_named(schedule)} has no run then{hint}"
        if found[0].skipped:
            return V.NOT_AN_OCCURRENCE, f"no run: {found[0].note or 'the DST rule skips it'}"
        if job.status is JobStatus.DELETED:
            return V.JOB_DELETED, "its job is deleted"
        if instant < job.created_at:
            return V.NOT_MATERIALISED, (
                f"before the job was created ({when(job.created_at)}): "
                "`wheel jobs backfill` makes it"
            )
        if job.materialised_to is None or instant >= job.materialised_to:
            made = when(job.materialised_to) if job.materialised_to else "nothing yet"
            return V.NOT_MATERIALISED, (
                f"not materialised yet (made up to {made}); the owner makes runs a horizon ahead"
            )
        return V.NOT_MATERIALISED, (
            "no record of it: dropped by retention, or made and superseded before an edit"
        )


def _moved(result: api.Explanation, job: Job, execution: Execution, placed: Placed | None) -> None:
    """A step for a run a calendar moved: from where, by which calendar, and why. A first
    try's firing instant must say it moved there (a calendar edited since says otherwise)."""
    if placed is None or not placed.moved or execution.trigger is not Trigger.SCHEDULE:
        return
    tz = zone(job.spec.schedule.time_zone)
    offset = execution.fire_at - placed.instant
    if (
        execution.attempt == 0
        and not execution.retries
        and offset != smear_offset(job.id, job.spec.schedule.smear)
    ):
        return
    _step(result, None, "moved", f"{placed.moved_from(tz)}; it runs {when(placed.instant)}")
    result.calendar = placed.calendar or ""
    result.calendar_reason = placed.holiday or ""
    result.moved_to.CopyFrom(to_timestamp(placed.instant))


def _calendar_named(result: api.Explanation, reason: str, placed: Placed | None) -> None:
    """A run a calendar skipped: the calendar its reason names, and what it says of the day."""
    name = reason.removeprefix("calendar ").split(": ", 1)[0]
    result.calendar = name
    if placed is not None and placed.calendar == name:
        result.calendar_reason = placed.holiday or ""


def _calendar_skips(
    result: api.Explanation, job: Job, placed: Placed
) -> tuple[api.Explanation.Verdict, str]:
    """A run not made yet that the job's calendars will skip."""
    reason = placed.reason(zone(job.spec.schedule.time_zone)) or ""
    _calendar_named(result, reason, placed)
    return V.SKIPPED_CALENDAR, f"will not run: {reason} (not materialised yet)"


def _notified(result: api.Explanation, delivery: Delivery) -> None:
    """A step for one notification of the run: sent, given up, or still being tried."""
    about = f"{delivery.event or delivery.status.value} to {redacted(delivery.url)}"
    tries = f"{delivery.tries} {'try' if delivery.tries == 1 else 'tries'}"
    if delivery.state == DeliveryState.DELIVERED:
        code = f"HTTP {delivery.last_status_code}" if delivery.last_status_code else "sent"
        _step(result, delivery.delivered_at, "notified", f"{about}: {code} after {tries}")
    elif delivery.state == DeliveryState.GAVE_UP:
        _step(
            result,
            delivery.delivered_at,
            "notification given up",
            f"{about}: {tries}, the last: {delivery.last_error or 'no answer'}",
        )
    elif delivery.last_error:
        next_at = when(delivery.next_at) if delivery.next_at else "soon"
        _step(
            result,
            delivery.created_at,
            "notification pending",
            f"{about}: {tries} failed, the last: {delivery.last_error}; next try at {next_at}",
        )
    else:
        being = f"being sent (try {delivery.tries})" if delivery.tries else "not sent yet"
        _step(result, delivery.created_at, "notification pending", f"{about}: {being}")


def _in_order(result: api.Explanation) -> None:
    """The steps by their instants; those without one (facts of now) last."""
    result.steps.sort(
        key=lambda s: (s.at.seconds, s.at.nanos) if s.HasField("at") else (1 << 62, 0)
    )


def _step(result: api.Explanation, at: datetime | None, what: str, detail: str) -> None:
    step = result.steps.add(what=what, detail=detail)
    if at is not None:
        step.at.CopyFrom(to_timestamp(at))


def _named(schedule: Schedule) -> str:
    """A recurring schedule as explain names it: "'0 9 * * *' in Europe/London",
    "every 90 minutes of real time (UTC)"."""
    if schedule.kind is ScheduleKind.INTERVAL:
        words = describe_interval(schedule)
        words = f"{words[:1].lower()}{words[1:]}"
        if schedule.interval_dst is IntervalDst.WALL:
            return words  # the words name the zone
        return f"{words} ({schedule.time_zone})"
    return f"{schedule.cron!r} in {schedule.time_zone}"

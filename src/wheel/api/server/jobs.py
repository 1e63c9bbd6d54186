"""wheel.v1.Jobs: a tenant's job definitions, previews, manual runs and backfills.

Every method takes the caller's tenant (from its token) and validates the
whole request before writing anything. Writes that a client may repeat after
a lost answer are idempotent: a create names its job id, a trigger its
instant, a backfill its range, and pause/resume/delete of a job already in
that state answer with the job.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from wheel._proto.wheel.v1 import api_pb2 as api
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.api import convert
from wheel.api.server import job_calendars
from wheel.api.server.auth import caller_token
from wheel.api.server.job_calendars import check_calendars
from wheel.api.server.job_refs import resolve
from wheel.api.server.registration import (
    Registered,
    check_http_hosts,
    check_targets,
    register_job,
    register_jobs,
)
from wheel.api.server.rpc import Rpc, Service
from wheel.api.server.served import Served, ServedView
from wheel.api.server.waiting import Attention, attention
from wheel.errors import (
    Conflict,
    CoordinatorError,
    InvalidArgument,
    InvalidTransition,
    NameTaken,
    NotFound,
)
from wheel.model.executions import DueOccurrence, NewOccurrence, Trigger
from wheel.model.ids import ExecutionKey, JobId, TenantId
from wheel.model.jobs import Job, JobStatus, OverlapPolicy, Policies
from wheel.model.pauses import check_note
from wheel.notify.egress import DEFAULT_EGRESS, EgressPolicy
from wheel.schedule import SchedulePlan, compile_schedule, preview, preview_around
from wheel.schedule.business_days import BusinessDays
from wheel.store import Store, pagination
from wheel.timestamps import to_timestamp

DEFAULT_PREVIEW = 5
MAX_PREVIEW = 100
MAX_BACKFILL = 10_000
MAX_CREATE_BATCH = 10_000
"""Jobs per CreateJobs call."""
TRIGGER_AHEAD = timedelta(days=2)
"""Day partitions are kept this far ahead: a trigger never makes one."""
_PREVIEW_JOB = uuid.UUID(int=0)


def _attention_to(message: pb.Job, found: Attention) -> None:
    if found.needed:
        message.attention.CopyFrom(
            pb.JobAttention(
                unserved=found.unserved,
                overdue=found.overdue,
                failing=found.failing,
                summary=found.summary,
                deadline_missed=found.deadline_missed,
            )
        )


def _count(requested: int, field: str, default: int) -> int:
    if requested == 0:
        return default
    if requested > MAX_PREVIEW:
        raise InvalidArgument(field, f"{requested} is more than {MAX_PREVIEW}")
    return requested


class JobsApi:
    def __init__(
        self,
        store: Store,
        *,
        partitions: int,
        retention_days: int = 30,
        served: ServedView | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        handoff: Callable[[Sequence[DueOccurrence]], object] | None = None,
        egress: EgressPolicy = DEFAULT_EGRESS,
    ) -> None:
        """`handoff` is given the runs of the one-off jobs each call created (committed):
        a node hands them to its own engine, which claims at once those it owns and that
        are due (see Engine.add_created). `egress`: the node's own, so a URL its senders
        would refuse is refused when a job names it."""
        self._store = store
        self._egress = egress
        self._served = served
        self._handoff = handoff
        self._partitions = partitions
        self._retention = timedelta(days=retention_days)
        self._clock = clock

    def service(self) -> Service:
        return Service(
            "wheel.v1.Jobs",
            [
                Rpc("CreateJob", api.CreateJobRequest, self.create),
                Rpc("CreateJobs", api.CreateJobsRequest, self.create_many),
                Rpc("GetJob", api.GetJobRequest, self.get),
                Rpc("ListJobs", api.ListJobsRequest, self.list),
                Rpc("UpdateJob", api.UpdateJobRequest, self.update),
                Rpc("PauseJob", api.PauseJobRequest, self.pause),
                Rpc("ResumeJob", api.JobRef, self.resume),
                Rpc("DeleteJob", api.JobRef, self.delete),
                Rpc("PreviewSchedule", api.PreviewScheduleRequest, self.preview),
                Rpc("TriggerJob", api.TriggerJobRequest, self.trigger),
                Rpc("BackfillJob", api.BackfillJobRequest, self.backfill),
            ],
        )

    async def create(
        self, request: api.CreateJobRequest, tenant: TenantId
    ) -> api.CreateJobResponse:
        count = _count(request.preview, "preview", DEFAULT_PREVIEW)
        job_id = convert.job_id(request.job_id, "job_id") if request.job_id else None
        spec = convert.spec_from(
            request.name, request.task_type, request.payload, request.schedule, request.policies,
            http=request.http if request.HasField("http") else None,
        )  # fmt: skip
        now = self._clock()
        try:
            with convert.request_fields(schedule=spec.schedule):
                registered = await register_job(
                    self._store,
                    tenant,
                    spec,
                    partitions=self._partitions,
                    job_id=job_id,
                    clock=lambda: now,
                    egress=self._egress,
                )
        except NameTaken:
            # Another job has the name: the same definition is a repeated create.
            named = await self._store.jobs.named(tenant, spec.name)
            if named is None or named.spec != spec:
                raise
            plan = compile_schedule(spec.schedule, named.id, now=named.created_at)
            return await self._created(named, plan, now, count)
        except Conflict:
            # The id is taken: by an earlier try of this very call (answer what it made),
            # by another definition of this tenant's, or by another tenant's job.
            assert job_id is not None
            existing = await self._existing(tenant, job_id)
            if existing is None:
                raise
            if existing.spec != spec:
                raise Conflict(f"job {job_id} exists with another definition") from None
            plan = compile_schedule(spec.schedule, job_id, now=existing.created_at)
            return await self._created(existing, plan, now, count)
        self._hand_off([registered])
        return await self._created(registered.job, registered.plan, now, count)

    def _hand_off(self, registered: Sequence[Registered]) -> None:
        if self._handoff is None:
            return
        due = [
            DueOccurrence(
                ExecutionKey(job.id, plan.one_off), job.partition, plan.fire_at(plan.one_off),
                job.spec.policies.priority, job.version, job.tenant_id, job.spec.policies.pool,
                job.spec.task_type, OverlapPolicy.ALLOW.value,  # a one-off overlaps nothing
            )
            for job, plan in ((r.job, r.plan) for r in registered)
            if plan.one_off is not None and job.status is JobStatus.ACTIVE
        ]  # fmt: skip
        if due:
            self._handoff(due)

    async def create_many(
        self, request: api.CreateJobsRequest, tenant: TenantId
    ) -> api.CreateJobsResponse:
        """Many jobs, all or none; one whose id exists with the same definition is answered."""
        if not request.jobs:
            raise InvalidArgument("jobs", "give at least one job")
        if len(request.jobs) > MAX_CREATE_BATCH:
            raise InvalidArgument("jobs", f"{len(request.jobs)} is more than {MAX_CREATE_BATCH}")
        specs, ids = [], []
        first_of: dict[JobId, int] = {}
        validated: dict[bytes, Policies] = {}
        for index, item in enumerate(request.jobs):
            prefix = f"jobs[{index}]."
            job_id = convert.job_id(item.job_id, f"{prefix}job_id") if item.job_id else None
            if job_id is not None:
                if job_id in first_of:
                    raise InvalidArgument(
                        f"{prefix}job_id", f"repeats jobs[{first_of[job_id]}].job_id"
                    )
                first_of[job_id] = index
            ids.append(job_id)
            specs.append(
                convert.spec_from(
                    item.name,
                    item.task_type,
                    item.payload,
                    item.schedule,
                    item.policies,
                    prefix,
                    http=item.http if item.HasField("http") else None,
                    validated=validated,
                )
            )
        now = self._clock()
        try:
            registered = await register_jobs(
                self._store, tenant, specs, partitions=self._partitions, job_ids=ids,
                clock=lambda: now, egress=self._egress,
            )  # fmt: skip
        except InvalidArgument as exc:
            named = exc.in_batch()
            if named is None:
                raise
            schedule = specs[named[0]].schedule if 0 <= named[0] < len(specs) else None
            field = f"jobs[{named[0]}].{convert.field_as_sent(named[1], schedule)}"
            raise InvalidArgument(field, exc.reason) from None
        self._hand_off([r for r in registered.registered if r.job.id not in registered.existed])
        jobs = await self._jobs_to([r.job for r in registered.registered])
        for message in jobs:
            message.ClearField("payload")  # the caller has it: the answer stays small
        existed = [i for i, r in enumerate(registered.registered) if r.job.id in registered.existed]
        return api.CreateJobsResponse(jobs=jobs, existed=existed)

    async def _created(
        self, job: Job, plan: SchedulePlan, now: datetime, count: int
    ) -> api.CreateJobResponse:
        after = now if plan.one_off is None else min(now, plan.one_off)
        days = await job_calendars.of_job(self._store, job, plan)
        runs = preview(plan, after, count, days) if job.status is not JobStatus.DELETED else []
        # The answer's next_runs say what comes next; the job itself is as a plain get
        # returns it (with_runs is the reader's to ask for).
        (message,) = await self._jobs_to([job], runs=False)
        return api.CreateJobResponse(
            job=message,
            next_runs=[convert.next_run_to(run) for run in runs],
            warnings=list(message.warnings),
        )

    async def _jobs_to(self, jobs: list[Job], *, runs: bool = False) -> list[pb.Job]:
        """Jobs as messages, each with what may keep its runs from running now, and (with
        `runs`) its last run, when it runs next and its runs that need attention: one
        statement each for the page."""
        messages = [convert.job_to(job) for job in jobs]
        served = await self._served_now()
        if runs:
            await self._add_runs(jobs, messages)
            await self._add_attention(jobs, messages, served)
        if served is not None:
            for job, message in zip(jobs, messages, strict=True):
                if job.status is JobStatus.DELETED:
                    continue
                warning = served.unserved(job.spec.policies.pool, job.spec.task_type)
                if warning is not None:
                    message.warnings.append(warning)
        return messages

    async def _add_runs(self, jobs: list[Job], messages: list[pb.Job]) -> None:
        now = self._clock()
        last = await self._store.executions.last_runs([job.id for job in jobs], now)
        calendars = await job_calendars.of_jobs(self._store, jobs) if jobs else {}
        for job, message in zip(jobs, messages, strict=True):
            ran = last.get(job.id)
            if ran is not None:
                message.last_run.execution_id = ran.key.id
                message.last_run.status = convert.EXECUTION_STATUS[ran.status]
                message.last_run.scheduled_for.CopyFrom(to_timestamp(ran.key.scheduled_for))
                if ran.finished_at is not None:
                    message.last_run.finished_at.CopyFrom(to_timestamp(ran.finished_at))
            if job.status is not JobStatus.ACTIVE:
                continue
            plan = compile_schedule(job.spec.schedule, job.id, now=job.created_at)
            if plan.one_off is not None:
                if ran is None:  # a one-off runs once: next, until it has
                    message.next_run_at.CopyFrom(to_timestamp(plan.fire_at(plan.one_off)))
                continue
            policies = job.spec.policies
            days = job_calendars.under(
                plan, calendars, policies.calendars, policies.calendar_policy
            )
            upcoming = [run for run in preview(plan, now, 1, days) if not run.skipped]
            if upcoming:
                message.next_run_at.CopyFrom(to_timestamp(upcoming[0].fire_at))

    async def _add_attention(
        self, jobs: list[Job], messages: list[pb.Job], served: Served | None
    ) -> None:
        if not jobs:
            return
        counted = await self._store.executions.attention(
            jobs[0].tenant_id, [job.id for job in jobs], self._clock()
        )
        for job, message in zip(jobs, messages, strict=True):
            _attention_to(message, attention(job, counted.get(job.id), served))

    async def _needing_attention(self, tenant: TenantId) -> list[Job]:
        """The tenant's jobs whose runs need attention now, newest first (two statements)."""
        counted = await self._store.executions.attention(tenant, None, self._clock())
        if not counted:
            return []
        served = await self._served_now()
        jobs = await self._store.jobs.many(tenant, counted.keys())
        needing = [j for j in jobs.values() if attention(j, counted.get(j.id), served).needed]
        return sorted(needing, key=lambda j: (j.created_at, j.id.bytes), reverse=True)

    async def _served_now(self) -> Served | None:
        if self._served is None:
            return None
        try:
            return await self._served.now()
        except CoordinatorError:
            return None  # etcd is away: no warning rather than no answer

    async def _ref(self, tenant: TenantId, text: str, field: str = "id") -> JobId:
        return await resolve(self._store.jobs, tenant, text, field)

    async def _existing(self, tenant: TenantId, job_id: JobId) -> Job | None:
        try:
            return await self._store.jobs.get(tenant, job_id)
        except NotFound:
            return None

    async def get(self, request: api.GetJobRequest, tenant: TenantId) -> pb.Job:
        job = await self._store.jobs.get(tenant, await self._ref(tenant, request.id))
        return (await self._jobs_to([job], runs=request.with_runs))[0]

    async def list(self, request: api.ListJobsRequest, tenant: TenantId) -> api.ListJobsResponse:
        if request.needing_attention and request.page_token:
            raise InvalidArgument("page_token", "is not taken with needing_attention")
        limit = pagination.page_size(request.page_size)
        needing = (
            await self._needing_attention(tenant)
            if request.needing_attention or request.count_attention
            else []
        )
        if request.needing_attention:
            jobs, token = needing[:limit], ""
        else:
            jobs, token = await self._store.jobs.list(
                tenant, page_size=request.page_size, page_token=request.page_token
            )
        listed = await self._jobs_to(jobs, runs=request.with_runs or request.needing_attention)
        for message in listed:
            message.ClearField("payload")  # a page of 1 MiB payloads would be a GiB
        return api.ListJobsResponse(
            jobs=listed, next_page_token=token, attention_count=len(needing)
        )

    async def update(self, request: api.UpdateJobRequest, tenant: TenantId) -> pb.Job:
        given = request.job
        job_id = await self._ref(tenant, given.id, "job.id")
        if given.version == 0:
            raise InvalidArgument("job.version", "is required: the version this edit is based on")
        spec = convert.spec_from(
            given.name, given.task_type, given.payload, given.schedule, given.policies, "job.",
            http=given.http if given.HasField("http") else None,
        )  # fmt: skip
        current = await self._store.jobs.get(tenant, job_id)
        check_targets(self._egress, [("job.", spec)])
        await check_http_hosts(self._store, tenant, [("job.", spec)])
        await check_calendars(self._store, tenant, [("job.", spec)])
        if spec.schedule != current.spec.schedule and (
            not current.spec.schedule.recurring or not spec.schedule.recurring
        ):
            raise InvalidArgument(
                "job.schedule",
                "only a recurring (cron or interval) schedule can be changed (to another "
                "recurring one); for a one-off, delete the job and create another",
            )
        with convert.request_fields("job.", spec.schedule):
            compile_schedule(spec.schedule, job_id, now=self._clock())
        return convert.job_to(await self._store.jobs.update(tenant, job_id, given.version, spec))

    async def pause(self, request: api.PauseJobRequest, tenant: TenantId) -> pb.Job:
        """Pause with an optional note; who paused is the calling token's name."""
        check_note(request.note, "note")
        job_id = await self._ref(tenant, request.id)
        paused = await self._store.jobs.pause(
            tenant, job_id, note=request.note, by_token=caller_token()
        )
        return convert.job_to(paused)

    async def resume(self, request: api.JobRef, tenant: TenantId) -> pb.Job:
        job_id = await self._ref(tenant, request.id)
        return convert.job_to(await self._store.jobs.resume(tenant, job_id))

    async def delete(self, request: api.JobRef, tenant: TenantId) -> pb.Job:
        job_id = await self._ref(tenant, request.id)
        return convert.job_to(await self._store.jobs.delete(tenant, job_id))

    async def preview(
        self, request: api.PreviewScheduleRequest, tenant: TenantId
    ) -> api.PreviewScheduleResponse:
        count = _count(request.count, "count", DEFAULT_PREVIEW)
        schedule = convert.schedule_from(request.schedule)
        job_id = (
            await self._ref(tenant, request.job_id, "job_id") if request.job_id else _PREVIEW_JOB
        )
        now = self._clock()
        if request.HasField("around"):
            if request.HasField("after"):
                raise InvalidArgument("around", "give after or around, not both")
            around = convert.instant(request.around, "around")
            before = _count(request.before, "before", DEFAULT_PREVIEW)
        elif request.before:
            raise InvalidArgument("before", "counts the runs before `around`, which is not set")
        after = convert.instant(request.after, "after") if request.HasField("after") else now
        with convert.request_fields(schedule=schedule):
            plan = compile_schedule(schedule, job_id, now=now)
        days = await self._preview_calendars(request, tenant, job_id, plan)
        if request.HasField("around"):
            both = preview_around(plan, around, before, count, days)
            return api.PreviewScheduleResponse(
                earlier_runs=[convert.next_run_to(run) for run in both.earlier],
                next_runs=[convert.next_run_to(run) for run in both.later],
            )
        return api.PreviewScheduleResponse(
            next_runs=[convert.next_run_to(run) for run in preview(plan, after, count, days)]
        )

    async def _preview_calendars(
        self,
        request: api.PreviewScheduleRequest,
        tenant: TenantId,
        job_id: uuid.UUID,
        plan: SchedulePlan,
    ) -> BusinessDays | None:
        """The business calendars a preview applies: those it names, else its job's own."""
        policy = convert.calendar_policy(request.calendar_policy, "calendar_policy")
        if request.calendar_policy and not request.calendars:
            raise InvalidArgument("calendar_policy", "goes with calendars (the ones it applies to)")
        if request.without_calendars:
            if request.calendars:
                raise InvalidArgument("calendars", "not with without_calendars")
            return None
        if request.calendars:
            names = list(request.calendars)
            if len(set(names)) != len(names):
                raise InvalidArgument("calendars", "names a calendar twice")
            found = await job_calendars.calendars_named(self._store, tenant, [("calendars", names)])
            return job_calendars.under(plan, found, names, policy)
        if not request.job_id:
            return None
        # A job id seeds H fields and smear whoever's it is; calendars only from the tenant's own.
        job = await self._existing(tenant, JobId(job_id))
        return await job_calendars.of_job(self._store, job, plan) if job is not None else None

    async def trigger(self, request: api.TriggerJobRequest, tenant: TenantId) -> pb.Execution:
        job_id = await self._ref(tenant, request.id)
        now = self._clock()
        at = convert.instant(request.at, "at") if request.HasField("at") else now
        if not now - self._retention <= at <= now + TRIGGER_AHEAD:
            # The instant names the run (its id); it is not a way to schedule far
            # away, nor to make the store create time partitions far from now.
            raise InvalidArgument(
                "at", f"must be within the last {self._retention.days} days or the next 2"
            )
        job = await self._store.jobs.get(tenant, job_id)
        if job.status is not JobStatus.ACTIVE:
            raise InvalidTransition("job", job_id, job.status.value, "trigger")
        key = ExecutionKey(job_id, at)
        await self._store.occurrences.insert(
            [
                NewOccurrence(
                    key=key,
                    tenant_id=tenant,
                    partition=job.partition,
                    job_version=job.version,
                    fire_at=max(at, now),
                    priority=job.spec.policies.priority,
                    trigger=Trigger.MANUAL,
                )
            ]
        )
        # Inserted now, or by an earlier try of this same call: the same run either way.
        return convert.execution_to(await self._store.executions.get(tenant, key))

    async def backfill(
        self, request: api.BackfillJobRequest, tenant: TenantId
    ) -> api.BackfillJobResponse:
        job_id = await self._ref(tenant, request.id)
        for name in ("start", "end"):
            if not request.HasField(name):
                raise InvalidArgument(name, "is required")
        start = convert.instant(request.start, "start")
        end = convert.instant(request.end, "end")
        now = self._clock()
        if end <= start:
            raise InvalidArgument("end", "must be after start")
        if end > now:
            raise InvalidArgument("end", "must not be in the future (the schedule makes those)")
        if start < now - self._retention:
            # Older runs would be dropped with their day partitions at once; and the
            # partitions a backfill needs then exist already (none made under load).
            days = self._retention.days
            raise InvalidArgument("start", f"older than the cluster's {days}-day retention")
        job = await self._store.jobs.get(tenant, job_id)
        if not job.spec.schedule.recurring:
            raise InvalidTransition("job", job_id, "a one-off job", "backfill")
        if job.status is not JobStatus.ACTIVE:
            raise InvalidTransition("job", job_id, job.status.value, "backfill")
        plan = compile_schedule(job.spec.schedule, job_id, now=job.created_at)
        runs = _bounded_runs(plan, start, end)
        occurrences = [
            NewOccurrence(
                key=ExecutionKey(job_id, run),
                tenant_id=tenant,
                partition=job.partition,
                job_version=job.version,
                fire_at=now,
                priority=job.spec.policies.priority,
                trigger=Trigger.BACKFILL,
            )
            for run in runs
        ]
        inserted = set(await self._store.occurrences.insert(occurrences))
        keys = [o.key for o in occurrences]
        return api.BackfillJobResponse(
            created_ids=[k.id for k in keys if k in inserted],
            existing_ids=[k.id for k in keys if k not in inserted],
        )


def _bounded_runs(plan: SchedulePlan, start: datetime, end: datetime) -> list[datetime]:
    """The schedule's instants in [start, end); InvalidArgument beyond MAX_BACKFILL.

    Windows start at a minute and double up to a month, so an every-second
    schedule stops at the cap after a few windows and a yearly one over ten
    years costs ~120.
    """
    found: list[datetime] = []
    window = timedelta(minutes=1)
    low = start
    while low < end:
        high = min(end, low + window)
        found.extend(o.instant for o in plan.runs(low, high))
        if len(found) > MAX_BACKFILL:
            raise InvalidArgument(
                "end", f"the range holds more than {MAX_BACKFILL} runs: backfill it in parts"
            )
        low = high
        window = min(window * 2, timedelta(days=32))
    return found

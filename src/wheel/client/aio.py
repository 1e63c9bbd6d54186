"""`wheel.AsyncClient`: the SDK's one implementation of wheel's public API.

Every method builds a request, sends it through the transport (which adds
the token, picks the endpoint and retries what is safe to retry), and turns
the answer into the SDK's types. `wheel.Client` runs these same methods on an
event loop of its own.

Which calls are retried when an endpoint is unavailable, and why:

- every read (get, list, preview, explain, cluster status);
- `create_job`: the client always sends a job id (a fresh UUID unless the
  caller gives one), and the server answers a create whose id exists with the
  job made the first time;
- `trigger_job`: the client always sends the instant (now unless given); the
  execution id derives from it, so a repeat names the same run;
- pause, resume, delete, backfill and cancel: the server makes these
  idempotent (pausing a paused job, cancelling a cancelled run, backfilling an
  existing occurrence change nothing).

Not retried: `update_job`, because a repeat of an update that was applied is
refused as a version conflict (the version moved on), so the caller would be
told "conflict" about their own successful edit; and `retry_execution`,
because the execution may have run and died again between the two tries, and
a repeat would then start a run nobody asked for. These raise
`wheel.errors.Unavailable` at once: read the job or execution to see whether
the change happened.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Iterable, Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import Self

from wheel._proto.wheel.v1 import api_pb2 as api
from wheel.api.calendars import Calendar
from wheel.api.convert import schedule_to
from wheel.client import apply, batching, messages, requests
from wheel.client import types as t
from wheel.client.apply import ApplyPlan
from wheel.client.calendar_calls import CalendarCalls
from wheel.client.cluster_calls import TenantAndClusterCalls
from wheel.client.requests import JobRef
from wheel.client.transport import Settings, Transport
from wheel.errors import InvalidArgument
from wheel.model.executions import ExecutionStatus
from wheel.model.http_tasks import HttpTask
from wheel.model.jobs import CalendarPolicy, JobSpec, Policies, Schedule
from wheel.timestamps import to_timestamp


class AsyncClient(TenantAndClusterCalls, CalendarCalls):
    """An asyncio client of wheel's public API, talking to any of several nodes.

        async with wheel.AsyncClient("node-a:7070,node-b:7070", token="whl_...") as client:
            created = await client.create_job("report", "reports.daily",
                                              wheel.cron("0 6 * * *", "Europe/Paris"))
            for run in created.next_runs:
                print(run.wall_time, run.note or "")

    `endpoints`: "host:port", a comma-separated list, or a sequence; default
    $WHEEL_ENDPOINTS. `token`: the bearer token (`wheel tokens create`);
    default $WHEEL_TOKEN. `tls`: use TLS with the system's roots, or with the
    PEM bundle at `root_certificates` (giving one implies TLS).
    `timeout_s`: the deadline of each try. `retries`: extra tries, on the next
    endpoint, of calls safe to repeat (the module docstring lists them).
    `deadline_s`: the deadline of a whole call, its retries included (default:
    none beyond the tries'). Past either, a call raises `DeadlineExceeded`.
    `with_options` gives a client with other values over the same channels:

        job = await client.with_options(timeout_s=1, deadline_s=3).get_job("nightly")

    Channels open on first use; the client is bound to the event loop it is
    first used on. Errors are `wheel.errors` exceptions, as the server raised
    them: `InvalidArgument` (with `.field` and `.reason`), `NotFound`,
    `VersionConflict`, `InvalidTransition`, `Unauthenticated`,
    `PermissionDenied`, `Unavailable` (and its `DeadlineExceeded`).
    """

    def __init__(
        self,
        endpoints: str | Sequence[str] | None = None,
        *,
        token: str | None = None,
        tls: bool = False,
        root_certificates: str | os.PathLike[str] | None = None,
        timeout_s: float = 10.0,
        retries: int = 3,
        deadline_s: float | None = None,
    ) -> None:
        self._transport = Transport(
            Settings.build(
                endpoints,
                token=token,
                tls=tls,
                root_certificates=root_certificates,
                timeout_s=timeout_s,
                retries=retries,
                deadline_s=deadline_s,
            )
        )

    def with_options(
        self,
        *,
        timeout_s: float | None = None,
        deadline_s: float | None = None,
        retries: int | None = None,
    ) -> AsyncClient:
        """This client with another per-try `timeout_s`, overall `deadline_s` or `retries`
        (None: keep this client's), over the same channels: cheap enough for one call.
        Closing it closes nothing; closing this client closes both."""
        settings = self._transport.settings.with_options(
            timeout_s=timeout_s, deadline_s=deadline_s, retries=retries
        )
        derived = object.__new__(AsyncClient)
        derived._transport = self._transport.with_settings(settings)
        return derived

    @property
    def endpoints(self) -> tuple[str, ...]:
        return self._transport.settings.endpoints

    def __repr__(self) -> str:
        # Never the token.
        return f"AsyncClient({', '.join(self.endpoints)!r})"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the channels; the client takes no calls afterwards."""
        await self._transport.close()

    # -- jobs -------------------------------------------------------------------------------

    async def create_job(
        self,
        name: str,
        task_type: str,
        schedule: Schedule,
        *,
        payload: bytes = b"",
        policies: Policies | None = None,
        preview: int = 5,
        job_id: JobRef | None = None,
        http: HttpTask | None = None,
    ) -> t.CreatedJob:
        """Register a job; returns it with its first `preview` resolved runs (0: 5; at most 100).

            created = await client.create_job("ping", "http.ping", wheel.cron("*/5 * * * *"),
                                              payload=b'{"url": "https://example.com"}',
                                              policies=wheel.Policies(max_attempts=5))

        `job_id` (a UUID) makes the create repeatable: the same id returns the
        job made the first time. The client picks one when none is given, so
        its own retries never make a second job. With `http` the nodes POST
        each run to a URL, and `task_type` may be "" (it is made from the URL):

            await client.create_job("ping", "", wheel.cron("*/5 * * * *"),
                                    http=wheel.HttpTask("https://api.example.com/ping"))
        """
        spec = JobSpec(name, task_type or (http.task_type if http else ""), schedule, payload,
                       policies or Policies(), http)  # fmt: skip
        request = requests.create_job(spec, job_id, preview=preview)
        response = await self._transport.call(lambda s: s.jobs.CreateJob, request, retry=True)
        return messages.created_job(response)

    async def create_jobs(
        self,
        jobs: Iterable[t.NewJob],
        *,
        batch_size: int = 1000,
        concurrency: int = 4,
    ) -> list[t.Job]:
        """Register many jobs: `batch_size` per call (CreateJobs), `concurrency` calls at once.

            jobs = [wheel.NewJob(f"remind-{n}", "reminders.send", wheel.at(when[n]))
                    for n in range(20_000)]
            created = await client.create_jobs(jobs)

        Returns the jobs in the order given. A batch is all or none: an invalid
        job raises InvalidArgument naming it (`jobs[i].<field>`, `i` counted in
        `jobs`) and its batch writes nothing; batches already answered stay
        created, the others are not sent. Every job carries an id (its own or
        one the client picks), so a batch is retried safely; give ids to make
        the whole call repeatable after a failure part way.
        """
        return await batching.create_jobs(
            self._transport, jobs, batch_size=batch_size, concurrency=concurrency
        )

    async def apply_jobs(
        self,
        jobs: Iterable[t.NewJob],
        *,
        prune: bool = False,
        dry_run: bool = False,
        calendars: Iterable[Calendar] = (),
    ) -> ApplyPlan:
        """Make the tenant's jobs match `jobs`, matched by name; the difference, applied.

            plan = await client.apply_jobs(jobs, dry_run=True)   # nothing is written
            for change in plan.changes: print(change.action, change.name, change.fields)

        `prune` deletes the jobs `jobs` does not name. Updates name the version the
        plan read: a job changed meanwhile raises VersionConflict (see `wheel.client.apply`).
        `calendars` (definitions, `wheel.schedule.calendars.Calendar`) are applied first, so
        the jobs that name them find them; prune leaves calendars alone.
        """
        planned = await apply.plan(self, jobs, prune=prune, calendars=calendars)
        if dry_run or not planned.changed:
            return planned
        return await apply.apply(self, planned)

    async def get_job(self, job_id: JobRef, *, with_runs: bool = False) -> t.Job:
        """The job with this name or id: `await client.get_job("nightly-report")`.

        `with_runs` fills `last_run` and `next_run_at` (a statement and a preview more).
        """
        request = api.GetJobRequest(id=str(job_id), with_runs=with_runs)
        return messages.job(
            await self._transport.call(lambda s: s.jobs.GetJob, request, retry=True)
        )

    async def list_jobs(
        self,
        *,
        page_size: int = 0,
        page_token: str = "",
        with_runs: bool = False,
        needing_attention: bool = False,
    ) -> t.Page[t.Job]:
        """One page of the tenant's jobs (`page_size` 0: the server's default, 100);
        `with_runs` fills each one's `last_run`, `next_run_at` and `attention`;
        `needing_attention` lists only the jobs whose runs need a person (one page)."""
        request = api.ListJobsRequest(
            page_size=page_size, page_token=page_token, with_runs=with_runs,
            needing_attention=needing_attention,
        )  # fmt: skip
        response = await self._transport.call(lambda s: s.jobs.ListJobs, request, retry=True)
        return messages.page(response.jobs, response.next_page_token, messages.job)

    async def attention_count(self) -> int:
        """How many of the tenant's jobs have runs that need a person now (unserved,
        overdue or failing)."""
        request = api.ListJobsRequest(page_size=1, count_attention=True)
        response = await self._transport.call(lambda s: s.jobs.ListJobs, request, retry=True)
        return response.attention_count

    async def jobs(self, *, page_size: int = 0, with_runs: bool = False) -> AsyncIterator[t.Job]:
        """Every job of the tenant, page after page: `async for job in client.jobs(): ...`."""
        async for job in requests.every_page(
            lambda token: self.list_jobs(page_size=page_size, page_token=token, with_runs=with_runs)
        ):
            yield job

    async def update_job(
        self,
        job_id: JobRef,
        *,
        expected_version: int,
        name: str | None = None,
        task_type: str | None = None,
        payload: bytes | None = None,
        schedule: Schedule | None = None,
        policies: Policies | None = None,
        base: t.Job | None = None,
        http: HttpTask | None = None,
    ) -> t.Job:
        """Replace the job's definition, if it is still at `expected_version`.

            job = await client.get_job(job_id)
            job = await client.update_job(job.id, expected_version=job.version, base=job,
                                          schedule=wheel.cron("0 7 * * *", "Europe/Paris"))

        The server stores whole definitions, so the request carries every
        field: those not given here are taken from `base` (a job you read) or,
        without one, from the job as read now. Either way the server refuses
        the update with `VersionConflict` unless the job is still at
        `expected_version`, so no one else's edit is overwritten. Not retried
        on an unavailable endpoint (see the module docstring).
        """
        if base is None:
            base = await self.get_job(job_id)
        elif str(job_id) not in (str(base.id), base.name):
            raise InvalidArgument("base", f"is job {base.id} ({base.name}), not {job_id}")
        if task_type is None:  # an HTTP task's follows its URL
            task_type = http.task_type if http is not None else base.task_type
        spec = JobSpec(
            name=base.name if name is None else name,
            task_type=task_type,
            schedule=base.schedule if schedule is None else schedule,
            payload=base.payload if payload is None else payload,
            policies=base.policies if policies is None else policies,
            http=base.http if http is None else http,
        )
        request = api.UpdateJobRequest(
            # The job read, by id: a name given as job_id names it.
            job=requests.job_message(spec, str(base.id), expected_version)
        )
        return messages.job(
            await self._transport.call(lambda s: s.jobs.UpdateJob, request, retry=False)
        )

    async def pause_job(self, job_id: JobRef, *, note: str = "") -> t.Job:
        """Stop firing the job's occurrences until it is resumed, with an optional note
        for whoever looks next: `await client.pause_job("nightly", note="vendor outage")`.
        The job's `pause` then says the note, who paused (this client's token name) and
        when. Pausing twice is harmless; pausing a paused job with another note replaces
        the note, who and when."""
        request = api.PauseJobRequest(id=str(job_id), note=note)
        return messages.job(
            await self._transport.call(lambda s: s.jobs.PauseJob, request, retry=True)
        )

    async def resume_job(self, job_id: JobRef) -> t.Job:
        """Fire the job's occurrences again (its misfire policy decides about missed ones)."""
        request = api.JobRef(id=str(job_id))
        return messages.job(
            await self._transport.call(lambda s: s.jobs.ResumeJob, request, retry=True)
        )

    async def delete_job(self, job_id: JobRef) -> t.Job:
        """Delete the job: no more occurrences; its pending ones are cancelled."""
        request = api.JobRef(id=str(job_id))
        return messages.job(
            await self._transport.call(lambda s: s.jobs.DeleteJob, request, retry=True)
        )

    async def preview_schedule(
        self,
        schedule: Schedule,
        *,
        count: int = 5,
        after: datetime | None = None,
        job_id: JobRef | None = None,
        calendars: Sequence[str] = (),
        calendar_policy: CalendarPolicy | None = None,
    ) -> list[t.NextRun]:
        """Resolve a schedule's next `count` runs after `after` (default now); saves nothing.

            for run in await client.preview_schedule(wheel.cron("30 1 * * *", "Europe/London")):
                print(run.wall_time, run.note or "")

        `job_id` resolves `H` fields and smear as they would be for that job, and applies its
        business calendars; `calendars` (the tenant's, by name) and `calendar_policy` preview
        a draft under those instead: runs they skip come back with `skipped`, moved ones
        with `moved_from`.
        """
        request = api.PreviewScheduleRequest(
            schedule=schedule_to(schedule), count=count, job_id=str(job_id or "")
        )
        requests.preview_calendars(request, calendars, calendar_policy)
        if after is not None:
            request.after.CopyFrom(to_timestamp(requests.instant(after, "after")))
        response = await self._transport.call(lambda s: s.jobs.PreviewSchedule, request, retry=True)
        return [messages.next_run(run) for run in response.next_runs]

    async def preview_around(
        self,
        schedule: Schedule,
        around: datetime,
        *,
        before: int = 5,
        after: int = 5,
        job_id: JobRef | None = None,
        calendars: Sequence[str] = (),
        calendar_policy: CalendarPolicy | None = None,
    ) -> t.RunsAround:
        """The last `before` runs scheduled before `around` and the first `after` from it on.

            change = wheel.schedule.next_transition(zone, now, timedelta(days=400))
            both = await client.preview_around(schedule, change.at, before=4, after=4)

        The runs next to the instant, whatever the frequency: what a DST change does.
        """
        request = api.PreviewScheduleRequest(
            schedule=schedule_to(schedule),
            count=after,
            before=before,
            around=to_timestamp(requests.instant(around, "around")),
            job_id=str(job_id or ""),
        )
        requests.preview_calendars(request, calendars, calendar_policy)
        response = await self._transport.call(lambda s: s.jobs.PreviewSchedule, request, retry=True)
        return t.RunsAround(
            earlier=tuple(messages.next_run(run) for run in response.earlier_runs),
            later=tuple(messages.next_run(run) for run in response.next_runs),
        )

    async def trigger_job(self, job_id: JobRef, *, at: datetime | None = None) -> t.Execution:
        """One extra run of the job, for the instant `at` (default: now), outside its schedule.

            execution = await client.trigger_job(job.id)

        The execution id derives from the instant, which the client fixes
        before sending, so a retried trigger makes one run, not two.
        """
        instant = requests.instant(at, "at") if at is not None else datetime.now(UTC)
        request = api.TriggerJobRequest(id=str(job_id), at=to_timestamp(instant))
        return messages.execution(
            await self._transport.call(lambda s: s.jobs.TriggerJob, request, retry=True)
        )

    async def backfill_job(self, job_id: JobRef, start: datetime, end: datetime) -> t.Backfill:
        """Make the occurrences the job's schedule had in [start, end) (end not in the future).

        Each gets the id it would have had, so existing ones are kept and reported.
        """
        request = api.BackfillJobRequest(
            id=str(job_id),
            start=to_timestamp(requests.instant(start, "start")),
            end=to_timestamp(requests.instant(end, "end")),
        )
        return messages.backfill(
            await self._transport.call(lambda s: s.jobs.BackfillJob, request, retry=True)
        )

    # -- executions -------------------------------------------------------------------------

    async def list_executions(
        self,
        *,
        job_id: JobRef | None = None,
        statuses: Iterable[ExecutionStatus | str] = (),
        scheduled_after: datetime | None = None,
        scheduled_before: datetime | None = None,
        page_size: int = 0,
        page_token: str = "",
        oldest_first: bool = False,
    ) -> t.Page[t.Execution]:
        """One page of executions, filtered by job, statuses and scheduled instant; newest
        first, or soonest first with `oldest_first` (what is next).

        page = await client.list_executions(job_id="nightly", statuses=["dead", "needs_review"])
        """
        request = requests.list_executions(
            job_id, statuses, scheduled_after, scheduled_before, page_size,
            oldest_first=oldest_first,
        )  # fmt: skip
        request.page_token = page_token
        response = await self._transport.call(
            lambda s: s.executions.ListExecutions, request, retry=True
        )
        return messages.page(response.executions, response.next_page_token, messages.execution)

    async def executions(
        self,
        *,
        job_id: JobRef | None = None,
        statuses: Iterable[ExecutionStatus | str] = (),
        scheduled_after: datetime | None = None,
        scheduled_before: datetime | None = None,
        page_size: int = 0,
        oldest_first: bool = False,
    ) -> AsyncIterator[t.Execution]:
        """Every execution matching the filters, page after page (see `list_executions`)."""
        statuses = tuple(statuses)

        def fetch(token: str) -> Awaitable[t.Page[t.Execution]]:
            return self.list_executions(
                job_id=job_id, statuses=statuses, scheduled_after=scheduled_after,
                scheduled_before=scheduled_before, page_size=page_size, page_token=token,
                oldest_first=oldest_first,
            )  # fmt: skip

        async for execution in requests.every_page(fetch):
            yield execution

    async def get_execution(self, execution_id: str) -> t.Execution:
        """One execution with every attempt: `await client.get_execution("<job>@<instant>")`."""
        request = api.ExecutionRef(id=execution_id)
        return messages.execution(
            await self._transport.call(lambda s: s.executions.GetExecution, request, retry=True)
        )

    async def explain_execution(self, execution_id: str) -> t.Explanation:
        """The path of one execution, and a verdict: why it ran, waits, or did not run.

        explanation = await client.explain_execution(execution_id)
        print(explanation.verdict, explanation.summary)
        """
        request = api.ExplainExecutionRequest(execution_id=execution_id)
        return await self._explain(request)

    async def explain_occurrence(self, job_id: JobRef, instant: datetime) -> t.Explanation:
        """What became of the job's occurrence at `instant`, or why there is none."""
        occurrence = api.JobInstant(
            job_id=str(job_id), instant=to_timestamp(requests.instant(instant, "instant"))
        )
        return await self._explain(api.ExplainExecutionRequest(occurrence=occurrence))

    async def _explain(self, request: api.ExplainExecutionRequest) -> t.Explanation:
        return messages.explanation(
            await self._transport.call(lambda s: s.executions.ExplainExecution, request, retry=True)
        )

    async def retry_execution(self, execution_id: str) -> t.Execution:
        """Send a DEAD or NEEDS_REVIEW execution back to PENDING for a new try with the job's
        full attempts; its `retries` record when, and this client's token name as who.

        Not retried on an unavailable endpoint (see the module docstring):
        on `Unavailable`, `get_execution` tells whether it happened.
        """
        request = api.ExecutionRef(id=execution_id)
        return messages.execution(
            await self._transport.call(lambda s: s.executions.RetryExecution, request, retry=False)
        )

    async def cancel_execution(self, execution_id: str) -> t.Execution:
        """Make a PENDING execution never run (cancelling a cancelled one is harmless)."""
        request = api.ExecutionRef(id=execution_id)
        return messages.execution(
            await self._transport.call(lambda s: s.executions.CancelExecution, request, retry=True)
        )

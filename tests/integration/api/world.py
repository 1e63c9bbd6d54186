"""Two tenants' objects and a case per RPC: what tenancy and fuzz tests call every RPC with."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import grpc
import pytest
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass
from google.protobuf.timestamp_pb2 import Timestamp

from tests.integration.api.helpers import Api, Caller, Metadata
from wheel._proto.wheel.v1 import api_pb2 as apb
from wheel._proto.wheel.v1 import calendars_pb2 as cpb
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.store import Store
from wheel.timestamps import to_timestamp

METHODS: dict[str, MethodDescriptor] = {
    f"/{service.full_name}/{method.name}": method
    for module in (apb, cpb)
    for service in module.DESCRIPTOR.services_by_name.values()
    for method in service.methods
}
"""Every RPC the public API declares, by its wire name (`/wheel.v1.Jobs/GetJob`)."""

# A job of alice's that no materialiser touches while a test runs (once a year).
YEARLY = pb.Schedule(cron=pb.CronSchedule(expression="0 0 1 1 *", time_zone="UTC"))


def create(name: str, schedule: pb.Schedule = YEARLY, **fields: object) -> apb.CreateJobRequest:
    return apb.CreateJobRequest(name=name, task_type="report", schedule=schedule, **fields)  # type: ignore[arg-type]


async def invoke(
    channel: grpc.aio.Channel, method: str, request: Message, metadata: Metadata
) -> Message:
    """Call an RPC by its wire name; the answer is decoded as the proto declares it."""
    call = channel.unary_unary(method)
    raw = await call(request.SerializeToString(), metadata=metadata, timeout=30)
    return GetMessageClass(METHODS[method].output_type).FromString(raw)  # type: ignore[no-any-return]


async def refused(
    channel: grpc.aio.Channel, method: str, request: Message | bytes, metadata: Metadata
) -> grpc.aio.AioRpcError:
    raw = request if isinstance(request, bytes) else request.SerializeToString()
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await channel.unary_unary(method)(raw, metadata=metadata, timeout=30)
    return caught.value


async def fingerprint(store: Store) -> tuple[object, ...]:
    """What a request could have written: jobs, and executions no background task changes.

    A node's own work (the materialiser, the misfire rule, supersession)
    only adds or skips `schedule` runs that are pending, so those are left
    out; anything else changing across a refused call is a write it made.
    """
    async with store.pool.connection() as conn:
        cursor = await conn.execute(
            """
            SELECT
              (SELECT count(*) FROM tenants),
              (SELECT count(*) FROM api_tokens WHERE revoked_at IS NULL),
              (SELECT count(*) FROM jobs),
              (SELECT md5(coalesce(string_agg(
                   concat_ws('|', id, tenant_id, version, status, name, task_type, cron),
                   ',' ORDER BY id), '')) FROM jobs),
              (SELECT count(*) FROM executions WHERE trigger <> 'schedule'),
              (SELECT md5(coalesce(string_agg(
                   concat_ws('|', job_id, scheduled_for, tenant_id, status, attempt, fence,
                             job_version, fire_at, reason),
                   ',' ORDER BY job_id, scheduled_for), ''))
                 FROM executions WHERE trigger <> 'schedule'),
              (SELECT count(*) FROM executions
                 WHERE trigger = 'schedule' AND status NOT IN ('pending', 'skipped')),
              (SELECT count(*) FROM attempts),
              (SELECT md5(coalesce(string_agg(
                   concat_ws('|', id, tenant_id, name, version, description, definition::text),
                   ',' ORDER BY id), '')) FROM calendars)
            """
        )
        row = await cursor.fetchone()
    assert row is not None
    return tuple(row)


@dataclass(frozen=True)
class World:
    """Alice's objects (and a few of bob's, so that his lists are not trivially empty)."""

    job: pb.Job
    paused: pb.Job
    pending: pb.Execution
    dead: pb.Execution
    page_token: str
    """A page token alice was given (by ListJobs and ListExecutions alike: both are keysets)."""
    bobs_job: pb.Job
    bobs_execution: pb.Execution
    calendar: cpb.Calendar
    bobs_calendar: cpb.Calendar


async def world(api: Api) -> World:
    a, b = api.alice, api.bob
    tag = uuid.uuid4().hex[:8]  # each world its own jobs: names are unique per tenant
    job = (await a.jobs.CreateJob(create(f"nightly {tag}"), metadata=a.metadata)).job
    paused = (await a.jobs.CreateJob(create(f"paused {tag}"), metadata=a.metadata)).job
    paused = await a.jobs.PauseJob(apb.JobRef(id=paused.id), metadata=a.metadata)
    now = datetime.now(UTC)

    async def trigger(caller: Caller, job_id: str, days: int) -> pb.Execution:
        request = apb.TriggerJobRequest(id=job_id, at=to_timestamp(now + timedelta(days=days)))
        return await caller.jobs.TriggerJob(request, metadata=caller.metadata)

    pending = await trigger(a, job.id, 1)
    dead = await trigger(a, job.id, 2)
    # Attempts ran out: written directly, as the recorder would have (no executor runs here).
    async with api.store.pool.connection() as conn:
        await conn.execute(
            "UPDATE executions SET status = 'dead', attempt = 3, fence = 3, error = 'boom',"
            " finished_at = now() WHERE job_id = %s AND scheduled_for = %s",
            (dead.job_id, dead.scheduled_for.ToDatetime(UTC)),
        )
    dead = await a.executions.GetExecution(apb.ExecutionRef(id=dead.id), metadata=a.metadata)
    assert dead.status == pb.EXECUTION_STATUS_DEAD
    page = await a.jobs.ListJobs(apb.ListJobsRequest(page_size=1), metadata=a.metadata)
    assert page.next_page_token
    bobs_job = (await b.jobs.CreateJob(create(f"bob's {tag}"), metadata=b.metadata)).job
    bobs_execution = await trigger(b, bobs_job.id, 1)
    calendar = await invoke(
        api.channel, CREATE_CALENDAR, new_calendar(f"holidays {tag}"), a.metadata
    )
    bobs_calendar = await invoke(
        api.channel, CREATE_CALENDAR, new_calendar(f"bob's holidays {tag}"), b.metadata
    )
    assert isinstance(calendar, cpb.Calendar)
    assert isinstance(bobs_calendar, cpb.Calendar)
    return World(
        job, paused, pending, dead, page.next_page_token, bobs_job, bobs_execution,
        calendar, bobs_calendar,
    )  # fmt: skip


CREATE_CALENDAR = "/wheel.v1.Calendars/CreateCalendar"


def new_calendar(name: str) -> cpb.CreateCalendarRequest:
    return cpb.CreateCalendarRequest(
        calendar=cpb.Calendar(
            name=name,
            weekdays=["sat", "sun"],
            holidays=[cpb.HolidaySource(country="GB", subdivision="ENG")],
            dates=[cpb.CalendarDateRange(first=f"{datetime.now(UTC).year + 1}-12-24")],
        )
    )


async def alices_view(api: Api, w: World) -> list[Message]:
    a = api.alice
    return [
        await a.jobs.GetJob(apb.GetJobRequest(id=w.job.id), metadata=a.metadata),
        await a.jobs.GetJob(apb.GetJobRequest(id=w.paused.id), metadata=a.metadata),
        await a.executions.GetExecution(apb.ExecutionRef(id=w.pending.id), metadata=a.metadata),
        await a.executions.GetExecution(apb.ExecutionRef(id=w.dead.id), metadata=a.metadata),
        await a.jobs.ListJobs(apb.ListJobsRequest(), metadata=a.metadata),
        await a.executions.ListExecutions(apb.ListExecutionsRequest(), metadata=a.metadata),
        await invoke(
            api.channel,
            "/wheel.v1.Calendars/GetCalendar",
            cpb.CalendarRef(id=w.calendar.id),
            a.metadata,
        ),
        await invoke(
            api.channel,
            "/wheel.v1.Calendars/ListCalendars",
            cpb.ListCalendarsRequest(),
            a.metadata,
        ),
    ]


BobCheck = Callable[[Api, World, str, Message], Awaitable[None]]


async def not_found(api: Api, w: World, method: str, request: Message) -> None:
    error = await refused(api.channel, method, request, api.bob.metadata)
    assert error.code() is grpc.StatusCode.NOT_FOUND, (error.code(), error.details())
    for secret in (w.job.name, w.paused.name, w.calendar.name):
        assert secret not in (error.details() or "")


async def create_is_refused(api: Api, w: World, method: str, request: Message) -> None:
    """Her job id is taken; bob is not handed her job."""
    error = await refused(api.channel, method, request, api.bob.metadata)
    assert error.code() is grpc.StatusCode.ALREADY_EXISTS, (error.code(), error.details())
    assert w.job.name not in (error.details() or "")


async def only_bobs_jobs(api: Api, w: World, method: str, request: Message) -> None:
    b = api.bob
    for ask in (request, apb.ListJobsRequest(), apb.ListJobsRequest(page_token=w.page_token)):
        listed = await invoke(api.channel, method, ask, b.metadata)
        assert isinstance(listed, apb.ListJobsResponse)
        assert {j.id for j in listed.jobs} <= {w.bobs_job.id}, ask
    everything = await b.jobs.ListJobs(apb.ListJobsRequest(), metadata=b.metadata)
    assert [j.id for j in everything.jobs] == [w.bobs_job.id]


async def only_bobs_executions(api: Api, w: World, method: str, request: Message) -> None:
    b = api.bob
    assert isinstance(request, apb.ListExecutionsRequest)
    # Her job's runs: an empty page, just as for a job id that names nothing.
    nobodys = apb.ListExecutionsRequest()
    nobodys.CopyFrom(request)
    nobodys.job_id = str(uuid.uuid4())
    for ask in (request, nobodys):
        of_her_job = await invoke(api.channel, method, ask, b.metadata)
        assert of_her_job == apb.ListExecutionsResponse(), ask
    for ask in (apb.ListExecutionsRequest(), apb.ListExecutionsRequest(page_token=w.page_token)):
        listed = await invoke(api.channel, method, ask, b.metadata)
        assert isinstance(listed, apb.ListExecutionsResponse)
        assert {e.id for e in listed.executions} <= {w.bobs_execution.id}, ask
    everything = await b.executions.ListExecutions(apb.ListExecutionsRequest(), metadata=b.metadata)
    assert [e.id for e in everything.executions] == [w.bobs_execution.id]


async def same_as_alices(api: Api, w: World, method: str, request: Message) -> None:
    """No tenant data in the answer: bob is told exactly what alice is told."""
    bobs = await invoke(api.channel, method, request, api.bob.metadata)
    alices = await invoke(api.channel, method, request, api.alice.metadata)
    assert bobs == alices


ALICES_HOOK = "https://alice.example/hook"


async def own_webhook_only(api: Api, w: World, method: str, request: Message) -> None:
    """Bob reads and sets his own webhook; alice's, and her secret, stay hers."""
    a, b = api.alice, api.bob
    invoked = apb.SetWebhookRequest(url=ALICES_HOOK)
    alices = await invoke(api.channel, "/wheel.v1.Notifications/SetWebhook", invoked, a.metadata)
    assert isinstance(alices, apb.Webhook)
    bobs = await invoke(api.channel, method, request, b.metadata)
    assert isinstance(bobs, apb.Webhook)
    assert alices.secret not in str(bobs)
    assert bobs.url != ALICES_HOOK
    again = await invoke(api.channel, "/wheel.v1.Notifications/GetWebhook",
                         apb.GetWebhookRequest(), a.metadata)  # fmt: skip
    assert isinstance(again, apb.Webhook)
    assert (again.url, again.secret) == (ALICES_HOOK, alices.secret)


async def own_calendar_made(api: Api, w: World, method: str, request: Message) -> None:
    """Bob's new calendar is his own, whatever alice has (his is removed again, so the rest of
    the checks see the world as it was)."""
    made = await invoke(api.channel, method, request, api.bob.metadata)
    assert isinstance(made, cpb.Calendar)
    assert made.id != w.calendar.id
    assert made.name == f"{w.calendar.name} too"
    ref = cpb.CalendarRef(id=made.name)
    mine = await invoke(api.channel, "/wheel.v1.Calendars/GetCalendar", ref, api.bob.metadata)
    assert mine == made
    await invoke(api.channel, "/wheel.v1.Calendars/DeleteCalendar", ref, api.bob.metadata)


async def only_bobs_calendars(api: Api, w: World, method: str, request: Message) -> None:
    listed = await invoke(api.channel, method, request, api.bob.metadata)
    assert isinstance(listed, cpb.ListCalendarsResponse)
    assert [c.id for c in listed.calendars] == [w.bobs_calendar.id]


def _edited_calendar(w: World) -> cpb.UpdateCalendarRequest:
    calendar = cpb.Calendar()
    calendar.CopyFrom(w.calendar)
    calendar.weekdays[:] = ["sun"]
    return cpb.UpdateCalendarRequest(calendar=calendar)


@dataclass(frozen=True)
class Case:
    request: Callable[[World], Message]
    """A request alice may make about her own objects (accepted when she sends it)."""
    bob: BobCheck = not_found
    """What must happen when bob sends the same request with his token."""


def _edited(w: World) -> apb.UpdateJobRequest:
    job = pb.Job()
    job.CopyFrom(w.job)
    job.name = "renamed"
    return apb.UpdateJobRequest(job=job)


def _hours_ago(hours: int) -> Timestamp:
    return to_timestamp(datetime.now(UTC) - timedelta(hours=hours))


CASES: dict[str, Case] = {
    "/wheel.v1.Jobs/CreateJob": Case(
        lambda w: create(w.job.name, job_id=w.job.id), create_is_refused
    ),
    "/wheel.v1.Jobs/CreateJobs": Case(
        lambda w: apb.CreateJobsRequest(jobs=[create(w.job.name, job_id=w.job.id)]),
        create_is_refused,
    ),
    "/wheel.v1.Jobs/GetJob": Case(lambda w: apb.GetJobRequest(id=w.job.id)),
    "/wheel.v1.Jobs/ListJobs": Case(lambda w: apb.ListJobsRequest(page_size=1000), only_bobs_jobs),
    "/wheel.v1.Jobs/UpdateJob": Case(_edited),
    "/wheel.v1.Jobs/PauseJob": Case(lambda w: apb.JobRef(id=w.job.id)),
    "/wheel.v1.Jobs/ResumeJob": Case(lambda w: apb.JobRef(id=w.paused.id)),
    "/wheel.v1.Jobs/DeleteJob": Case(lambda w: apb.JobRef(id=w.job.id)),
    # Her job id only seeds H fields and smear: the answer is the request's, not her job's.
    "/wheel.v1.Jobs/PreviewSchedule": Case(
        lambda w: apb.PreviewScheduleRequest(
            schedule=pb.Schedule(
                cron=pb.CronSchedule(expression="H H * * *", smear=Duration(seconds=600))
            ),
            count=3,
            after=to_timestamp(datetime(2030, 1, 1, tzinfo=UTC)),
            job_id=w.job.id,
        ),
        same_as_alices,
    ),
    "/wheel.v1.Jobs/TriggerJob": Case(
        lambda w: apb.TriggerJobRequest(id=w.job.id, at=_hours_ago(-36))
    ),
    "/wheel.v1.Jobs/BackfillJob": Case(
        lambda w: apb.BackfillJobRequest(id=w.job.id, start=_hours_ago(20 * 24), end=_hours_ago(1))
    ),
    "/wheel.v1.Executions/ListExecutions": Case(
        lambda w: apb.ListExecutionsRequest(job_id=w.job.id), only_bobs_executions
    ),
    "/wheel.v1.Executions/GetExecution": Case(lambda w: apb.ExecutionRef(id=w.dead.id)),
    "/wheel.v1.Executions/ExplainExecution": Case(
        lambda w: apb.ExplainExecutionRequest(execution_id=w.pending.id)
    ),
    "/wheel.v1.Executions/RetryExecution": Case(lambda w: apb.ExecutionRef(id=w.dead.id)),
    "/wheel.v1.Executions/CancelExecution": Case(lambda w: apb.ExecutionRef(id=w.pending.id)),
    "/wheel.v1.Cluster/ListNodes": Case(lambda w: apb.ListNodesRequest(), same_as_alices),
    "/wheel.v1.Cluster/ListPartitions": Case(lambda w: apb.ListPartitionsRequest(), same_as_alices),
    "/wheel.v1.Cluster/ListExecutors": Case(lambda w: apb.ListExecutorsRequest(), same_as_alices),
    "/wheel.v1.Notifications/GetWebhook": Case(lambda w: apb.GetWebhookRequest(), own_webhook_only),
    "/wheel.v1.Notifications/SetWebhook": Case(
        lambda w: apb.SetWebhookRequest(url="https://bob.example/hook", rotate_secret=True),
        own_webhook_only,
    ),
    CREATE_CALENDAR: Case(
        lambda w: cpb.CreateCalendarRequest(
            calendar=cpb.Calendar(name=f"{w.calendar.name} too", weekdays=["sat"])
        ),
        own_calendar_made,
    ),
    "/wheel.v1.Calendars/GetCalendar": Case(lambda w: cpb.CalendarRef(id=w.calendar.id)),
    "/wheel.v1.Calendars/ListCalendars": Case(
        lambda w: cpb.ListCalendarsRequest(), only_bobs_calendars
    ),
    "/wheel.v1.Calendars/UpdateCalendar": Case(_edited_calendar),
    "/wheel.v1.Calendars/DeleteCalendar": Case(lambda w: cpb.CalendarRef(id=w.calendar.id)),
    "/wheel.v1.Calendars/ListClosedDays": Case(
        lambda w: cpb.ListClosedDaysRequest(calendar=w.calendar.id)
    ),
}

# Requests naming alice's objects in other ways than the table's.
MORE_OF_ALICES: list[tuple[str, Callable[[World], Message]]] = [
    (
        "/wheel.v1.Executions/ExplainExecution",
        lambda w: apb.ExplainExecutionRequest(
            occurrence=apb.JobInstant(job_id=w.job.id, instant=w.pending.scheduled_for)
        ),
    ),
    ("/wheel.v1.Executions/GetExecution", lambda w: apb.ExecutionRef(id=w.pending.id)),
    ("/wheel.v1.Executions/CancelExecution", lambda w: apb.ExecutionRef(id=w.dead.id)),
    ("/wheel.v1.Executions/RetryExecution", lambda w: apb.ExecutionRef(id=w.pending.id)),
    ("/wheel.v1.Jobs/GetJob", lambda w: apb.GetJobRequest(id=w.paused.id)),
    ("/wheel.v1.Jobs/PauseJob", lambda w: apb.JobRef(id=w.paused.id)),
    ("/wheel.v1.Jobs/ResumeJob", lambda w: apb.JobRef(id=w.job.id)),
    ("/wheel.v1.Jobs/DeleteJob", lambda w: apb.JobRef(id=w.paused.id)),
    ("/wheel.v1.Jobs/TriggerJob", lambda w: apb.TriggerJobRequest(id=w.job.id)),
]


def bad_credentials(token: str) -> dict[str, Metadata]:
    """Ways of not presenting a live token; `token` is a live one, misused."""
    auth = "authorization"
    return {
        "no metadata": (),
        "token in another header": (("x-api-key", token),),
        "basic scheme": ((auth, "Basic YWxpY2U6c2VjcmV0"),),
        "scheme only": ((auth, "Bearer"),),
        "blank token": ((auth, "Bearer    "),),
        "no scheme": ((auth, token),),
        "no space after the scheme": ((auth, f"Bearer{token}"),),
        "unknown token": ((auth, f"Bearer whl_{secrets.token_urlsafe(32)}"),),
        "not a wheel token": ((auth, "Bearer hunter2"),),
        "a live token with a suffix": ((auth, f"Bearer {token}x"),),
        "a live token's hash": ((auth, f"Bearer {hashlib.sha256(token.encode()).hexdigest()}"),),
    }


async def assert_every_rpc_unauthenticated(api: Api, w: World, metadata: Metadata) -> list[str]:
    failures = []
    requests = [(method, case.request(w)) for method, case in CASES.items()]
    requests += [(m, build(w)) for m, build in MORE_OF_ALICES]
    requests.append(("/wheel.v1.Jobs/CreateJob", create("would be new")))
    for method, request in requests:
        for raw in (request.SerializeToString(), b"\xff\xff not a message"):
            before = await fingerprint(api.store)
            error = await refused(api.channel, method, raw, metadata)
            if error.code() is not grpc.StatusCode.UNAUTHENTICATED:
                failures.append(f"{method} {metadata}: {error.code()} {error.details()}")
            if await fingerprint(api.store) != before:
                failures.append(f"{method} {metadata}: wrote without a live token")
    return failures

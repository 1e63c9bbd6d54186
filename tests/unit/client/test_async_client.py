"""AsyncClient against a fake server: what it sends, and what it makes of the answers."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone

import pytest

import wheel
from tests.unit.client.fake_api import DST_NOTE, NOW, FakeApi
from tests.unit.client.helpers import TOKEN, seed_job
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.client import AsyncClient, Verdict
from wheel.errors import ConfigError, InvalidArgument
from wheel.model.executions import ExecutionStatus, Trigger
from wheel.model.jobs import JobStatus, MisfirePolicy, Policies, ScheduleKind
from wheel.timestamps import to_datetime


@pytest.fixture
async def client(address: str) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(address, token=TOKEN, timeout_s=5) as opened:
        yield opened


async def test_every_call_carries_the_bearer_token(client: AsyncClient, api: FakeApi) -> None:
    job = seed_job(api)
    await client.get_job(job.id)
    await client.nodes()
    assert [call.metadata["authorization"] for call in api.calls] == [f"Bearer {TOKEN}"] * 2


async def test_the_token_defaults_to_the_environment(
    address: str, api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WHEEL_TOKEN", "whl_from_env")
    monkeypatch.setenv("WHEEL_ENDPOINTS", address)
    async with AsyncClient() as client:
        await client.nodes()
    assert api.calls[0].metadata["authorization"] == "Bearer whl_from_env"


async def test_no_token_sends_no_authorization(address: str, api: FakeApi) -> None:
    async with AsyncClient(address) as client:
        await client.nodes()
    assert "authorization" not in api.calls[0].metadata


async def test_create_sends_the_definition_and_a_job_id(client: AsyncClient, api: FakeApi) -> None:
    schedule = wheel.cron("30 1 * * *", "Europe/London", smear=timedelta(minutes=5))
    policies = Policies(max_attempts=7, misfire=MisfirePolicy.SKIP, pool="reports")
    created = await client.create_job(
        "nightly", "reports.nightly", schedule, payload=b"{}", policies=policies, preview=3
    )
    request = api.called("CreateJob")[0].request
    assert uuid.UUID(request.job_id) == created.job.id
    assert request.preview == 3
    assert created.job.name == "nightly"
    assert created.job.schedule == schedule
    assert created.job.policies == policies
    assert created.job.status is JobStatus.ACTIVE
    assert created.job.version == 1
    assert len(created.next_runs) == 3
    assert created.next_runs[1].note == DST_NOTE
    assert created.next_runs[0].note is None
    assert created.next_runs[0].time_zone == "Europe/London"


async def test_create_with_a_given_id_is_repeatable(client: AsyncClient, api: FakeApi) -> None:
    ident = uuid.uuid4()
    first = await client.create_job("once", "t", wheel.now(), job_id=ident)
    again = await client.create_job("once", "t", wheel.now(), job_id=ident)
    assert first.job.id == again.job.id == ident
    assert len(api.jobs) == 1


async def test_invalid_definitions_fail_before_anything_is_sent(
    client: AsyncClient, api: FakeApi
) -> None:
    with pytest.raises(InvalidArgument) as caught:
        await client.create_job(" ", "t", wheel.now())
    assert caught.value.field == "name"
    with pytest.raises(InvalidArgument) as caught:
        await client.create_job("n", "t", wheel.at(datetime(2027, 1, 1)))  # naive
    assert caught.value.field == "schedule.at"
    with pytest.raises(InvalidArgument) as caught:
        await client.trigger_job(uuid.uuid4(), at=datetime(2027, 1, 1))
    assert caught.value.field == "at"
    with pytest.raises(InvalidArgument) as caught:
        await client.list_executions(statuses=["finished"])
    assert caught.value.field == "statuses"
    assert api.calls == []


async def test_get_and_list_jobs_page_by_page(client: AsyncClient, api: FakeApi) -> None:
    seeded = [seed_job(api, f"job {n}") for n in range(5)]
    page = await client.list_jobs(page_size=2)
    assert [job.name for job in page.items] == ["job 0", "job 1"]
    assert page.next_page_token
    names = [job.name async for job in client.jobs(page_size=2)]
    assert names == [f"job {n}" for n in range(5)]
    job = await client.get_job(seeded[3].id)
    assert (job.name, job.version, job.payload) == ("job 3", 3, b'{"to": "ops"}')
    assert job.schedule.time_zone == "Europe/London"
    assert job.spec.policies.max_attempts == 5


async def test_update_fills_unchanged_fields_from_the_job(
    client: AsyncClient, api: FakeApi
) -> None:
    seeded = seed_job(api)
    new_schedule = wheel.cron("0 7 * * *", "Europe/Paris")
    updated = await client.update_job(seeded.id, expected_version=3, schedule=new_schedule)
    sent = api.called("UpdateJob")[0].request.job
    assert sent.version == 3
    assert sent.name == seeded.name
    assert sent.payload == seeded.payload
    assert sent.policies == seeded.policies
    assert updated.schedule == new_schedule
    assert updated.version == 4
    assert len(api.called("GetJob")) == 1


async def test_update_from_a_job_already_read_skips_the_read(
    client: AsyncClient, api: FakeApi
) -> None:
    job = await client.get_job(seed_job(api).id)
    updated = await client.update_job(
        job.id, expected_version=job.version, base=job, name="renamed"
    )
    assert updated.name == "renamed"
    assert updated.task_type == job.task_type
    assert len(api.called("GetJob")) == 1
    other = await client.get_job(seed_job(api).id)
    with pytest.raises(InvalidArgument) as caught:
        await client.update_job(other.id, expected_version=1, base=job)
    assert caught.value.field == "base"


async def test_update_by_name_with_the_job_read_sends_its_id(
    client: AsyncClient, api: FakeApi
) -> None:
    """`wheel jobs update NAME` reads the job by name and passes it as the base."""
    job = await client.get_job(seed_job(api, "nightly").id)
    updated = await client.update_job(
        "nightly", expected_version=job.version, base=job, name="renamed"
    )
    assert api.called("UpdateJob")[0].request.job.id == str(job.id)
    assert updated.name == "renamed"


async def test_pause_resume_delete(client: AsyncClient, api: FakeApi) -> None:
    ident = seed_job(api).id
    assert (await client.pause_job(ident)).status is JobStatus.PAUSED
    assert (await client.resume_job(ident)).status is JobStatus.ACTIVE
    assert (await client.delete_job(ident)).status is JobStatus.DELETED


async def test_preview_sends_the_schedule_and_bounds(client: AsyncClient, api: FakeApi) -> None:
    after = datetime(2027, 3, 28, 0, 0, tzinfo=timezone(timedelta(hours=1)))
    job_id = uuid.uuid4()
    runs = await client.preview_schedule(
        wheel.cron("30 1 * * *", "Europe/London"), count=2, after=after, job_id=job_id
    )
    request = api.called("PreviewSchedule")[0].request
    assert (request.count, request.job_id) == (2, str(job_id))
    assert to_datetime(request.after) == after
    assert request.schedule.cron.expression == "30 1 * * *"
    assert [run.instant for run in runs] == [after + timedelta(hours=1), after + timedelta(hours=2)]


async def test_trigger_always_sends_the_instant(client: AsyncClient, api: FakeApi) -> None:
    ident = seed_job(api).id
    before = datetime.now(UTC)
    execution = await client.trigger_job(ident)
    request = api.called("TriggerJob")[0].request
    assert request.HasField("at")
    assert before <= to_datetime(request.at) <= datetime.now(UTC)
    assert execution.scheduled_for == to_datetime(request.at)
    assert execution.trigger is Trigger.MANUAL
    assert execution.status is ExecutionStatus.PENDING
    at = datetime(2027, 4, 1, 9, tzinfo=UTC)
    assert (await client.trigger_job(ident, at=at)).scheduled_for == at


async def test_backfill_reports_created_and_existing(client: AsyncClient, api: FakeApi) -> None:
    ident = seed_job(api).id
    start = datetime(2027, 3, 1, tzinfo=UTC)
    api.add_execution(ident, start, pb.EXECUTION_STATUS_SUCCEEDED)
    result = await client.backfill_job(ident, start, start + timedelta(hours=3))
    assert len(result.created_ids) == 2
    assert result.existing_ids == (f"{ident}@20270301T000000.000000Z",)


async def test_executions_filters_and_details(client: AsyncClient, api: FakeApi) -> None:
    ident = seed_job(api).id
    other = seed_job(api).id
    dead = api.add_execution(
        ident,
        NOW,
        pb.EXECUTION_STATUS_DEAD,
        attempt=3,
        error="boom",
        attempts=[pb.Attempt(number=1, executor_id="ex-0", fence=7, outcome="failed")],
    )
    api.add_execution(ident, NOW + timedelta(hours=1), pb.EXECUTION_STATUS_PENDING)
    api.add_execution(other, NOW, pb.EXECUTION_STATUS_DEAD)
    after = NOW - timedelta(days=1)
    page = await client.list_executions(
        job_id=ident, statuses=[ExecutionStatus.DEAD, "needs_review"], scheduled_after=after
    )
    request = api.called("ListExecutions")[0].request
    assert list(request.statuses) == [pb.EXECUTION_STATUS_DEAD, pb.EXECUTION_STATUS_NEEDS_REVIEW]
    assert to_datetime(request.scheduled_after) == after
    assert not request.HasField("scheduled_before")
    assert [item.id for item in page.items] == [dead.id]
    assert page.items[0].attempts == ()
    every = [item.id async for item in client.executions(job_id=ident, page_size=1)]
    assert len(every) == 2
    execution = await client.get_execution(dead.id)
    assert execution.status is ExecutionStatus.DEAD
    assert execution.error == "boom"
    assert execution.attempts[0].fence == 7
    assert execution.attempts[0].executor_id == "ex-0"
    assert execution.attempts[0].started_at is None


async def test_explain_retry_cancel(client: AsyncClient, api: FakeApi) -> None:
    ident = seed_job(api).id
    dead = api.add_execution(ident, NOW, pb.EXECUTION_STATUS_DEAD)
    explanation = await client.explain_execution(dead.id)
    assert explanation.verdict is Verdict.DEAD
    assert explanation.execution is not None
    assert explanation.execution.id == dead.id
    assert [step.what for step in explanation.steps] == ["materialised", "dead"]
    assert explanation.steps[0].at == NOW
    assert explanation.steps[1].at is None
    missing = await client.explain_occurrence(ident, NOW + timedelta(minutes=1))
    assert missing.verdict is Verdict.NOT_AN_OCCURRENCE
    assert (missing.execution_id, missing.execution) == (None, None)
    occurrence = api.called("ExplainExecution")[1].request.occurrence
    assert to_datetime(occurrence.instant) == NOW + timedelta(minutes=1)
    assert (await client.retry_execution(dead.id)).status is ExecutionStatus.PENDING
    cancelled = await client.cancel_execution(dead.id)
    assert cancelled.status is ExecutionStatus.CANCELLED
    assert cancelled.reason == "cancelled by a user"


async def test_cluster_status(client: AsyncClient) -> None:
    nodes = await client.nodes()
    assert [(n.node_id, n.address, n.partitions) for n in nodes] == [("node-0", "10.0.0.1:7070", 2)]
    partitions = await client.partitions()
    assert [(p.partition, p.node_id, p.epoch) for p in partitions] == [
        (0, "node-0", 4),
        (1, None, 2),
    ]
    executors = await client.executors()
    assert executors[0].pools == ("default", "gpu")
    assert executors[0].capacity == 8


@pytest.mark.parametrize(
    ("endpoints", "expected"),
    [
        ("a:1", ("a:1",)),
        ("a:1, b:2", ("a:1", "b:2")),
        (["a:1", "b:2,c:3"], ("a:1", "b:2", "c:3")),
        ("[::1]:7070", ("[::1]:7070",)),
    ],
)
def test_endpoints_are_parsed(endpoints: str | list[str], expected: tuple[str, ...]) -> None:
    assert AsyncClient(endpoints).endpoints == expected


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"endpoints": "nohost"}, "endpoints"),
        ({"endpoints": "a:port"}, "endpoints"),
        ({"endpoints": " , "}, "endpoints"),
        ({"endpoints": "a:1", "timeout_s": 0}, "timeout_s"),
        ({"endpoints": "a:1", "retries": -1}, "retries"),
        ({"endpoints": "a:1", "root_certificates": "/no/such/ca.pem"}, "root_certificates"),
        ({"endpoints": "a:1", "token": "two\nlines"}, "token"),
    ],
)
def test_bad_settings_are_refused_naming_the_argument(
    arguments: dict[str, object], field: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        AsyncClient(**arguments)  # type: ignore[arg-type]
    assert caught.value.field == field


def test_no_endpoint_at_all_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WHEEL_ENDPOINTS", raising=False)
    with pytest.raises(ConfigError, match="WHEEL_ENDPOINTS"):
        AsyncClient()


def test_the_token_never_shows_in_repr() -> None:
    client = AsyncClient("a:1", token=TOKEN)
    assert TOKEN not in repr(client)
    with wheel.Client("a:1", token=TOKEN) as blocking:
        assert TOKEN not in repr(blocking)


def test_schedules_for_users() -> None:
    assert wheel.now().kind is ScheduleKind.NOW
    at = datetime(2027, 1, 1, tzinfo=UTC)
    assert wheel.at(at).at == at
    schedule = wheel.cron("0 9 * * *", "America/New_York", dst_gap="skip", dst_fold="both")
    assert (schedule.dst_gap.value, schedule.dst_fold.value) == ("skip", "both")
    with pytest.raises(InvalidArgument) as caught:
        wheel.cron("0 9 * * *", dst_fold="middle")
    assert caught.value.field == "schedule.dst_fold"
    with pytest.raises(InvalidArgument) as caught:
        wheel.cron("  ")
    assert caught.value.field == "schedule.cron"
    with pytest.raises(InvalidArgument) as caught:
        wheel.cron("0 9 * * *", start=at, end=at)
    assert caught.value.field == "schedule.ends_at"

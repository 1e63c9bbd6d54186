"""HTTP tasks through a real node: POSTed to a real local server, signed, retried, fenced.

Jobs are created through the SDK; the node's own runner makes the requests to
a local aiohttp server that answers as each test scripts it (a status, a
hang, a slow answer), and the runs' outcomes are read back through the API.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

import wheel
from tests.integration.nodes import NodeFactory
from tests.integration.notify.receiver import HANG, Receiver, Slow
from wheel.cli.jobs import jobs
from wheel.client import AsyncClient, verify_http_task
from wheel.errors import BadSignature, InvalidArgument
from wheel.model.executions import ExecutionStatus, Outcome
from wheel.model.http_tasks import HttpTask
from wheel.model.jobs import Policies
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store

FINAL = (ExecutionStatus.SUCCEEDED, ExecutionStatus.DEAD, ExecutionStatus.NEEDS_REVIEW)
QUICK_RETRY = {"backoff_base": timedelta(milliseconds=100), "backoff_cap": timedelta(seconds=0.2)}


@pytest.fixture
async def node(start_node: NodeFactory) -> SchedulerNode:
    started = await start_node()
    await started.ready.wait()
    return started


@pytest.fixture
async def client(node: SchedulerNode, token: str) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(node.address, token=token) as opened:
        yield opened


async def posted(
    client: AsyncClient, url: str, *, payload: bytes = b'{"n": 1}',
    at: datetime | None = None, **policies: object,
) -> wheel.Job:  # fmt: skip
    """A one-off HTTP task due at once, or `at` (three attempts unless told otherwise)."""
    retry = policies.pop("retry_client_errors", False)
    chosen = {"max_attempts": 3, **QUICK_RETRY, **policies}
    created = await client.create_job(
        f"post-{uuid.uuid4().hex[:6]}", "",
        wheel.at(at or datetime.now(UTC) + timedelta(milliseconds=200)), payload=payload,
        policies=Policies(**chosen),  # type: ignore[arg-type]
        http=HttpTask(url, retry_client_errors=bool(retry)),
    )  # fmt: skip
    return created.job


async def final(client: AsyncClient, job: wheel.Job, within: float = 20.0) -> wheel.Execution:
    """The job's run once it has finished, with its attempts."""
    async with asyncio.timeout(within):
        while True:
            page = await client.list_executions(job_id=job.id)
            if page.items and page.items[0].status in FINAL:
                return await client.get_execution(page.items[0].id)
            await asyncio.sleep(0.1)  # polling a remote state: there is no event to await


async def finished_run(client: AsyncClient, execution_id: str) -> wheel.Execution:
    async with asyncio.timeout(20):
        while True:
            run = await client.get_execution(execution_id)
            if run.status in FINAL:
                return run
            await asyncio.sleep(0.1)  # polling a remote state: there is no event to await


async def test_a_run_is_posted_with_its_identity_and_signed(client: AsyncClient) -> None:
    async with Receiver.running() as receiver:
        job = await posted(client, receiver.url, payload=b'{"to": "priya"}')
        assert job.task_type == f"wheel.http:127.0.0.1:{receiver.url.split(':')[2].split('/')[0]}"
        run = await final(client, job)
        (got,) = await receiver.received(1)
    assert run.status is ExecutionStatus.SUCCEEDED
    assert [a.outcome for a in run.attempts] == [Outcome.SUCCEEDED]
    assert run.attempts[0].executor_id is not None
    assert run.attempts[0].executor_id.startswith("http@")
    assert got.body == b'{"to": "priya"}'
    assert got.headers["Content-Type"] == "application/json"
    assert got.headers["Idempotency-Key"] == got.headers["Wheel-Execution-Id"] == run.id
    assert got.headers["Wheel-Job-Id"] == str(job.id)
    assert (got.headers["Wheel-Attempt"], got.headers["Wheel-Fence"]) == ("1", str(run.fence))
    assert datetime.fromisoformat(got.headers["Wheel-Scheduled-For"]) == run.scheduled_for
    assert datetime.fromisoformat(got.headers["Wheel-Deadline"]) > run.scheduled_for
    secret = (await client.webhook()).secret
    checked = verify_http_task(secret, got.headers, got.body)
    assert (checked.execution_id, checked.attempt, checked.fence) == (run.id, 1, run.fence)
    changed = {**got.headers, "Wheel-Fence": str(run.fence + 1)}
    with pytest.raises(BadSignature, match="no v1 signature matches"):
        verify_http_task(secret, changed, got.body)


async def test_a_5xx_is_retried_and_the_next_attempt_succeeds(client: AsyncClient) -> None:
    async with Receiver.running(answers=[503, 200]) as receiver:
        run = await final(client, await posted(client, receiver.url))
        first, second = await receiver.received(2)
    assert run.status is ExecutionStatus.SUCCEEDED
    assert [(a.outcome, a.error) for a in run.attempts] == [
        (Outcome.FAILED, "HTTP 503: ok"), (Outcome.SUCCEEDED, None),
    ]  # fmt: skip
    assert first.headers["Idempotency-Key"] == second.headers["Idempotency-Key"] == run.id
    assert [r.headers["Wheel-Attempt"] for r in (first, second)] == ["1", "2"]
    assert int(first.headers["Wheel-Fence"]) < int(second.headers["Wheel-Fence"])


async def test_a_4xx_fails_the_run_at_once(client: AsyncClient) -> None:
    async with Receiver.running(answers=[404]) as receiver:
        run = await final(client, await posted(client, receiver.url))
        await receiver.received(1)
    assert run.status is ExecutionStatus.DEAD
    assert [(a.outcome, a.error) for a in run.attempts] == [(Outcome.REJECTED, "HTTP 404: ok")]
    assert len(receiver.requests) == 1, "attempts remained, and none was used"


async def test_a_4xx_is_retried_when_the_job_says_so(client: AsyncClient) -> None:
    async with Receiver.running(answers=[404, 200]) as receiver:
        job = await posted(client, receiver.url, retry_client_errors=True)
        assert job.http == HttpTask(receiver.url, retry_client_errors=True)
        run = await final(client, job)
    assert run.status is ExecutionStatus.SUCCEEDED
    assert [a.outcome for a in run.attempts] == [Outcome.FAILED, Outcome.SUCCEEDED]


async def test_a_429_is_always_retried(client: AsyncClient) -> None:
    async with Receiver.running(answers=[429, 200]) as receiver:
        run = await final(client, await posted(client, receiver.url))
    assert [a.outcome for a in run.attempts] == [Outcome.FAILED, Outcome.SUCCEEDED]


async def test_a_hanging_endpoint_times_out_and_the_retry_succeeds(client: AsyncClient) -> None:
    async with Receiver.running(answers=[HANG, 200]) as receiver:
        job = await posted(client, receiver.url, timeout=timedelta(seconds=1))
        run = await final(client, job)
    assert run.status is ExecutionStatus.SUCCEEDED
    failed, succeeded = run.attempts
    assert failed.outcome is Outcome.FAILED
    assert failed.error is not None
    assert failed.error.startswith("no answer within")
    assert succeeded.outcome is Outcome.SUCCEEDED


async def test_a_slow_answer_within_the_timeout_keeps_its_lease(client: AsyncClient) -> None:
    # The lease is 2 s (fast_config): heartbeats keep it while the answer takes 3 s.
    async with Receiver.running(answers=[Slow(200, 3.0)]) as receiver:
        run = await final(client, await posted(client, receiver.url))
        assert len(receiver.requests) == 1
    assert [a.outcome for a in run.attempts] == [Outcome.SUCCEEDED]


LOOPBACK_DENIED = "169.254.0.0/16,127.0.0.0/8,::1/128"


async def test_a_url_the_runner_would_refuse_is_refused_when_the_job_is_made(
    start_node: NodeFactory, token: str
) -> None:
    """Named by its field, with the reason, and nothing written: such a run was recorded as
    failed and retried (aiohttp refused the URL only when sending)."""
    node = await start_node(notify_deny_networks=LOOPBACK_DENIED)
    await node.ready.wait()
    async with AsyncClient(node.address, token=token) as client, Receiver.running() as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        for url, reason in [
            (receiver.url, r"wheel sends nothing there: 127\.0\.0\.1 is in the denied network"),
            (f"http://[::ffff:127.0.0.1]:{port}/", "in the denied network 127.0.0.0/8"),
            (f"http://\uff11\uff12\uff17.0.0.1:{port}/", "in the denied network 127.0.0.0/8"),
            ("http://2852039166/", "'2852039166' is read as an IPv4 address"),
            ("http://169.254.169.254./", "read as an IPv4 address"),
            (f"http://0:{port}/", "'0' is read as an IPv4 address"),
            (f"http://2130706433:{port}/", "read as an IPv4 address"),
            (f"http://127.1:{port}/", "read as an IPv4 address"),
        ]:
            with pytest.raises(InvalidArgument, match=f"^http\\.url: .*{reason}"):
                await posted(client, url)
        with pytest.raises(InvalidArgument, match=r"^jobs\[1\]\.http\.url: .*IPv4"):
            await client.create_jobs([
                wheel.NewJob("fine", "", wheel.now(), http=HttpTask("https://hooks.example.com/")),
                wheel.NewJob("bad", "", wheel.now(), http=HttpTask("http://0x7f.1/")),
            ])  # fmt: skip
        with pytest.raises(InvalidArgument, match=r"^policies\.notify_url: .*denied network"):
            await client.create_job(
                "hooked", "work", wheel.now(), policies=Policies(notify_url=receiver.url)
            )
        assert not (await client.list_jobs()).items, "nothing was written"
        job = await posted(client, "https://hooks.example.com/run")
        with pytest.raises(InvalidArgument, match=r"^job\.http\.url: .*IPv4"):
            await client.update_job(
                job.id, expected_version=job.version, http=HttpTask("http://2852039166/")
            )
        assert (await client.get_job(job.id)).http == HttpTask("https://hooks.example.com/run")
        assert receiver.requests == []


async def test_a_name_that_leads_to_a_denied_address_is_rejected_at_once(
    start_node: NodeFactory, token: str
) -> None:
    """A name is not resolved when the job is made (what it leads to may change): the
    attempt is refused before any request, and rejected, not retried."""
    node = await start_node(notify_deny_networks=LOOPBACK_DENIED)
    await node.ready.wait()
    async with AsyncClient(node.address, token=token) as client, Receiver.running() as receiver:
        named = receiver.url.replace("127.0.0.1", "localhost")
        run = await final(client, await posted(client, named, max_attempts=3))
        assert receiver.requests == []
    assert run.status is ExecutionStatus.DEAD
    (attempt,) = run.attempts
    assert attempt.outcome is Outcome.REJECTED
    assert attempt.error is not None
    assert attempt.error.startswith("refused: localhost leads to")
    assert "in the denied network" in attempt.error


async def test_a_url_stored_before_the_check_is_rejected_at_once(
    node: SchedulerNode, client: AsyncClient, database_dsn: str
) -> None:
    """A job made before the check at create existed keeps its URL: the runner reads it as
    the check does, and the attempt is rejected, not failed and retried."""
    job = await posted(client, "https://hooks.example.com/run", max_attempts=3,
                       at=datetime.now(UTC) + timedelta(seconds=2))  # fmt: skip
    with psycopg.connect(database_dsn, autocommit=True) as conn:
        stored = HttpTask("http://2852039166/")  # as such a job was made: its type from its URL
        conn.execute(
            "UPDATE jobs SET http_url = %s, task_type = %s WHERE id = %s",
            (stored.url, stored.task_type, job.id),
        )
    run = await final(client, job)
    assert run.status is ExecutionStatus.DEAD
    (attempt,) = run.attempts
    assert attempt.outcome is Outcome.REJECTED
    assert attempt.error is not None
    assert "'2852039166' is read as an IPv4 address" in attempt.error


async def test_an_attempt_given_up_elsewhere_is_cancelled_and_its_fence_refused(
    client: AsyncClient, database_dsn: str
) -> None:
    """Another owner re-dispatched the run (its fence moved on) while the request hung:
    the runner's next heartbeat is refused as stale, it drops the request and reports
    nothing; the re-dispatch's lease runs out and the retry succeeds."""
    async with Receiver.running(answers=[HANG, 200]) as receiver:
        job = await posted(client, receiver.url, timeout=timedelta(minutes=5))
        (hung,) = await receiver.received(1)
        with psycopg.connect(database_dsn, autocommit=True) as conn:
            conn.execute(
                "UPDATE executions SET fence = fence + 1, lease_until = clock_timestamp()"
                " + interval '1 second' WHERE job_id = %s",
                (job.id,),
            )
        run = await final(client, job)
        later = receiver.requests[1]
    assert run.status is ExecutionStatus.SUCCEEDED
    stale = int(hung.headers["Wheel-Fence"])
    assert int(later.headers["Wheel-Fence"]) == stale + 2
    assert [(a.fence, a.outcome) for a in run.attempts] == [
        (stale + 1, Outcome.LEASE_EXPIRED), (stale + 2, Outcome.SUCCEEDED),
    ], "nothing was recorded for the stale attempt"  # fmt: skip


async def test_http_jobs_round_trip_through_the_api_and_refuse_bad_targets(
    client: AsyncClient,
) -> None:
    job = await posted(client, "https://hooks.example.com:8443/run?x=1")
    assert job.task_type == "wheel.http:hooks.example.com:8443"
    got = await client.get_job(job.id)
    assert got.http == HttpTask("https://hooks.example.com:8443/run?x=1")
    moved = await client.update_job(
        job.id, expected_version=job.version, http=HttpTask("https://other.example.com/run")
    )
    assert (moved.task_type, moved.http) == (
        "wheel.http:other.example.com", HttpTask("https://other.example.com/run"),
    )  # fmt: skip
    for url, reason in [
        ("ftp://example.com/x", "http.url: must start with http:// or https://"),
        ("https://user:pw@example.com/x", "http.url: must not carry credentials"),
    ]:
        with pytest.raises(InvalidArgument, match=reason):
            await _create_raw(client, url)
    with pytest.raises(InvalidArgument, match=r"task_type: .*wheel's own"):
        await client.create_job("sneaky", "wheel.http:example.com", wheel.now())
    assert json.loads(job.payload) == {"n": 1}


async def _create_raw(client: AsyncClient, url: str) -> None:
    """A create whose target the SDK does not check first: the server's answer is tested."""
    from wheel._proto.wheel.v1 import api_pb2 as api
    from wheel._proto.wheel.v1 import common_pb2 as pb

    request = api.CreateJobRequest(
        name="bad", schedule=pb.Schedule(now=pb.RunNow()), http=pb.HttpTask(url=url)
    )
    await client._transport.call(lambda s: s.jobs.CreateJob, request, retry=False)


async def test_the_cli_creates_http_tasks_and_applies_them_from_a_file(
    node: SchedulerNode, client: AsyncClient, token: str, tmp_path: Path
) -> None:
    env = {"WHEEL_ENDPOINTS": node.address, "WHEEL_TOKEN": token, "COLUMNS": "200"}

    def invoke(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(jobs, list(args), env=env)
        return result.exit_code, result.output

    async with Receiver.running(answers=[404, 200]) as receiver:
        code, out = await asyncio.to_thread(
            invoke, "create", "cli-post", "--http", receiver.url, "--http-retry-4xx", "--now",
            "--payload", '{"from": "cli"}', "--backoff-base", "100ms",
        )  # fmt: skip
        assert code == 0, out
        (got,) = [j for j in (await client.list_jobs()).items if j.name == "cli-post"]
        assert got.http == HttpTask(receiver.url, retry_client_errors=True)
        run = await final(client, got)
        assert run.status is ExecutionStatus.SUCCEEDED
        assert [r.body for r in receiver.requests] == [b'{"from": "cli"}'] * 2
    code, out = await asyncio.to_thread(invoke, "create", "no-task", "--now")
    assert code != 0
    assert "--task or --http" in out
    code, out = await asyncio.to_thread(
        invoke, "create", "bad", "--http", "ftp://example.com/", "--now"
    )
    assert code != 0
    assert "--http" in out
    assert "must start with http:// or https://" in out
    path = tmp_path / "jobs.toml"
    path.write_text(
        '[jobs.nightly-hook]\nhttp = "https://hooks.example.com/nightly"\ncron = "0 2 * * *"\n'
    )
    code, out = await asyncio.to_thread(invoke, "apply", "-f", str(path))
    assert code == 0, out
    (applied,) = [j for j in (await client.list_jobs()).items if j.name == "nightly-hook"]
    assert applied.task_type == "wheel.http:hooks.example.com"
    code, out = await asyncio.to_thread(invoke, "apply", "-f", str(path))
    assert code == 0, out
    assert "unchanged" in out


async def test_a_tenants_hosts_limit_its_http_tasks_when_made_and_when_sent(
    node: SchedulerNode, store: Store
) -> None:
    hosts = ("hooks.example.com", "*.internal.example.com")
    owner = await store.tenants.create(f"hosts-{uuid.uuid4().hex[:6]}", http_hosts=hosts)
    _, secret = await store.tenants.create_token(owner.id, "hosts test")
    async with AsyncClient(node.address, token=secret) as client:
        allowed = await posted(client, "https://a.internal.example.com/run")
        with pytest.raises(InvalidArgument, match=r"^http\.url: its host is not among"):
            await posted(client, "https://elsewhere.example.com/run")
        with pytest.raises(InvalidArgument, match=r"^job\.http\.url: its host is not among"):
            await client.update_job(
                allowed.id, expected_version=allowed.version,
                http=HttpTask("https://elsewhere.example.com/run"),
            )  # fmt: skip
        urls = ["https://hooks.example.com/", "https://x.example.com/"]
        many = [wheel.NewJob(f"m{n}", "", wheel.now(), http=HttpTask(url))
                for n, url in enumerate(urls)]  # fmt: skip
        with pytest.raises(InvalidArgument, match=r"^jobs\[1\]\.http\.url"):
            await client.create_jobs(many)
        assert not [j for j in (await client.list_jobs()).items if j.name in ("m0", "m1")]
        async with Receiver.running() as receiver:
            await store.tenants.set_http_hosts(owner.id, ())
            later = await client.create_job(
                "later", "", wheel.at(datetime.now(UTC) + timedelta(hours=1)),
                http=HttpTask(receiver.url), policies=Policies(max_attempts=3),
            )  # fmt: skip
            await store.tenants.set_http_hosts(owner.id, ("hooks.example.com",))
            triggered = await client.trigger_job(later.job.id)  # runs now, after the change
            run = await finished_run(client, triggered.id)
            assert receiver.requests == [], "refused when sent: the hosts changed since"
    assert run.status is ExecutionStatus.DEAD
    (attempt,) = run.attempts
    assert attempt.outcome is Outcome.REJECTED
    assert attempt.error is not None
    assert "not among the hosts the tenant's settings allow (hooks.example.com)" in attempt.error

"""Notifications through a real node: a run dies, the tenant's receiver is told, explain says so.

The webhook is set through the SDK and the CLI, the runs are failed by an
executor on the stream, and the notifications are sent by the node's own
loop to a real local HTTP server.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

import wheel
from tests.integration.nodes import NodeFactory
from tests.integration.notify.receiver import HANG, Receiver
from tests.integration.scheduler.scripted_executor import connected, fail
from wheel.cli.notifications import notifications
from wheel.client import AsyncClient, verify_webhook
from wheel.errors import InvalidArgument
from wheel.model.executions import ExecutionStatus
from wheel.model.jobs import Policies
from wheel.scheduler.node import SchedulerNode

QUICK = {"notify_poll_s": 0.1, "notify_timeout_s": 1.0}


@pytest.fixture
async def node(start_node: NodeFactory) -> SchedulerNode:
    started = await start_node(**QUICK)
    await started.ready.wait()
    return started


@pytest.fixture
async def client(node: SchedulerNode, token: str) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(node.address, token=token) as opened:
        yield opened


async def dies(client: AsyncClient, name: str, **policies: object) -> wheel.Execution:
    """A one-off job, due at once, whose only attempt fails: its run, once it is dead."""
    job = (
        await client.create_job(
            name, "work", wheel.at(datetime.now(UTC) + timedelta(milliseconds=300)),
            policies=Policies(max_attempts=1, **policies),  # type: ignore[arg-type]
        )
    ).job  # fmt: skip
    async with asyncio.timeout(20):
        while True:
            page = await client.list_executions(job_id=job.id)
            if page.items and page.items[0].status is ExecutionStatus.DEAD:
                return page.items[0]
            await asyncio.sleep(0.1)  # polling a remote state: there is no event to await


async def test_a_dead_run_reaches_the_tenants_receiver_and_explain_shows_it(
    node: SchedulerNode, client: AsyncClient
) -> None:
    await connected(node, behaviour=fail)
    async with Receiver.running() as receiver:
        webhook = await client.set_webhook(receiver.url)
        assert (webhook.url, webhook.on) == (
            receiver.url, (ExecutionStatus.DEAD, ExecutionStatus.NEEDS_REVIEW),
        )  # fmt: skip
        run = await dies(client, "fails once")
        (got,) = await receiver.received(1)
    verify_webhook(webhook.secret, got.headers["Wheel-Signature"], got.body)
    doc = got.json()
    assert (doc["execution"]["id"], doc["execution"]["job"]) == (run.id, "fails once")
    assert doc["execution"]["error"] == "RuntimeError: boom"
    async with asyncio.timeout(10):
        while True:  # the node records the delivery just after the receiver answers
            explanation = await client.explain_execution(run.id)
            steps = [s for s in explanation.steps if s.what == "notified"]
            if steps:
                break
            await asyncio.sleep(0.05)  # polling a remote state: there is no event to await
    assert steps[0].detail == f"dead to {receiver.url}: HTTP 200 after 1 try"
    assert explanation.summary == doc["summary"]


async def test_a_jobs_own_url_gets_its_runs_and_the_tenants_gets_the_rest(
    node: SchedulerNode, client: AsyncClient
) -> None:
    await connected(node, behaviour=fail)
    async with Receiver.running() as tenants, Receiver.running() as own:
        await client.set_webhook(tenants.url)
        mine = await dies(client, "own url", notify_url=own.url)
        theirs = await dies(client, "tenant url")
        (to_own,) = await own.received(1)
        (to_tenant,) = await tenants.received(1)
    assert to_own.json()["execution"]["id"] == mine.id
    assert to_tenant.json()["execution"]["id"] == theirs.id
    job = await client.get_job("own url")
    assert job.policies.notify_url == own.url


async def test_a_node_that_dies_mid_delivery_leaves_it_to_another(
    start_node: NodeFactory, token: str
) -> None:
    first = await start_node("node-a", **QUICK)
    await first.ready.wait()
    await connected(first, behaviour=fail)
    async with Receiver.running(answers=[HANG]) as receiver:
        async with AsyncClient(first.address, token=token) as client:
            await client.set_webhook(receiver.url)
            run = await dies(client, "dies mid delivery")
        (held,) = await receiver.received(1)  # node-a's try hangs: the node goes down
        await first.stop()
        second = await start_node("node-b", **QUICK)
        await second.ready.wait()
        _, again = await receiver.received(2, within=30)
    assert again.headers["Wheel-Notification-Id"] == held.headers["Wheel-Notification-Id"]
    assert again.json()["execution"]["id"] == run.id


async def test_a_bad_webhook_is_refused_naming_the_field(client: AsyncClient) -> None:
    with pytest.raises(InvalidArgument, match="url: must start with http") as caught:
        await client.set_webhook("gopher://hooks.example.com/")
    assert caught.value.field == "url"
    with pytest.raises(InvalidArgument, match="on: succeeded is not one of"):
        await client.set_webhook("https://hooks.example.com/", on=[ExecutionStatus.SUCCEEDED])
    with pytest.raises(InvalidArgument, match=r"policies\.notify_url: must not carry credentials"):
        await client.create_job(
            f"bad hook {uuid.uuid4().hex[:6]}", "work", wheel.now(),
            policies=Policies(notify_url="https://u:p@hooks.example.com/"),
        )  # fmt: skip
    assert (await client.webhook()).url == ""


async def test_a_webhook_the_sender_would_refuse_is_refused_when_set(
    start_node: NodeFactory, token: str
) -> None:
    """Such a webhook used to be stored, then tried and failed for hours (aiohttp refused
    the URL only when sending), where a denied address is to be given up at once."""
    node = await start_node(**QUICK, notify_deny_networks="169.254.0.0/16,127.0.0.0/8,::1/128")
    await node.ready.wait()
    async with AsyncClient(node.address, token=token) as client:
        for url, reason in [
            ("http://2852039166/", "'2852039166' is read as an IPv4 address"),
            ("http://169.254.169.254./latest", "read as an IPv4 address"),
            ("http://0:8080/", "read as an IPv4 address"),
            ("http://127.1:8080/", "read as an IPv4 address"),
            ("http://a@169.254.169.254/", "must not carry credentials"),
            ("http://[::ffff:169.254.169.254]/", "in the denied network 169.254.0.0/16"),
            ("http://127.0.0.1:8080/", "wheel sends nothing there: 127.0.0.1 is in the denied"),
        ]:
            with pytest.raises(InvalidArgument, match=f"^url: .*{reason}"):
                await client.set_webhook(url)
        assert (await client.webhook()).url == "", "nothing was written"


async def test_a_webhook_that_leads_to_a_denied_address_is_given_up_at_once(
    start_node: NodeFactory, token: str
) -> None:
    """A name is not resolved when set (what it leads to may change): the notification's
    one try is refused before any request, and given up, not tried again."""
    node = await start_node(**QUICK, notify_deny_networks="169.254.0.0/16,127.0.0.0/8,::1/128")
    await node.ready.wait()
    await connected(node, behaviour=fail)
    async with AsyncClient(node.address, token=token) as client, Receiver.running() as receiver:
        await client.set_webhook(receiver.url.replace("127.0.0.1", "localhost"))
        run = await dies(client, "told nobody")
        async with asyncio.timeout(10):
            while True:
                explanation = await client.explain_execution(run.id)
                steps = [s for s in explanation.steps if s.what.startswith("notif")]
                if steps and steps[0].what != "notification pending":
                    break
                await asyncio.sleep(0.05)  # polling a remote state: there is no event to await
        assert receiver.requests == []
    (step,) = steps
    assert step.what == "notification given up"
    assert ": 1 try, the last: refused: localhost leads to" in step.detail


async def test_the_cli_sets_shows_rotates_and_turns_off_the_webhook(
    node: SchedulerNode, token: str
) -> None:
    env = {"WHEEL_ENDPOINTS": node.address, "WHEEL_TOKEN": token, "COLUMNS": "200"}

    def invoke(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(notifications, list(args), env=env)
        return result.exit_code, result.output

    # The node serves from this test's loop: the blocking CLI runs in a thread.
    code, out = await asyncio.to_thread(
        invoke, "set", "https://hooks.example.com/wheel", "--on", "dead,skipped"
    )
    assert code == 0, out
    assert "on:      dead, skipped" in out
    secret = next(line.split()[1] for line in out.splitlines() if line.startswith("secret:"))
    assert secret.startswith("whsec_")
    code, out = await asyncio.to_thread(invoke, "show")
    assert "https://hooks.example.com/wheel" in out
    assert secret not in out
    assert "--reveal-secret" in out
    code, out = await asyncio.to_thread(invoke, "show", "--reveal-secret", "--output", "json")
    assert json.loads(out)["secret"] == secret
    code, out = await asyncio.to_thread(invoke, "rotate-secret")
    assert code == 0, out
    assert secret not in out
    assert "previous one signs too" in out
    code, out = await asyncio.to_thread(invoke, "off")
    assert (code, "the tenant's webhook is off" in out) == (0, True)
    code, out = await asyncio.to_thread(invoke, "show", "--output", "json")
    assert (json.loads(out)["url"], json.loads(out)["secret"]) == ("", "")
    code, out = await asyncio.to_thread(invoke, "set", "https://h.example/", "--on", "succeeded")
    assert code == 2
    assert "'succeeded' is not one of dead, needs_review, skipped" in out
    code, out = await asyncio.to_thread(invoke, "set", "ftp://h.example/")
    assert code == 1
    assert "url: must start with http:// or https://" in out

"""Deadlines and failure streaks through a real node and a real webhook receiver.

A run whose handler is held past its job's 2 s deadline is announced once
(signed, `execution.deadline_missed`), stays marked after it succeeds late, and
explain and the lists say so; a run of a job without a deadline is never
announced; a job whose runs die three times in a row is announced failing once,
and recovered when its next run succeeds.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

import wheel
from tests.integration.nodes import NodeFactory
from tests.integration.notify.receiver import Received, Receiver
from tests.integration.scheduler.scripted_executor import connected
from wheel._proto.wheel.v1 import executor_pb2 as pb
from wheel.cli.jobs import executions
from wheel.client import AsyncClient, verify_webhook
from wheel.model.executions import ExecutionStatus
from wheel.model.jobs import Policies
from wheel.scheduler.node import SchedulerNode

QUICK = {
    "notify_poll_s": 0.1, "notify_timeout_s": 1.0, "reap_interval_s": 0.2,
    "metrics_listen": "127.0.0.1:0",
}  # fmt: skip


@pytest.fixture
async def node(start_node: NodeFactory) -> SchedulerNode:
    started = await start_node(**QUICK)
    await started.ready.wait()
    return started


@pytest.fixture
async def client(node: SchedulerNode, token: str) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(node.address, token=token) as opened:
        yield opened


class Handlers:
    """The executor's behaviour by payload: 'slow' waits for `release`, 'flaky' fails
    while `failing` is set, anything else succeeds."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.failing = True

    async def __call__(self, dispatch: pb.Dispatch) -> tuple[int, str]:
        if dispatch.payload == b"slow":
            await self.release.wait()
        if dispatch.payload == b"flaky" and self.failing:
            return pb.Result.OUTCOME_FAILED, "RuntimeError: boom"
        return pb.Result.OUTCOME_SUCCEEDED, ""


async def until(check: Callable[[], object], within: float = 20.0) -> None:
    """Poll a remote state until `check()` holds: there is no event to await."""
    async with asyncio.timeout(within):
        while True:
            if await check():  # type: ignore[misc]
                return
            await asyncio.sleep(0.1)  # polling a remote state: there is no event to await


def of_type(requests: list[Received], kind: str) -> list[Received]:
    return [r for r in requests if r.json()["type"] == kind]


async def test_a_slow_run_misses_its_deadline_once_and_a_failing_job_is_told_and_recovers(
    node: SchedulerNode, client: AsyncClient, token: str
) -> None:
    handlers = Handlers()
    await connected(node, behaviour=handlers)
    soon = wheel.at(datetime.now(UTC) + timedelta(milliseconds=300))
    async with Receiver.running() as receiver:
        webhook = await client.set_webhook(receiver.url)
        await client.create_job(
            "has a deadline", "work", soon, payload=b"slow",
            policies=Policies(deadline=timedelta(seconds=2)),
        )  # fmt: skip
        untimed = await client.create_job("has none", "work", soon, payload=b"slow")
        (got,) = await receiver.received(1)
        doc = got.json()
        verify_webhook(webhook.secret, got.headers["Wheel-Signature"], got.body)
        assert doc["type"] == "execution.deadline_missed"
        assert doc["execution"]["job"] == "has a deadline"
        assert doc["execution"]["status"] == "running"
        run_id = doc["execution"]["id"]
        scheduled = datetime.fromisoformat(doc["execution"]["scheduled_for"])
        assert datetime.fromisoformat(doc["deadline_at"]) == scheduled + timedelta(seconds=2)

        # It succeeds late, and stays marked.
        handlers.release.set()

        async def succeeded() -> bool:
            runs = await client.list_executions(job_id=untimed.job.id)
            run = await client.get_execution(run_id)
            return (
                bool(runs.items)
                and runs.items[0].status is ExecutionStatus.SUCCEEDED
                and (run.status is ExecutionStatus.SUCCEEDED)
            )

        await until(succeeded)
        run = await client.get_execution(run_id)
        assert run.deadline_at == scheduled + timedelta(seconds=2)
        assert run.deadline_missed_at is not None
        assert run.deadline_missed_at >= run.deadline_at
        (other,) = (await client.list_executions(job_id=untimed.job.id)).items
        assert (other.deadline_at, other.deadline_missed_at) == (None, None)

        explanation = await client.explain_execution(run_id)
        (step,) = [s for s in explanation.steps if s.what == "deadline missed"]
        assert step.detail.startswith(
            f"deadline missed at {run.deadline_at.isoformat(timespec='milliseconds')}"
            .replace("+00:00", "Z") + " (deadline 2.0 s after "
        )  # fmt: skip
        assert "it missed its deadline" in explanation.summary
        jobs = (await client.list_jobs(with_runs=True)).items
        attention = {j.name: j.attention for j in jobs}
        assert attention["has a deadline"] is not None
        assert attention["has a deadline"].deadline_missed == 1
        assert attention["has a deadline"].summary == "1 missed deadline"
        assert attention["has none"] is None

        # The CLI's runs list says so in the detail column.
        args = ["list", "--job", "has a deadline", "--endpoint", node.address, "--token", token]
        env = {"COLUMNS": "200", "WHEEL_ENDPOINTS": "", "WHEEL_TOKEN": ""}
        listed = await asyncio.to_thread(CliRunner().invoke, executions, args, env=env)
        assert listed.exit_code == 0, listed.output
        assert "deadline missed" in listed.output

        # Three dead runs in a row: one 'failing'; the next success: one 'recovered'.
        flaky = await client.create_job(
            "flaky", "work", wheel.at(datetime.now(UTC) + timedelta(days=1)), payload=b"flaky",
            policies=Policies(max_attempts=1, notify_after_failures=3),
        )  # fmt: skip
        for number in range(4):
            if number == 3:
                handlers.failing = False
            triggered = await client.trigger_job(flaky.job.id)

            async def finished(run_id: str = triggered.id) -> bool:
                status = (await client.get_execution(run_id)).status
                return status in (ExecutionStatus.DEAD, ExecutionStatus.SUCCEEDED)

            await until(finished)
            if number == 2:
                await until(lambda: _has(receiver, "job.failing"))
        await until(lambda: _has(receiver, "job.recovered"))
        failing = of_type(receiver.requests, "job.failing")
        recovered = of_type(receiver.requests, "job.recovered")
    assert len(failing) == 1
    assert len(recovered) == 1
    assert failing[0].json()["streak"]["runs"] == 3
    assert recovered[0].json()["streak"]["runs"] == 3
    assert recovered[0].json()["execution"]["status"] == "succeeded"
    for request in failing + recovered:
        verify_webhook(webhook.secret, request.headers["Wheel-Signature"], request.body)
    missed = of_type(receiver.requests, "execution.deadline_missed")
    assert [m.json()["execution"]["id"] for m in missed] == [run_id]
    metrics = node.metrics
    assert metrics is not None
    assert metrics.registry.get_sample_value("wheel_deadlines_missed_total") == 1.0


async def _has(receiver: Receiver, kind: str) -> bool:
    return bool(of_type(receiver.requests, kind))

"""A person's retry on a real node: a new try with the job's full attempts, counted per try,
and the path says who retried and when, not that the run was made then."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from google.protobuf.duration_pb2 import Duration

from tests.integration.api.explaining import explain, one_off
from tests.integration.api.helpers import Api, Caller
from tests.integration.scheduler.scripted_executor import connected, fail
from wheel._proto.wheel.v1 import api_pb2 as apb
from wheel._proto.wheel.v1 import common_pb2 as pb

V = apb.Explanation


def _when(instant: datetime) -> str:
    """An instant as explain writes it."""
    return instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def _dead_after(caller: Caller, job: pb.Job, attempts: int) -> apb.Explanation:
    """Explain until the run is dead with `attempts` made (every try's): the node and the
    executor work on their own."""
    async with asyncio.timeout(30):
        while True:
            found = await explain(caller, job)
            if found.verdict == V.DEAD and found.execution.attempt == attempts:
                return found
            await asyncio.sleep(0.1)  # polling a remote state: there is no event to await


async def test_a_retry_is_a_new_try_with_the_jobs_attempts_and_says_who_asked(api: Api) -> None:
    executor = await connected(api.node, behaviour=fail)
    retry = pb.RetryPolicy(max_attempts=2, backoff_base=Duration(), backoff_cap=Duration())
    job = await one_off(api.alice, 0.3, retry=retry)
    first = await _dead_after(api.alice, job, 2)
    assert "failed all 2 attempts (last error" in first.summary

    _, secret = await api.store.tenants.create_token(api.alice.tenant.id, "ops-oncall")
    oncall = Caller(
        api.alice.tenant, secret, api.alice.jobs, api.alice.executions, api.alice.cluster
    )
    before = datetime.now(UTC)
    retried = await oncall.executions.RetryExecution(
        apb.ExecutionRef(id=first.execution_id), metadata=oncall.metadata
    )
    assert [(r.by, r.after_attempt) for r in retried.retries] == [("ops-oncall", 2)]
    at = retried.retries[0].at.ToDatetime(UTC)
    assert at >= before.replace(microsecond=0)

    # The second try has the job's 2 attempts, not the one that was left over.
    found = await _dead_after(api.alice, job, 4)
    assert "failed all 2 attempts of its second try" in found.summary
    assert "4 attempts" not in found.summary
    what = [s.what for s in found.steps]
    assert what[0] == "materialised"
    made = found.steps[0]
    assert made.at.ToDatetime(UTC) < at, "the path's first row is when it was made"
    # It names the run's instant, not the retry's time as if it were made to fire then.
    assert made.detail.endswith(f"for {_when(job.schedule.at.ToDatetime(UTC))}")
    assert _when(at) not in made.detail
    assert [w for w in what if w.startswith("attempt")] == [
        "attempt 1", "attempt 2", "attempt 1 of its second try", "attempt 2 of its second try",
    ]  # fmt: skip
    (retry_step,) = [s for s in found.steps if s.what == "retried"]
    assert retry_step.detail.startswith("by ops-oncall at ")
    assert retry_step.at.ToDatetime(UTC) == at
    # In time order: the retry between the first try's attempts and the second's.
    assert what.index("retried") == what.index("attempt 2") + 1
    await executor.stop()

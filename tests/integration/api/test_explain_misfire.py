"""Explain on a run that waited past its misfire grace for an executor: while it waits,
that its policy will decide; once an executor comes, the misfire reason the claim wrote."""

from __future__ import annotations

import asyncio

from google.protobuf.duration_pb2 import Duration

from tests.integration.api.explaining import V, explain, one_off, until_verdict
from tests.integration.api.helpers import Api, Caller
from tests.integration.scheduler.scripted_executor import connected
from wheel._proto.wheel.v1 import common_pb2 as pb


async def until_said(caller: Caller, job: pb.Job, words: str, within: float = 20.0) -> str:
    """Explain until the summary says `words`: the node works asynchronously."""
    async with asyncio.timeout(within):
        while True:
            summary = (await explain(caller, job)).summary
            if words in summary:
                return summary
            await asyncio.sleep(0.1)  # polling a remote state: there is no event to await


async def test_a_run_that_waited_past_its_grace_for_an_executor_says_so(api: Api) -> None:
    # Due as it is made (not a missed instant); then nobody can run it past its grace.
    job = await one_off(api.alice, -0.2, misfire=pb.MISFIRE_SKIP, misfire_grace=Duration(seconds=1))
    waiting = await until_verdict(api.alice, job, V.NO_EXECUTOR)
    assert "misfire grace" not in waiting.summary, "within its grace: only late"
    summary = await until_said(api.alice, job, "misfire grace")
    assert summary.startswith("due "), summary
    assert summary.endswith(
        "; it has waited past its 1.0 s misfire grace: when it is claimed, its policy (skip)"
        " decides whether it still runs"
    ), summary
    executor = await connected(api.node)
    found = await until_verdict(api.alice, job, V.SKIPPED_MISFIRE)
    assert found.summary.startswith("not run: misfire: waited "), found.summary
    assert found.summary.endswith(" s for an executor, past its 1.0 s grace (policy skip)")
    skipped = next(s for s in found.steps if s.what == "skipped")
    assert skipped.detail == found.summary.removeprefix("not run: ")
    assert executor.runs == []
    await executor.stop()

"""PreviewSchedule around an instant, through the SDK on a real node: the runs on both
sides of a zone's next DST change (found from zoneinfo, relative to now)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import grpc
import pytest

import wheel
from tests.integration.api.helpers import cron
from wheel._proto.wheel.v1 import api_pb2 as apb
from wheel._proto.wheel.v1 import api_pb2_grpc
from wheel.client import AsyncClient
from wheel.errors import InvalidArgument
from wheel.schedule import next_transition
from wheel.scheduler.node import SchedulerNode
from wheel.timestamps import to_timestamp


@pytest.fixture
async def client(node: SchedulerNode, token: str) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(node.address, token=token) as opened:
        yield opened


async def test_the_runs_on_both_sides_of_the_next_change(client: AsyncClient) -> None:
    change = next_transition(ZoneInfo("Europe/London"), datetime.now(UTC), timedelta(days=400))
    assert change is not None
    minute = timedelta(minutes=1)
    both = await client.preview_around(
        wheel.cron("* * * * *", "Europe/London"), change.at, before=3, after=2
    )
    assert [run.instant for run in both.earlier] == [change.at - n * minute for n in (3, 2, 1)]
    assert [run.instant for run in both.later] == [change.at, change.at + minute]
    # The wall clock jumps (or repeats an hour) between the last run before and the first after.
    last_before = (change.at - minute).astimezone(change.before.tzinfo)
    assert both.earlier[-1].wall_time[11:16] == f"{last_before:%H:%M}"
    assert both.later[0].wall_time[11:16] == f"{change.after:%H:%M}"

    # Lord Howe's clocks move by 30 minutes; an every-20-seconds job runs either side.
    half = next_transition(ZoneInfo("Australia/Lord_Howe"), datetime.now(UTC), timedelta(days=400))
    assert half is not None
    seconds = await client.preview_around(
        wheel.cron("*/20 * * * * *", "Australia/Lord_Howe"), half.at, before=1, after=1
    )
    assert [run.instant for run in seconds.earlier] == [half.at - timedelta(seconds=20)]
    assert [run.instant for run in seconds.later] == [half.at]


async def test_around_is_refused_with_after_and_before_without_around(
    client: AsyncClient, node: SchedulerNode, token: str
) -> None:
    with pytest.raises(InvalidArgument) as refused:
        await client.preview_around(wheel.cron("0 * * * *"), datetime.now(UTC), before=101)
    assert refused.value.field == "before"
    metadata = (("authorization", f"Bearer {token}"),)
    now = to_timestamp(datetime.now(UTC))
    hourly = cron("0 * * * *")
    cases = {
        "around": apb.PreviewScheduleRequest(schedule=hourly, around=now, after=now),
        "before": apb.PreviewScheduleRequest(schedule=hourly, before=3),
    }
    async with grpc.aio.insecure_channel(node.address) as channel:
        stub = api_pb2_grpc.JobsStub(channel)
        for field, request in cases.items():
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.PreviewSchedule(request, metadata=metadata)
            assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
            assert dict(caught.value.trailing_metadata() or ())["wheel-field"] == field

"""Errors come back as the exception the server raised, with its attributes."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import grpc
import pytest

import wheel
from tests.unit.client.fake_api import FakeApi
from tests.unit.client.helpers import TOKEN, seed_job
from wheel.api.status import RemoteError
from wheel.client import AsyncClient
from wheel.errors import (
    Conflict,
    InvalidArgument,
    InvalidTransition,
    NotFound,
    PermissionDenied,
    StoreUnavailable,
    Unauthenticated,
    Unavailable,
    VersionConflict,
    WheelError,
)


@pytest.fixture
async def client(address: str) -> AsyncIterator[AsyncClient]:
    async with AsyncClient(address, token=TOKEN, retries=0) as opened:
        yield opened


@pytest.mark.parametrize(
    ("raised", "expected", "message"),
    [
        (NotFound("job", "j-1"), NotFound, "job j-1 not found"),
        (VersionConflict("job", "j-1", 3, 4), VersionConflict, "is at version 4, not 3"),
        (
            InvalidTransition("execution", "e", "running", "retry"),
            InvalidTransition,
            "cannot retry execution e: it is running",
        ),
        (Conflict("the tenant is over its cap"), Conflict, "the tenant is over its cap"),
        (Unauthenticated("unknown token"), Unauthenticated, "unknown token"),
        (PermissionDenied("read-only token"), PermissionDenied, "read-only token"),
        (StoreUnavailable("postgres is away"), Unavailable, "the database is unavailable now"),
    ],
)
async def test_each_error_kind_maps_back(
    client: AsyncClient,
    api: FakeApi,
    raised: WheelError,
    expected: type[WheelError],
    message: str,
) -> None:
    api.fail("GetJob", raised)
    with pytest.raises(expected) as caught:
        await client.get_job(uuid.uuid4())
    assert type(caught.value) is expected
    assert message in str(caught.value)


async def test_invalid_argument_keeps_its_field_and_reason(
    client: AsyncClient, api: FakeApi
) -> None:
    api.fail("PreviewSchedule", InvalidArgument("schedule.cron.expression", "6 fields expected"))
    with pytest.raises(InvalidArgument) as caught:
        await client.preview_schedule(wheel.cron("* * *"))
    assert caught.value.field == "schedule.cron.expression"
    assert caught.value.reason == "6 fields expected"


async def test_the_servers_own_validation_names_the_field(
    client: AsyncClient, api: FakeApi
) -> None:
    with pytest.raises(InvalidArgument) as caught:
        await client.get_job("x" * 201)
    assert caught.value.field == "id"
    assert "neither a job id" in caught.value.reason
    assert "longer than 200 characters" in caught.value.reason
    with pytest.raises(NotFound):
        await client.get_job(uuid.uuid4())
    with pytest.raises(NotFound):
        await client.get_job("no-such-job")


async def test_version_conflict_from_a_stale_update(client: AsyncClient, api: FakeApi) -> None:
    job = seed_job(api)
    with pytest.raises(VersionConflict, match="is at version 3, not 2"):
        await client.update_job(job.id, expected_version=2, name="late edit")
    assert api.jobs[job.id].name == job.name


async def test_an_undescribed_failure_is_a_remote_error(client: AsyncClient, api: FakeApi) -> None:
    api.fail("ListNodes", grpc.StatusCode.INTERNAL)
    with pytest.raises(RemoteError) as caught:
        await client.nodes()
    assert caught.value.code is grpc.StatusCode.INTERNAL
    assert "first says INTERNAL" in str(caught.value)

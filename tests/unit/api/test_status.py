"""Errors cross the wire as statuses and come back as the same exception types."""

from __future__ import annotations

import uuid

import grpc
import pytest

from wheel.api.status import RemoteError, from_status, to_status
from wheel.errors import (
    Conflict,
    InvalidArgument,
    InvalidTransition,
    NameTaken,
    NotFound,
    StoreError,
    StoreUnavailable,
    Unauthenticated,
    Unavailable,
    VersionConflict,
    WheelError,
)

JOB = uuid.uuid4()


@pytest.mark.parametrize(
    ("error", "code", "back"),
    [
        (InvalidArgument("schedule.cron.expression", "bad"), "INVALID_ARGUMENT", InvalidArgument),
        (NotFound("job", JOB), "NOT_FOUND", NotFound),
        (VersionConflict("job", JOB, 1, 2), "ABORTED", VersionConflict),
        (
            InvalidTransition("job", JOB, "deleted", "resume"),
            "FAILED_PRECONDITION",
            InvalidTransition,
        ),
        (Conflict("taken"), "ALREADY_EXISTS", Conflict),
        (Unauthenticated("no token"), "UNAUTHENTICATED", Unauthenticated),
        (StoreUnavailable("down"), "UNAVAILABLE", Unavailable),
    ],
)
def test_each_error_maps_to_its_code_and_back(
    error: WheelError, code: str, back: type[WheelError]
) -> None:
    status = to_status(error)
    assert status is not None
    assert status.code is getattr(grpc.StatusCode, code)
    again = from_status(status.code, status.message, dict(status.metadata))
    assert isinstance(again, back)
    if isinstance(error, InvalidArgument):
        assert isinstance(again, InvalidArgument)
        assert (again.field, again.reason) == (error.field, error.reason)
    elif not isinstance(error, StoreUnavailable):
        assert str(again) == str(error)
    for name in ("kind", "expected", "current", "state", "operation"):
        if hasattr(error, name):
            assert getattr(again, name) == getattr(error, name), name


def test_an_unavailable_store_is_a_plain_sentence_without_the_driver_detail() -> None:
    status = to_status(StoreUnavailable("cannot reach Postgres: host db.internal:5432 refused"))
    assert status is not None
    assert status.code is grpc.StatusCode.UNAVAILABLE
    assert "db.internal" not in status.message


def test_a_server_fault_has_no_status_of_its_own() -> None:
    assert to_status(StoreError("Postgres error (XX000): boom")) is None


def test_an_undescribed_status_is_a_remote_error() -> None:
    error = from_status(grpc.StatusCode.INTERNAL, "internal error (reference abc)")
    assert isinstance(error, RemoteError)
    assert error.code is grpc.StatusCode.INTERNAL


def test_a_name_in_a_trailer_is_ascii_and_comes_back_whole() -> None:
    error = NotFound("job", repr("rapport été 💥 100%"))
    status = to_status(error)
    assert status is not None
    assert all(value.isascii() and value.isprintable() for _, value in status.metadata)
    rebuilt = from_status(status.code, status.message, dict(status.metadata))
    assert isinstance(rebuilt, NotFound)
    assert (rebuilt.kind, rebuilt.ident, str(rebuilt)) == ("job", error.ident, str(error))


def test_a_taken_name_comes_back_as_name_taken_with_its_field() -> None:
    error = NameTaken("rapport été", "jobs[3].name")
    status = to_status(error)
    assert status is not None
    assert status.code is grpc.StatusCode.ALREADY_EXISTS
    rebuilt = from_status(status.code, status.message, dict(status.metadata))
    assert isinstance(rebuilt, NameTaken)
    assert (rebuilt.name, rebuilt.field, str(rebuilt)) == (
        "rapport été",
        "jobs[3].name",
        str(error),
    )

"""Errors carry the standard google.rpc.Status details, so any gRPC client decodes them
without wheel's own trailers (which stay, for the SDK)."""

from __future__ import annotations

import uuid

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from tests.integration.api.helpers import Api, create, cron, rpc_error
from wheel._proto.wheel.v1 import api_pb2 as apb


def _details(error: grpc.aio.AioRpcError) -> dict[str, object]:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None, "no grpc-status-details-bin trailer"
    assert status.code == error.code().value[0]
    assert status.message == error.details()
    found: dict[str, object] = {}
    for packed in status.details:
        for kind in (error_details_pb2.BadRequest, error_details_pb2.ResourceInfo,
                     error_details_pb2.ErrorInfo):  # fmt: skip
            if packed.Is(kind.DESCRIPTOR):
                detail = kind()
                packed.Unpack(detail)
                found[kind.DESCRIPTOR.name] = detail
    return found


async def test_an_invalid_argument_names_its_field_as_a_field_violation(api: Api) -> None:
    alice = api.alice
    bad = create(f"bad-{uuid.uuid4().hex[:6]}", schedule=cron("61 * * * *", "UTC"))
    error = await rpc_error(alice.jobs.CreateJob(bad, metadata=alice.metadata))
    assert error.code() is grpc.StatusCode.INVALID_ARGUMENT
    details = _details(error)
    request = details["BadRequest"]
    assert isinstance(request, error_details_pb2.BadRequest)
    (violation,) = request.field_violations
    assert violation.field == "schedule.cron.expression"
    assert "61" in violation.description
    info = details["ErrorInfo"]
    assert isinstance(info, error_details_pb2.ErrorInfo)
    assert (info.reason, info.domain) == ("INVALID_ARGUMENT", "wheel")
    # The SDK's own trailers are still there.
    assert dict(error.trailing_metadata() or ())["wheel-field"] == "schedule.cron.expression"


async def test_a_missing_job_names_the_resource(api: Api) -> None:
    alice = api.alice
    missing = str(uuid.uuid4())
    error = await rpc_error(alice.jobs.GetJob(apb.GetJobRequest(id=missing),
                                              metadata=alice.metadata))  # fmt: skip
    assert error.code() is grpc.StatusCode.NOT_FOUND
    resource = _details(error)["ResourceInfo"]
    assert isinstance(resource, error_details_pb2.ResourceInfo)
    assert (resource.resource_type, resource.resource_name) == ("job", missing)


async def test_a_refused_token_says_why_in_error_info(api: Api) -> None:
    error = await rpc_error(
        api.alice.jobs.ListJobs(apb.ListJobsRequest(),
                                metadata=(("authorization", "Bearer whl_nope"),))
    )  # fmt: skip
    assert error.code() is grpc.StatusCode.UNAUTHENTICATED
    info = _details(error)["ErrorInfo"]
    assert isinstance(info, error_details_pb2.ErrorInfo)
    assert info.reason == "UNAUTHENTICATED"

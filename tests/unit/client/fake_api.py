"""A fake of wheel's public API: a real grpc.aio server over an in-memory tenant.

It speaks the contract the SDK relies on (`proto/wheel/v1/api.proto`):
requests are read with `wheel.api.convert` and errors answered with
`wheel.api.status.to_status`, as the real servicers do, but the state is a
dict and the schedule resolution is canned. Tests script failures
(`fail("GetJob", error)`) and read every call it received (`calls`).

The server runs on an event loop of its own in a thread (`ServedApi`), so
that blocking clients can be tested from any thread, including one running
an event loop.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import grpc
import grpc.aio

from wheel._proto.wheel.v1 import api_pb2 as api
from wheel._proto.wheel.v1 import api_pb2_grpc as api_grpc
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.api import convert
from wheel.api.status import to_status
from wheel.errors import InvalidTransition, NotFound, VersionConflict, WheelError
from wheel.model.ids import ExecutionKey
from wheel.model.pauses import check_note
from wheel.timestamps import to_datetime, to_timestamp

T = TypeVar("T")
Context = grpc.aio.ServicerContext[Any, Any]

NOW = datetime(2027, 3, 27, 12, 0, tzinfo=UTC)
"""The fake's clock: every created_at, and where previews start."""
PAUSED_BY = "ci-token"
"""Who the fake says paused a job (the real API: the calling token's name)."""
PAUSED_AGO = timedelta(hours=2)
"""How long before the call the fake says a job was paused (the real API: the call's time)."""
DST_NOTE = "01:30 does not exist on 2027-03-28 in Europe/London; runs at 02:00 BST"


@dataclass(frozen=True)
class Call:
    method: str
    request: Any
    metadata: dict[str, str]


@dataclass(frozen=True)
class Failure:
    """A scripted answer: a wheel error (answered as the server would) or a raw status."""

    error: WheelError | None = None
    code: grpc.StatusCode | None = None
    details: str = ""


@dataclass
class FakeApi(api_grpc.JobsServicer, api_grpc.ExecutionsServicer, api_grpc.ClusterServicer):
    name: str = "fake"
    calls: list[Call] = field(default_factory=list)
    jobs: dict[str, pb.Job] = field(default_factory=dict)
    executions: dict[str, pb.Execution] = field(default_factory=dict)
    failures: dict[str, list[Failure]] = field(default_factory=dict)

    # -- scripting ---------------------------------------------------------------------------

    def fail(self, method: str, failure: WheelError | grpc.StatusCode, times: int = 1) -> None:
        """The next `times` calls of `method` fail with this error or status."""
        item = (
            Failure(error=failure)
            if isinstance(failure, WheelError)
            else Failure(code=failure, details=f"{self.name} says {failure.name}")
        )
        self.failures.setdefault(method, []).extend([item] * times)

    def called(self, method: str) -> list[Call]:
        return [call for call in self.calls if call.method == method]

    def add_execution(self, job_id: str, at: datetime, status: int, **fields: Any) -> pb.Execution:
        key = ExecutionKey(convert.job_id(job_id), at)
        message = pb.Execution(
            id=key.id,
            job_id=job_id,
            job_version=1,
            scheduled_for=to_timestamp(at),
            fire_at=to_timestamp(at),
            status=status,  # type: ignore[arg-type]
            created_at=to_timestamp(NOW),
            **{"trigger": "schedule", **fields},
        )
        self.executions[key.id] = message
        return message

    async def _handle(
        self, method: str, request: Any, context: Context, answer: Callable[[], Awaitable[T]]
    ) -> T:
        metadata = {
            item.key: item.value
            for item in context.invocation_metadata() or ()
            if isinstance(item.value, str)
        }
        self.calls.append(Call(method, request, metadata))
        pending = self.failures.get(method)
        try:
            if pending:
                failure = pending.pop(0)
                if failure.error is not None:
                    raise failure.error
                assert failure.code is not None
                await context.abort(failure.code, failure.details)
            return await answer()
        except WheelError as exc:
            status = to_status(exc)
            if status is None:
                raise
            # As wheel.api.server.rpc answers: the kind and field in trailing metadata.
            context.set_trailing_metadata(status.metadata)
            await context.abort(status.code, status.message)
        raise AssertionError("unreachable")

    # -- jobs ----------------------------------------------------------------------------

    def _job(self, ident: str) -> pb.Job:
        ref = convert.job_ref(ident)
        if isinstance(ref, str):  # a name, as the server resolves it
            ident = next((j.id for j in self.jobs.values() if j.name == ref), ref)
        job = self.jobs.get(ident)
        if job is None:
            raise NotFound("job", ident)
        return job

    def _runs(self, schedule: pb.Schedule, count: int, after: datetime) -> list[pb.NextRun]:
        zone = schedule.cron.time_zone or "UTC"
        runs = []
        for number in range(count):
            instant = after + timedelta(hours=number + 1)
            runs.append(
                pb.NextRun(
                    instant=to_timestamp(instant),
                    wall_time=instant.isoformat(),
                    time_zone=zone,
                    note=DST_NOTE if number == 1 else "",
                )
            )
        return runs

    async def CreateJob(  # type: ignore[override]
        self, request: api.CreateJobRequest, context: Context
    ) -> api.CreateJobResponse:
        async def answer() -> api.CreateJobResponse:
            convert.spec_from(
                request.name,
                request.task_type,
                request.payload,
                request.schedule,
                request.policies,
            )
            ident = request.job_id or str(uuid.uuid4())
            job = self.jobs.get(ident)
            if job is None:
                job = self.jobs[ident] = pb.Job(
                    id=ident,
                    name=request.name,
                    task_type=request.task_type,
                    payload=request.payload,
                    schedule=request.schedule,
                    policies=request.policies,
                    status=pb.JOB_STATUS_ACTIVE,
                    version=1,
                    created_at=to_timestamp(NOW),
                    updated_at=to_timestamp(NOW),
                )
            runs = self._runs(job.schedule, request.preview or 5, NOW)
            return api.CreateJobResponse(job=job, next_runs=runs)

        return await self._handle("CreateJob", request, context, answer)

    async def GetJob(self, request: api.GetJobRequest, context: Context) -> pb.Job:  # type: ignore[override]
        async def answer() -> pb.Job:
            return self._job(request.id)

        return await self._handle("GetJob", request, context, answer)

    async def ListJobs(  # type: ignore[override]
        self, request: api.ListJobsRequest, context: Context
    ) -> api.ListJobsResponse:
        async def answer() -> api.ListJobsResponse:
            items, token = _paged(list(self.jobs.values()), request.page_size, request.page_token)
            return api.ListJobsResponse(jobs=items, next_page_token=token)

        return await self._handle("ListJobs", request, context, answer)

    async def UpdateJob(self, request: api.UpdateJobRequest, context: Context) -> pb.Job:  # type: ignore[override]
        async def answer() -> pb.Job:
            given = request.job
            current = self._job(given.id)
            if given.version != current.version:
                raise VersionConflict("job", given.id, given.version, current.version)
            convert.spec_from(
                given.name, given.task_type, given.payload, given.schedule, given.policies, "job."
            )
            updated = pb.Job()
            updated.CopyFrom(given)
            updated.status = current.status
            updated.version = current.version + 1
            updated.created_at.CopyFrom(current.created_at)
            updated.updated_at.CopyFrom(to_timestamp(NOW + timedelta(minutes=1)))
            self.jobs[given.id] = updated
            return updated

        return await self._handle("UpdateJob", request, context, answer)

    async def _set_status(
        self,
        method: str,
        request: api.JobRef | api.PauseJobRequest,
        context: Context,
        status: int,
    ) -> pb.Job:
        async def answer() -> pb.Job:
            job = self._job(request.id)
            if job.status == pb.JOB_STATUS_DELETED and status != pb.JOB_STATUS_DELETED:
                raise InvalidTransition("job", request.id, "deleted", method.lower())
            if isinstance(request, api.PauseJobRequest):
                check_note(request.note)  # as the real API, before anything is written
            job.status = status  # type: ignore[assignment]
            if isinstance(request, api.PauseJobRequest):  # paused by the fake's one token
                job.pause_note, job.paused_by = request.note, PAUSED_BY
                job.paused_at.CopyFrom(to_timestamp(datetime.now(UTC) - PAUSED_AGO))
            elif status == pb.JOB_STATUS_ACTIVE:
                for name in ("pause_note", "paused_by", "paused_at"):
                    job.ClearField(name)
            return job

        return await self._handle(method, request, context, answer)

    async def PauseJob(self, request: api.PauseJobRequest, context: Context) -> pb.Job:  # type: ignore[override]
        return await self._set_status("PauseJob", request, context, pb.JOB_STATUS_PAUSED)

    async def ResumeJob(self, request: api.JobRef, context: Context) -> pb.Job:  # type: ignore[override]
        return await self._set_status("ResumeJob", request, context, pb.JOB_STATUS_ACTIVE)

    async def DeleteJob(self, request: api.JobRef, context: Context) -> pb.Job:  # type: ignore[override]
        return await self._set_status("DeleteJob", request, context, pb.JOB_STATUS_DELETED)

    async def PreviewSchedule(  # type: ignore[override]
        self, request: api.PreviewScheduleRequest, context: Context
    ) -> api.PreviewScheduleResponse:
        async def answer() -> api.PreviewScheduleResponse:
            convert.schedule_from(request.schedule)
            after = to_datetime(request.after) if request.HasField("after") else NOW
            runs = self._runs(request.schedule, request.count or 5, after)
            return api.PreviewScheduleResponse(next_runs=runs)

        return await self._handle("PreviewSchedule", request, context, answer)

    async def TriggerJob(  # type: ignore[override]
        self, request: api.TriggerJobRequest, context: Context
    ) -> pb.Execution:
        async def answer() -> pb.Execution:
            job = self._job(request.id)
            at = to_datetime(request.at) if request.HasField("at") else NOW
            key = ExecutionKey(convert.job_id(job.id), at)
            existing = self.executions.get(key.id)
            if existing is not None:
                return existing
            return self.add_execution(request.id, at, pb.EXECUTION_STATUS_PENDING, trigger="manual")

        return await self._handle("TriggerJob", request, context, answer)

    async def BackfillJob(  # type: ignore[override]
        self, request: api.BackfillJobRequest, context: Context
    ) -> api.BackfillJobResponse:
        async def answer() -> api.BackfillJobResponse:
            self._job(request.id)
            start, end = to_datetime(request.start), to_datetime(request.end)
            created, existing = [], []
            instant = start
            while instant < end:
                key = ExecutionKey(convert.job_id(request.id), instant)
                if key.id in self.executions:
                    existing.append(key.id)
                else:
                    self.add_execution(request.id, instant, pb.EXECUTION_STATUS_PENDING)
                    created.append(key.id)
                instant += timedelta(hours=1)
            return api.BackfillJobResponse(created_ids=created, existing_ids=existing)

        return await self._handle("BackfillJob", request, context, answer)

    # -- executions ----------------------------------------------------------------------

    def _execution(self, ident: str) -> pb.Execution:
        convert.execution_key(ident)
        execution = self.executions.get(ident)
        if execution is None:
            raise NotFound("execution", ident)
        return execution

    async def ListExecutions(  # type: ignore[override]
        self, request: api.ListExecutionsRequest, context: Context
    ) -> api.ListExecutionsResponse:
        async def answer() -> api.ListExecutionsResponse:
            matching = []
            for execution in self.executions.values():
                if request.job_id and execution.job_id != request.job_id:
                    continue
                if request.statuses and execution.status not in request.statuses:
                    continue
                listed = pb.Execution()
                listed.CopyFrom(execution)
                del listed.attempts[:]
                matching.append(listed)
            items, token = _paged(matching, request.page_size, request.page_token)
            return api.ListExecutionsResponse(executions=items, next_page_token=token)

        return await self._handle("ListExecutions", request, context, answer)

    async def GetExecution(  # type: ignore[override]
        self, request: api.ExecutionRef, context: Context
    ) -> pb.Execution:
        async def answer() -> pb.Execution:
            return self._execution(request.id)

        return await self._handle("GetExecution", request, context, answer)

    async def ExplainExecution(  # type: ignore[override]
        self, request: api.ExplainExecutionRequest, context: Context
    ) -> api.Explanation:
        async def answer() -> api.Explanation:
            if request.WhichOneof("target") == "execution_id":
                execution = self._execution(request.execution_id)
                return api.Explanation(
                    execution_id=execution.id,
                    job_id=execution.job_id,
                    scheduled_for=execution.scheduled_for,
                    verdict=api.Explanation.DEAD,
                    summary="3 attempts failed; retry it with `wheel executions retry`",
                    steps=[
                        api.ExplanationStep(
                            at=execution.scheduled_for, what="materialised", detail="by node-0"
                        ),
                        api.ExplanationStep(what="dead", detail="no attempts left"),
                    ],
                    execution=execution,
                )
            occurrence = request.occurrence
            self._job(occurrence.job_id)
            return api.Explanation(
                job_id=occurrence.job_id,
                scheduled_for=occurrence.instant,
                verdict=api.Explanation.NOT_AN_OCCURRENCE,
                summary="the schedule has no occurrence at that instant",
            )

        return await self._handle("ExplainExecution", request, context, answer)

    async def RetryExecution(  # type: ignore[override]
        self, request: api.ExecutionRef, context: Context
    ) -> pb.Execution:
        async def answer() -> pb.Execution:
            execution = self._execution(request.id)
            if execution.status not in (pb.EXECUTION_STATUS_DEAD, pb.EXECUTION_STATUS_NEEDS_REVIEW):
                state = pb.ExecutionStatus.Name(execution.status)
                raise InvalidTransition("execution", request.id, state, "retry")
            execution.status = pb.EXECUTION_STATUS_PENDING
            return execution

        return await self._handle("RetryExecution", request, context, answer)

    async def CancelExecution(  # type: ignore[override]
        self, request: api.ExecutionRef, context: Context
    ) -> pb.Execution:
        async def answer() -> pb.Execution:
            execution = self._execution(request.id)
            execution.status = pb.EXECUTION_STATUS_CANCELLED
            execution.reason = "cancelled by a user"
            return execution

        return await self._handle("CancelExecution", request, context, answer)

    # -- cluster -------------------------------------------------------------------------

    async def ListNodes(  # type: ignore[override]
        self, request: api.ListNodesRequest, context: Context
    ) -> api.ListNodesResponse:
        async def answer() -> api.ListNodesResponse:
            return api.ListNodesResponse(
                nodes=[api.Node(node_id="node-0", address="10.0.0.1:7070", partitions=2)]
            )

        return await self._handle("ListNodes", request, context, answer)

    async def ListPartitions(  # type: ignore[override]
        self, request: api.ListPartitionsRequest, context: Context
    ) -> api.ListPartitionsResponse:
        async def answer() -> api.ListPartitionsResponse:
            return api.ListPartitionsResponse(
                partitions=[
                    api.PartitionOwner(partition=0, node_id="node-0", epoch=4),
                    api.PartitionOwner(partition=1, node_id="", epoch=2),
                ]
            )

        return await self._handle("ListPartitions", request, context, answer)

    async def ListExecutors(  # type: ignore[override]
        self, request: api.ListExecutorsRequest, context: Context
    ) -> api.ListExecutorsResponse:
        async def answer() -> api.ListExecutorsResponse:
            return api.ListExecutorsResponse(
                executors=[
                    api.ExecutorInfo(
                        executor_id="ex-0",
                        pools=["default", "gpu"],
                        task_types=["reports.daily"],
                        capacity=8,
                    )
                ]
            )

        return await self._handle("ListExecutors", request, context, answer)


def _paged(items: list[T], page_size: int, token: str) -> tuple[list[T], str]:
    start = int(token or 0)
    size = page_size or 100
    end = start + size
    return items[start:end], (str(end) if end < len(items) else "")


class ServedApi:
    """A `FakeApi` served on 127.0.0.1 from an event loop in a thread of its own."""

    def __init__(self, api: FakeApi, credentials: grpc.ServerCredentials | None = None) -> None:
        self.api = api
        self.credentials = credentials
        """TLS only, when given."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: grpc.aio.Server | None = None
        self.address = ""

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=10)

    def start(self) -> str:
        self._thread.start()

        async def serve() -> str:
            server = grpc.aio.server()
            api_grpc.add_JobsServicer_to_server(self.api, server)
            api_grpc.add_ExecutionsServicer_to_server(self.api, server)
            api_grpc.add_ClusterServicer_to_server(self.api, server)
            if self.credentials is None:
                port = server.add_insecure_port("127.0.0.1:0")
            else:
                port = server.add_secure_port("127.0.0.1:0", self.credentials)
            await server.start()
            self._server = server
            return f"127.0.0.1:{port}"

        self.address = self._run(serve())
        return self.address

    def stop(self) -> None:
        if self._server is not None:
            self._run(self._server.stop(grace=None))
            self._server = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()


@contextmanager
def serving(api: FakeApi, credentials: grpc.ServerCredentials | None = None) -> Iterator[str]:
    """`api` served for the block: its address."""
    served = ServedApi(api, credentials)
    try:
        yield served.start()
    finally:
        served.stop()

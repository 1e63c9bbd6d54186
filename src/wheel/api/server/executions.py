"""wheel.v1.Executions: a tenant's executions — list, get, explain, retry, cancel."""

from __future__ import annotations

from wheel._proto.wheel.v1 import api_pb2 as api
from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.api import convert
from wheel.api.server.auth import caller_token
from wheel.api.server.explain import Explainer
from wheel.api.server.job_refs import resolve
from wheel.api.server.rpc import Rpc, Service
from wheel.errors import InvalidArgument, InvalidTransition, first_line
from wheel.model.executions import ExecutionStatus
from wheel.model.ids import ExecutionKey, TenantId
from wheel.store import Store


class ExecutionsApi:
    def __init__(self, store: Store, explainer: Explainer) -> None:
        self._store = store
        self._explainer = explainer

    def service(self) -> Service:
        return Service(
            "wheel.v1.Executions",
            [
                Rpc("ListExecutions", api.ListExecutionsRequest, self.list),
                Rpc("GetExecution", api.ExecutionRef, self.get),
                Rpc("ExplainExecution", api.ExplainExecutionRequest, self.explain),
                Rpc("RetryExecution", api.ExecutionRef, self.retry),
                Rpc("CancelExecution", api.ExecutionRef, self.cancel),
            ],
        )

    async def list(
        self, request: api.ListExecutionsRequest, tenant: TenantId
    ) -> api.ListExecutionsResponse:
        job_id = (
            await resolve(self._store.jobs, tenant, request.job_id, "job_id")
            if request.job_id
            else None
        )
        statuses = []
        for index, value in enumerate(request.statuses):
            status = convert.EXECUTION_STATUS_FROM.get(value)
            if status is None:
                raise InvalidArgument(f"statuses[{index}]", f"{value} is not a known status")
            statuses.append(status)
        after = (
            convert.instant(request.scheduled_after, "scheduled_after")
            if request.HasField("scheduled_after")
            else None
        )
        before = (
            convert.instant(request.scheduled_before, "scheduled_before")
            if request.HasField("scheduled_before")
            else None
        )
        if after is not None and before is not None and before <= after:
            raise InvalidArgument("scheduled_before", "must be after scheduled_after")
        found, token = await self._store.executions.list(
            tenant,
            job_id=job_id,
            statuses=statuses,
            scheduled_after=after,
            scheduled_before=before,
            page_size=request.page_size,
            page_token=request.page_token,
            oldest_first=request.oldest_first,
        )
        listed = [convert.execution_to(e) for e in found]
        for message in listed:
            message.error = first_line(message.error)  # tracebacks: GetExecution has them
        return api.ListExecutionsResponse(executions=listed, next_page_token=token)

    async def get(self, request: api.ExecutionRef, tenant: TenantId) -> pb.Execution:
        key = convert.execution_key(request.id)
        return convert.execution_to(await self._store.executions.get(tenant, key))

    async def explain(
        self, request: api.ExplainExecutionRequest, tenant: TenantId
    ) -> api.Explanation:
        target = request.WhichOneof("target")
        if target == "execution_id":
            key = convert.execution_key(request.execution_id, "execution_id")
        elif target == "occurrence":
            job_id = await resolve(
                self._store.jobs, tenant, request.occurrence.job_id, "occurrence.job_id"
            )
            if not request.occurrence.HasField("instant"):
                raise InvalidArgument("occurrence.instant", "is required")
            instant = convert.instant(request.occurrence.instant, "occurrence.instant")
            key = ExecutionKey(job_id, instant)
        else:
            raise InvalidArgument("target", "one of execution_id or occurrence is required")
        return await self._explainer.explain(tenant, key)

    async def retry(self, request: api.ExecutionRef, tenant: TenantId) -> pb.Execution:
        key = convert.execution_key(request.id)
        retried = await self._store.executions.retry(tenant, key, by_token=caller_token())
        return convert.execution_to(retried)

    async def cancel(self, request: api.ExecutionRef, tenant: TenantId) -> pb.Execution:
        key = convert.execution_key(request.id)
        try:
            cancelled = await self._store.executions.cancel(tenant, key)
        except InvalidTransition:
            current = await self._store.executions.get(tenant, key)
            if current.status is not ExecutionStatus.CANCELLED:
                raise
            cancelled = current  # cancelled already: a repeated cancel is answered the same
        return convert.execution_to(cancelled)

"""The node's HTTP task runner: an executor inside the node, for runs that are a POST.

    async with HttpRunner(engine, store.webhooks, config):
        ...  # the node runs; HTTP tasks go to the runner's link like any dispatch

It is a link with no stream (`Links.connect(..., http_runner=True)`): claims
pick it by credit like an executor, bind each run to it, and route its
results and heartbeats through the recorder, so HTTP tasks follow the same
fences, leases, retries, overlap, timeout and breaker rules as every task.
Each dispatch waits for its instant, sends a heartbeat (the run is running),
POSTs (`wheel.http_tasks.call`), beats every `heartbeat_interval_s` while the
request is out, and reports the outcome. A heartbeat refused as stale means
the run was given up and dispatched again: the request is cancelled and not
reported. A node that stops or dies mid-request reports nothing; the lease
runs out and the run is retried, so endpoints see at least once, keyed by
`Idempotency-Key`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from dataclasses import dataclass

from wheel import tracing
from wheel.errors import WheelError
from wheel.http_tasks.call import Caller, Request
from wheel.model.executions import AttemptResult, Fenced, Outcome
from wheel.model.http_tasks import HTTP_POOL, host_allowed
from wheel.model.ids import TenantId
from wheel.model.notifications import redacted
from wheel.notify.egress import EgressPolicy
from wheel.scheduler.config import SchedulerConfig
from wheel.scheduler.engine import Engine
from wheel.scheduler.links import Link
from wheel.scheduler.messages import Hello
from wheel.scheduler.outgoing import Acknowledgements, Dispatch, Dispatches, Refusal
from wheel.store.webhooks import Webhooks

log = logging.getLogger(__name__)

SETTINGS_TTL_S = 10.0
"""How long a tenant's signing secrets and hosts are reused before they are read again."""
_NO_TOKEN = uuid.UUID(int=0)


@dataclass(slots=True)
class _Cached:
    secrets: tuple[str, ...]
    hosts: tuple[str, ...]
    until: float


class HttpRunner:
    def __init__(self, engine: Engine, webhooks: Webhooks, config: SchedulerConfig) -> None:
        self._engine = engine
        self._webhooks = webhooks
        self._config = config
        self._caller = Caller(
            EgressPolicy.of(config.denied_networks), concurrency=config.http_task_concurrency
        )
        self._settings_of: dict[TenantId, _Cached] = {}
        self._running: dict[tuple[str, int], asyncio.Task[None]] = {}
        self._drain: asyncio.Task[None] | None = None
        self.link: Link | None = None

    async def __aenter__(self) -> HttpRunner:
        await self._caller.__aenter__()
        config = self._config
        hello = Hello(
            executor_id=f"http@{config.node_id}",
            pools=(HTTP_POOL,),
            task_types=(),
            capacity=config.http_task_concurrency,
            instance_id=uuid.uuid4().hex,
            slots=((HTTP_POOL, config.http_task_concurrency),),
        )
        links = self._engine.links
        self.link = links.connect(hello, _NO_TOKEN, http_runner=True)
        links.grant(self.link, HTTP_POOL, config.http_task_concurrency)
        self._drain = asyncio.create_task(self._read(self.link), name="http tasks")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.link is not None:
            self._engine.links.disconnect(self.link)
        tasks = [t for t in (self._drain, *self._running.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._caller.__aexit__(*exc)

    async def _read(self, link: Link) -> None:
        """What the node sends the runner: dispatches to start, refusals to act on."""
        while (message := await link.outbox.get()) is not None:
            if isinstance(message, Dispatches):
                for dispatch in message.items:
                    self._start(link, dispatch)
            elif isinstance(message, Acknowledgements):
                for refusal in message.stale:
                    self._given_up(refusal)
            elif isinstance(message, Refusal):
                self._given_up(message)

    def _start(self, link: Link, dispatch: Dispatch) -> None:
        slot = (dispatch.key.id, dispatch.claimed.fence)
        task = asyncio.create_task(self._run(link, dispatch), name="http task")
        self._running[slot] = task

        def done(_: asyncio.Task[None]) -> None:
            if self._running.get(slot) is task:
                del self._running[slot]

        task.add_done_callback(done)

    def _given_up(self, refusal: Refusal) -> None:
        """A heartbeat or result refused as stale: the run went to another attempt."""
        task = self._running.pop((refusal.execution_id, refusal.fence), None)
        log.info(
            "http_task.stale",
            extra={"execution": refusal.execution_id, "fence": refusal.fence,
                   "current_fence": refusal.current_fence, "cancelled": task is not None},
        )  # fmt: skip
        if task is not None:
            task.cancel()

    async def _run(self, link: Link, dispatch: Dispatch) -> None:
        engine, claimed, key = self._engine, dispatch.claimed, dispatch.key
        try:
            wait_s = (dispatch.start_at - engine.now()).total_seconds()
            if wait_s > 0:
                await asyncio.sleep(wait_s)  # the run's instant: nothing to await but the time
            started = engine.now()
            outcome, error = await self._attempt(link, dispatch)
            engine.recorder.report(
                link,
                AttemptResult(key, claimed.fence, outcome, started_at=started,
                              finished_at=engine.now(), error=error),
            )  # fmt: skip
        finally:
            self._engine.links.grant(link, HTTP_POOL, 1)

    async def _attempt(self, link: Link, dispatch: Dispatch) -> tuple[Outcome, str | None]:
        """Send the request (or say why not) and read its answer."""
        claimed, key = dispatch.claimed, dispatch.key
        if claimed.http is None:
            return Outcome.NOT_STARTED, "not an HTTP task"
        try:
            settings = await self._settings(claimed.tenant_id)
        except WheelError as exc:  # given back: claimed again once the store answers
            log.warning("http_task.no_settings", extra={"error": str(exc)})
            return Outcome.NOT_STARTED, f"cannot read the tenant's settings: {exc}"
        if not host_allowed(settings.hosts, claimed.http.url):
            allowed = ", ".join(settings.hosts)
            return Outcome.REJECTED, (
                f"refused: the host of {redacted(claimed.http.url)} is not among the hosts"
                f" the tenant's settings allow ({allowed})"
            )
        fenced = Fenced(key, claimed.fence)
        self._engine.recorder.heartbeat(link, fenced)
        span = tracing.handler_started(
            key.id, key.job_id, claimed.task_type, claimed.attempt, claimed.fence,
            dispatch.traceparent, url=claimed.http.url,
        )  # fmt: skip
        request = Request(
            url=claimed.http.url,
            body=claimed.payload,
            execution_id=key.id,
            job_id=str(key.job_id),
            attempt=claimed.attempt,
            fence=claimed.fence,
            scheduled_for=key.scheduled_for,
            deadline=dispatch.deadline,
            secrets=settings.secrets,
            retry_client_errors=claimed.http.retry_client_errors,
            traceparent=tracing.carrier(span, dispatch.traceparent).get("traceparent"),
        )
        beating = asyncio.create_task(self._beat(link, fenced))
        try:
            answer = await self._caller.post(request)
        except asyncio.CancelledError:
            tracing.handler_ended(span, "cancelled", "a later attempt holds the run")
            raise
        finally:
            beating.cancel()
        tracing.handler_ended(
            span, answer.outcome.value, answer.error or "",
            error_type=answer.error_type, http_status=answer.status_code,
        )  # fmt: skip
        return answer.outcome, answer.error

    async def _beat(self, link: Link, fenced: Fenced) -> None:
        while True:
            await asyncio.sleep(self._config.heartbeat_interval_s)  # a lease is kept by time
            self._engine.recorder.heartbeat(link, fenced)

    async def _settings(self, tenant_id: TenantId) -> _Cached:
        now = time.monotonic()
        cached = self._settings_of.get(tenant_id)
        if cached is None or cached.until < now:
            secrets, hosts = await self._webhooks.http_task_settings(tenant_id)
            cached = self._settings_of[tenant_id] = _Cached(secrets, hosts, now + SETTINGS_TTL_S)
        return cached

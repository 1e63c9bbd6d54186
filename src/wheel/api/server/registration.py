"""Registering a job: validate, resolve its schedule, store it with a one-off's occurrence.

One path for every caller (the public API, `wheel dev`'s examples, tests):
the schedule is compiled first (a bad one is an InvalidArgument naming the
field and nothing is written); the URLs a job sends to (its HTTP task's and
its own webhook's) are read as the senders will read them and refused when
they could not be sent or name a denied address (`check_targets`); the job's
partition is a stable hash of its id over the cluster's partition count; a
NOW or AT job gets its single occurrence in the same transaction as the job,
so it cannot exist without it. Recurring jobs are left to the materialiser of their partition.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from wheel.api.server.job_calendars import check_calendars
from wheel.errors import InvalidArgument
from wheel.model.executions import NewOccurrence, Trigger
from wheel.model.http_tasks import host_allowed
from wheel.model.ids import ExecutionKey, JobId, PartitionId, TenantId, new_job_id, partition_of
from wheel.model.jobs import Job, JobSpec
from wheel.notify.egress import DEFAULT_EGRESS, EgressPolicy
from wheel.schedule import SchedulePlan, compile_schedule
from wheel.store import Store


@dataclass(frozen=True, slots=True)
class Registered:
    job: Job
    plan: SchedulePlan


@dataclass(frozen=True, slots=True)
class RegisteredMany:
    """Jobs registered at once, in the order asked; `existed`: those made by an earlier try."""

    registered: list[Registered]
    existed: frozenset[JobId]


def check_targets(egress: EgressPolicy, specs: Sequence[tuple[str, JobSpec]]) -> None:
    """InvalidArgument (`<prefix>http.url`, `<prefix>policies.notify_url`) for a URL the
    senders would refuse: one they cannot read as a URL to send to, or an address `egress`
    denies. Checked when a job is made or changed, so such a run is never attempted."""
    for prefix, spec in specs:
        if spec.http is not None:
            egress.admit(f"{prefix}http.url", spec.http.url)
        if spec.policies.notify_url:
            egress.admit(f"{prefix}policies.notify_url", spec.policies.notify_url)


async def check_http_hosts(
    store: Store, tenant_id: TenantId, specs: Sequence[tuple[str, JobSpec]]
) -> None:
    """InvalidArgument (`<prefix>http.url`) for an HTTP task whose host is not one the
    tenant's settings allow; nothing to read when no spec is an HTTP task."""
    targets = [(prefix, spec.http) for prefix, spec in specs if spec.http is not None]
    if not targets:
        return
    tenant = await store.tenants.load(tenant_id)
    hosts = tenant.http_hosts if tenant is not None else ()
    for prefix, http in targets:
        if not host_allowed(hosts, http.url):
            raise InvalidArgument(
                f"{prefix}http.url",
                f"its host is not among the hosts this tenant's HTTP tasks may reach"
                f" ({', '.join(hosts)}); an operator sets them (wheel tenants set-http-hosts)",
            )


async def register_job(
    store: Store,
    tenant_id: TenantId,
    spec: JobSpec,
    *,
    partitions: int,
    job_id: JobId | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    egress: EgressPolicy = DEFAULT_EGRESS,
) -> Registered:
    """Store a new job (and a one-off's occurrence); InvalidArgument if its schedule is bad
    or it sends to a URL `egress` refuses."""
    job_id = job_id or new_job_id()
    plan, partition, occurrences = _prepare(tenant_id, spec, job_id, partitions, clock())
    check_targets(egress, [("", spec)])
    await check_http_hosts(store, tenant_id, [("", spec)])
    await check_calendars(store, tenant_id, [("", spec)])
    job = await store.jobs.create(tenant_id, job_id, partition, spec, occurrences)
    return Registered(job, plan)


async def register_jobs(
    store: Store,
    tenant_id: TenantId,
    specs: Sequence[JobSpec],
    *,
    partitions: int,
    job_ids: Sequence[JobId | None] | None = None,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    egress: EgressPolicy = DEFAULT_EGRESS,
) -> RegisteredMany:
    """Store many jobs at once, all or none (see `Jobs.create_many`).

    InvalidArgument names the first bad one (`jobs[i].<field>`) and nothing is
    written; `job_ids[i]`, when given, makes the i-th create repeatable.
    """
    if job_ids is not None and len(job_ids) != len(specs):
        raise ValueError("one job id (or None) per spec")
    now = clock()
    prepared = []
    for index, spec in enumerate(specs):
        job_id = (job_ids[index] if job_ids is not None else None) or new_job_id()
        try:
            prepared.append((job_id, *_prepare(tenant_id, spec, job_id, partitions, now)))
        except InvalidArgument as exc:
            raise InvalidArgument(f"jobs[{index}].{exc.field}", exc.reason) from None
    check_targets(egress, [(f"jobs[{i}].", s) for i, s in enumerate(specs)])
    await check_http_hosts(store, tenant_id, [(f"jobs[{i}].", s) for i, s in enumerate(specs)])
    await check_calendars(store, tenant_id, [(f"jobs[{i}].", s) for i, s in enumerate(specs)])
    rows = [(job_id, partition, spec)
            for (job_id, _, partition, _), spec in zip(prepared, specs, strict=True)]  # fmt: skip
    occurrences = [o for *_, made in prepared for o in made]
    created = await store.jobs.create_many(tenant_id, rows, occurrences)
    registered = [Registered(job, plan)
                  for job, (_, plan, _, _) in zip(created.jobs, prepared, strict=True)]  # fmt: skip
    return RegisteredMany(registered, created.existed)


def _prepare(
    tenant_id: TenantId, spec: JobSpec, job_id: JobId, partitions: int, now: datetime
) -> tuple[SchedulePlan, PartitionId, list[NewOccurrence]]:
    plan = compile_schedule(spec.schedule, job_id, now=now)
    partition = partition_of(job_id, partitions)
    occurrences = []
    if plan.one_off is not None:
        occurrences.append(
            NewOccurrence(
                key=ExecutionKey(job_id, plan.one_off),
                tenant_id=tenant_id,
                partition=partition,
                job_version=1,
                fire_at=plan.fire_at(plan.one_off),
                priority=spec.policies.priority,
                trigger=Trigger.SCHEDULE,
            )
        )
    return plan, partition, occurrences

"""What `wheel dev` puts in its cluster: the `dev` tenant, a token for it, example jobs.

Each is made once per data directory and found again on the next start: the
tenant by name; the token from `dev.json`, kept while it still
authenticates (a new one otherwise); the examples by name, so a restart
never duplicates them and an example the user deleted stays deleted.

    tenant = await ensure_tenant(store)
    token, created = await ensure_token(store, tenant, previous=None)
    made = await seed_examples(store, tenant, partitions=16, now=datetime.now(UTC))
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from wheel.api.server.registration import register_jobs
from wheel.errors import Conflict
from wheel.model.ids import TenantId
from wheel.model.jobs import JobSpec, Policies, Schedule, ScheduleKind
from wheel.store import Store

TENANT = "dev"
TOKEN_NAME = "wheel dev"
ANY_EXECUTOR = ("*",)
"""The executor ids your own executors' token allows: any."""

# The example task types. They are served by `wheel.dev.tasks`, which only the dev
# executor imports: importing the CLI or these examples registers no task.
HELLO = "example.hello"
TICK = "example.tick"
FAIL = "example.fail"
ONE_OFF_DELAY_S = 3
"""The one-off examples fire this many seconds (rounded down to a whole second) after start."""


def example_jobs(now: datetime) -> list[JobSpec]:
    """The examples: a one-off, a smeared 10-second cron, a job that dies, a zoned cron."""
    soon = (now + timedelta(seconds=ONE_OFF_DELAY_S)).replace(microsecond=0)
    return [
        JobSpec(
            name="hello",
            task_type=HELLO,
            schedule=Schedule(kind=ScheduleKind.AT, at=soon),
            payload=b"hello from wheel dev",
        ),
        JobSpec(
            name="tick",
            task_type=TICK,
            # Six fields: the first is seconds. The smear gives the job a stable offset
            # in [0, 3 s), so "every 10 s" does not mean "at :00, :10, ... exactly".
            schedule=Schedule(
                kind=ScheduleKind.CRON, cron="*/10 * * * * *", smear=timedelta(seconds=3)
            ),
        ),
        JobSpec(
            name="always-fails",
            task_type=FAIL,
            schedule=Schedule(kind=ScheduleKind.AT, at=soon),
            policies=Policies(
                max_attempts=3,
                backoff_base=timedelta(seconds=1),
                backoff_cap=timedelta(seconds=4),
            ),
        ),
        JobSpec(
            name="london-every-minute",
            task_type=HELLO,
            schedule=Schedule(kind=ScheduleKind.CRON, cron="* * * * *", time_zone="Europe/London"),
        ),
    ]


def describe(spec: JobSpec) -> str:
    """One line for the banner: name, when, retry policy when it is not the default, task."""
    schedule, policies = spec.schedule, spec.policies
    if schedule.kind is ScheduleKind.AT:
        assert schedule.at is not None
        when = f"once at {schedule.at:%H:%M:%S}Z"
    elif schedule.kind is ScheduleKind.NOW:
        when = "once, now"
    else:
        when = f"cron '{schedule.cron}' in {schedule.time_zone}"
        if schedule.smear:
            when += f", smear {_seconds(schedule.smear)}"
    if policies != Policies():
        when += (
            f", {policies.max_attempts} attempts, backoff {_seconds(policies.backoff_base)}"
            f" doubling to {_seconds(policies.backoff_cap)}, then dead"
        )
    return f"{spec.name:<20} {when}  ({spec.task_type})"


def _seconds(duration: timedelta) -> str:
    return f"{duration.total_seconds():g} s"


def missing(examples: Iterable[JobSpec], existing_names: Iterable[str]) -> list[JobSpec]:
    """The examples no job of the tenant is named after (deleted jobs count as existing)."""
    taken = set(existing_names)
    return [spec for spec in examples if spec.name not in taken]


async def ensure_tenant(store: Store) -> TenantId:
    """The `dev` tenant's id, creating the tenant on first use."""
    try:
        return (await store.tenants.create(TENANT)).id
    except Conflict:
        pass
    return (await store.tenants.by_name(TENANT)).id


async def ensure_token(store: Store, tenant: TenantId, previous: str | None) -> tuple[str, bool]:
    """`previous` while it still authenticates as `tenant`, else a new token; and whether new."""
    if previous and await store.tenants.authenticate(previous) == tenant:
        return previous, False
    _, secret = await store.tenants.create_token(tenant, TOKEN_NAME)
    return secret, True


async def ensure_executor_token(store: Store, name: str, previous: str | None) -> tuple[str, bool]:
    """`previous` while it is still a live executor token for any executor id (as the
    README's own executor uses it), else a new one named `name`; and whether it is new."""
    if previous:
        credential = await store.tenants.authenticate_executor(previous)
        if credential is not None and credential.executor_ids == ANY_EXECUTOR:
            return previous, False
    _, secret = await store.tenants.create_executor_token(name, executor_ids=ANY_EXECUTOR)
    return secret, True


async def seed_examples(
    store: Store, tenant: TenantId, *, partitions: int, now: datetime
) -> list[JobSpec]:
    """Register the examples the tenant has no job named after; return those registered."""
    names: list[str] = []
    token = ""
    while True:  # a dev tenant has a handful of jobs: a page or two
        jobs, token = await store.jobs.list(tenant, page_size=1000, page_token=token)
        names.extend(job.spec.name for job in jobs)
        if not token:
            break
    specs = missing(example_jobs(now), names)
    if specs:
        await register_jobs(store, tenant, specs, partitions=partitions, clock=lambda: now)
    return specs

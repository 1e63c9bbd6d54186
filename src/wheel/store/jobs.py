"""Jobs: create, read, list, edit with a version check, pause, resume, delete.

Every operation is scoped to a tenant: another tenant's job is NotFound,
exactly like a job that does not exist.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from wheel.errors import (
    Conflict,
    InvalidTransition,
    NameTaken,
    NotFound,
    StoreError,
    VersionConflict,
)
from wheel.model.executions import NewOccurrence
from wheel.model.http_tasks import HttpTask
from wheel.model.ids import JobId, PartitionId, TenantId
from wheel.model.jobs import (
    CalendarPolicy,
    DstFold,
    DstGap,
    IntervalDst,
    Job,
    JobSpec,
    JobStatus,
    MisfirePolicy,
    OverlapPolicy,
    Policies,
    Schedule,
    ScheduleKind,
)
from wheel.model.pauses import Pause
from wheel.store import pagination
from wheel.store.occurrences import Occurrences
from wheel.store.pool import Pool
from wheel.store.queries import sql
from wheel.store.translate import translated

_FAR_FUTURE = datetime(9999, 1, 1, tzinfo=UTC)
_MAX_UUID = uuid.UUID(int=(1 << 128) - 1)


_MILLISECOND = timedelta(milliseconds=1)


def _ms(delta: timedelta) -> int:
    return int(delta / _MILLISECOND)


def spec_params(spec: JobSpec) -> dict[str, Any]:
    """A job definition as the jobs table's columns."""
    schedule = spec.schedule
    return {
        "name": spec.name,
        "task_type": spec.task_type,
        "payload": spec.payload,
        "schedule_kind": schedule.kind.value,
        "run_at": schedule.at,
        "cron": schedule.cron,
        "time_zone": schedule.time_zone,
        "starts_at": schedule.starts_at,
        "ends_at": schedule.ends_at,
        "smear_ms": _ms(schedule.smear),
        "dst_gap": schedule.dst_gap.value,
        "dst_fold": schedule.dst_fold.value,
        **_policy_params(spec.policies),
        "http_url": spec.http.url if spec.http else "",
        "http_retry_client_errors": spec.http.retry_client_errors if spec.http else False,
        "every_ms": _ms(schedule.every) if schedule.every is not None else None,
        "anchor": schedule.anchor,
        "interval_dst": schedule.interval_dst.value,
    }


@functools.lru_cache(maxsize=256)
def _policy_params(policies: Policies) -> dict[str, Any]:
    # Most jobs of a batch share their policies: their columns are made once. The dict
    # is shared: callers copy it (spec_params unpacks it into its own).
    return {
        "max_attempts": policies.max_attempts,
        "backoff_base_ms": _ms(policies.backoff_base),
        "backoff_cap_ms": _ms(policies.backoff_cap),
        "idempotent": policies.idempotent,
        "misfire": policies.misfire.value,
        "misfire_grace_ms": _ms(policies.misfire_grace),
        "misfire_replay_cap": policies.misfire_replay_cap,
        "overlap": policies.overlap.value,
        "timeout_ms": _ms(policies.timeout),
        "priority": policies.priority,
        "pool": policies.pool,
        "notify_url": policies.notify_url,
        "deadline_ms": _ms(policies.deadline) if policies.deadline is not None else None,
        "notify_after_failures": policies.notify_after_failures,
        "concurrency_key": policies.concurrency_key,
        "concurrency_key_field": policies.concurrency_key_field,
        "concurrency_limit": policies.concurrency_limit,
        "calendars": list(policies.calendars),
        "calendar_policy": policies.calendar_policy.value,
    }


def job_from_row(row: dict[str, Any]) -> Job:
    """A jobs row as a Job."""
    ms = timedelta(milliseconds=1)
    spec = JobSpec(
        name=row["name"],
        task_type=row["task_type"],
        payload=bytes(row["payload"]),
        schedule=Schedule(
            kind=ScheduleKind(row["schedule_kind"]),
            at=row["run_at"],
            cron=row["cron"],
            time_zone=row["time_zone"],
            starts_at=row["starts_at"],
            ends_at=row["ends_at"],
            smear=row["smear_ms"] * ms,
            dst_gap=DstGap(row["dst_gap"]),
            dst_fold=DstFold(row["dst_fold"]),
            every=None if row["every_ms"] is None else row["every_ms"] * ms,
            anchor=row["anchor"],
            interval_dst=IntervalDst(row["interval_dst"]),
        ),
        policies=Policies(
            max_attempts=row["max_attempts"],
            backoff_base=row["backoff_base_ms"] * ms,
            backoff_cap=row["backoff_cap_ms"] * ms,
            idempotent=row["idempotent"],
            misfire=MisfirePolicy(row["misfire"]),
            misfire_grace=row["misfire_grace_ms"] * ms,
            misfire_replay_cap=row["misfire_replay_cap"],
            overlap=OverlapPolicy(row["overlap"]),
            timeout=row["timeout_ms"] * ms,
            priority=row["priority"],
            pool=row["pool"],
            notify_url=row["notify_url"],
            deadline=row["deadline_ms"] * ms if row["deadline_ms"] is not None else None,
            notify_after_failures=row["notify_after_failures"],
            concurrency_key=row["concurrency_key"],
            concurrency_key_field=row["concurrency_key_field"],
            concurrency_limit=row["concurrency_limit"],
            calendars=tuple(row["calendars"]),
            calendar_policy=CalendarPolicy(row["calendar_policy"]),
        ),
        http=(
            HttpTask(row["http_url"], row["http_retry_client_errors"]) if row["http_url"] else None
        ),
    )
    return job_of(row, spec)


def job_of(row: dict[str, Any], spec: JobSpec) -> Job:
    """A job from its definition and the jobs row's bookkeeping (a row without the
    definition's columns will do: see insert_jobs)."""
    return Job(
        id=JobId(row["id"]),
        tenant_id=TenantId(row["tenant_id"]),
        spec=spec,
        status=JobStatus(row["status"]),
        version=row["version"],
        partition=PartitionId(row["partition"]),
        materialised_to=row["materialised_to"],
        materialised_version=row["materialised_version"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        pause=_pause_of(row),
    )


def _pause_of(row: dict[str, Any]) -> Pause | None:
    """A paused job's note, who and when (insert_jobs returns none of them: its jobs
    are new, so active)."""
    if row["status"] != JobStatus.PAUSED.value:
        return None
    return Pause(row.get("pause_note", ""), row.get("paused_by", ""), row.get("paused_at"))


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ANALYZE_JOBS_AFTER = 1000
_NAME_INDEX = "jobs_tenant_name"
"""The unique index that keeps a tenant's job names apart (deleted jobs free theirs)."""


def _name_taken(exc: StoreError) -> bool:
    cause = exc.__cause__
    return (
        isinstance(cause, psycopg.errors.UniqueViolation)
        and cause.diag.constraint_name == _NAME_INDEX
    )


_JOB_COLUMNS = (
    "id", "partition", "name", "task_type", "payload", "schedule_kind", "run_at", "cron",
    "time_zone", "starts_at", "ends_at", "smear_ms", "dst_gap", "dst_fold", "max_attempts",
    "backoff_base_ms", "backoff_cap_ms", "idempotent", "misfire", "misfire_grace_ms",
    "misfire_replay_cap", "overlap", "timeout_ms", "priority", "pool",
    "notify_url", "http_url", "http_retry_client_errors", "every_ms", "anchor",
    "interval_dst", "deadline_ms", "notify_after_failures",
    "concurrency_key", "concurrency_key_field", "concurrency_limit",
    "calendars", "calendar_policy",
)  # fmt: skip
"""The columns of insert_jobs, each sent as one array."""


@dataclass(frozen=True, slots=True)
class CreatedMany:
    """What `create_many` stored: the jobs in the order asked, and which existed already."""

    jobs: list[Job]
    existed: frozenset[JobId]


class Jobs:
    """Job definitions, per tenant."""

    def __init__(self, pool: Pool, occurrences: Occurrences) -> None:
        self._pool = pool
        self._occurrences = occurrences
        self._grown = 0
        """Jobs this process created since it last analysed the table."""

    async def _note_created(self, count: int) -> bool:
        """After a committed bulk create: analyse `jobs` when it grew by a quarter since
        its statistics were taken (never taken: at once), as for day partitions (see
        TimePartitions.note_inserted). ANALYZE after every batch of a thousand cost
        as much as the batch's inserts, and more as the table grew; in between, the
        planner scales the row count it knows by the table's size, and autovacuum
        analyses it too. Returns whether it analysed."""
        self._grown += count
        if self._grown < _ANALYZE_JOBS_AFTER:
            return False
        async with translated(), self._pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT reltuples FROM pg_class WHERE oid = 'jobs'::regclass"
            )
            row = await cursor.fetchone()
            if row is not None and self._grown < row[0] / 4:
                return False
            await conn.execute("ANALYZE jobs")
        self._grown = 0
        return True

    async def create(
        self,
        tenant_id: TenantId,
        job_id: JobId,
        partition: PartitionId,
        spec: JobSpec,
        occurrences: Sequence[NewOccurrence] = (),
    ) -> Job:
        """Store a job and, in the same transaction, its first occurrences (a one-off's)."""
        params = {**spec_params(spec), "id": job_id, "tenant_id": tenant_id, "partition": partition}
        # Partition DDL needs a connection of its own: done before this one is taken.
        await self._occurrences.ensure_partitions(occurrences)
        async with translated(), self._pool.connection() as conn, conn.transaction():
            cursor = conn.cursor(row_factory=dict_row)
            try:
                await cursor.execute(sql("insert_job"), params)
            except psycopg.errors.UniqueViolation as exc:
                if exc.diag.constraint_name == _NAME_INDEX:
                    raise NameTaken(spec.name) from None
                raise Conflict(f"job id {job_id} is taken") from None
            row = await cursor.fetchone()
            assert row is not None
            if occurrences:
                await self._occurrences.insert(occurrences, conn=conn)
        return job_from_row(row)

    async def create_many(
        self,
        tenant_id: TenantId,
        jobs: Sequence[tuple[JobId, PartitionId, JobSpec]],
        occurrences: Sequence[NewOccurrence] = (),
    ) -> CreatedMany:
        """Store many jobs of a tenant and their first occurrences, all or none.

        One statement for the jobs (a column per array) and one for the
        occurrences, whatever the count. A job whose id exists with the same
        definition is answered as it is (a repeated create: its occurrences are
        not made again); an id taken by another definition or another tenant's
        job is a Conflict naming `jobs[i].job_id`, and nothing is written.
        """
        if not jobs:
            return CreatedMany([], frozenset())
        params: dict[str, Any] = {name: [] for name in _JOB_COLUMNS}
        for job_id, partition, spec in jobs:
            row = spec_params(spec)
            row["id"], row["partition"] = job_id, partition
            for name in _JOB_COLUMNS:
                params[name].append(row[name])
        params["tenant_id"] = tenant_id
        # A job's calendars are a list, and arrays of arrays are rectangular: one JSON each.
        params["calendars"] = [Jsonb(names) for names in params["calendars"]]
        await self._occurrences.ensure_partitions(occurrences)
        async with translated(), self._pool.connection() as conn, conn.transaction():
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(sql("insert_jobs"), params, binary=True)
            stored = {row["id"]: row for row in await cursor.fetchall()}
            made = {job_id: job_of(stored[job_id], spec)
                    for job_id, _, spec in jobs if job_id in stored}  # fmt: skip
            inserted = set(made)
            taken = [job_id for job_id, _, _ in jobs if job_id not in made]
            by_id: dict[uuid.UUID, Job] = {}
            by_name: dict[str, Job] = {}
            if taken:
                await cursor.execute(sql("jobs_by_id"), {"ids": taken}, binary=True)
                by_id = {row["id"]: job_from_row(row) for row in await cursor.fetchall()}
                names = [spec.name for job_id, _, spec in jobs if job_id not in made]
                await cursor.execute(
                    sql("jobs_by_name"), {"tenant_id": tenant_id, "names": names}, binary=True
                )
                by_name = {row["name"]: job_from_row(row) for row in await cursor.fetchall()}
            for index, (job_id, _, spec) in enumerate(jobs):
                if job_id in made:
                    continue
                found = by_id.get(job_id)
                if found is None or found.tenant_id != tenant_id:
                    named = by_name.get(spec.name)
                    if named is not None and found is None:
                        if named.spec != spec:
                            raise NameTaken(spec.name, f"jobs[{index}].name")
                        made[job_id] = named  # created before under this name: answered
                        continue
                if found is None or found.tenant_id != tenant_id or found.spec != spec:
                    # Another tenant's id reads as taken, never as theirs.
                    raise Conflict(
                        f"jobs[{index}].job_id: {job_id} is taken by another job definition"
                    )
                made[job_id] = found
            fresh = [o for o in occurrences if o.key.job_id in inserted]
            if fresh:
                await self._occurrences.insert(fresh, conn=conn)
        await self._occurrences.note_inserted(fresh)
        await self._note_created(len(inserted))
        answered = [made[job_id] for job_id, _, _ in jobs]
        return CreatedMany(
            answered, frozenset(job.id for job in answered if job.id not in inserted)
        )

    async def named(self, tenant_id: TenantId, name: str) -> Job | None:
        """The tenant's job of this name that is not deleted, if any."""
        row = await self._one(sql("job_by_name"), {"tenant_id": tenant_id, "name": name})
        return job_from_row(row) if row is not None else None

    async def get(self, tenant_id: TenantId, job_id: JobId) -> Job:
        """The job, or NotFound (also when it is another tenant's)."""
        row = await self._one(sql("get_job"), {"id": job_id, "tenant_id": tenant_id})
        if row is None:
            raise NotFound("job", job_id)
        return job_from_row(row)

    async def many(self, tenant_id: TenantId, job_ids: Collection[JobId]) -> dict[JobId, Job]:
        """The tenant's jobs among `job_ids` (another tenant's are left out), by id."""
        if not job_ids:
            return {}
        params = {"tenant_id": tenant_id, "ids": list(job_ids)}
        async with translated(), self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(sql("jobs_of_tenant"), params)
            rows = await cursor.fetchall()
        return {JobId(row["id"]): job_from_row(row) for row in rows}

    async def list(
        self, tenant_id: TenantId, *, page_size: int = 0, page_token: str = ""
    ) -> tuple[list[Job], str]:
        """A page of the tenant's jobs, newest first, and the next page's token ('' at the end)."""
        limit = pagination.page_size(page_size)
        after = pagination.decode(page_token) or (_FAR_FUTURE, _MAX_UUID)
        async with translated(), self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(
                sql("list_jobs"),
                {
                    "tenant_id": tenant_id,
                    "after_created_at": after[0],
                    "after_id": after[1],
                    "limit": limit,
                },
            )
            jobs = [job_from_row(row) for row in await cursor.fetchall()]
        token = pagination.encode(jobs[-1].created_at, jobs[-1].id) if len(jobs) == limit else ""
        return jobs, token

    async def update(
        self, tenant_id: TenantId, job_id: JobId, expected_version: int, spec: JobSpec
    ) -> Job:
        """Replace the definition if the job is still at `expected_version`; version + 1."""
        params = {
            **spec_params(spec),
            "id": job_id,
            "tenant_id": tenant_id,
            "expected_version": expected_version,
        }
        try:
            row = await self._one(sql("update_job"), params)
        except StoreError as exc:
            if _name_taken(exc):
                raise NameTaken(spec.name, "job.name") from None
            raise
        if row is not None:
            return job_from_row(row)
        current = await self.get(tenant_id, job_id)
        if current.status is JobStatus.DELETED:
            raise InvalidTransition("job", job_id, current.status.value, "update")
        raise VersionConflict("job", job_id, expected_version, current.version)

    async def pause(
        self, tenant_id: TenantId, job_id: JobId, *, note: str = "", by_token: bytes | None = None
    ) -> Job:
        """Stop dispatching the job's occurrences until resumed, keeping `note`, who paused
        it (the name of the token whose SHA-256 is `by_token`, the caller's: "a person"
        without one) and when (the database's clock). Pausing a paused job with another
        note replaces the three; with the note it has, it changes nothing (a repeated
        pause is harmless and keeps the first who and when). The note is checked by the
        caller (`wheel.model.pauses.check_note`)."""
        row = await self._one(
            sql("pause_job"),
            {"id": job_id, "tenant_id": tenant_id, "note": note, "by_token": by_token},
        )
        if row is not None:
            return job_from_row(row)
        return await self._unchanged(tenant_id, job_id, JobStatus.PAUSED, "pause")

    async def resume(self, tenant_id: TenantId, job_id: JobId) -> Job:
        """Dispatch the job's occurrences again; its pause note, who and when are cleared."""
        row = await self._one(sql("resume_job"), {"id": job_id, "tenant_id": tenant_id})
        if row is None:
            return await self._unchanged(tenant_id, job_id, JobStatus.ACTIVE, "resume")
        job = job_from_row(row)
        # Its owner skipped its occurrences while paused: have it look again (the
        # misfire policy decides about those that came due meanwhile).
        await self._occurrences.notify_due(job.partition, _EPOCH)
        return job

    async def delete(self, tenant_id: TenantId, job_id: JobId) -> Job:
        """Mark the job deleted and cancel its pending occurrences, in one transaction."""
        async with translated(), self._pool.connection() as conn, conn.transaction():
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(
                sql("set_job_status"),
                {
                    "id": job_id,
                    "tenant_id": tenant_id,
                    "status": JobStatus.DELETED.value,
                    "from_statuses": [JobStatus.ACTIVE.value, JobStatus.PAUSED.value],
                },
            )
            row = await cursor.fetchone()
            if row is not None:
                await conn.execute(
                    sql("cancel_pending_of_job"), {"job_id": job_id, "reason": "job deleted"}
                )
        if row is None:
            return await self._unchanged(tenant_id, job_id, JobStatus.DELETED, "delete")
        return job_from_row(row)

    async def _unchanged(
        self, tenant_id: TenantId, job_id: JobId, target: JobStatus, operation: str
    ) -> Job:
        current = await self.get(tenant_id, job_id)
        if current.status is target:
            return current
        raise InvalidTransition("job", job_id, current.status.value, operation)

    async def _one(self, query: Any, params: dict[str, Any]) -> dict[str, Any] | None:
        async with translated(), self._pool.connection() as conn:
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(query, params)
            return await cursor.fetchone()

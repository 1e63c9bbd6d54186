"""The hot path: occurrences in batches, one round trip per batch, fenced.

Every operation here takes N rows as arrays (unnest) in a single statement,
never one statement per row; claims and records move their tenants'
in-flight counts in that statement too. Two fences guard the writes: the partition
epoch (scheduler ownership, checked by claim and reap) and the execution's
fence (grows with every dispatch, checked by heartbeat and result). Refused
writes are return values, not exceptions: a stale fence is an expected
outcome of a distributed system.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, LiteralString, TypeVar

import psycopg

from wheel.model.executions import (
    AttemptResult,
    Claimed,
    ClaimState,
    DueOccurrence,
    ExecutionStatus,
    Fenced,
    NewOccurrence,
    Recorded,
    Stale,
    Unclaimed,
)
from wheel.model.http_tasks import HttpTask
from wheel.model.ids import ExecutionKey, JobId, PartitionId, TenantId
from wheel.store.days import by_day, span
from wheel.store.pool import Pool
from wheel.store.queries import sql
from wheel.store.time_partitions import TimePartitions, day_of
from wheel.store.translate import translated

_NO_PARTITION = "23514"  # check_violation: "no partition of relation ... found for row"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NIL_UUID = "00000000-0000-0000-0000-000000000000"
_ANY_TIME_S = 100 * 365 * 86400.0  # "claim whenever it fires"
# wheel_count_in_flight: a claim read its tenant's room before a concurrent claim
# committed, and went over the cap (the statement is rolled back).
_OVERSHOT = "WH001"
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class DueCursor:
    """Where the previous page of `load_due` ended."""

    fire_at: datetime
    key: ExecutionKey


@dataclass(frozen=True, slots=True)
class ExecutorBinding:
    """The executor process a run is handed to: its id and its Hello's instance id."""

    executor_id: str | None
    instance: str | None


UNBOUND = ExecutorBinding(None, None)
"""No executor: nothing but the node itself may report the run (tests, tools)."""


@dataclass(frozen=True, slots=True)
class ClaimOutcome:
    claimed: list[Claimed]
    unclaimed: list[Unclaimed]
    """Keys seen but not claimed: skipped or blocked by the overlap policy, or early.
    Keys in neither list were not claimable (see `Occurrences.claim`)."""


@dataclass(frozen=True, slots=True)
class RecordOutcome:
    recorded: list[Recorded]
    stale: list[Stale]


def _key(job_id: Any, scheduled_for: datetime) -> ExecutionKey:
    return ExecutionKey(JobId(job_id), scheduled_for)


def _unique_sorted(results: Iterable[AttemptResult]) -> list[AttemptResult]:
    """One result per (key, fence), in key order: the order rows are locked in."""
    latest = {(r.key, r.fence): r for r in results}
    return [latest[k] for k in sorted(latest)]


class Occurrences:
    """Batch operations on executions for scheduler nodes."""

    def __init__(self, pool: Pool, time_partitions: TimePartitions) -> None:
        self._pool = pool
        self._partitions = time_partitions

    async def insert(
        self,
        occurrences: Sequence[NewOccurrence],
        *,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> list[ExecutionKey]:
        """Insert occurrences (an existing one is left alone); return the keys inserted.

        With `conn`, the insert joins that connection's transaction.
        """
        if not occurrences:
            return []
        params = {
            "job_ids": [o.key.job_id for o in occurrences],
            "scheduled_fors": [o.key.scheduled_for for o in occurrences],
            "tenant_ids": [o.tenant_id for o in occurrences],
            "partitions": [o.partition for o in occurrences],
            "job_versions": [o.job_version for o in occurrences],
            "fire_ats": [o.fire_at for o in occurrences],
            "priorities": [o.priority for o in occurrences],
            "triggers": [o.trigger.value for o in occurrences],
            "statuses": [o.status.value for o in occurrences],
            "reasons": [o.reason for o in occurrences],
        }
        days = {day_of(o.key.scheduled_for) for o in occurrences}
        await self._partitions.ensure(days)
        async with translated():
            try:
                rows = await self._fetch_raw(sql("insert_occurrences"), params, conn)
            except psycopg.errors.CheckViolation as exc:
                if exc.sqlstate != _NO_PARTITION or conn is not None:
                    raise
                # Another node dropped a partition this one still believed in.
                self._partitions.forget()
                await self._partitions.ensure(days)
                rows = await self._fetch_raw(sql("insert_occurrences"), params)
        if conn is None:
            await self.note_inserted(occurrences)
        return [_key(job_id, at) for job_id, at in rows]

    async def note_inserted(self, occurrences: Sequence[NewOccurrence]) -> None:
        """After a committed insert: analyse day partitions a bulk insert filled."""
        counts = Counter(day_of(o.key.scheduled_for) for o in occurrences)
        await self._partitions.note_inserted(counts)

    async def ensure_partitions(self, occurrences: Sequence[NewOccurrence]) -> None:
        """Create the day partitions these occurrences need (a no-op once known)."""
        await self._partitions.ensure({day_of(o.key.scheduled_for) for o in occurrences})

    async def load_due(
        self,
        partitions: Iterable[PartitionId],
        before: datetime,
        *,
        after: DueCursor | None = None,
        limit: int = 10_000,
        created_after: datetime | None = None,
    ) -> list[DueOccurrence]:
        """Pending occurrences of `partitions` firing before `before`, in firing order.

        Pages with `after=DueCursor(last.fire_at, last.key)` until a page is short.
        With `created_after`, only occurrences created since then.
        """
        rows = await self._fetch(
            sql("load_due"),
            {
                "partitions": list(partitions),
                "before": before,
                "after_fire_at": after.fire_at if after else _EPOCH,
                "after_job_id": after.key.job_id if after else _NIL_UUID,
                "after_scheduled_for": after.key.scheduled_for if after else _EPOCH,
                "limit": limit,
                "created_after": created_after,
            },
        )
        return [
            DueOccurrence(_key(job_id, at), PartitionId(part), fire_at, priority, version,
                          TenantId(tenant), pool, task_type, overlap)
            for job_id, at, part, fire_at, priority, version, tenant, pool, task_type, overlap
            in rows
        ]  # fmt: skip

    async def load_requeued(
        self,
        partitions: Iterable[PartitionId],
        since: datetime,
        before: datetime,
        *,
        limit: int = 10_000,
    ) -> list[DueOccurrence]:
        """Pending occurrences of `partitions` that became pending at or after `since`
        (made, retried, given back) and fire before `before`: what the catch-up needs,
        read by the index on `pending_since`, never the whole backlog. Every page."""
        found: list[DueOccurrence] = []
        after_since, after_key = _EPOCH, ExecutionKey(JobId(uuid.UUID(_NIL_UUID)), _EPOCH)
        partitions = list(partitions)
        while True:
            rows = await self._fetch(
                sql("load_requeued"),
                {
                    "partitions": partitions,
                    "since": since,
                    "before": before,
                    "after_since": after_since,
                    "after_job_id": after_key.job_id,
                    "after_scheduled_for": after_key.scheduled_for,
                    "limit": limit,
                },
            )
            for (job_id, at, part, fire_at, priority, version, tenant, pool, task_type,
                 overlap, _) in rows:  # fmt: skip
                found.append(DueOccurrence(_key(job_id, at), PartitionId(part), fire_at,
                                           priority, version, TenantId(tenant), pool,
                                           task_type, overlap))  # fmt: skip
            if len(rows) < limit:
                return found
            after_since, after_key = rows[-1][-1], _key(rows[-1][0], rows[-1][1])

    async def claim(
        self,
        keys: Sequence[ExecutionKey],
        epochs: Mapping[PartitionId, int],
        *,
        lease_s: float,
        ahead_s: float = _ANY_TIME_S,
        executors: Sequence[ExecutorBinding] | None = None,
    ) -> list[Claimed]:
        """Claim pending occurrences in partitions whose epoch is still the given one.

        Keys not returned were not claimed: not pending, held by another claim,
        of a paused or deleted job, in a partition this caller no longer owns,
        or left by the overlap policy or for firing later (see `claim_batch`).
        """
        outcome = await self.claim_batch(
            keys, epochs, lease_s=lease_s, ahead_s=ahead_s, executors=executors
        )
        return outcome.claimed

    async def claim_batch(
        self,
        keys: Sequence[ExecutionKey],
        epochs: Mapping[PartitionId, int],
        *,
        lease_s: float,
        ahead_s: float,
        executors: Sequence[ExecutorBinding] | None = None,
        tenant_ids: Collection[TenantId] | None = None,
        waited: Sequence[str] | None = None,
    ) -> ClaimOutcome:
        """Claim like `claim`, and say why the keys it saw but did not claim were left.

        Only occurrences firing by now + `ahead_s` are claimed; a later one
        comes back EARLY with its fire_at. A scheduled first attempt past its
        instant and its job's misfire grace meets the misfire policy: MISFIRED
        (recorded skipped; `waited[i]` says what `keys[i]` waited for, in words
        such as "for an executor", for the reason), or claimed late. A job whose
        overlap policy is not 'allow' and that has a run in flight gets SKIPPED
        (recorded, naming that run) or BLOCKED.
        `executors[i]` is who `keys[i]` is handed to: its reports are the only
        ones accepted for the run (None: no executor's report is). The tenants'
        caps are checked without locking their rows; a claim that overshot one
        (a concurrent claim committed meanwhile) is redone with `tenant_ids`, the
        keys' tenants (looked up when not given), locked first.
        """
        if executors is None:
            executors = [UNBOUND] * len(keys)
        if len(executors) != len(keys):
            raise ValueError("one executor per key")
        if waited is None:
            waited = [""] * len(keys)
        if len(waited) != len(keys):
            raise ValueError("one waited per key")
        outcome = ClaimOutcome([], [])
        rows = zip(keys, executors, waited, strict=True)
        for day in by_day(rows, lambda row: row[0].scheduled_for):
            part = await self._claim_day(
                [k for k, _, _ in day], [e for _, e, _ in day], epochs,
                lease_s=lease_s, ahead_s=ahead_s, tenant_ids=tenant_ids,
                waited=[w for _, _, w in day],
            )  # fmt: skip
            outcome.claimed.extend(part.claimed)
            outcome.unclaimed.extend(part.unclaimed)
        return outcome

    async def _claim_day(
        self,
        keys: Sequence[ExecutionKey],
        executors: Sequence[ExecutorBinding],
        epochs: Mapping[PartitionId, int],
        *,
        lease_s: float,
        ahead_s: float,
        tenant_ids: Collection[TenantId] | None,
        waited: Sequence[str],
    ) -> ClaimOutcome:
        """`claim_batch` of keys of one UTC day: one statement."""
        instants = [k.scheduled_for for k in keys]
        params = {
            "partitions": sorted(epochs),
            "epochs": [epochs[p] for p in sorted(epochs)],
            "job_ids": [k.job_id for k in keys],
            "scheduled_fors": instants,
            "executor_ids": [e.executor_id for e in executors],
            "instances": [e.instance for e in executors],
            "lease_s": lease_s,
            "ahead_s": ahead_s,
            "waited": list(waited),
            **span(instants),
        }
        async with translated(), self._pool.connection() as conn:
            try:
                rows = await self._fetch_raw(
                    sql("claim"), {**params, "refuse_overshoot": True}, conn
                )
            except psycopg.Error as exc:
                if exc.sqlstate != _OVERSHOT:
                    raise
                # A concurrent claim of the same tenant committed after this one read its
                # room: claim again with the tenants' rows locked first (rare: near a cap).
                lock = {
                    "tenant_ids": sorted(set(tenant_ids)) if tenant_ids is not None else None,
                    "job_ids": params["job_ids"],
                    "scheduled_fors": instants,
                    **span(instants),
                }
                async with conn.transaction():
                    await conn.execute(sql("lock_tenants"), lock, binary=True, prepare=False)
                    rows = await self._fetch_raw(
                        sql("claim"), {**params, "refuse_overshoot": False}, conn
                    )
        claimed, unclaimed = [], []
        for (state, job_id, at, tenant, part, fence, attempt, lease_until, version, task_type,
             payload, pool, priority, timeout_ms, fire_at, http_url,
             http_retry) in rows:  # fmt: skip
            if state != ClaimState.CLAIMED:
                unclaimed.append(Unclaimed(_key(job_id, at), ClaimState(state), fire_at))
                continue
            claimed.append(
                Claimed(
                    key=_key(job_id, at),
                    tenant_id=TenantId(tenant),
                    partition=PartitionId(part),
                    fence=fence,
                    attempt=attempt,
                    lease_until=lease_until,
                    job_version=version,
                    task_type=task_type,
                    payload=bytes(payload),
                    pool=pool,
                    priority=priority,
                    timeout_s=timeout_ms / 1000,
                    fire_at=fire_at,
                    http=HttpTask(http_url, http_retry) if http_url else None,
                )
            )
        return ClaimOutcome(claimed, unclaimed)

    async def heartbeat(
        self, items: Sequence[Fenced], *, executor: ExecutorBinding, lease_s: float
    ) -> list[Fenced]:
        """Extend leases where the fence still matches and the run was dispatched to
        `executor`; return the ones refused."""
        if not items:
            return []
        items = sorted(items, key=lambda i: (i.key, i.fence))  # the order rows are locked in
        rows = await self._per_day(
            sql("heartbeat"), items, lambda i: i.key,
            lambda day: {"fences": [i.fence for i in day], "executor_id": executor.executor_id,
                         "instance": executor.instance, "lease_s": lease_s},
            prepare=False,
        )  # fmt: skip
        extended = {(_key(job_id, at), fence) for job_id, at, fence in rows}
        return [i for i in items if (i.key, i.fence) not in extended]

    async def record_results(self, results: Iterable[AttemptResult]) -> RecordOutcome:
        """Record attempt results where the fence matches; the store applies the retry rule.

        Success is final. A failure retries at a backoff instant with full
        jitter while attempts remain, then is dead; a job that is not
        idempotent goes to needs_review instead of retrying. NOT_STARTED gives
        the attempt back. A result whose fence is stale is refused and listed.
        """
        rows = await self._per_day(
            sql("record_results"), _unique_sorted(results), lambda r: r.key,
            lambda day: {
                "fences": [r.fence for r in day],
                "outcomes": [r.outcome.value for r in day],
                "executors": [r.executor_id for r in day],
                "instances": [r.executor_instance for r in day],
                "started": [r.started_at for r in day],
                "finished": [r.finished_at for r in day],
                "errors": [r.error for r in day],
            },
        )  # fmt: skip
        return _split(rows)

    async def reap(
        self,
        epochs: Mapping[PartitionId, int],
        *,
        limit: int = 1000,
        spare: Collection[Fenced] = (),
    ) -> list[Recorded]:
        """Expired leases of partitions still ours count as failed attempts (same rule),
        except the attempts in `spare` (their result or heartbeat waits to be recorded)."""
        if not epochs:
            return []
        rows = await self._fetch(
            sql("reap"),
            {
                "partitions": sorted(epochs),
                "epochs": [epochs[p] for p in sorted(epochs)],
                "limit": limit,
                "spare_job_ids": [f.key.job_id for f in spare],
                "spare_scheduled_fors": [f.key.scheduled_for for f in spare],
                "spare_fences": [f.fence for f in spare],
            },
        )
        return _split(rows).recorded

    async def apply_misfire(self, epochs: Mapping[PartitionId, int]) -> int:
        """Apply each job's misfire policy to its overdue, never-dispatched occurrences.

        Epoch-fenced; returns how many occurrences it recorded skipped.
        """
        if not epochs:
            return 0
        rows = await self._fetch(
            sql("apply_misfire"),
            {"partitions": sorted(epochs), "epochs": [epochs[p] for p in sorted(epochs)]},
        )
        return int(rows[0][0])

    async def skip_queued(
        self, pairs: Sequence[tuple[ExecutionKey, ExecutionKey]]
    ) -> list[ExecutionKey]:
        """Overlap 'queue': each (run, queued) pair's run is skipped if its job still has a
        run in flight (read in the statement, named in the reason with the queued one);
        the runs skipped."""
        if not pairs:
            return []
        rows = await self._per_day(
            sql("skip_queued"), pairs, lambda pair: pair[0],
            lambda day: {"queued": [queued.scheduled_for for _, queued in day]}, prepare=False,
        )  # fmt: skip
        return [_key(job_id, at) for job_id, at in rows]

    async def skip(self, keys: Sequence[ExecutionKey], reason: str) -> list[ExecutionKey]:
        """Record pending occurrences skipped with a reason; return the ones that were pending."""
        if not keys:
            return []
        rows = await self._per_day(
            sql("skip_pending"), keys, lambda k: k, lambda day: {"reason": reason}, prepare=False
        )
        return [_key(job_id, at) for job_id, at in rows]

    async def notify_due(self, partition: PartitionId, earliest: datetime) -> None:
        """Tell the partition's owner that occurrences from `earliest` on are pending."""
        async with translated(), self._pool.connection() as conn:
            await conn.execute(
                sql("notify_due"),
                {"partition": partition, "earliest_ms": int(earliest.timestamp() * 1000)},
            )

    async def set_epochs(
        self, epochs: Mapping[PartitionId, int], *, node_id: str
    ) -> list[PartitionId]:
        """Record partition epochs, forward only; return the partitions set (others are stale)."""
        if not epochs:
            return []
        rows = await self._fetch(
            sql("set_epochs"),
            {
                "partitions": sorted(epochs),
                "epochs": [epochs[p] for p in sorted(epochs)],
                "node_id": node_id,
            },
        )
        return sorted(PartitionId(p) for (p,) in rows)

    async def _per_day(
        self,
        query: LiteralString,
        items: Sequence[T],
        key: Callable[[T], ExecutionKey],
        params: Callable[[Sequence[T]], dict[str, object]],
        *,
        prepare: bool | None = None,
    ) -> list[tuple[Any, ...]]:
        """`query` once per UTC day of `items` (see wheel.store.days), with the day's keys as
        job_ids and scheduled_fors, its span, and `params(day)`; every row, in day order."""
        rows: list[tuple[Any, ...]] = []
        for day in by_day(items, lambda item: key(item).scheduled_for):
            keys = [key(item) for item in day]
            instants = [k.scheduled_for for k in keys]
            rows += await self._fetch(
                query,
                {"job_ids": [k.job_id for k in keys], "scheduled_fors": instants,
                 **span(instants), **params(day)},
                prepare=prepare,
            )  # fmt: skip
        return rows

    async def _fetch(
        self, query: LiteralString, params: Mapping[str, object], *, prepare: bool | None = None
    ) -> list[tuple[Any, ...]]:
        """`prepare=False`: planned with these values every time, never a generic plan (the
        statements that lock by key: see "One day per statement" in the schema)."""
        async with translated():
            return await self._fetch_raw(query, params, prepare=prepare)

    async def _fetch_raw(
        self,
        query: LiteralString,
        params: Mapping[str, object],
        conn: psycopg.AsyncConnection[Any] | None = None,
        *,
        prepare: bool | None = None,
    ) -> list[tuple[Any, ...]]:
        # Binary: arrays of uuids and timestamps cost less to send and parse than text.
        if conn is not None:
            cursor = await conn.execute(query, params, binary=True, prepare=prepare)
            return await cursor.fetchall()
        async with self._pool.connection() as pooled:
            cursor = await pooled.execute(query, params, binary=True, prepare=prepare)
            return await cursor.fetchall()


def _split(rows: list[tuple[Any, ...]]) -> RecordOutcome:
    recorded, stale = [], []
    for accepted, job_id, at, fence, current_fence, status, fire_at, attempt, refusal in rows:
        key = _key(job_id, at)
        if accepted:
            recorded.append(Recorded(key, fence, ExecutionStatus(status), fire_at, attempt))
        else:
            state = ExecutionStatus(status) if status is not None else None
            stale.append(Stale(key, fence, current_fence, state, refusal == "not_yours"))
    return RecordOutcome(recorded, stale)

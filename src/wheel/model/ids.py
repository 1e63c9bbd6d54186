"""Identifiers: tenants, jobs, partitions, and the execution key.

An occurrence is identified by (job id, scheduled instant). Its public id is
that pair written out, `<job uuid>@<YYYYMMDDTHHMMSS.ffffffZ>`: deterministic
(the materialiser, a backfill and a retry all name the same occurrence the
same way, which makes it the idempotency key handed to every attempt),
readable, and it tells the store which time partition holds the row.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import NewType

from wheel.errors import excerpt

TenantId = NewType("TenantId", uuid.UUID)
JobId = NewType("JobId", uuid.UUID)
PartitionId = NewType("PartitionId", int)
ExecutionId = NewType("ExecutionId", str)

_INSTANT = re.compile(r"[0-9]{8}T[0-9]{6}\.[0-9]{6}Z")


def new_job_id() -> JobId:
    return JobId(uuid.uuid4())


def new_tenant_id() -> TenantId:
    return TenantId(uuid.uuid4())


def partition_of(job_id: uuid.UUID, partition_count: int) -> PartitionId:
    """The partition a job belongs to: a stable hash of its id modulo the partition count.

    Hashed rather than taken from the UUID's bits so that time-ordered ids
    (UUIDv7) spread as evenly as random ones.
    """
    digest = hashlib.blake2b(job_id.bytes, digest_size=8).digest()
    return PartitionId(int.from_bytes(digest, "big") % partition_count)


@dataclass(frozen=True, slots=True, order=True)
class ExecutionKey:
    """One occurrence of a job: the job and the instant it was scheduled for (UTC)."""

    job_id: JobId
    scheduled_for: datetime
    # Keys live in dicts by the hundred thousand on the hot path: hash and id are
    # computed once (a datetime's hash and strftime are not cheap).
    _hash: int = field(init=False, repr=False, compare=False)
    _id: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.scheduled_for.tzinfo is None:
            raise ValueError("scheduled_for must be timezone-aware")
        if self.scheduled_for.tzinfo is not UTC:
            object.__setattr__(self, "scheduled_for", self.scheduled_for.astimezone(UTC))
        object.__setattr__(self, "_hash", hash((self.job_id, self.scheduled_for)))
        object.__setattr__(self, "_id", "")

    def __hash__(self) -> int:
        return self._hash

    @property
    def id(self) -> ExecutionId:
        if not self._id:
            at = self.scheduled_for
            object.__setattr__(
                self,
                "_id",
                f"{self.job_id}@{at.year:04d}{at.month:02d}{at.day:02d}T{at.hour:02d}"
                f"{at.minute:02d}{at.second:02d}.{at.microsecond:06d}Z",
            )
        return ExecutionId(self._id)

    @classmethod
    def parse(cls, execution_id: str) -> ExecutionKey:
        """Read an execution id back; ValueError names what is wrong with it."""
        job_part, sep, instant_part = execution_id.partition("@")
        if not sep:
            raise ValueError("expected '<job id>@<instant>'")
        try:
            job_id = JobId(uuid.UUID(job_part))
        except ValueError:
            raise ValueError(f"job id {excerpt(job_part)} is not a UUID") from None
        if not _INSTANT.fullmatch(instant_part):
            raise ValueError(f"instant {excerpt(instant_part)} is not YYYYMMDDTHHMMSS.ffffffZ")
        p = instant_part
        try:
            instant = datetime(int(p[0:4]), int(p[4:6]), int(p[6:8]), int(p[9:11]),
                               int(p[11:13]), int(p[13:15]), int(p[16:22]), tzinfo=UTC)  # fmt: skip
        except ValueError:
            raise ValueError(f"instant {excerpt(instant_part)} is not a real instant") from None
        key = cls(job_id, instant)
        object.__setattr__(key, "_id", execution_id)
        return key

    def __str__(self) -> str:
        return self.id

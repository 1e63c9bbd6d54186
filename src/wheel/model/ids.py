"""Identifiers: tenants, jobs, partitions, and the execution key.

An occurrence is identified by (job id, scheduled instant). Its public id is
that pair written out, `<job uuid>@<YYYYMMDDTHHMMSS.ffffffZ>`: deterministic
(the materialiser, a backfill and a retry all name the same occurrence the
same way, which makes it the idempotency key handed to every attempt),
readable, and it tells the store which time partition holds the row.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NewType

TenantId = NewType("TenantId", uuid.UUID)
JobId = NewType("JobId", uuid.UUID)
PartitionId = NewType("PartitionId", int)
ExecutionId = NewType("ExecutionId", str)

_INSTANT_FORMAT = "%Y%m%dT%H%M%S.%fZ"


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

    def __post_init__(self) -> None:
        if self.scheduled_for.tzinfo is None:
            raise ValueError("scheduled_for must be timezone-aware")
        if self.scheduled_for.tzinfo is not UTC:
            object.__setattr__(self, "scheduled_for", self.scheduled_for.astimezone(UTC))

    @property
    def id(self) -> ExecutionId:
        return ExecutionId(f"{self.job_id}@{self.scheduled_for.strftime(_INSTANT_FORMAT)}")

    @classmethod
    def parse(cls, execution_id: str) -> ExecutionKey:
        """Read an execution id back; ValueError names what is wrong with it."""
        job_part, sep, instant_part = execution_id.partition("@")
        if not sep:
            raise ValueError("expected '<job id>@<instant>'")
        try:
            job_id = JobId(uuid.UUID(job_part))
        except ValueError:
            raise ValueError(f"job id {job_part!r} is not a UUID") from None
        try:
            instant = datetime.strptime(instant_part, _INSTANT_FORMAT).replace(tzinfo=UTC)
        except ValueError:
            raise ValueError(f"instant {instant_part!r} is not YYYYMMDDTHHMMSS.ffffffZ") from None
        return cls(job_id, instant)

    def __str__(self) -> str:
        return self.id

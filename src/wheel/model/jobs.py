"""Jobs: the definition a tenant registers (as opposed to its executions)."""

from __future__ import annotations

import enum
import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from wheel.errors import InvalidArgument
from wheel.model import concurrency
from wheel.model.http_tasks import RESERVED_PREFIX, HttpTask
from wheel.model.ids import JobId, PartitionId, TenantId
from wheel.model.urls import check_webhook_url

if TYPE_CHECKING:
    from wheel.model.pauses import Pause

MAX_NAME_LENGTH = 200
MAX_ATTEMPTS = 100
MAX_PAYLOAD_BYTES = 1 << 20
MAX_TASK_TYPE_LENGTH = 200
MAX_POOL_LENGTH = 100
MAX_CRON_LENGTH = 200
MAX_ZONE_LENGTH = 64
MAX_REPLAY_CAP = 100_000
MIN_DEADLINE = timedelta(seconds=1)
MAX_DEADLINE = timedelta(days=366)
MAX_NOTIFY_AFTER_FAILURES = 1000


# Unicode's control characters (category Cc), exactly: one regex search instead of a
# category lookup per character (registration validates every text of every job).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def check_text(field: str, value: str, limit: int) -> None:
    """Text stored and echoed: bounded, and free of control characters (Postgres refuses NUL)."""
    if len(value) > limit:
        raise InvalidArgument(field, f"longer than {limit} characters")
    if _CONTROL.search(value):
        raise InvalidArgument(field, "must not contain control characters")


class ScheduleKind(enum.StrEnum):
    NOW = "now"
    AT = "at"
    CRON = "cron"
    INTERVAL = "interval"


class DstGap(enum.StrEnum):
    """What a fixed-time expression does with a wall time that a spring-forward skips."""

    DEFAULT = "default"
    SHIFT = "shift"
    SKIP = "skip"


class DstFold(enum.StrEnum):
    """What a fixed-time expression does with a wall time that a fall-back repeats."""

    DEFAULT = "default"
    FIRST = "first"
    LAST = "last"
    BOTH = "both"


class IntervalDst(enum.StrEnum):
    """How an interval schedule counts its spacing across a change of the zone's offset."""

    ELAPSED = "elapsed"
    """Every run is exactly `every` of real time after the previous one."""
    WALL = "wall"
    """Runs keep the same wall-clock spacing in the job's zone (DstGap/DstFold resolve them)."""


MIN_INTERVAL = timedelta(seconds=1)
MAX_INTERVAL = timedelta(days=366)


class MisfirePolicy(enum.StrEnum):
    SKIP = "skip"
    FIRE_ONCE = "fire_once"
    FIRE_ALL = "fire_all"


class OverlapPolicy(enum.StrEnum):
    SKIP = "skip"
    QUEUE = "queue"
    ALLOW = "allow"


class CalendarPolicy(enum.StrEnum):
    """What a run on a day its calendars close does (see wheel.schedule.business_days)."""

    SKIP = "skip"
    NEXT_BUSINESS_DAY = "next_business_day"
    PREVIOUS_BUSINESS_DAY = "previous_business_day"


MAX_JOB_CALENDARS = 20


class JobStatus(enum.StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    DELETED = "deleted"


def _looks_like_an_id(name: str) -> bool:
    try:
        uuid.UUID(name)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Schedule:
    """When a job runs: now, at an instant, on a cron expression in a zone, or every so long."""

    kind: ScheduleKind
    at: datetime | None = None
    """The instant of an AT schedule (UTC)."""
    cron: str | None = None
    """The expression of a CRON schedule."""
    time_zone: str = "UTC"
    """IANA zone the expression is read in."""
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    smear: timedelta = timedelta(0)
    """A stable offset within this window is added to every occurrence."""
    dst_gap: DstGap = DstGap.DEFAULT
    dst_fold: DstFold = DstFold.DEFAULT
    every: timedelta | None = None
    """The spacing of an INTERVAL schedule's runs."""
    anchor: datetime | None = None
    """An INTERVAL schedule runs at anchor + k * every (default: the Unix epoch)."""
    interval_dst: IntervalDst = IntervalDst.ELAPSED
    """An INTERVAL schedule's spacing: real elapsed time, or the zone's wall clock."""

    def __post_init__(self) -> None:
        if (self.kind is ScheduleKind.AT) != (self.at is not None):
            raise InvalidArgument("schedule.at", "required for, and only for, an 'at' schedule")
        if (self.kind is ScheduleKind.CRON) != bool(self.cron):
            raise InvalidArgument("schedule.cron", "required for, and only for, a cron schedule")
        check_text("schedule.cron", self.cron or "", MAX_CRON_LENGTH)
        check_text("schedule.time_zone", self.time_zone, MAX_ZONE_LENGTH)
        for name in ("at", "starts_at", "ends_at"):
            instant = getattr(self, name)
            if instant is not None and instant.tzinfo is None:
                raise InvalidArgument(f"schedule.{name}", "must carry a time zone (UTC offset)")
        if self.starts_at and self.ends_at and self.ends_at <= self.starts_at:
            raise InvalidArgument("schedule.ends_at", "must be after schedule.starts_at")
        if self.smear < timedelta(0):
            raise InvalidArgument("schedule.smear", "must not be negative")
        self._check_interval()

    @property
    def recurring(self) -> bool:
        """Cron or interval: the materialiser makes its runs (not the create)."""
        return self.kind in (ScheduleKind.CRON, ScheduleKind.INTERVAL)

    def _check_interval(self) -> None:
        interval = self.kind is ScheduleKind.INTERVAL
        if interval != (self.every is not None):
            raise InvalidArgument(
                "schedule.every", "required for, and only for, an interval schedule"
            )
        if not interval:
            if self.anchor is not None:
                raise InvalidArgument("schedule.anchor", "only for an interval schedule")
            if self.interval_dst is not IntervalDst.ELAPSED:
                raise InvalidArgument("schedule.interval_dst", "only for an interval schedule")
            return
        assert self.every is not None
        if self.every < MIN_INTERVAL:
            raise InvalidArgument("schedule.every", "must be at least 1 second")
        if self.every > MAX_INTERVAL:
            raise InvalidArgument("schedule.every", "must be at most 366 days")
        if self.every % timedelta(milliseconds=1):
            raise InvalidArgument("schedule.every", "must be a whole number of milliseconds")
        if self.anchor is not None and self.anchor.tzinfo is None:
            raise InvalidArgument("schedule.anchor", "must carry a time zone (UTC offset)")
        if self.interval_dst is IntervalDst.ELAPSED and (
            self.dst_gap is not DstGap.DEFAULT or self.dst_fold is not DstFold.DEFAULT
        ):
            field = "dst_gap" if self.dst_gap is not DstGap.DEFAULT else "dst_fold"
            raise InvalidArgument(
                f"schedule.{field}",
                "only for wall-clock spacing (interval_dst wall): elapsed time has no "
                "missing or repeated wall times",
            )


@dataclass(frozen=True, slots=True)
class Policies:
    """Per-job policies; defaults are the design's."""

    max_attempts: int = 3
    backoff_base: timedelta = timedelta(seconds=1)
    backoff_cap: timedelta = timedelta(minutes=5)
    idempotent: bool = True
    """False: once an attempt may have started, never retry automatically (needs_review)."""
    misfire: MisfirePolicy = MisfirePolicy.FIRE_ONCE
    misfire_grace: timedelta = timedelta(seconds=60)
    misfire_replay_cap: int = 100
    overlap: OverlapPolicy = OverlapPolicy.SKIP
    timeout: timedelta = timedelta(hours=1)
    priority: int = 0
    pool: str = "default"
    notify_url: str = ""
    """Where this job's notifications go; empty: its tenant's webhook (if it has one)."""
    deadline: timedelta | None = None
    """Each scheduled run must have succeeded this long after its instant (smear counts
    against it); a run that has not is marked and announced once. None: no deadline."""
    notify_after_failures: int = 0
    """Announce when this many runs in a row end dead or needing review, and the next
    success after that; 0: never."""
    concurrency_key: str = ""
    """At most `concurrency_limit` of the tenant's runs with this key in flight, whatever
    their job (wheel.model.concurrency); "" for none."""
    concurrency_key_field: str = ""
    """Or the top-level field of the JSON payload the key is read from."""
    concurrency_limit: int = 0
    """1 or more with a key; 0 without one."""
    calendars: tuple[str, ...] = ()
    """Business calendars (names, the tenant's): a day any of them closes has no run."""
    calendar_policy: CalendarPolicy = CalendarPolicy.SKIP
    """What a run on a closed day does: skipped, or moved to the next (previous) open day."""

    def __post_init__(self) -> None:
        if not 1 <= self.max_attempts <= MAX_ATTEMPTS:
            raise InvalidArgument(
                "policies.max_attempts", f"{self.max_attempts} is not in 1-{MAX_ATTEMPTS}"
            )
        if self.backoff_base < timedelta(0):
            raise InvalidArgument("policies.backoff_base", "must not be negative")
        if self.backoff_cap < self.backoff_base:
            raise InvalidArgument("policies.backoff_cap", "must not be below backoff_base")
        if self.misfire_grace < timedelta(0):
            raise InvalidArgument("policies.misfire_grace", "must not be negative")
        if not 1 <= self.misfire_replay_cap <= MAX_REPLAY_CAP:
            raise InvalidArgument(
                "policies.misfire_replay_cap",
                f"{self.misfire_replay_cap} is not in 1-{MAX_REPLAY_CAP}",
            )
        if self.timeout <= timedelta(0):
            raise InvalidArgument("policies.timeout", "must be positive")
        if not self.pool.strip():
            raise InvalidArgument("policies.pool", "must not be empty")
        check_text("policies.pool", self.pool, MAX_POOL_LENGTH)
        if not -(2**31) <= self.priority < 2**31:
            raise InvalidArgument("policies.priority", "must fit in 32 bits")
        if self.notify_url:
            check_webhook_url("policies.notify_url", self.notify_url)
        if self.deadline is not None and not MIN_DEADLINE <= self.deadline <= MAX_DEADLINE:
            raise InvalidArgument("policies.deadline", "must be between 1s and 366 days")
        if self.deadline is not None and self.deadline % timedelta(milliseconds=1):
            raise InvalidArgument("policies.deadline", "must be whole milliseconds")
        if not 0 <= self.notify_after_failures <= MAX_NOTIFY_AFTER_FAILURES:
            raise InvalidArgument(
                "policies.notify_after_failures",
                f"{self.notify_after_failures} is not in 0-{MAX_NOTIFY_AFTER_FAILURES}",
            )
        concurrency.check_policies(
            self.concurrency_key, self.concurrency_key_field, self.concurrency_limit
        )
        self._check_calendars()

    def _check_calendars(self) -> None:
        if len(self.calendars) > MAX_JOB_CALENDARS:
            raise InvalidArgument(
                "policies.calendars", f"{len(self.calendars)} is more than {MAX_JOB_CALENDARS}"
            )
        if len(set(self.calendars)) != len(self.calendars):
            raise InvalidArgument("policies.calendars", "names a calendar twice")
        for name in self.calendars:
            if not name.strip():
                raise InvalidArgument("policies.calendars", "a calendar name must not be empty")
            check_text("policies.calendars", name, MAX_NAME_LENGTH)


@dataclass(frozen=True, slots=True)
class JobSpec:
    """What a tenant asks for; the store adds identity, partition and bookkeeping."""

    name: str
    task_type: str
    schedule: Schedule
    payload: bytes = b""
    policies: Policies = field(default_factory=Policies)
    http: HttpTask | None = None
    """Set: the runs are POSTed to a URL by the nodes, and task_type is `http.task_type`."""

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise InvalidArgument("name", "must not be empty")
        check_text("name", self.name, MAX_NAME_LENGTH)
        if _looks_like_an_id(self.name):
            raise InvalidArgument("name", "must not be a UUID: jobs are addressed by id or name")
        if not self.task_type.strip():
            raise InvalidArgument("task_type", "must not be empty")
        check_text("task_type", self.task_type, MAX_TASK_TYPE_LENGTH)
        if self.http is not None and self.task_type != self.http.task_type:
            raise InvalidArgument(
                "task_type", f"an HTTP task's type is {self.http.task_type!r}, from its URL"
            )
        if self.http is None and self.task_type.startswith(RESERVED_PREFIX):
            raise InvalidArgument(
                "task_type", f"task types starting {RESERVED_PREFIX!r} are wheel's own"
            )
        if len(self.payload) > MAX_PAYLOAD_BYTES:
            raise InvalidArgument("payload", f"larger than {MAX_PAYLOAD_BYTES} bytes")
        if self.policies.concurrency_key_field:
            concurrency.key_from_payload(self.payload, self.policies.concurrency_key_field)
        if self.policies.calendars and self.schedule.kind in (ScheduleKind.NOW, ScheduleKind.AT):
            raise InvalidArgument(
                "policies.calendars", "business calendars apply to recurring schedules only"
            )


@dataclass(frozen=True, slots=True)
class Job:
    """A stored job."""

    id: JobId
    tenant_id: TenantId
    spec: JobSpec
    status: JobStatus
    version: int
    """Grows with every edit of the definition; updates name the version they edit."""
    partition: PartitionId
    materialised_to: datetime | None
    """Occurrences exist up to this instant (the materialiser's cursor)."""
    materialised_version: int
    """The version the existing occurrences were made from (0: none yet)."""
    created_at: datetime
    updated_at: datetime
    pause: Pause | None = None
    """While it is paused: its note, who paused it and when (None while it is not)."""

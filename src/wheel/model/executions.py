"""Executions (occurrences of a job) and their attempts."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from wheel.model.http_tasks import HttpTask
from wheel.model.ids import ExecutionKey, PartitionId, TenantId


class ExecutionStatus(enum.StrEnum):
    """Where an occurrence is. The last five are terminal and visible."""

    PENDING = "pending"
    DISPATCHED = "dispatched"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    DEAD = "dead"
    SKIPPED = "skipped"
    NEEDS_REVIEW = "needs_review"
    CANCELLED = "cancelled"


LEASED = (ExecutionStatus.DISPATCHED, ExecutionStatus.RUNNING)


class Outcome(enum.StrEnum):
    """How one attempt ended."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    NOT_STARTED = "not_started"
    """The executor declined it before the handler started (e.g. draining)."""
    LEASE_EXPIRED = "lease_expired"
    """No result and no heartbeat in time: counted as a failed attempt."""
    REJECTED = "rejected"
    """A failure that is not retried (an HTTP task's endpoint answered 4xx): the run is dead."""


class Trigger(enum.StrEnum):
    """Why an occurrence exists."""

    SCHEDULE = "schedule"
    MANUAL = "manual"
    BACKFILL = "backfill"


@dataclass(frozen=True, slots=True)
class NewOccurrence:
    """An occurrence to insert (the materialiser's, a one-off's, a trigger's)."""

    key: ExecutionKey
    tenant_id: TenantId
    partition: PartitionId
    job_version: int
    fire_at: datetime
    """scheduled_for plus smear: when the wheel fires it."""
    priority: int = 0
    trigger: Trigger = Trigger.SCHEDULE
    status: ExecutionStatus = ExecutionStatus.PENDING
    """PENDING, or SKIPPED for a run a misfire policy records without firing."""
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class DueOccurrence:
    """A pending occurrence as the loader puts it in the timing wheel, with its routing."""

    key: ExecutionKey
    partition: PartitionId
    fire_at: datetime
    priority: int
    job_version: int
    tenant_id: TenantId
    pool: str
    task_type: str
    overlap: str
    """The job's overlap policy: 'skip', 'queue' or 'allow'."""


class ClaimState(enum.StrEnum):
    """Why a key given to a claim came back unclaimed (or that it was claimed)."""

    CLAIMED = "claimed"
    SKIPPED = "skipped"
    """Another run of the job was in flight at its instant and still is, and its overlap
    policy is skip: recorded skipped, the reason naming that run."""
    MISFIRED = "misfired"
    """It waited past its job's misfire grace and the misfire policy skips it: recorded
    skipped, the reason saying how long it waited."""
    BLOCKED = "blocked"
    """Another run of the job is in flight (policy queue, or handed over after this run's
    instant: it goes after that one): left pending."""
    EARLY = "early"
    """It fires later than the claim allows (an edit or a retry moved it): left pending."""
    CAPPED = "capped"
    """Its tenant is at its in-flight cap (across the cluster): left pending."""
    AT_KEY_LIMIT = "at_key_limit"
    """Its concurrency key has its job's limit of runs in flight (across the tenant's jobs
    and the cluster): left pending."""


@dataclass(frozen=True, slots=True)
class Unclaimed:
    """A key a claim saw but did not claim, and why."""

    key: ExecutionKey
    state: ClaimState
    fire_at: datetime


@dataclass(frozen=True, slots=True)
class Claimed:
    """An occurrence this node now holds: dispatch it with this fence before the lease ends."""

    key: ExecutionKey
    tenant_id: TenantId
    partition: PartitionId
    fence: int
    attempt: int
    lease_until: datetime
    job_version: int
    task_type: str
    payload: bytes
    pool: str
    priority: int
    timeout_s: float
    fire_at: datetime
    """When it is due: the executor starts the handler then, not on receipt."""
    http: HttpTask | None = None
    """An HTTP task's target (the nodes run it); None for the tasks executors run."""


@dataclass(frozen=True, slots=True)
class Fenced:
    """A reference to an execution as of one dispatch: heartbeats and results carry it."""

    key: ExecutionKey
    fence: int


@dataclass(frozen=True, slots=True)
class AttemptResult:
    """What an executor (or the reaper) reports about one attempt."""

    key: ExecutionKey
    fence: int
    outcome: Outcome
    executor_id: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: str | None = None
    executor_instance: str | None = None
    """The reporting executor process (its Hello's instance id): set, the result counts
    only if the run was dispatched to it; None for the node's own reports."""


@dataclass(frozen=True, slots=True)
class LastRun:
    """A job's latest run that is not pending: what a list of jobs shows as its last run."""

    key: ExecutionKey
    status: ExecutionStatus
    finished_at: datetime | None


@dataclass(frozen=True, slots=True)
class Recorded:
    """A result the store accepted, and the state it decided."""

    key: ExecutionKey
    fence: int
    status: ExecutionStatus
    fire_at: datetime
    """For a retry: the backoff instant it fires again."""
    attempt: int


@dataclass(frozen=True, slots=True)
class Stale:
    """A write refused: its fence is no longer current, or the run is not the reporter's."""

    key: ExecutionKey
    fence: int
    current_fence: int | None
    """None when the execution does not exist (e.g. dropped by retention), or is not
    the reporter's (nothing about it is told)."""
    status: ExecutionStatus | None
    not_yours: bool = False
    """Refused because the run was dispatched to another executor, not for its fence."""


@dataclass(frozen=True, slots=True)
class Attempt:
    number: int
    fence: int
    executor_id: str | None
    started_at: datetime | None
    finished_at: datetime
    outcome: Outcome
    error: str | None


@dataclass(frozen=True, slots=True)
class Retry:
    """A person sent a dead or needs_review run back for a new try, with the job's full
    attempts: who (the API token's name), when, and how many attempts came before."""

    at: datetime
    by: str
    after_attempt: int


_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")


def ordinal(n: int) -> str:
    """1 -> "first", ..., 8 -> "eighth", then "9th", "10th" (the tries of a run)."""
    if 1 <= n <= len(_ORDINALS):
        return _ORDINALS[n - 1]
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def of_try(tries: int) -> str:
    """ " of its second try" once a person retried the run; "" for its first."""
    return f" of its {ordinal(tries)} try" if tries > 1 else ""


@dataclass(frozen=True, slots=True)
class Execution:
    """One occurrence as users see it."""

    key: ExecutionKey
    tenant_id: TenantId
    partition: PartitionId
    job_version: int
    status: ExecutionStatus
    fire_at: datetime
    attempt: int
    fence: int
    lease_until: datetime | None
    executor_id: str | None
    priority: int
    trigger: Trigger
    reason: str | None
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    attempts: tuple[Attempt, ...] = ()
    dispatched_at: datetime | None = None
    """When the latest claim was made (the occurrence fired)."""
    claimed_by: str | None = None
    """The node that made the latest claim."""
    retries: tuple[Retry, ...] = ()
    """A person's retries, oldest first: each starts a new try with the job's attempts."""
    deadline_at: datetime | None = None
    """When it must have succeeded by (its job's deadline after its instant); None: no
    deadline (a job without one, or a triggered or backfilled run)."""
    deadline_missed_at: datetime | None = None
    """When its partition's owner marked it past its deadline without a success."""
    concurrency_key: str | None = None
    """The concurrency key it holds (wheel.model.concurrency); None without one."""

    @property
    def tries(self) -> int:
        """Which try this is: 1, or 1 + the retries a person made."""
        return 1 + len(self.retries)

    @property
    def try_attempt(self) -> int:
        """Attempts of the current try so far (`attempt` counts every try's)."""
        return self.attempt - (self.retries[-1].after_attempt if self.retries else 0)


# -- lateness ---------------------------------------------------------------------------------

OVERDUE_AFTER_S = 60.0
"""A pending run due longer ago than this, that nothing else explains, is overdue: lists
flag it and its job needs attention."""

STARTED_AT_FIRE = (
    ExecutionStatus.RUNNING,
    ExecutionStatus.SUCCEEDED,
    ExecutionStatus.DEAD,
    ExecutionStatus.NEEDS_REVIEW,
)
"""Statuses whose started_at belongs to the attempt that fired at fire_at (a pending
retry's started_at is the failed attempt's, its fire_at the backoff instant)."""


@dataclass(frozen=True, slots=True)
class RunsToWatch:
    """A job's runs that may need a person, counted now (see `Executions.attention`)."""

    due: int
    """Pending runs due now and not started."""
    overdue: int
    """Of those, the ones due more than OVERDUE_AFTER_S ago."""
    failing: int
    """Its latest runs that ended dead or need review, back to its latest success."""
    deadline_missed: int = 0
    """Of its latest runs due by now (at most ATTENTION_RECENT_RUNS), those that missed
    their deadline."""


class Timed(Protocol):
    """What lateness reads of a run: the model's Execution and the SDK's both have it."""

    @property
    def status(self) -> ExecutionStatus: ...
    @property
    def trigger(self) -> Trigger: ...
    @property
    def fire_at(self) -> datetime: ...
    @property
    def started_at(self) -> datetime | None: ...


def late_by_s(fire_at: datetime, at: datetime) -> float:
    """How long after its own fire instant (smear and retry backoff included) `at` is."""
    return (at - fire_at).total_seconds()


def not_late_because(execution: Timed) -> str | None:
    """Why a run has no lateness to speak of: "backfill" or "triggered" (it was made to run
    now, long after the instant it is named for), else None."""
    if execution.trigger is Trigger.BACKFILL:
        return "backfill"
    if execution.trigger is Trigger.MANUAL:
        return "triggered"
    return None


def lateness_s(execution: Timed) -> float | None:
    """How long after its own fire_at the attempt that fired then started: the one lateness
    the API, the CLI, the dashboard, the metrics and `wheel dev` show. None until it has
    started, and for backfilled and triggered runs (see `not_late_because`)."""
    if not_late_because(execution) is not None:
        return None
    if execution.started_at is None or execution.status not in STARTED_AT_FIRE:
        return None
    return late_by_s(execution.fire_at, execution.started_at)


@dataclass(frozen=True, slots=True)
class KeyHolders:
    """A concurrency key's runs dispatched or running now, of one tenant."""

    count: int
    runs: tuple[ExecutionKey, ...]
    """The first few of them to be handed over (at most `KEY_HOLDERS_NAMED`)."""


KEY_HOLDERS_NAMED = 3

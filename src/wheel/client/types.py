"""What the SDK returns: frozen dataclasses, never protobuf messages.

Statuses are the model's StrEnums (`JobStatus`, `ExecutionStatus`),
schedules and policies the model's `Schedule` and `Policies`, instants aware
UTC datetimes, and optional values None rather than empty strings. Nothing
here talks to the network; `wheel.client.messages` builds these from the
wire.
"""

from __future__ import annotations

import dataclasses
import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Generic, TypeVar

from wheel.api import calendars
from wheel.api.calendars import DateRange as DateRange  # as is
from wheel.api.calendars import HolidaySource as HolidaySource  # as is
from wheel.model.executions import ExecutionStatus, Outcome, Trigger
from wheel.model.executions import Retry as Retry  # a person's retry, as is
from wheel.model.http_tasks import HttpTask
from wheel.model.ids import ExecutionId, JobId
from wheel.model.jobs import JobSpec, JobStatus, Policies, Schedule
from wheel.model.notifications import Webhook as Webhook  # the tenant's settings, as is
from wheel.model.pauses import Pause as Pause  # why a job is paused, as is

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class LastRun:
    """A job's latest run that is not pending."""

    execution_id: ExecutionId
    status: ExecutionStatus
    scheduled_for: datetime
    finished_at: datetime | None
    """None while it runs, or when it never started (skipped)."""


@dataclass(frozen=True, slots=True)
class JobAttention:
    """A job's runs that go nowhere or keep failing, counted now."""

    unserved: int
    """Due runs whose task type no connected executor serves."""
    overdue: int
    """Served runs due more than a minute ago and not started."""
    failing: int
    """Its latest runs that ended dead or need review, back to its latest success."""
    summary: str
    """The three in words: "3 unserved, 1 failing"."""
    deadline_missed: int = 0
    """Its runs of the last day that missed their deadline."""


@dataclass(frozen=True, slots=True)
class Job:
    """A job as the server holds it: its definition, status and version.

    Edits name the version they were based on:
    `client.update_job(job.id, expected_version=job.version, name="nightly")`.
    """

    id: JobId
    name: str
    task_type: str
    """The registered task type an executor runs."""
    payload: bytes
    schedule: Schedule
    policies: Policies
    status: JobStatus
    version: int
    """Grows with every update of the definition."""
    created_at: datetime
    updated_at: datetime
    warnings: tuple[str, ...] = ()
    """What may keep its runs from running now (e.g. no executor serves its task type)."""
    last_run: LastRun | None = None
    """Its latest run that is not pending (ran, runs now, or was skipped), if any."""
    next_run_at: datetime | None = None
    """When it fires next (None: paused, deleted, or nothing is left of its schedule)."""
    http: HttpTask | None = None
    """Set: an HTTP task, POSTed to this target by the nodes."""
    attention: JobAttention | None = None
    """Its runs that need a person now (listed `with_runs`); None when none do."""
    pause: Pause | None = None
    """While it is paused: the note, who paused it and when (`job.pause.said()`); None
    while it is not paused."""

    @property
    def spec(self) -> JobSpec:
        """The definition alone, as `wheel.model.jobs.JobSpec`."""
        return JobSpec(
            name=self.name,
            task_type=self.task_type,
            schedule=self.schedule,
            payload=self.payload,
            policies=self.policies,
            http=self.http,
        )


@dataclass(frozen=True, slots=True)
class Attempt:
    """One dispatch of an execution and how it ended."""

    number: int
    executor_id: str | None
    fence: int
    """The fencing token this attempt carried."""
    started_at: datetime | None
    finished_at: datetime | None
    outcome: Outcome
    error: str | None


@dataclass(frozen=True, slots=True)
class Execution:
    """One occurrence of a job; `id` is its idempotency key, the same for every attempt."""

    id: ExecutionId
    job_id: JobId
    job_version: int
    scheduled_for: datetime
    fire_at: datetime
    """scheduled_for plus smear, or the backoff instant of a retry."""
    status: ExecutionStatus
    reason: str | None
    """Why it is skipped, parked or cancelled, when it is."""
    attempt: int
    """Dispatches so far."""
    fence: int
    trigger: Trigger
    error: str | None
    """The latest attempt's error, if it failed."""
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    executor_id: str | None
    priority: int
    attempts: tuple[Attempt, ...] = ()
    """Filled by `get_execution`; lists leave it empty."""
    waiting: str | None = None
    """A pending run's reason for not running, in a word: "unserved", "overdue", "paused",
    "waiting", "retrying", "no node", "no executor", "parked", "behind a running run",
    "capped", "at key limit", "due" or "queued"; None for runs in other states."""
    waiting_detail: str | None = None
    """The sentence behind `waiting`, as `explain_execution` says it."""
    lateness_s: float | None = None
    """How long after its own fire_at the attempt that fired then started (None until it
    has, and for backfilled and triggered runs)."""
    not_late_because: str | None = None
    """"backfill" or "triggered": why it has no lateness."""
    retries: tuple[Retry, ...] = ()
    """A person's retries, oldest first: each starts a new try with the job's attempts."""
    deadline_at: datetime | None = None
    """When it must have succeeded by; None: no deadline."""
    deadline_missed_at: datetime | None = None
    """When it was marked past its deadline without a success; None: not missed (yet)."""
    concurrency_key: str | None = None
    """The concurrency key it holds (resolved when it was made); None without one."""

    @property
    def tries(self) -> int:
        """Which try this is: 1, or 1 + the retries a person made."""
        return 1 + len(self.retries)

    @property
    def try_attempt(self) -> int:
        """Attempts of the current try so far (`attempt` counts every try's)."""
        return self.attempt - (self.retries[-1].after_attempt if self.retries else 0)


@dataclass(frozen=True, slots=True)
class NextRun:
    """One resolved occurrence of a schedule."""

    instant: datetime
    """When it fires (UTC)."""
    wall_time: str
    """The same instant in the schedule's zone, ISO 8601 with its UTC offset."""
    time_zone: str
    note: str | None
    """Set where DST changed the outcome (a skipped or repeated wall time)."""
    skipped: bool = False
    """A business calendar closes its day: it does not run (`instant`: when it would)."""
    moved_from: datetime | None = None
    """A business calendar moved it: the instant it was scheduled for."""
    calendar: str | None = None
    """The calendar that skipped or moved it."""
    calendar_reason: str | None = None
    """What that calendar says of the day ("Christmas Day")."""


@dataclass(frozen=True, slots=True)
class RunsAround:
    """A schedule's runs on both sides of an instant (`preview_around`)."""

    earlier: tuple[NextRun, ...]
    """The last runs scheduled before it, oldest first."""
    later: tuple[NextRun, ...]
    """The first runs scheduled at or after it."""


@dataclass(frozen=True, slots=True)
class CreatedJob:
    """What `create_job` returns: the job and its first resolved runs."""

    job: Job
    next_runs: tuple[NextRun, ...]
    warnings: tuple[str, ...] = ()
    """What may keep its runs from running, said at creation (the job is created)."""


@dataclass(frozen=True, slots=True)
class NewJob:
    """One job for `create_jobs`: what `create_job` takes, as a value.

        wheel.NewJob("ping-42", "http.ping", wheel.at(instant), payload=b"42")

    `job_id` (a UUID) makes its create repeatable, across calls too; without
    one the client picks one, so its own retries never make a second job.
    """

    name: str
    task_type: str
    schedule: Schedule
    payload: bytes = b""
    policies: Policies | None = None
    job_id: JobId | uuid.UUID | str | None = None
    http: HttpTask | None = None
    """Set: an HTTP task; `task_type` may then be "" (it is made from the URL)."""

    def as_spec(self) -> JobSpec:
        """The definition, checked (InvalidArgument names the field)."""
        task_type = self.task_type or (self.http.task_type if self.http else "")
        policies = self.policies or Policies()
        return JobSpec(self.name, task_type, self.schedule, self.payload, policies, self.http)


@dataclass(frozen=True, slots=True)
class Backfill:
    """What `backfill_job` did: occurrences made now, and those that existed already."""

    created_ids: tuple[ExecutionId, ...]
    existing_ids: tuple[ExecutionId, ...]


class Verdict(enum.StrEnum):
    """What became of one occurrence (`Explanation.verdict`)."""

    SUCCEEDED = "succeeded"
    WAITING = "waiting"
    """Waiting for its instant, or a retry's backoff, to come."""
    IN_FLIGHT = "in_flight"
    DEAD = "dead"
    """Attempts ran out; a person may retry it."""
    NEEDS_REVIEW = "needs_review"
    """An attempt failed and the job is not idempotent: a person decides."""
    SKIPPED_MISFIRE = "skipped_misfire"
    SKIPPED_OVERLAP = "skipped_overlap"
    CANCELLED = "cancelled"
    PAUSED = "paused"
    PARKED = "parked"
    """Its task type's circuit breaker is open."""
    QUEUED = "queued"
    """Due, waiting for executor capacity or a tenant cap."""
    NOT_MATERIALISED = "not_materialised"
    OUTSIDE_BOUNDS = "outside_bounds"
    NOT_AN_OCCURRENCE = "not_an_occurrence"
    JOB_DELETED = "job_deleted"
    SKIPPED = "skipped"
    UNSERVED = "unserved"
    """Due, but no connected executor serves its task type."""
    AT_TENANT_CAP = "at_tenant_cap"
    """Due, but its tenant is at its in-flight cap."""
    BEHIND_RUNNING = "behind_running"
    """Due, waiting for another run of its job to finish (overlap)."""
    NO_EXECUTOR = "no_executor"
    """Due, but no executor is connected to the node that owns it."""
    AT_KEY_LIMIT = "at_key_limit"
    """Due, but its concurrency key has its job's limit of runs in flight."""
    SKIPPED_CALENDAR = "skipped_calendar"
    """Not run: a business calendar of its job closes its day (`Explanation.calendar`)."""


@dataclass(frozen=True, slots=True)
class Step:
    """One step of an occurrence's path."""

    at: datetime | None
    """None for a step with no instant (e.g. a state read now)."""
    what: str
    detail: str


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why an occurrence ran, is waiting, or did not run."""

    execution_id: ExecutionId | None
    job_id: JobId
    scheduled_for: datetime
    verdict: Verdict
    summary: str
    """One sentence a person can act on."""
    steps: tuple[Step, ...]
    """Oldest first."""
    execution: Execution | None
    """The execution, when it exists."""
    concurrency_key: str | None = None
    """AT_KEY_LIMIT: the key it waits for."""
    concurrency_limit: int | None = None
    """AT_KEY_LIMIT: its job's limit."""
    key_holders: tuple[ExecutionId, ...] = ()
    """AT_KEY_LIMIT: the first runs holding the key."""
    calendar: str | None = None
    """The business calendar that skipped or moved it."""
    calendar_reason: str | None = None
    """What that calendar says of the day ("Boxing Day")."""
    moved_to: datetime | None = None
    """Moved by a calendar: the instant it fires instead of its scheduled one."""


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a listing; pass `next_page_token` back for the next (empty: the last)."""

    items: tuple[T, ...]
    next_page_token: str


class NodeState(enum.StrEnum):
    LIVE = "live"
    """Registered: its session is alive."""
    LOST = "lost"
    """Its session ended without a clean stop: killed, frozen or cut off from etcd."""
    LEFT = "left"
    """It stopped cleanly and handed its partitions over."""


@dataclass(frozen=True, slots=True)
class Node:
    """A scheduler node as etcd lists it, or one that went in the last hour."""

    node_id: str
    address: str
    """Where its gRPC server listens."""
    partitions: int
    """How many partitions it holds now (a departed node: held when it went)."""
    durability: str | None = None
    """Why a job it acknowledges could be lost with its Postgres primary's disk (no
    synchronous standby); None while every commit waits for one."""
    state: NodeState = NodeState.LIVE
    since: datetime | None = None
    """When a live node registered its session."""
    gone_at: datetime | None = None
    """When a departed node went."""
    taken: Mapping[int, str | None] = dataclasses.field(default_factory=dict)
    """A departed node's partitions and the node that took each (None: nobody yet)."""

    def takers(self) -> dict[str, int]:
        """How many of a departed node's partitions each node took, by node name (sorted)."""
        counts: dict[str, int] = {}
        for node in self.taken.values():
            if node:
                counts[node] = counts.get(node, 0) + 1
        return dict(sorted(counts.items()))

    @property
    def untaken(self) -> int:
        """How many of a departed node's partitions nobody has taken yet."""
        return sum(1 for node in self.taken.values() if not node)


@dataclass(frozen=True, slots=True)
class Roster:
    """The cluster's nodes: the live ones, those that went in the last hour, and how many
    it should have (`client.roster()`)."""

    nodes: tuple[Node, ...]
    """The live nodes."""
    departed: tuple[Node, ...]
    """Lost or left in the last hour, the latest first; one entry per session, so a node
    that is back is listed here too."""
    expected: int
    """The live nodes and the lost ones not back."""

    @property
    def lost(self) -> tuple[Node, ...]:
        """Lost nodes that are not back: those whose latest departure is a loss."""
        live = {node.node_id for node in self.nodes}
        latest: dict[str, Node] = {}
        for node in self.departed:  # the latest first
            latest.setdefault(node.node_id, node)
        return tuple(node for node in latest.values()
                     if node.state is NodeState.LOST and node.node_id not in live)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Partition:
    """A partition, its owner and its epoch (the fencing token between nodes)."""

    partition: int
    node_id: str | None
    """None while no node holds it."""
    epoch: int
    since: datetime | None = None
    """When its owner took it."""


@dataclass(frozen=True, slots=True)
class ExecutorLink:
    """One executor's stream to one node, as the node last published it (each second)."""

    node_id: str
    credit: Mapping[str, int]
    """Dispatches it allows on this stream now, by pool."""
    in_flight: int
    """Runs this node dispatched to it that have not finished."""
    connected_at: datetime | None
    slots: Mapping[str, int] = dataclasses.field(default_factory=dict)
    """Handlers it runs at once, by pool (empty: an executor that did not say)."""
    hold: int = 0
    """Credit per pool beyond its slots: runs handed over ahead of their instant."""

    def free_slots(self, pool: str) -> int | None:
        """Slots of `pool` not spoken for on this stream: its credit less the hold, at most
        its slots (None when it did not say its slots)."""
        slots = self.slots.get(pool)
        if slots is None:
            return None
        return max(0, min(slots, self.credit.get(pool, 0) - self.hold))


@dataclass(frozen=True, slots=True)
class ExecutorInfo:
    """An executor: its pools, task types and capacity, and its stream to each node."""

    executor_id: str
    pools: tuple[str, ...]
    task_types: tuple[str, ...]
    capacity: int
    """Handlers it runs at once, over all pools."""
    links: tuple[ExecutorLink, ...] = ()
    """None: it reaches no node (a wrong --cluster, a refused token, or no node is up)."""


@dataclass(frozen=True, slots=True)
class Calendar:
    """A tenant's business calendar: the days it closes (`definition().closed(day)` says
    why a day is closed, here, without a call)."""

    id: uuid.UUID
    name: str
    description: str
    dates: tuple[DateRange, ...]
    """Closed dates and inclusive ranges."""
    weekdays: tuple[str, ...]
    """Closed every week: "mon" ... "sun", Monday first."""
    holidays: tuple[HolidaySource, ...]
    """Public holidays of these countries or regions are closed."""
    version: int
    """Pass it to `update_calendar`: the edit is refused if someone changed it since."""
    created_at: datetime
    updated_at: datetime

    def definition(self) -> calendars.Calendar:
        weekdays = frozenset(calendars.parse_weekday(name) for name in self.weekdays)
        return calendars.Calendar(
            self.name, self.dates, weekdays, self.holidays, self.description, self.version
        )


@dataclass(frozen=True, slots=True)
class ClosedDay:
    """A day a calendar closes, and why ("Christmas Day", "Saturday", "a listed date (...)")."""

    day: date
    reason: str

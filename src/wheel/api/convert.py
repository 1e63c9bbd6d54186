"""Public-API messages and wheel's model, both ways: the one place that knows both.

Requests are read strictly: an unknown enum number, an out-of-range instant
or duration, or a value the model refuses is an InvalidArgument naming the
field as the request spells it (`schedule.cron.expression`,
`policies.retry.max_attempts`, ...). Unset optional fields take the design's
defaults, as `wheel.model.jobs` defines them.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp

from wheel._proto.wheel.v1 import common_pb2 as pb
from wheel.errors import InvalidArgument
from wheel.model import executions as mx
from wheel.model import jobs as mj
from wheel.model.http_tasks import HttpTask
from wheel.model.ids import ExecutionKey, JobId
from wheel.model.pauses import Pause
from wheel.schedule import PreviewRun
from wheel.timestamps import shared_timestamp, to_timestamp

T = TypeVar("T")
K = TypeVar("K", bound=int)

# Where the model's field names differ from the request's.
_FIELD_NAMES = {
    "schedule.cron": "schedule.cron.expression",
    "schedule.time_zone": "schedule.cron.time_zone",
    "schedule.starts_at": "schedule.cron.start",
    "schedule.ends_at": "schedule.cron.end",
    "schedule.smear": "schedule.cron.smear",
    "policies.max_attempts": "policies.retry.max_attempts",
    "policies.backoff_base": "policies.retry.backoff_base",
    "policies.backoff_cap": "policies.retry.backoff_cap",
}
# An interval schedule's fields, where the model's names differ from the request's.
_INTERVAL_FIELD_NAMES = {
    **_FIELD_NAMES,
    "schedule.every": "schedule.every.every",
    "schedule.anchor": "schedule.every.anchor",
    "schedule.time_zone": "schedule.every.time_zone",
    "schedule.starts_at": "schedule.every.start",
    "schedule.ends_at": "schedule.every.end",
    "schedule.smear": "schedule.every.smear",
    "schedule.dst_gap": "schedule.every.dst.gap",
    "schedule.dst_fold": "schedule.every.dst.fold",
    "schedule.interval_dst": "schedule.every.interval_dst",
}

_MAX_DURATION = timedelta(days=3660)
_EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
_LATEST = datetime(9000, 1, 1, tzinfo=UTC)

_MISFIRE = {
    pb.MISFIRE_DEFAULT: mj.MisfirePolicy.FIRE_ONCE,
    pb.MISFIRE_SKIP: mj.MisfirePolicy.SKIP,
    pb.MISFIRE_FIRE_ONCE: mj.MisfirePolicy.FIRE_ONCE,
    pb.MISFIRE_FIRE_ALL: mj.MisfirePolicy.FIRE_ALL,
}
_OVERLAP = {
    pb.OVERLAP_DEFAULT: mj.OverlapPolicy.SKIP,
    pb.OVERLAP_SKIP: mj.OverlapPolicy.SKIP,
    pb.OVERLAP_QUEUE: mj.OverlapPolicy.QUEUE,
    pb.OVERLAP_ALLOW: mj.OverlapPolicy.ALLOW,
}
_GAP = {
    pb.DstPolicy.GAP_DEFAULT: mj.DstGap.DEFAULT,
    pb.DstPolicy.GAP_SHIFT: mj.DstGap.SHIFT,
    pb.DstPolicy.GAP_SKIP: mj.DstGap.SKIP,
}
_INTERVAL_DST = {
    pb.INTERVAL_DST_DEFAULT: mj.IntervalDst.ELAPSED,
    pb.INTERVAL_DST_ELAPSED: mj.IntervalDst.ELAPSED,
    pb.INTERVAL_DST_WALL: mj.IntervalDst.WALL,
}
_FOLD = {
    pb.DstPolicy.FOLD_DEFAULT: mj.DstFold.DEFAULT,
    pb.DstPolicy.FOLD_FIRST: mj.DstFold.FIRST,
    pb.DstPolicy.FOLD_LAST: mj.DstFold.LAST,
    pb.DstPolicy.FOLD_BOTH: mj.DstFold.BOTH,
}
JOB_STATUS = {
    mj.JobStatus.ACTIVE: pb.JOB_STATUS_ACTIVE,
    mj.JobStatus.PAUSED: pb.JOB_STATUS_PAUSED,
    mj.JobStatus.DELETED: pb.JOB_STATUS_DELETED,
}
EXECUTION_STATUS = {
    mx.ExecutionStatus.PENDING: pb.EXECUTION_STATUS_PENDING,
    mx.ExecutionStatus.DISPATCHED: pb.EXECUTION_STATUS_DISPATCHED,
    mx.ExecutionStatus.RUNNING: pb.EXECUTION_STATUS_RUNNING,
    mx.ExecutionStatus.SUCCEEDED: pb.EXECUTION_STATUS_SUCCEEDED,
    mx.ExecutionStatus.DEAD: pb.EXECUTION_STATUS_DEAD,
    mx.ExecutionStatus.SKIPPED: pb.EXECUTION_STATUS_SKIPPED,
    mx.ExecutionStatus.NEEDS_REVIEW: pb.EXECUTION_STATUS_NEEDS_REVIEW,
    mx.ExecutionStatus.CANCELLED: pb.EXECUTION_STATUS_CANCELLED,
}
EXECUTION_STATUS_FROM = {v: k for k, v in EXECUTION_STATUS.items()}
JOB_STATUS_FROM = {v: k for k, v in JOB_STATUS.items()}


def _pick(table: Mapping[Any, T], value: int, field: str) -> T:
    try:
        return table[value]
    except KeyError:
        raise InvalidArgument(field, f"{value} is not a known value") from None


def _inverse(table: Mapping[K, T]) -> dict[T, K]:
    """Model value -> message value: the explicit one, not the DEFAULT alias (key 0)."""
    return {value: key for key, value in sorted(table.items(), key=lambda item: item[0])}


_GAP_TO = _inverse(_GAP)
_FOLD_TO = _inverse(_FOLD)
_MISFIRE_TO = _inverse(_MISFIRE)
_OVERLAP_TO = _inverse(_OVERLAP)
_INTERVAL_DST_TO = _inverse(_INTERVAL_DST)
CALENDAR_POLICY = {
    pb.CALENDAR_POLICY_DEFAULT: mj.CalendarPolicy.SKIP,
    pb.CALENDAR_POLICY_SKIP: mj.CalendarPolicy.SKIP,
    pb.CALENDAR_POLICY_NEXT_BUSINESS_DAY: mj.CalendarPolicy.NEXT_BUSINESS_DAY,
    pb.CALENDAR_POLICY_PREVIOUS_BUSINESS_DAY: mj.CalendarPolicy.PREVIOUS_BUSINESS_DAY,
}
CALENDAR_POLICY_TO = _inverse(CALENDAR_POLICY)


def calendar_policy(value: int, field: str) -> mj.CalendarPolicy:
    return _pick(CALENDAR_POLICY, value, field)


# -- scalars --------------------------------------------------------------------------------


def instant(timestamp: Timestamp, field: str) -> datetime:
    """A request's Timestamp as an aware UTC datetime; InvalidArgument if out of range."""
    if not 0 <= timestamp.nanos < 1_000_000_000:
        raise InvalidArgument(field, "nanos must be in 0-999999999")
    try:
        value = timestamp.ToDatetime(tzinfo=UTC)
    except (ValueError, OverflowError, OSError):
        raise InvalidArgument(field, "is not an instant between years 1 and 9999") from None
    if not _EARLIEST <= value < _LATEST:
        raise InvalidArgument(field, "must be between 1970 and 9000")
    return value


def duration(value: Duration, field: str) -> timedelta:
    """A request's Duration; InvalidArgument if negative, malformed or over ten years."""
    if value.seconds < 0 or value.nanos < 0:
        raise InvalidArgument(field, "must not be negative")
    if value.nanos >= 1_000_000_000:
        raise InvalidArgument(field, "nanos must be in 0-999999999")
    if value.seconds > _MAX_DURATION.total_seconds():
        raise InvalidArgument(field, f"longer than {_MAX_DURATION.days} days")
    # The store keeps milliseconds: a finer duration is cut to them here, so what is
    # validated is what is stored (and a repeated create compares equal).
    return timedelta(seconds=value.seconds, milliseconds=value.nanos // 1_000_000)


def to_duration(delta: timedelta) -> Duration:
    result = Duration()
    result.FromTimedelta(delta)
    return result


def job_ref(text: str, field: str = "id") -> JobId | str:
    """A job named by its id (a UUID) or by its name: the JobId, or the name to look up."""
    if not text:
        raise InvalidArgument(field, "is required")
    try:
        return JobId(uuid.UUID(text))
    except ValueError:
        pass
    try:
        mj.check_text(field, text, mj.MAX_NAME_LENGTH)
    except InvalidArgument as exc:
        reason = f"is neither a job id (a UUID) nor a name: {exc.reason}"
        raise InvalidArgument(field, reason) from None
    return text


def job_id(text: str, field: str = "id") -> JobId:
    if not text:
        raise InvalidArgument(field, "is required")
    try:
        return JobId(uuid.UUID(text))
    except ValueError:
        raise InvalidArgument(field, f"{text[:80]!r} is not a job id (a UUID)") from None


def execution_key(text: str, field: str = "id") -> ExecutionKey:
    if not text:
        raise InvalidArgument(field, "is required")
    try:
        key = ExecutionKey.parse(text)
    except ValueError as exc:
        raise InvalidArgument(field, f"not an execution id: {exc}") from None
    if not _EARLIEST <= key.scheduled_for < _LATEST:
        raise InvalidArgument(field, "its instant must be between 1970 and 9000")
    return key


def _model(build: Callable[[], T], prefix: str = "", names: Mapping[str, str] = _FIELD_NAMES) -> T:
    """Build a model object, renaming the field of any InvalidArgument as the request spells it."""
    # request_fields' rule without a context manager: this runs several times per job.
    try:
        return build()
    except InvalidArgument as exc:
        raise _as_sent(exc, prefix, names) from None


def _names(schedule: mj.Schedule | None) -> Mapping[str, str]:
    if schedule is not None and schedule.kind is mj.ScheduleKind.INTERVAL:
        return _INTERVAL_FIELD_NAMES
    return _FIELD_NAMES


def field_as_sent(name: str, schedule: mj.Schedule | None = None) -> str:
    """A model field's name as a request spells it (`schedule.cron`: `schedule.cron.expression`;
    for an interval `schedule`, `schedule.smear`: `schedule.every.smear`)."""
    return _names(schedule).get(name, name)


@contextmanager
def request_fields(prefix: str = "", schedule: mj.Schedule | None = None) -> Iterator[None]:
    """Inside: an InvalidArgument from the model names its field as the request spells it
    (as `schedule`'s kind spells it, when given)."""
    try:
        yield
    except InvalidArgument as exc:
        raise _as_sent(exc, prefix, _names(schedule)) from None


def _as_sent(
    exc: InvalidArgument, prefix: str, names: Mapping[str, str] = _FIELD_NAMES
) -> InvalidArgument:
    if prefix and exc.field.startswith(prefix):
        return exc  # named as sent already (a nested conversion did it)
    name = names.get(exc.field, exc.field)
    return InvalidArgument(f"{prefix}{name}", exc.reason)


# -- requests -> model ----------------------------------------------------------------------


def schedule_from(message: pb.Schedule, field: str = "schedule") -> mj.Schedule:
    kind = message.WhichOneof("kind")
    if kind is None:
        raise InvalidArgument(field, "one of now, at, cron or every is required")
    if kind == "now":
        return mj.Schedule(mj.ScheduleKind.NOW)
    prefix = field.removesuffix("schedule")
    if kind == "at":
        at = instant(message.at, f"{field}.at")
        return _model(lambda: mj.Schedule(mj.ScheduleKind.AT, at=at), prefix)
    if kind == "every":
        return _interval_from(message.every, field, prefix)
    cron = message.cron
    path = f"{field}.cron"
    starts = instant(cron.start, f"{path}.start") if cron.HasField("start") else None
    ends = instant(cron.end, f"{path}.end") if cron.HasField("end") else None
    smear = duration(cron.smear, f"{path}.smear")
    gap = _pick(_GAP, cron.dst.gap, f"{path}.dst.gap")
    fold = _pick(_FOLD, cron.dst.fold, f"{path}.dst.fold")
    if not cron.expression.strip():
        raise InvalidArgument(f"{path}.expression", "is required for a cron schedule")
    return _model(
        lambda: mj.Schedule(
            mj.ScheduleKind.CRON,
            cron=cron.expression,
            time_zone=cron.time_zone or "UTC",
            starts_at=starts,
            ends_at=ends,
            smear=smear,
            dst_gap=gap,
            dst_fold=fold,
        ),
        prefix,
    )


def _interval_from(every: pb.IntervalSchedule, field: str, prefix: str) -> mj.Schedule:
    path = f"{field}.every"
    if not every.HasField("every"):
        raise InvalidArgument(f"{path}.every", "is required for an interval schedule")
    if every.every.seconds < 0 or every.every.nanos < 0:
        raise InvalidArgument(f"{path}.every", "must be at least 1 second")
    spacing = duration(every.every, f"{path}.every")
    anchor = instant(every.anchor, f"{path}.anchor") if every.HasField("anchor") else None
    starts = instant(every.start, f"{path}.start") if every.HasField("start") else None
    ends = instant(every.end, f"{path}.end") if every.HasField("end") else None
    smear = duration(every.smear, f"{path}.smear")
    gap = _pick(_GAP, every.dst.gap, f"{path}.dst.gap")
    fold = _pick(_FOLD, every.dst.fold, f"{path}.dst.fold")
    counted = _pick(_INTERVAL_DST, every.interval_dst, f"{path}.interval_dst")
    return _model(
        lambda: mj.Schedule(
            mj.ScheduleKind.INTERVAL,
            time_zone=every.time_zone or "UTC",
            starts_at=starts,
            ends_at=ends,
            smear=smear,
            dst_gap=gap,
            dst_fold=fold,
            every=spacing,
            anchor=anchor,
            interval_dst=counted,
        ),
        prefix,
        _INTERVAL_FIELD_NAMES,
    )


_DEFAULT_POLICIES = mj.Policies()


def policies_from(message: pb.JobPolicies, field: str = "policies") -> mj.Policies:
    defaults = _DEFAULT_POLICIES
    retry = message.retry

    def given(parent: object, name: str, path: str, default: timedelta) -> timedelta:
        if parent.HasField(name):  # type: ignore[attr-defined]
            return duration(getattr(parent, name), path)
        return default

    return _model(
        lambda: mj.Policies(
            max_attempts=retry.max_attempts or defaults.max_attempts,
            backoff_base=given(
                retry, "backoff_base", f"{field}.retry.backoff_base", defaults.backoff_base
            ),
            backoff_cap=given(
                retry, "backoff_cap", f"{field}.retry.backoff_cap", defaults.backoff_cap
            ),
            idempotent=message.idempotent if message.HasField("idempotent") else True,
            misfire=_pick(_MISFIRE, message.misfire, f"{field}.misfire"),
            misfire_grace=given(
                message, "misfire_grace", f"{field}.misfire_grace", defaults.misfire_grace
            ),
            misfire_replay_cap=message.misfire_replay_cap or defaults.misfire_replay_cap,
            overlap=_pick(_OVERLAP, message.overlap, f"{field}.overlap"),
            timeout=given(message, "timeout", f"{field}.timeout", defaults.timeout),
            priority=message.priority,
            pool=message.pool or defaults.pool,
            notify_url=message.notify_url,
            deadline=(
                duration(message.deadline, f"{field}.deadline")
                if message.HasField("deadline")
                else None
            ),
            notify_after_failures=message.notify_after_failures,
            concurrency_key=message.concurrency_key,
            concurrency_key_field=message.concurrency_key_field,
            concurrency_limit=message.concurrency_limit,
            calendars=tuple(message.calendars),
            calendar_policy=_pick(
                CALENDAR_POLICY, message.calendar_policy, f"{field}.calendar_policy"
            ),
        ),
        field.removesuffix("policies"),
    )


def http_from(message: pb.HttpTask, field: str = "http") -> HttpTask:
    return _model(
        lambda: HttpTask(message.url, message.retry_client_errors), field.removesuffix("http")
    )


def spec_from(
    name: str,
    task_type: str,
    payload: bytes,
    schedule: pb.Schedule,
    policies: pb.JobPolicies,
    prefix: str = "",
    http: pb.HttpTask | None = None,
    *,
    validated: dict[bytes, mj.Policies] | None = None,
) -> mj.JobSpec:
    """A job definition from a request's fields; InvalidArgument names the first bad one.

    An HTTP task's task type is made from its URL when the request leaves it empty.
    `validated` (policies by their encoding) is shared by the jobs of one request: the
    policies most of a batch repeat are validated once."""
    built_schedule = schedule_from(schedule, f"{prefix}schedule")
    if validated is None:
        built_policies = policies_from(policies, f"{prefix}policies")
    else:
        encoded = policies.SerializeToString(deterministic=True)
        found = validated.get(encoded)
        if found is None:
            found = validated[encoded] = policies_from(policies, f"{prefix}policies")
        built_policies = found
    built_http = http_from(http, f"{prefix}http") if http is not None else None
    if built_http is not None and not task_type:
        task_type = built_http.task_type
    return _model(
        lambda: mj.JobSpec(
            name=name,
            task_type=task_type,
            payload=payload,
            schedule=built_schedule,
            policies=built_policies,
            http=built_http,
        ),
        prefix,
    )


# -- model -> messages ----------------------------------------------------------------------


def schedule_to(schedule: mj.Schedule) -> pb.Schedule:
    if schedule.kind is mj.ScheduleKind.NOW:
        return pb.Schedule(now=pb.RunNow())
    if schedule.kind is mj.ScheduleKind.AT:
        assert schedule.at is not None
        return pb.Schedule(at=shared_timestamp(schedule.at))
    if schedule.kind is mj.ScheduleKind.INTERVAL:
        return pb.Schedule(every=_interval_to(schedule))
    cron = pb.CronSchedule(
        expression=schedule.cron or "",
        time_zone=schedule.time_zone,
        smear=to_duration(schedule.smear),
        dst=pb.DstPolicy(gap=_GAP_TO[schedule.dst_gap], fold=_FOLD_TO[schedule.dst_fold]),
    )
    if schedule.starts_at is not None:
        cron.start.CopyFrom(to_timestamp(schedule.starts_at))
    if schedule.ends_at is not None:
        cron.end.CopyFrom(to_timestamp(schedule.ends_at))
    return pb.Schedule(cron=cron)


def _interval_to(schedule: mj.Schedule) -> pb.IntervalSchedule:
    assert schedule.every is not None
    message = pb.IntervalSchedule(
        every=to_duration(schedule.every),
        time_zone=schedule.time_zone,
        smear=to_duration(schedule.smear),
        dst=pb.DstPolicy(gap=_GAP_TO[schedule.dst_gap], fold=_FOLD_TO[schedule.dst_fold]),
        interval_dst=_INTERVAL_DST_TO[schedule.interval_dst],
    )
    _set_time(message, "anchor", schedule.anchor)
    _set_time(message, "start", schedule.starts_at)
    _set_time(message, "end", schedule.ends_at)
    return message


def policies_to(policies: mj.Policies) -> pb.JobPolicies:
    return pb.JobPolicies(
        retry=pb.RetryPolicy(
            max_attempts=policies.max_attempts,
            backoff_base=to_duration(policies.backoff_base),
            backoff_cap=to_duration(policies.backoff_cap),
        ),
        idempotent=policies.idempotent,
        misfire=_MISFIRE_TO[policies.misfire],
        misfire_grace=to_duration(policies.misfire_grace),
        misfire_replay_cap=policies.misfire_replay_cap,
        overlap=_OVERLAP_TO[policies.overlap],
        timeout=to_duration(policies.timeout),
        priority=policies.priority,
        pool=policies.pool,
        notify_url=policies.notify_url,
        deadline=to_duration(policies.deadline) if policies.deadline is not None else None,
        notify_after_failures=policies.notify_after_failures,
        concurrency_key=policies.concurrency_key,
        concurrency_key_field=policies.concurrency_key_field,
        concurrency_limit=policies.concurrency_limit,
        calendars=list(policies.calendars),
        calendar_policy=CALENDAR_POLICY_TO[policies.calendar_policy],
    )


def http_to(http: HttpTask | None) -> pb.HttpTask | None:
    if http is None:
        return None
    return pb.HttpTask(url=http.url, retry_client_errors=http.retry_client_errors)


# Jobs answered together share their policies and their creation time (a batch is one
# statement): each message is built once. A cached message is shared, so it is only ever
# handed to a constructor, which copies it.
_shared_policies = functools.lru_cache(maxsize=256)(policies_to)


def job_to(job: mj.Job) -> pb.Job:
    spec = job.spec
    return pb.Job(
        http=http_to(spec.http),
        id=str(job.id),
        name=spec.name,
        task_type=spec.task_type,
        payload=spec.payload,
        schedule=schedule_to(spec.schedule),
        policies=_shared_policies(spec.policies),
        status=JOB_STATUS[job.status],
        version=job.version,
        created_at=shared_timestamp(job.created_at),
        updated_at=shared_timestamp(job.updated_at),
        **_pause_fields(job.pause),
    )


def _pause_fields(pause: Pause | None) -> dict[str, Any]:
    """A paused job's note, who and when, as Job's fields (none while it is not paused)."""
    if pause is None:
        return {}
    fields: dict[str, Any] = {"pause_note": pause.note, "paused_by": pause.by}
    if pause.at is not None:
        fields["paused_at"] = to_timestamp(pause.at)
    return fields


def _set_time(message: object, name: str, value: datetime | None) -> None:
    if value is not None:
        getattr(message, name).CopyFrom(to_timestamp(value))


def execution_to(execution: mx.Execution) -> pb.Execution:
    message = pb.Execution(
        id=execution.key.id,
        job_id=str(execution.key.job_id),
        job_version=execution.job_version,
        scheduled_for=to_timestamp(execution.key.scheduled_for),
        fire_at=to_timestamp(execution.fire_at),
        status=EXECUTION_STATUS[execution.status],
        reason=execution.reason or "",
        attempt=execution.attempt,
        fence=execution.fence,
        trigger=execution.trigger.value,
        error=execution.error or "",
        created_at=to_timestamp(execution.created_at),
        executor_id=execution.executor_id or "",
        priority=execution.priority,
    )
    _set_time(message, "started_at", execution.started_at)
    _set_time(message, "finished_at", execution.finished_at)
    late_s = mx.lateness_s(execution)
    if late_s is not None:
        message.lateness_s = late_s
    message.not_late_because = mx.not_late_because(execution) or ""
    for attempt in execution.attempts:
        item = message.attempts.add(
            number=attempt.number,
            executor_id=attempt.executor_id or "",
            fence=attempt.fence,
            outcome=attempt.outcome.value,
            error=attempt.error or "",
        )
        _set_time(item, "started_at", attempt.started_at)
        _set_time(item, "finished_at", attempt.finished_at)
    for retry in execution.retries:
        message.retries.add(
            at=to_timestamp(retry.at), by=retry.by, after_attempt=retry.after_attempt
        )
    _set_time(message, "deadline_at", execution.deadline_at)
    _set_time(message, "deadline_missed_at", execution.deadline_missed_at)
    message.concurrency_key = execution.concurrency_key or ""
    return message


def next_run_to(run: PreviewRun) -> pb.NextRun:
    return pb.NextRun(
        instant=to_timestamp(run.fire_at),
        wall_time=run.wall_time,
        time_zone=run.time_zone,
        note=run.note or "",
        skipped=run.skipped,
        moved_from=to_timestamp(run.moved_from) if run.moved_from else None,
        calendar=run.calendar or "",
        calendar_reason=run.calendar_reason or "",
    )

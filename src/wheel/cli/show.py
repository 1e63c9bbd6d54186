"""How `wheel jobs` and `wheel executions` print results for people (rich tables).

Instants are ISO 8601 in UTC ("Z"); durations are written as the options
take them ("1m30s"); a schedule's next runs show their wall time in the
job's zone and the DST note where DST changed the outcome. `--output json`
bypasses all of this (`wheel.client.plain`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table

from wheel.cli.table import Col, render
from wheel.client.apply import Action
from wheel.durations import readable
from wheel.errors import first_line
from wheel.model.executions import lateness_s, not_late_because
from wheel.model.jobs import DstFold, DstGap, IntervalDst, Policies, Schedule, ScheduleKind
from wheel.model.notifications import redacted
from wheel.schedule.interval import describe_interval

if TYPE_CHECKING:
    from wheel.client import types
    from wheel.client.apply import ApplyPlan

_SPAN_UNITS_MS = (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000))


def when(instant: datetime | None) -> str:
    return "-" if instant is None else instant.isoformat().replace("+00:00", "Z")


def cell_when(instant: datetime | None) -> str:
    """An instant in a list's cell: a space between date and time, where it may fold."""
    return when(instant).replace("T", " ")


def span(delta: timedelta) -> str:
    """A duration as the options take it: 90 s is "1m30s"."""
    rest_ms = round(delta.total_seconds() * 1000)
    if rest_ms == 0:
        return "0s"
    parts = []
    for unit, size_ms in _SPAN_UNITS_MS:
        count, rest_ms = divmod(rest_ms, size_ms)
        if count:
            parts.append(f"{count}{unit}")
    if rest_ms:
        parts.append(f"{rest_ms}ms")
    return "".join(parts)


def last_run(run: types.LastRun | None) -> str:
    """'succeeded (2027-01-05T09:00:00Z)', with the instant it was scheduled for; or '-'."""
    if run is None:
        return "-"
    return f"{run.status} ({when(run.scheduled_for)})"


def describe_schedule(schedule: Schedule) -> str:
    if schedule.kind is ScheduleKind.NOW:
        return "now"
    if schedule.kind is ScheduleKind.AT:
        return f"at {when(schedule.at)}"
    if schedule.kind is ScheduleKind.INTERVAL:
        words = describe_interval(schedule)
        text = f"{words[:1].lower()}{words[1:]}"
        if schedule.interval_dst is not IntervalDst.WALL:
            text += f", shown in {schedule.time_zone}"
    else:
        text = f"cron {schedule.cron!r} in {schedule.time_zone}"
    if schedule.smear:
        text += f", smear {span(schedule.smear)}"
    if schedule.starts_at or schedule.ends_at:
        text += f", from {when(schedule.starts_at)} to {when(schedule.ends_at)}"
    if schedule.dst_gap is not DstGap.DEFAULT or schedule.dst_fold is not DstFold.DEFAULT:
        text += f", dst gap {schedule.dst_gap}, fold {schedule.dst_fold}"
    return text


def describe_policies(p: Policies) -> str:
    return (
        f"{p.max_attempts} attempts, backoff {span(p.backoff_base)}..{span(p.backoff_cap)}, "
        f"{'idempotent' if p.idempotent else 'not idempotent'}, misfire {p.misfire} "
        f"(grace {span(p.misfire_grace)}, replay cap {p.misfire_replay_cap}), "
        f"overlap {p.overlap}, timeout {span(p.timeout)}, priority {p.priority}, pool {p.pool}"
        + (f", notifies {redacted(p.notify_url)}" if p.notify_url else "")
        + (f", deadline {span(p.deadline)}" if p.deadline is not None else "")
        + (f", notify after {p.notify_after_failures} failures" if p.notify_after_failures else "")
        + describe_concurrency_key(p)
        + (f", calendars {', '.join(p.calendars)} ({p.calendar_policy})" if p.calendars else "")
    )


def describe_concurrency_key(p: Policies) -> str:
    """', concurrency key 'billing' (limit 1)' or from the payload's field; '' without."""
    if not p.concurrency_limit:
        return ""
    key = (
        repr(p.concurrency_key)
        if p.concurrency_key
        else f"payload field {p.concurrency_key_field!r}"
    )
    return f", concurrency key {key} (limit {p.concurrency_limit})"


def _payload(payload: bytes) -> str:
    if not payload:
        return "-"
    try:
        text = payload.decode()
    except UnicodeDecodeError:
        return f"<{len(payload)} bytes, not UTF-8>"
    return text if len(text) <= 200 else text[:200] + "…"


def fields(console: Console, title: str, rows: Iterable[tuple[str, object]]) -> None:
    """A two-column table of one object's fields."""
    table = Table("field", "value", title=title, title_justify="left")
    for name, value in rows:
        table.add_row(name, "-" if value is None or value == "" else str(value))
    console.print(table)


def job(console: Console, title: str, item: types.Job, now: datetime | None = None) -> None:
    """One job's fields; a paused job's line says who paused it, how long ago (by `now`,
    the reader's clock) and why."""
    fields(
        console,
        title,
        [
            ("id", item.id),
            ("name", item.name),
            ("task", item.task_type),
            ("status", item.status),
            ("paused", _paused(item, now)),
            ("version", item.version),
            ("schedule", describe_schedule(item.schedule)),
            ("policies", describe_policies(item.policies)),
            ("payload", _payload(item.payload)),
            ("last run", last_run(item.last_run)),
            ("next run", when(item.next_run_at) if item.next_run_at else "-"),
            ("needs attention", item.attention.summary if item.attention else None),
            ("created", when(item.created_at)),
            ("updated", when(item.updated_at)),
            *(("warning", warning) for warning in item.warnings),
        ],
    )


def jobs(
    console: Console,
    page: types.Page[types.Job],
    wide: bool = False,
    now: datetime | None = None,
) -> None:
    """A row a job, its name first; its version (`jobs get` shows it, `jobs update` asks for
    it) and id (jobs are named by name) only with --wide. A paused job's status says who
    paused it, how long ago (by `now`, the reader's clock) and why."""
    now = now or datetime.now(UTC)
    columns = [
        Col("name", fold=True),
        Col("task", fold=True),
        Col("status"),
        Col("schedule", fold=True),
        Col("last run", fold=True),
        Col("next run", fold=True),
    ]
    if wide:
        columns += [Col("version"), Col("id")]
    rows = []
    for item in page.items:
        row = [
            item.name,
            item.task_type,
            _job_status(item, now),
            describe_schedule(item.schedule),
            last_run(item.last_run).replace("T", " "),
            cell_when(item.next_run_at) if item.next_run_at else "-",
        ]
        rows.append([*row, str(item.version), str(item.id)] if wide else row)
    _table(console, columns, rows, wide)
    _more(console, page.next_page_token)


def _job_status(item: types.Job, now: datetime) -> str:
    """The job's status, flagged when its runs need attention: "active: 3 unserved"; a
    paused job's says who paused it and why: "paused by alice 2 h ago: vendor outage"."""
    status = _paused(item, now) or str(item.status)
    if item.attention is None:
        return status
    return (
        f"{status}; {item.attention.summary}"
        if item.pause
        else f"{status}: {item.attention.summary}"
    )


def _paused(item: types.Job, now: datetime | None) -> str | None:
    """'paused by alice 2 h ago: vendor outage, INC-123' for a paused job, else None."""
    if item.pause is None:
        return None
    return item.pause.said(now or datetime.now(UTC))


def _table(console: Console, columns: list[Col], rows: list[list[str]], wide: bool) -> None:
    """The table at the console's width (COLUMNS, else the terminal's), or unfolded."""
    for line in render(columns, rows, None if wide else console.width):
        console.print(line, soft_wrap=True, markup=False, emoji=False, highlight=False)


def runs(console: Console, items: Sequence[types.NextRun]) -> None:
    """Next runs: the instant, the wall time in the zone, and DST notes."""
    if not items:
        console.print("no upcoming runs")
        return
    table = Table(
        "#", "instant (UTC)", "wall time", "zone", "note", title="next runs", title_justify="left"
    )
    for number, run in enumerate(items, 1):
        table.add_row(str(number), when(run.instant), run.wall_time, run.time_zone, run.note or "")
    console.print(table)


def runs_around(console: Console, at: datetime, both: types.RunsAround) -> None:
    """The runs before an instant, a line for the instant, then the runs from it on."""
    table = Table("#", "instant (UTC)", "wall time", "zone", "note",
                  title=f"runs around {when(at)}", title_justify="left")  # fmt: skip
    for number, run in enumerate(both.earlier, -len(both.earlier)):
        table.add_row(str(number), when(run.instant), run.wall_time, run.time_zone, run.note or "")
    table.add_row("", when(at), "", "", "(the instant asked about)", style="dim")
    for number, run in enumerate(both.later, 1):
        table.add_row(str(number), when(run.instant), run.wall_time, run.time_zone, run.note or "")
    console.print(table)


def execution(console: Console, title: str, item: types.Execution) -> None:
    """One execution's fields, then its attempts."""
    fields(
        console,
        title,
        [
            ("id", item.id),
            ("job", item.job_id),
            ("status", item.status),
            ("waiting", _waiting(item)),
            ("reason", item.reason),
            ("scheduled for", when(item.scheduled_for)),
            ("fires at", when(item.fire_at)),
            ("trigger", item.trigger),
            ("attempt", item.try_attempt),
            ("try", item.tries if item.retries else None),
            ("retried", "; ".join(f"by {r.by} at {when(r.at)}" for r in item.retries)),
            ("fence", item.fence),
            ("executor", item.executor_id),
            ("error", item.error),
            ("job version", item.job_version),
            ("priority", item.priority),
            ("created", when(item.created_at)),
            ("started", when(item.started_at)),
            ("late", _late(item)),
            ("finished", when(item.finished_at)),
            ("deadline", when(item.deadline_at) if item.deadline_at else None),
            ("deadline missed", when(item.deadline_missed_at) if item.deadline_missed_at else None),
            ("concurrency key", item.concurrency_key),
        ],
    )
    if not item.attempts:
        return
    table = Table(
        "#",
        "executor",
        "fence",
        "started",
        "finished",
        "outcome",
        "error",
        title="attempts",
        title_justify="left",
    )
    for attempt in item.attempts:
        table.add_row(
            str(attempt.number),
            attempt.executor_id or "-",
            str(attempt.fence),
            when(attempt.started_at),
            when(attempt.finished_at),
            attempt.outcome,
            first_line(attempt.error),
        )
    console.print(table)


def executions(
    console: Console,
    page: types.Page[types.Execution],
    names: Mapping[str, str] | None = None,
    now: datetime | None = None,
    wide: bool = False,
) -> None:
    """A row a run: when, the job's name, status, try, how late it started, how long it took
    (so far, while it runs), and the error or reason; the id last, whole, for explain (under
    its row when the row would not fit)."""
    names = names or {}
    columns = [
        Col("scheduled", fold=True),
        Col("job", fold=True),
        Col("status"),
        Col("try", right=True),
        Col("late", right=True),
        Col("took", right=True),
        Col("detail", fold=True),
        Col("id", below=True),
    ]
    rows = [
        [
            cell_when(item.scheduled_for),
            names.get(str(item.job_id), str(item.job_id)[:8]),
            item.status,
            str(item.try_attempt),
            _late(item),
            _took(item, now),
            _missed(item) + (_waiting(item) or first_line(item.error) or item.reason or ""),
            item.id,
        ]
        for item in page.items
    ]
    _table(console, columns, rows, wide)
    _more(console, page.next_page_token)


def _missed(item: types.Execution) -> str:
    """'deadline missed; ' before the detail of a run past its deadline, else ''."""
    return "deadline missed; " if item.deadline_missed_at is not None else ""


def _waiting(item: types.Execution) -> str:
    """Why a pending run is not running: its word, then the sentence ("unserved: ...")."""
    if not item.waiting:
        return ""
    return f"{item.waiting}: {item.waiting_detail}" if item.waiting_detail else item.waiting


def _late(item: types.Execution) -> str:
    """How long after its own fire instant the attempt started (`lateness_s`), or what the run
    is when it has no lateness: "backfill", "triggered"."""
    because = not_late_because(item)
    if because is not None:
        return because
    late_s = lateness_s(item)
    return "" if late_s is None else readable(late_s)


def _took(item: types.Execution, now: datetime | None) -> str:
    if item.started_at is None:
        return ""
    if item.finished_at is not None:
        return readable((item.finished_at - item.started_at).total_seconds())
    if item.status == "running" and now is not None:
        return readable((now - item.started_at).total_seconds()) + " so far"
    return ""


def explanation(console: Console, item: types.Explanation) -> None:
    """The verdict and its sentence first, then the path, oldest step first."""
    console.print(f"{item.verdict.value.upper()}: {item.summary}")
    console.print(f"job {item.job_id}, scheduled for {when(item.scheduled_for)}")
    if item.execution_id:
        console.print(f"execution {item.execution_id}")
    if item.steps:
        table = Table("at", "what", "detail", title="path", title_justify="left")
        for step in item.steps:
            table.add_row(when(step.at), step.what, step.detail)
        console.print(table)


def backfill(console: Console, result: types.Backfill) -> None:
    console.print(f"{len(result.created_ids)} created, {len(result.existing_ids)} existed")
    for ident in result.created_ids:
        console.print(f"created  {ident}")
    for ident in result.existing_ids:
        console.print(f"existed  {ident}")


def _more(console: Console, token: str) -> None:
    if token:
        console.print(f"more: --page-token {token}")


def apply_plan(console: Console, planned: ApplyPlan) -> None:
    """What an apply changes (or changed), a job a row, changes first."""

    order = {"delete": 0, "replace": 1, "update": 2, "create": 3, "unchanged": 4}
    if planned.calendars:  # applied before the jobs
        calendars = Table("", "calendar", "what changes", box=box.SIMPLE)
        for item in sorted(planned.calendars, key=lambda c: (order[c.action.value], c.name)):
            calendars.add_row(item.action.value, item.name, ", ".join(item.fields))
        console.print(calendars)
    table = Table("", "job", "what changes", box=box.SIMPLE)
    for change in sorted(planned.changes, key=lambda c: (order[c.action.value], c.name)):
        table.add_row(change.action.value, change.name, ", ".join(change.fields))
    console.print(table)
    counts = {action: len(planned.of(action)) for action in Action}
    said = ", ".join(f"{n} {action.value}" for action, n in counts.items() if n)
    if not planned.changed:
        console.print(f"nothing to change ({said or 'no jobs'})")
    elif planned.applied:
        console.print(f"applied: {said}")
    else:
        console.print(f"would apply: {said} (--dry-run: nothing changed)")

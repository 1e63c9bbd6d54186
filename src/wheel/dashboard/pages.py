"""What each page shows: the API calls it makes (with the user's client) and the context the
template gets. Lists are the API's keyset pages (50 a page, a token to the next), so a
page costs the same with a hundred runs in the database or a hundred thousand.
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from aiohttp import web

from wheel.client.aio import AsyncClient
from wheel.client.types import Attempt, Execution, Explanation, Job, Verdict
from wheel.durations import readable
from wheel.errors import InvalidArgument, WheelError
from wheel.model.executions import ExecutionStatus, lateness_s, not_late_because, ordinal
from wheel.model.jobs import Schedule, ScheduleKind
from wheel.schedule import cron
from wheel.schedule.describe import describe
from wheel.schedule.interval import describe_interval
from wheel.schedule.zones import Transition, next_transition

STATIC = Path(__file__).parent / "static"
PAGE = 50
RETRYABLE = (ExecutionStatus.DEAD, ExecutionStatus.NEEDS_REVIEW)
UPCOMING_MINUTES = 10
HISTORY = 20
"""Past runs a job page shows at a time."""


def _when(instant: datetime | None) -> str:
    if instant is None:
        return "-"
    return instant.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _seconds(start: datetime | None, end: datetime | None) -> str:
    if start is None or end is None:
        return "-"
    return readable((end - start).total_seconds())


def words(schedule: Schedule, job_id: uuid.UUID) -> str:
    """A schedule as a person says it ("At 01:30, on Monday-Friday"), from wheel's own
    parse of its cron for this job (`H` fields resolved): what will run."""
    if schedule.kind is ScheduleKind.NOW:
        return "once, at once"
    if schedule.kind is ScheduleKind.AT:
        return f"once, at {_when(schedule.at)}"
    if schedule.kind is ScheduleKind.INTERVAL:
        return describe_interval(schedule)
    try:
        return describe(cron.parse(schedule.cron or "", job_id))
    except InvalidArgument:  # a stored job's cron parses; this is for one that no longer does
        return f"cron {schedule.cron}"


def colour(node_id: str | None) -> str:
    """A stable colour per node, for the partition grid."""
    if not node_id:
        return "hsl(0, 0%, 50%)"
    hue = int(hashlib.sha256(node_id.encode()).hexdigest()[:4], 16) % 360
    return f"hsl({hue}, 60%, 45%)"


def wall(run: Any) -> str:
    """A previewed run's wall time as people read it: "Sun 28 Mar 2027, 02:00 BST"."""
    try:
        local = run.instant.astimezone(ZoneInfo(run.time_zone))
    except (ZoneInfoNotFoundError, ValueError):
        return str(run.wall_time)
    clock = "%H:%M:%S" if local.second else "%H:%M"  # an every-10-seconds job's runs differ
    return str(local.strftime(f"%a %d %b %Y, {clock} %Z"))


def transition(change: Transition) -> str:
    """A DST change as people read it: "On Sun 28 Mar 2027 at 01:00 UTC, clocks go
    forward 01:00 GMT → 02:00 BST"."""
    return f"On {change.at:%a %d %b %Y} at {change.at:%H:%M} UTC, {change.describe()}"


def lateness(execution: Execution) -> str:
    """The Late column: `lateness_s` as people read it, or what the run is when it has none
    ("backfill", "triggered")."""
    because = not_late_because(execution)
    if because is not None:
        return because
    late_s = lateness_s(execution)
    return "-" if late_s is None else readable(late_s)


FILTERS = {
    "wall": wall,
    "when": _when,
    "words": words,
    "transition": transition,
    "colour": colour,
    "ordinal": ordinal,
    "lateness": lateness,
    "took": lambda e: _seconds(e.started_at, e.finished_at),
    "paused": lambda job: paused(job, datetime.now(UTC)),
    "duration": lambda delta: readable(delta.total_seconds()),
}


def paused(job: Job, now: datetime) -> str:
    """A paused job's line: "paused by alice 2 h ago: vendor outage, INC-123" ('' while it
    is not paused), how long ago by the page's clock."""
    return job.pause.said(now) if job.pause is not None else ""


# -- jobs -----------------------------------------------------------------------------------


async def jobs(client: AsyncClient, request: web.Request) -> dict[str, Any]:
    """The tenant's jobs; with ?attention=1 only those whose runs need attention."""
    if request.query.get("attention") == "1":
        page = await client.list_jobs(page_size=PAGE, with_runs=True, needing_attention=True)
        return {"jobs": page.items, "next_page": "", "attention_only": True}
    page = await client.list_jobs(
        page_size=PAGE, page_token=request.query.get("page", ""), with_runs=True
    )
    return {"jobs": page.items, "next_page": page.next_page_token, "attention_only": False}


AROUND_RUNS = 4
"""Runs shown on each side of the next DST change."""
TRANSITION_HORIZON = timedelta(days=400)


def next_change(zone: str, after: datetime) -> Transition | None:
    """The next change of `zone`'s UTC offset after `after` (within 400 days), from
    zoneinfo; None for a zone without one (UTC, Asia/Tokyo) or an unknown zone."""
    try:
        tz = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        return None
    return next_transition(tz, after, TRANSITION_HORIZON)


async def job(client: AsyncClient, request: web.Request) -> dict[str, Any]:
    found = await client.get_job(request.match_info["ref"], with_runs=True)
    preview: list[Any] = []
    around = None
    change = None
    if found.schedule.recurring:
        preview = await client.preview_schedule(found.schedule, count=12, job_id=found.id)
        change = next_change(found.schedule.time_zone, datetime.now(UTC))
        if change is not None:
            # The runs next to the change, walked outwards from it: the minutes around
            # it for a minutely job, the days around it for a daily one.
            around = await client.preview_around(
                found.schedule, change.at, before=AROUND_RUNS, after=AROUND_RUNS,
                job_id=found.id,
            )  # fmt: skip
    # The past, newest first: runs whose instant has come (the future is "Next runs"), a
    # keyset page at a time; "older" carries the API's token to the next page back.
    history = await client.list_executions(
        job_id=found.id, scheduled_before=datetime.now(UTC), page_size=HISTORY,
        page_token=request.query.get("older", ""),
    )  # fmt: skip
    return {"job": found, "preview": preview, "around": around, "change": change,
            "history": history.items, "older": history.next_page_token,
            "paged": bool(request.query.get("older"))}  # fmt: skip


async def act(client: AsyncClient, request: web.Request) -> dict[str, Any]:
    ref, action = request.match_info["ref"], request.match_info["action"]
    form = await request.post()
    if action == "pause":
        # The note is the API's to check (one line, 500 characters): a refusal names it.
        done: Job | Execution = await client.pause_job(ref, note=str(form.get("note", "")))
        target = f"/jobs/{done.id}"
    elif action == "resume":
        done = await client.resume_job(ref)
        target = f"/jobs/{done.id}"
    else:
        run = await client.trigger_job(ref)
        target = f"/runs/{run.id}"
    back = str(form.get("back", ""))
    if action != "trigger" and back.startswith("/jobs") and not back.startswith("/jobs/"):
        target = back  # the list, at the page the form was on
    return {"redirect": target}


# -- runs -----------------------------------------------------------------------------------


def _statuses(value: str) -> list[ExecutionStatus]:
    try:
        return [ExecutionStatus(part) for part in value.split(",") if part]
    except ValueError:
        raise InvalidArgument("status", f"{value!r} is not a run status") from None


def _instant(value: str, field: str) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidArgument(field, f"{value!r} is not a date and time") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


async def runs(client: AsyncClient, request: web.Request) -> dict[str, Any]:
    query = request.query
    job_ref = query.get("job", "")
    status = query.get("status", "")
    after, before = (
        _instant(query.get("after", ""), "after"),
        _instant(query.get("before", ""), "before"),
    )
    page = await client.list_executions(
        job_id=job_ref or None,
        statuses=_statuses(status),
        scheduled_after=after,
        scheduled_before=before or datetime.now(UTC) + timedelta(seconds=1),
        page_size=PAGE,
        page_token=query.get("page", ""),
    )
    names = await _names(client, {e.job_id for e in page.items})
    context = {
        "runs": page.items, "names": names, "next_page": page.next_page_token,
        "filters": {"job": job_ref, "status": status, "after": query.get("after", ""),
                    "before": query.get("before", "")},
        "statuses": [s.value for s in ExecutionStatus],
        "live": not query.get("page"),
    }  # fmt: skip
    if query.get("fragment") == "1":
        context["template"] = "runs_table.html"
    return context


async def _jobs(client: AsyncClient, job_ids: set[Any], listing: int = 200) -> dict[Any, Job]:
    """The jobs of a page's runs: one listing covers the tenant's first `listing` jobs, the
    rest are asked one by one (at most a page's 50; one gone meanwhile is left out)."""
    if not job_ids:
        return {}
    listed = await client.list_jobs(page_size=listing)
    found = {j.id: j for j in listed.items if j.id in job_ids}
    for job_id in list(job_ids - found.keys())[:PAGE]:
        with contextlib.suppress(WheelError):
            found[job_id] = await client.get_job(job_id)
    return found


async def _names(client: AsyncClient, job_ids: set[Any]) -> dict[Any, str]:
    jobs = await _jobs(client, job_ids)
    return {job_id: jobs[job_id].name if job_id in jobs else str(job_id) for job_id in job_ids}


_VERDICTS = {
    Verdict.IN_FLIGHT: "In flight",
    Verdict.SKIPPED_MISFIRE: "Skipped (misfire)",
    Verdict.SKIPPED_OVERLAP: "Skipped (overlap)",
    Verdict.BEHIND_RUNNING: "Behind a running run",
    Verdict.AT_TENANT_CAP: "At the tenant's cap",
    Verdict.NOT_AN_OCCURRENCE: "Not a run of its schedule",
    Verdict.OUTSIDE_BOUNDS: "Outside the schedule's bounds",
    Verdict.NOT_MATERIALISED: "Not made yet",
    Verdict.SKIPPED_CALENDAR: "Skipped (business calendar)",
}


def _of_try(tries: int) -> str:
    return f" ({ordinal(tries)} try)" if tries > 1 else ""


def verdict_words(explanation: Explanation) -> str:
    """A verdict as a person says it ("In flight", "Failed after 3 attempts"), never its
    enum name; attempts count those of the run's current try."""
    execution = explanation.execution
    if explanation.verdict is Verdict.DEAD and execution is not None:
        many = "attempt" if execution.try_attempt == 1 else "attempts"
        return f"Failed after {execution.try_attempt} {many}{_of_try(execution.tries)}"
    known = _VERDICTS.get(explanation.verdict)
    return known or explanation.verdict.value.replace("_", " ").capitalize()


def _attempt_rows(execution: Execution | None) -> list[tuple[Attempt, int, int]]:
    """Each attempt with its try and its number within that try."""
    if execution is None:
        return []
    starts = [0] + [r.after_attempt for r in execution.retries]
    rows = []
    for attempt in execution.attempts:
        tries = sum(1 for start in starts if attempt.number > start) or 1
        rows.append((attempt, tries, attempt.number - starts[tries - 1]))
    return rows


async def run(client: AsyncClient, request: web.Request) -> dict[str, Any]:
    # One read: the verdict, the path and the attempts all come from the explanation,
    # which the node builds from one snapshot of the run (a second call, for the attempts,
    # could see a later state: "in flight" beside a succeeded attempt).
    explanation = await client.explain_execution(request.match_info["id"])
    execution = explanation.execution
    found = await client.get_job(explanation.job_id)
    return {
        "explanation": explanation, "execution": execution,
        "attempts": _attempt_rows(execution), "verdict": verdict_words(explanation),
        "of_try": _of_try(execution.tries) if execution else "",
        "job": found, "retryable": execution is not None and execution.status in RETRYABLE,
    }  # fmt: skip


async def retry(client: AsyncClient, request: web.Request) -> dict[str, Any]:
    retried = await client.retry_execution(request.match_info["id"])
    return {"redirect": f"/runs/{retried.id}"}


async def queue(client: AsyncClient, request: web.Request) -> dict[str, Any]:
    page = await client.list_executions(
        statuses=list(RETRYABLE), page_size=PAGE, page_token=request.query.get("page", "")
    )
    names = await _names(client, {e.job_id for e in page.items})
    counted = {k: int(v) for k in ("retried", "failed")
               if (v := request.query.get(k, "")).isdigit()}  # fmt: skip
    return {"runs": page.items, "names": names, "next_page": page.next_page_token,
            "retried": counted.get("retried"), "failed": counted.get("failed")}  # fmt: skip


async def retry_many(client: AsyncClient, request: web.Request) -> dict[str, Any]:
    form = await request.post()
    chosen = [str(v) for v in form.getall("id", [])][:PAGE]
    failed = 0
    for execution_id in chosen:
        try:
            await client.retry_execution(execution_id)
        except WheelError:  # retried meanwhile, or gone: the others still go
            failed += 1
    return {"redirect": f"/queue?retried={len(chosen) - failed}&failed={failed}"}


# -- the cluster ----------------------------------------------------------------------------


async def cluster(client: AsyncClient, request: web.Request) -> dict[str, Any]:
    roster = await client.roster()
    partitions = await client.partitions()
    executors = await client.executors()
    now = datetime.now(UTC)
    upcoming = await client.list_executions(
        statuses=[ExecutionStatus.PENDING], scheduled_after=now,
        scheduled_before=now + timedelta(minutes=UPCOMING_MINUTES), page_size=1000,
        oldest_first=True,
    )  # fmt: skip
    jobs = await _jobs(client, {e.job_id for e in upcoming.items}, listing=1000)
    pools = {job_id: job.policies.pool for job_id, job in jobs.items()}
    load: Counter[tuple[str, int]] = Counter(
        (pools.get(e.job_id, "other"), int((e.scheduled_for - now).total_seconds() // 60))
        for e in upcoming.items
    )
    names = sorted({pool for pool, _ in load})
    tallest = max(load.values(), default=0)
    chart = [
        {"pool": pool, "minutes": [load.get((pool, m), 0) for m in range(UPCOMING_MINUTES)]}
        for pool in names
    ]
    live = {node.node_id for node in roster.nodes}
    departed = [
        {"node": node, "at": _when(node.gone_at), "ago": _ago(now, node.gone_at),
         "takers": node.takers(), "back": node.node_id in live}
        for node in roster.departed
    ]  # fmt: skip
    return {
        "nodes": roster.nodes, "departed": departed, "lost": roster.lost,
        "expected": roster.expected, "partitions": partitions, "executors": executors,
        "chart": chart, "tallest": tallest, "minutes": UPCOMING_MINUTES,
        "capped": bool(upcoming.next_page_token),
    }  # fmt: skip


def _ago(now: datetime, then: datetime | None) -> str:
    return "" if then is None else f"{readable(max(0.0, (now - then).total_seconds()))} ago"


CLOSED_SHOWN = 5
"""Upcoming closed days the Calendars page shows for each calendar."""
CLOSED_HORIZON = timedelta(days=90)


async def calendars(client: AsyncClient, request: web.Request) -> dict[str, Any]:
    """The tenant's calendars, each with what it closes and its next closed days (one call
    each: a tenant has a handful of calendars, and the page lists 50 at most)."""
    page = await client.list_calendars(page_size=PAGE, page_token=request.query.get("page", ""))
    today = datetime.now(UTC).date()
    listed = []
    for found in page.items:
        closed = await client.closed_days(str(found.id), first=today, last=today + CLOSED_HORIZON)
        listed.append(
            {
                "calendar": found,
                "weekdays": ", ".join(name.capitalize() for name in found.weekdays),
                "closed": closed[:CLOSED_SHOWN],
            }
        )
    return {
        "calendars": listed,
        "next_page": page.next_page_token,
        "horizon_days": CLOSED_HORIZON.days,
    }

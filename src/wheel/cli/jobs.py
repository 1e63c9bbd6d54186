"""`wheel jobs ...` and `wheel executions ...`: the public API from the command line.

Every command is one use of the SDK's `wheel.Client`. The connection options
are shared by all of them (`--endpoint`, `--token`, `--tls`, `--tls-ca`,
`--output table|json`, `--config FILE`), from flags, then `WHEEL_*`
variables, then the TOML file, then defaults:

    export WHEEL_ENDPOINTS=node-a:7070,node-b:7070 WHEEL_TOKEN=whl_...
    wheel jobs create nightly --task reports.nightly --cron "30 1 * * *" --tz Europe/London
    wheel jobs update nightly --version 1 --max-attempts 5
    wheel executions list --job nightly --status dead
    wheel executions explain --job nightly --at 2027-03-28T01:30:00+00:00

A job is named by its name (unique among the tenant's jobs) or its id.
A value an option refuses is a usage error naming the option (exit 2),
whether the CLI, the SDK or the server found it; any other wheel error is
`wheel: error: <message>` (exit 1). The token is never printed. Job options:
`wheel.cli.jobs_options`; the connection: `wheel.cli.session`; tables: `wheel.cli.show`,
imported when a command prints (it brings rich and the SDK: `wheel jobs --help` needs neither).
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import IO, TYPE_CHECKING, Any

import click

from wheel.cli.calendars_file import read_calendars
from wheel.cli.jobs_file import read_jobs, read_toml
from wheel.cli.jobs_options import (
    HTTP,
    PAYLOAD,
    POLICIES,
    SCHEDULE,
    http_task,
    payload,
    policies,
    schedule,
)
from wheel.cli.options import INSTANT, apply, choice
from wheel.cli.session import Session, connected
from wheel.model.executions import ExecutionStatus
from wheel.model.jobs import CalendarPolicy, Policies

if TYPE_CHECKING:
    from rich.console import Console

    from wheel.client import Client, types

_NO_SCHEDULE = "give a schedule: --now, --at INSTANT, --cron EXPRESSION or --every DURATION"

# -- jobs ----------------------------------------------------------------------------------


@click.group()
def jobs() -> None:
    """Create, inspect and change jobs."""


@jobs.command("create")
@click.argument("name", required=False)
@click.option("--task", "task_type", help="The task type an executor runs.")
@apply(HTTP)
@apply(SCHEDULE)
@apply(PAYLOAD)
@apply(POLICIES)
@click.option(
    "--preview",
    type=click.IntRange(1, 100),
    default=5,
    show_default=True,
    help="How many next runs to show.",
)
@click.option("--job-id", type=click.UUID, help="The job's id (repeating the create makes one).")
@click.option(
    "--file",
    "jobs_file",
    type=click.File("r", encoding="utf-8"),
    help="Create the jobs of a JSON Lines file instead ('-': stdin), one object a line with "
    'the option names as keys: {"name": "n", "task": "t", "cron": "0 6 * * *", "tz": "UTC"}.',
)
@connected
def create_job(
    session: Session,
    name: str | None,
    task_type: str | None,
    preview: int,
    job_id: uuid.UUID | None,
    jobs_file: IO[str] | None,
    **options: Any,
) -> None:
    """Register job NAME running --task (or POSTed to --http URL) on a schedule: --now,
    --at, --cron or --every.

    Prints the job and its next runs, with a note where DST changes a run.
    With --file, registers every job of the file at once (batches of 1,000,
    each all or none; repeating the command with ids in the file makes
    nothing twice).
    """
    from wheel.cli import show

    if jobs_file is not None:
        given = [n for n, v in (("NAME", name), ("--task", task_type), ("--job-id", job_id))
                 if v is not None]  # fmt: skip
        given += [
            f"--{k.replace('_', '-')}" for k, v in options.items() if v not in (None, False, ())
        ]  # (): a repeatable option (--skip-calendar) not given
        if given:
            raise click.UsageError(f"--file: the jobs come from the file, not {', '.join(given)}")
        _create_from_file(session, jobs_file)
        return
    target = http_task(options)
    if name is None or (task_type is None and target is None):
        raise click.UsageError("give NAME and --task or --http (or --file)")
    wanted = schedule(options)
    if wanted is None:
        raise click.UsageError(_NO_SCHEDULE)
    chosen = policies(options, Policies())
    data = payload(options) or b""
    created = session.call(
        lambda client: client.create_job(
            name,
            task_type or "",
            wanted,
            payload=data,
            policies=chosen,
            preview=preview,
            job_id=job_id,
            http=target,
        )
    )

    def human(console: Console) -> None:
        show.job(console, "job created", created.job)
        show.runs(console, created.next_runs)

    for warning in created.warnings:  # stderr: `$(wheel jobs create ... --output id)` works
        click.echo(f"wheel: warning: {warning}", err=True)
    session.show(created, human)


def _create_from_file(session: Session, jobs_file: IO[str]) -> None:
    from wheel.errors import InvalidArgument

    new_jobs, lines = read_jobs(jobs_file, click.get_current_context())
    try:
        created = session.call(lambda client: client.create_jobs(new_jobs))
    except InvalidArgument as exc:
        item = exc.in_batch()
        if item is None:
            raise
        raise click.BadParameter(f"line {lines[item[0]]}: {item[1]}: {exc.reason}",
                                 param_hint="'--file'") from None  # fmt: skip
    for warning in sorted({w for job in created for w in job.warnings}):
        click.echo(f"wheel: warning: {warning}", err=True)

    def human(console: Console) -> None:
        console.print(f"{len(created)} jobs created (or there already, from an earlier try)")

    session.show(created, human)


@jobs.command("list")
@click.option("--limit", type=click.IntRange(0, 1000), default=0, help="Page size (0: 100).")
@click.option("--page-token", default="", help="Continue where a listing said 'more'.")
@click.option(
    "--attention", is_flag=True,
    help="Only the jobs whose runs need a person: unserved, overdue or failing.",
)  # fmt: skip
@connected
def list_jobs(session: Session, limit: int, page_token: str, attention: bool) -> None:
    """The tenant's jobs, a page at a time."""
    from wheel.cli import show

    page = session.call(
        lambda client: client.list_jobs(
            page_size=limit, page_token=page_token, with_runs=True, needing_attention=attention
        )
    )
    session.show(page, lambda console: show.jobs(console, page, session.wide))


def _job_command(name: str, title: str, call: Callable[[Client, str], types.Job]) -> None:
    @jobs.command(name, help=call.__doc__)
    @click.argument("job_id", metavar="JOB")
    @connected
    def command(session: Session, job_id: str) -> None:
        from wheel.cli import show

        job = session.call(lambda client: call(client, job_id))
        session.show(job, lambda console: show.job(console, title, job))


def _get(client: Client, job_id: str) -> types.Job:
    """Show JOB (its name or id)."""
    return client.get_job(job_id, with_runs=True)


def _resume(client: Client, job_id: str) -> types.Job:
    """Fire JOB's runs again (its misfire policy decides about missed ones)."""
    return client.resume_job(job_id)


def _delete(client: Client, job_id: str) -> types.Job:
    """Delete JOB: no more runs; its pending runs are cancelled."""
    return client.delete_job(job_id)


_job_command("get", "job", _get)
_job_command("resume", "job resumed", _resume)
_job_command("delete", "job deleted", _delete)


@jobs.command("pause")
@click.argument("job_id", metavar="JOB")
@click.option(
    "--note", default="",
    help="Why, for whoever looks next (one line, at most 500 characters): lists, show, "
    "explain and the dashboard say it with who paused and when. Pausing a paused job "
    "with another note replaces it.",
)  # fmt: skip
@connected
def pause(session: Session, job_id: str, note: str) -> None:
    """Stop firing JOB's runs until it is resumed."""
    from wheel.cli import show

    job = session.call(lambda client: client.pause_job(job_id, note=note))
    session.show(job, lambda console: show.job(console, "job paused", job))


@jobs.command("apply")
@click.option(
    "-f",
    "--file",
    "jobs_file",
    type=click.File("rb"),
    required=True,
    help="A TOML file of [jobs.NAME] tables, their keys the create command's options ('-': stdin).",
)
@click.option("--prune", is_flag=True, help="Also delete the jobs the file does not name.")
@click.option("--dry-run", is_flag=True, help="Show the difference; change nothing.")
@connected
def apply_jobs(session: Session, jobs_file: IO[bytes], prune: bool, dry_run: bool) -> None:
    """Make the tenant's jobs match a file kept in git: show the difference, then apply it.

    \b
        [jobs.nightly-report]
        task = "reports.nightly"
        cron = "30 1 * * *"
        tz = "Europe/London"
        max_attempts = 5

    Jobs are matched by name: each is created, updated (with the version read,
    so a concurrent change is refused, not overwritten), replaced (a one-off's
    instant changed) or left unchanged; --prune deletes the others. Applying
    the same file again changes nothing. [calendars.NAME] tables (holidays,
    weekdays, dates, description) are applied first; --prune leaves calendars.
    """
    from wheel.cli import show

    raw = jobs_file.read()
    wanted = read_toml(io.BytesIO(raw), create_job, click.get_current_context())
    calendars = read_calendars(raw)
    planned = session.call(
        lambda client: client.apply_jobs(wanted, prune=prune, dry_run=dry_run, calendars=calendars)
    )

    def human(console: Console) -> None:
        show.apply_plan(console, planned)

    session.show(planned, human)


@jobs.command("update")
@click.argument("job_id", metavar="JOB")
@click.option(
    "--version",
    "expected_version",
    type=click.IntRange(min=1),
    required=True,
    help="The version you edited (wheel jobs get); refused if it moved on.",
)
@click.option("--name", help="A new name.")
@click.option("--task", "task_type", help="A new task type.")
@apply(HTTP)
@apply(SCHEDULE)
@apply(PAYLOAD)
@apply(POLICIES)
@connected
def update_job(
    session: Session,
    job_id: str,
    expected_version: int,
    name: str | None,
    task_type: str | None,
    **options: Any,
) -> None:
    """Change JOB's definition: only what the options name changes.

    Cron options change the current schedule (--tz alone keeps the
    expression); each policy option changes that policy alone. The update is
    refused if the job is no longer at --version.
    """
    from wheel.cli import show

    data = payload(options)

    def update(client: Client) -> types.Job:
        current = client.get_job(job_id)
        return client.update_job(
            job_id,
            expected_version=expected_version,
            base=current,
            name=name,
            task_type=task_type,
            payload=data,
            schedule=schedule(options, current.schedule),
            policies=policies(options, current.policies),
            http=http_task(options, current.http),
        )

    job = session.call(update)
    session.show(job, lambda console: show.job(console, "job updated", job))


@jobs.command("preview")
@apply(SCHEDULE)
@click.option(
    "--count", type=click.IntRange(1, 100), default=5, show_default=True, help="How many next runs."
)
@click.option("--after", type=INSTANT, help="Runs after this instant (default now).")
@click.option(
    "--around", metavar="INSTANT|dst",
    help="The runs on both sides of an instant: --before of them before it, --count from it. "
    "'dst': the schedule's zone's next change of offset (within 400 days).",
)  # fmt: skip
@click.option(
    "--before", type=click.IntRange(1, 100), default=5, show_default=True,
    help="With --around: how many runs before it.",
)  # fmt: skip
@click.option("--job", "job_id", help="Resolve H fields and smear as for this job.")
@click.option(
    "--skip-calendar", "calendars", multiple=True, metavar="NAME",
    help="Preview under this business calendar (repeatable); with --job and none: the job's.",
)  # fmt: skip
@click.option(
    "--calendar-policy", type=choice(CalendarPolicy),
    help="With --skip-calendar: skip (default), next_business_day or previous_business_day.",
)  # fmt: skip
@connected
def preview_schedule(
    session: Session,
    count: int,
    after: datetime | None,
    around: str | None,
    before: int,
    job_id: str | None,
    calendars: tuple[str, ...],
    calendar_policy: str | None,
    **options: Any,
) -> None:
    """A schedule's next runs, with DST notes and what business calendars skip or move;
    nothing is saved."""
    from wheel.cli import show

    if calendar_policy is not None and not calendars:
        raise click.UsageError("--calendar-policy goes with --skip-calendar")
    policy = CalendarPolicy(calendar_policy.lower()) if calendar_policy else None

    wanted = schedule(options)
    if wanted is None:
        raise click.UsageError(_NO_SCHEDULE)
    if around is None:
        runs = session.call(
            lambda client: client.preview_schedule(
                wanted,
                count=count,
                after=after,
                job_id=job_id,
                calendars=calendars,
                calendar_policy=policy,
            )
        )
        session.show(runs, lambda console: show.runs(console, runs))
        return
    if after is not None:
        raise click.UsageError("--around and --after both say where the runs start: give one")
    at = _around(around, wanted.time_zone)
    both = session.call(
        lambda client: client.preview_around(
            wanted,
            at,
            before=before,
            after=count,
            job_id=job_id,
            calendars=calendars,
            calendar_policy=policy,
        )
    )
    session.show(both, lambda console: show.runs_around(console, at, both))


def _around(value: str, time_zone: str) -> datetime:
    """--around's instant: one written out, or the zone's next change of offset ('dst')."""
    if value.strip().lower() != "dst":
        try:
            return INSTANT.convert(value, None, None)
        except click.BadParameter as exc:
            exc.param_hint = "--around"
            raise
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    from wheel.schedule.zones import next_transition

    try:
        zone = ZoneInfo(time_zone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise click.BadParameter(f"{time_zone!r} is not a time zone", param_hint="--tz") from exc
    change = next_transition(zone, datetime.now(UTC), timedelta(days=400))
    if change is None:
        raise click.BadParameter(
            f"{time_zone} does not change its offset within 400 days", param_hint="--around"
        )
    return change.at


@jobs.command("trigger")
@click.argument("job_id", metavar="JOB")
@click.option("--at", type=INSTANT, help="The instant the run is for (default now).")
@connected
def trigger_job(session: Session, job_id: str, at: datetime | None) -> None:
    """Run JOB once more, now or for --at, outside its schedule."""
    from wheel.cli import show

    execution = session.call(lambda client: client.trigger_job(job_id, at=at))
    session.show(execution, lambda console: show.execution(console, "triggered", execution))


@jobs.command("backfill")
@click.argument("job_id", metavar="JOB")
@click.option("--from", "start", type=INSTANT, required=True, help="First instant (included).")
@click.option("--to", "end", type=INSTANT, required=True, help="Last instant (excluded; past).")
@connected
def backfill_job(session: Session, job_id: str, start: datetime, end: datetime) -> None:
    """Make the runs JOB's recurring schedule had in [--from, --to); existing ones are kept."""
    from wheel.cli import show

    result = session.call(lambda client: client.backfill_job(job_id, start, end))
    session.show(result, lambda console: show.backfill(console, result))


# -- executions ----------------------------------------------------------------------------


@click.group()
def executions() -> None:
    """Inspect, explain, retry and cancel executions."""


@executions.command("list")
@click.option("--job", "job_id", help="Only this job's executions (its name or id).")
@click.option(
    "--status",
    "statuses",
    type=choice(ExecutionStatus),
    multiple=True,
    help="Only these statuses (repeat for several).",
)
@click.option("--after", type=INSTANT, help="Scheduled after this instant.")
@click.option("--before", type=INSTANT, help="Scheduled before this instant.")
@click.option(
    "--upcoming", is_flag=True, help="What is next: runs scheduled from now on, soonest first."
)
@click.option("--limit", type=click.IntRange(0, 1000), default=0, help="Page size (0: 100).")
@click.option("--page-token", default="", help="Continue where a listing said 'more'.")
@connected
def list_executions(
    session: Session,
    job_id: str | None,
    statuses: tuple[str, ...],
    after: datetime | None,
    before: datetime | None,
    upcoming: bool,
    limit: int,
    page_token: str,
) -> None:
    """Executions, newest first: what ran and runs now, with job, duration and lateness.

    Without --after or --before, runs scheduled up to now (--upcoming: from now
    on, soonest first). A page at a time; --page-token continues.
    """
    from wheel.cli import show

    wanted = [status.lower() for status in statuses]
    now = datetime.now(UTC)
    if upcoming:
        after = max(after, now) if after is not None else now
    elif after is None and before is None:
        before = now + timedelta(seconds=1)  # what ran and runs now, not the future's backlog

    def fetch(client: Client) -> tuple[types.Page[types.Execution], dict[str, str]]:
        page = client.list_executions(
            job_id=job_id,
            statuses=wanted,
            scheduled_after=after,
            scheduled_before=before,
            page_size=limit,
            page_token=page_token,
            oldest_first=upcoming,
        )
        return page, _job_names(client, {str(item.job_id) for item in page.items})

    page, names = session.call(fetch)
    session.show(page, lambda console: show.executions(console, page, names, now, session.wide))


def _job_names(client: Client, job_ids: set[str]) -> dict[str, str]:
    """The names of the jobs a page mentions (one read each; a gone job keeps its id)."""
    from wheel.errors import NotFound

    names = {}
    for job_id in job_ids:
        try:
            names[job_id] = client.get_job(job_id).name
        except NotFound:
            continue
    return names


@executions.command("get")
@click.argument("execution_id")
@connected
def get_execution(session: Session, execution_id: str) -> None:
    """Show EXECUTION_ID with every attempt."""
    from wheel.cli import show

    execution = session.call(lambda client: client.get_execution(execution_id))
    session.show(execution, lambda console: show.execution(console, "execution", execution))


@executions.command("explain")
@click.argument("execution_id", required=False)
@click.option("--job", "job_id", help="With --at: this job's occurrence (job name or id).")
@click.option("--at", type=INSTANT, help="With --job: the occurrence's scheduled instant.")
@connected
def explain_execution(
    session: Session, execution_id: str | None, job_id: str | None, at: datetime | None
) -> None:
    """Why EXECUTION_ID (or --job's occurrence --at an instant) ran, waits, or did not run."""
    from wheel.cli import show

    if execution_id is not None:
        if job_id is not None or at is not None:
            raise click.UsageError("give EXECUTION_ID, or --job and --at, not both")
        explanation = session.call(lambda client: client.explain_execution(execution_id))
    elif job_id is not None and at is not None:
        explanation = session.call(lambda client: client.explain_occurrence(job_id, at))
    else:
        raise click.UsageError("give EXECUTION_ID, or --job and --at")
    session.show(explanation, lambda console: show.explanation(console, explanation))


@executions.command("retry")
@click.argument("execution_id")
@connected
def retry_execution(session: Session, execution_id: str) -> None:
    """Send a dead or needs_review EXECUTION_ID back to pending: a new try, the job's attempts."""
    from wheel.cli import show

    execution = session.call(lambda client: client.retry_execution(execution_id))
    session.show(execution, lambda console: show.execution(console, "retrying", execution))


@executions.command("cancel")
@click.argument("execution_id")
@connected
def cancel_execution(session: Session, execution_id: str) -> None:
    """Make a pending EXECUTION_ID never run."""
    from wheel.cli import show

    execution = session.call(lambda client: client.cancel_execution(execution_id))
    session.show(execution, lambda console: show.execution(console, "cancelled", execution))

"""Jobs from files: `wheel jobs create --file jobs.jsonl` (JSON Lines, one object a line)
and `wheel jobs apply -f jobs.toml` (TOML, one `[jobs.NAME]` table a job).

A line has the keys `wheel jobs create` has as options, without the dashes,
and each value is read by that option's own type, so a file and the flags
speak one language:

    {"name": "remind-42", "task": "reminders.send", "at": "now+1h", "payload": "42"}
    {"name": "nightly", "task": "reports.nightly", "cron": "30 1 * * *", "tz": "Europe/London",
     "max_attempts": 5, "job_id": "0b8c4c1e-8a4e-4a57-9a0e-3f1f3c1e2d10"}
    {"name": "sync", "task": "crm.sync", "every": "90m", "anchor": "2026-01-05T09:00:00Z"}

(one object per line). A line that is not such an object is a usage error
naming the line and the key, and nothing is sent.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable
from datetime import date, datetime, time
from typing import IO, TYPE_CHECKING, Any

import click

from wheel.cli.jobs_options import http_task, payload, policies, schedule
from wheel.model.jobs import Policies

if TYPE_CHECKING:
    from wheel.client.types import NewJob

_ALIASES = {"task": "task_type", "now": "run_now", "http": "http_url"}
_NOT_IN_A_FILE = frozenset({
    "file", "preview", "payload_file", "endpoint", "token", "tls", "tls_ca", "output", "config",
})  # fmt: skip


def _params(command: click.Command) -> dict[str, click.Parameter]:
    return {p.name: p for p in command.params if p.name and p.name not in _NOT_IN_A_FILE}


def read_jobs(lines: Iterable[str], ctx: click.Context) -> tuple[list[NewJob], list[int]]:
    """The file's jobs, and the line number each came from."""
    params = _params(ctx.command)
    jobs, numbers = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            jobs.append(_job(_json_object(line), params, ctx))
        except click.UsageError as exc:
            raise click.BadParameter(f"line {number}: {exc.format_message()}",
                                     param_hint="'--file'") from None  # fmt: skip
        numbers.append(number)
    if not jobs:
        raise click.BadParameter("no jobs in the file", param_hint="'--file'")
    return jobs, numbers


def read_toml(
    file: IO[bytes], create: click.Command, ctx: click.Context, option: str = "--file"
) -> list[NewJob]:
    """The jobs of a TOML file: a table `[jobs.NAME]` a job, its keys `create`'s options.

    [jobs.nightly-report]
    task = "reports.nightly"
    cron = "30 1 * * *"
    tz = "Europe/London"
    max_attempts = 5
    """
    try:
        document = tomllib.load(file)
    except tomllib.TOMLDecodeError as exc:
        raise click.BadParameter(f"not TOML: {exc}", param_hint=f"'{option}'") from None
    unknown = sorted(set(document) - {"jobs", "calendars"})  # calendars: cli.calendars_file
    if unknown:
        raise click.BadParameter(
            f"{unknown[0]!r}: only [jobs.NAME] and [calendars.NAME] tables belong here",
            param_hint=f"'{option}'",
        )
    tables = document.get("jobs", {})
    if not isinstance(tables, dict):
        raise click.BadParameter("'jobs' must hold [jobs.NAME] tables", param_hint=f"'{option}'")
    params = _params(create)
    jobs = []
    for name, table in tables.items():
        try:
            if not isinstance(table, dict):
                raise click.UsageError("must be a table of the job's options")
            if "name" in table:
                raise click.UsageError("the table's key is the job's name: no 'name' key")
            jobs.append(_job({"name": name, **table}, params, ctx))
        except click.UsageError as exc:
            raise click.BadParameter(f"[jobs.{name}]: {exc.format_message()}",
                                     param_hint=f"'{option}'") from None  # fmt: skip
    return jobs


def _json_object(line: str) -> dict[str, Any]:
    try:
        document = json.loads(line)
    except json.JSONDecodeError as exc:
        raise click.UsageError(f"not JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(document, dict):
        raise click.UsageError("each line must be a JSON object")
    return document


def _job(
    document: dict[str, Any], params: dict[str, click.Parameter], ctx: click.Context
) -> NewJob:
    from wheel.client.types import NewJob

    options: dict[str, Any] = {}
    for key, value in document.items():
        name = _ALIASES.get(key, key.replace("-", "_"))
        param = params.get(name)
        if param is None:
            raise click.UsageError(f"{key!r} is not a job option")
        options[name] = _value(key, value, param, ctx)
    target = http_task(options)
    if not options.get("name"):
        raise click.UsageError("'name' is required")
    if not options.get("task_type") and target is None:
        raise click.UsageError("'task' (or 'http', a URL) is required")
    wanted = schedule(options)
    if wanted is None:
        raise click.UsageError("give a schedule: now, at, cron or every")
    return NewJob(
        name=options["name"],
        task_type=options.get("task_type") or "",
        schedule=wanted,
        payload=payload(options) or b"",
        policies=policies(options, Policies()),
        job_id=options.get("job_id"),
        http=target,
    )


def _value(key: str, value: object, param: click.Parameter, ctx: click.Context) -> object:
    if isinstance(param, click.Option) and param.is_flag:
        if not isinstance(value, bool):
            raise click.UsageError(f"{key}: must be true or false")
        return value
    if isinstance(param, click.Option) and param.multiple:
        # A repeatable option (calendars = ["uk-holidays", "weekends"]): each item as one flag.
        items = value if isinstance(value, list) else [value]
        return tuple(_one(key, item, param, ctx) for item in items)
    return _one(key, value, param, ctx)


def _one(key: str, value: object, param: click.Parameter, ctx: click.Context) -> object:
    if isinstance(value, datetime | date | time):  # TOML's own dates: read as the flag would
        value = value.isoformat()
    if value is None or isinstance(value, dict | list | bool):
        raise click.UsageError(f"{key}: must be a string or a number")
    try:
        return param.type.convert(value, param, ctx)
    except click.BadParameter as exc:
        raise click.UsageError(f"{key}: {exc.message}") from None

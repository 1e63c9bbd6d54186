"""`wheel jobs create --file jobs.jsonl`: jobs from a JSON Lines file, one object a line.

A line has the keys `wheel jobs create` has as options, without the dashes,
and each value is read by that option's own type, so a file and the flags
speak one language:

    {"name": "remind-42", "task": "reminders.send", "at": "now+1h", "payload": "42"}
    {"name": "nightly", "task": "reports.nightly", "cron": "30 1 * * *", "tz": "Europe/London",
     "max_attempts": 5, "job_id": "0b8c4c1e-8a4e-4a57-9a0e-3f1f3c1e2d10"}

(one object per line). A line that is not such an object is a usage error
naming the line and the key, and nothing is sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import click

from wheel.cli.jobs_options import payload, policies, schedule
from wheel.model.jobs import Policies

if TYPE_CHECKING:
    from wheel.client.types import NewJob

_ALIASES = {"task": "task_type", "now": "run_now"}
_NOT_IN_A_FILE = frozenset({
    "file", "preview", "payload_file", "endpoint", "token", "tls", "tls_ca", "output", "config",
})  # fmt: skip


def read_jobs(lines: Iterable[str], ctx: click.Context) -> tuple[list[NewJob], list[int]]:
    """The file's jobs, and the line number each came from."""
    params: dict[str, click.Parameter] = {
        p.name: p for p in ctx.command.params if p.name and p.name not in _NOT_IN_A_FILE
    }
    jobs, numbers = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            jobs.append(_job(line, params, ctx))
        except click.UsageError as exc:
            raise click.BadParameter(f"line {number}: {exc.format_message()}",
                                     param_hint="'--file'") from None  # fmt: skip
        numbers.append(number)
    if not jobs:
        raise click.BadParameter("no jobs in the file", param_hint="'--file'")
    return jobs, numbers


def _job(line: str, params: dict[str, click.Parameter], ctx: click.Context) -> NewJob:
    from wheel.client.types import NewJob

    try:
        document = json.loads(line)
    except json.JSONDecodeError as exc:
        raise click.UsageError(f"not JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(document, dict):
        raise click.UsageError("each line must be a JSON object")
    options: dict[str, Any] = {}
    for key, value in document.items():
        name = _ALIASES.get(key, key.replace("-", "_"))
        param = params.get(name)
        if param is None:
            raise click.UsageError(f"{key!r} is not a job option")
        options[name] = _value(key, value, param, ctx)
    for key, required in (("name", "name"), ("task", "task_type")):
        if not options.get(required):
            raise click.UsageError(f"{key!r} is required")
    wanted = schedule(options)
    if wanted is None:
        raise click.UsageError("give a schedule: now, at or cron")
    return NewJob(
        name=options["name"],
        task_type=options["task_type"],
        schedule=wanted,
        payload=payload(options) or b"",
        policies=policies(options, Policies()),
        job_id=options.get("job_id"),
    )


def _value(key: str, value: object, param: click.Parameter, ctx: click.Context) -> object:
    if isinstance(param, click.Option) and param.is_flag:
        if not isinstance(value, bool):
            raise click.UsageError(f"{key}: must be true or false")
        return value
    if value is None or isinstance(value, dict | list | bool):
        raise click.UsageError(f"{key}: must be a string or a number")
    try:
        return param.type.convert(value, param, ctx)
    except click.BadParameter as exc:
        raise click.UsageError(f"{key}: {exc.message}") from None

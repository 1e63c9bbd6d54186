"""How a `wheel` command reaches the cluster through the SDK, and shows what it got.

`connected` adds the connection options (`--endpoint`, `--token`, `--tls`,
`--tls-ca`, `--output`, `--wide`, `--config`) to a command and hands it a
`Session` first. They come from flags, then `WHEEL_*` variables, then the
`--config` TOML file, then defaults. A `FieldError` is reported as a usage
error naming the option its field came from (`_OPTIONS`); any other wheel
error as `wheel: error: <message>` (exit 1):

    @click.command()
    @connected
    def nodes(session: Session) -> None:
        roster = session.call(lambda client: client.roster())
        session.show(roster, lambda console: console.print(roster))

The SDK and rich are imported when a command runs: `wheel --help` needs no gRPC.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

from wheel.cli import configfile, options
from wheel.errors import FieldError, WheelError

if TYPE_CHECKING:
    from rich.console import Console

    from wheel.client import Client

T = TypeVar("T")


class CommandError(click.ClickException):
    """A wheel error, shown as `wheel: error: <message>` (exit 1), as `wheel.cli.main.main` does."""

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"wheel: error: {self.format_message()}", err=True, file=file)


@dataclasses.dataclass(frozen=True)
class Session:
    """How a command reaches the cluster and shows what it got."""

    endpoints: tuple[str, ...]
    token: str | None
    tls: bool
    tls_ca: Path | None
    output: str
    wide: bool = False
    """Tables keep every column on one line, ids included, whatever the terminal's width."""

    def call(self, work: Callable[[Client], T]) -> T:
        """`work` with a client that is closed afterwards."""
        from wheel.client import Client

        if not self.endpoints:
            raise click.UsageError("no endpoint: give --endpoint host:port (or WHEEL_ENDPOINTS)")
        with Client(
            self.endpoints, token=self.token, tls=self.tls, root_certificates=self.tls_ca
        ) as client:
            return work(client)

    def show(self, value: object, human: Callable[[Console], None]) -> None:
        """`value` as JSON (--output json), a JSON object a line (jsonl), its ids (--output
        id), or as `human` shows it."""
        if self.output == "json":
            from wheel.client.plain import to_plain

            click.echo(json.dumps(to_plain(value), indent=2))
        elif self.output == "jsonl":
            json_lines(value)
        elif self.output == "id":
            for ident in ids_of(value):
                click.echo(ident)
        else:
            from rich.console import Console

            # markup off: names, errors and payloads are data, never rich markup.
            human(Console(highlight=False, markup=False))


def json_lines(value: object) -> None:
    """A JSON object a line: a page's or a list's items, else the one result; a page's
    continuation goes to stderr, so that stdout holds only objects."""
    from wheel.client.plain import to_plain
    from wheel.client.types import Page

    items: object = value
    if isinstance(value, Page):
        items = value.items
        if value.next_page_token:
            click.echo(f"more: --page-token {value.next_page_token}", err=True)
    for item in items if isinstance(items, list | tuple) else [items]:
        click.echo(json.dumps(to_plain(item), separators=(",", ":")))


def ids_of(value: object) -> list[str]:
    """The ids `--output id` prints, one per line, for scripts: `$(wheel ... --output id)`."""
    from wheel.client.types import Backfill, CreatedJob, Explanation, NextRun, Page

    if isinstance(value, Page):
        return [i for item in value.items for i in ids_of(item)]
    if isinstance(value, CreatedJob):
        return [str(value.job.id)]
    if isinstance(value, Backfill):
        return [*value.created_ids, *value.existing_ids]
    if isinstance(value, Explanation):
        return [value.execution_id] if value.execution_id else []
    if isinstance(value, NextRun):
        return [value.instant.isoformat()]
    if isinstance(value, list | tuple):
        return [i for item in value for i in ids_of(item)]
    ident = getattr(value, "id", None)
    return [str(ident)] if ident is not None else []


_CONNECTION = (
    click.option(
        "--endpoint",
        multiple=True,
        envvar="WHEEL_ENDPOINTS",
        help="host:port of a scheduler node; repeat or comma-separate for several "
        "(env WHEEL_ENDPOINTS).",
    ),
    click.option(
        "--token",
        envvar="WHEEL_TOKEN",
        help="Bearer token from `wheel tokens create` (env WHEEL_TOKEN; prefer the variable).",
    ),
    click.option(
        "--tls/--no-tls", envvar="WHEEL_TLS", default=False, help="Speak TLS (env WHEEL_TLS)."
    ),
    click.option(
        "--tls-ca",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        envvar="WHEEL_TLS_CA",
        help="PEM CA bundle to verify nodes with; implies --tls (env WHEEL_TLS_CA).",
    ),
    click.option(
        "-o",
        "--output",
        type=click.Choice(["table", "json", "jsonl", "id"]),
        default="table",
        show_default=True,
        help="table for people; json for programs; jsonl: one JSON object a line (a list's "
        "items, `more: --page-token` on stderr); id: only the ids, one a line.",
    ),
    click.option(
        "--wide",
        is_flag=True,
        help="Tables unfolded, one line a row, ids included, past the terminal's width.",
    ),
    configfile.option(),
)

# The option a FieldError's field came from (the client's, the model's or the request's
# name), for every connected command: the job options are `wheel.cli.jobs_options`.
_OPTIONS = {
    "endpoints": "--endpoint",
    "token": "--token",
    "root_certificates": "--tls-ca",
    "task_type": "--task",
    "payload": "--payload",
    "schedule.at": "--at",
    "schedule.cron": "--cron",
    "schedule.cron.expression": "--cron",
    "schedule.time_zone": "--tz",
    "schedule.cron.time_zone": "--tz",
    "schedule.starts_at": "--start",
    "schedule.cron.start": "--start",
    "schedule.ends_at": "--end",
    "schedule.cron.end": "--end",
    "schedule.smear": "--smear",
    "schedule.cron.smear": "--smear",
    "schedule.dst_gap": "--dst-gap",
    "schedule.dst_fold": "--dst-fold",
    "policies.max_attempts": "--max-attempts",
    "policies.retry.max_attempts": "--max-attempts",
    "policies.backoff_base": "--backoff-base",
    "policies.retry.backoff_base": "--backoff-base",
    "policies.backoff_cap": "--backoff-cap",
    "policies.retry.backoff_cap": "--backoff-cap",
    "policies.misfire_grace": "--misfire-grace",
    "policies.misfire_replay_cap": "--misfire-replay-cap",
    "policies.timeout": "--timeout",
    "policies.priority": "--priority",
    "policies.pool": "--pool",
    "policies.notify_url": "--notify-url",
    "policies.deadline": "--deadline",
    "policies.notify_after_failures": "--notify-after-failures",
    "policies.concurrency_key": "--concurrency-key",
    "policies.concurrency_key_field": "--concurrency-key-field",
    "policies.concurrency_limit": "--concurrency-limit",
    "http.url": "--http",
    "count": "--count",
    "after": "--after",
    "start": "--from",
    "end": "--to",
    "scheduled_after": "--after",
    "scheduled_before": "--before",
    "schedule.every": "--every",
    "schedule.every.every": "--every",
    "schedule.anchor": "--anchor",
    "schedule.every.anchor": "--anchor",
    "schedule.interval_dst": "--interval-dst",
    "schedule.every.interval_dst": "--interval-dst",
    "schedule.every.time_zone": "--tz",
    "schedule.every.start": "--start",
    "schedule.every.end": "--end",
    "schedule.every.smear": "--smear",
    "schedule.every.dst.gap": "--dst-gap",
    "schedule.every.dst.fold": "--dst-fold",
    "policies.calendars": "--skip-calendar",
    "policies.calendar_policy": "--calendar-policy",
    "calendars": "--skip-calendar",
}


def connected(command: Callable[..., None]) -> Callable[..., None]:
    """Add the connection options; the command gets a `Session` first and raises wheel errors."""

    @functools.wraps(command)
    def run(
        *args: Any,
        endpoint: tuple[str, ...],
        token: str | None,
        tls: bool,
        tls_ca: Path | None,
        output: str,
        wide: bool,
        **kwargs: Any,
    ) -> None:
        endpoints = tuple(p.strip() for item in endpoint for p in item.split(",") if p.strip())
        session = Session(endpoints, token or None, tls, tls_ca, output, wide)
        try:
            command(session, *args, **kwargs)
        except FieldError as exc:
            option = _OPTIONS.get(exc.field.removeprefix("job."))
            if option is None:
                raise CommandError(str(exc)) from exc
            raise click.BadParameter(exc.reason, param_hint=f"'{option}'") from exc
        except WheelError as exc:
            raise CommandError(str(exc)) from exc

    return options.apply(_CONNECTION)(run)

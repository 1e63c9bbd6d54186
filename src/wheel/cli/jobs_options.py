"""The options of `wheel jobs` and `wheel executions`, defined once, and what they build.

Connection options (`connected`) come from flags, then `WHEEL_*` variables,
then the `--config` TOML file, then defaults. Schedule, payload and policy
options turn into the model's `Schedule` and `Policies`, which validate
themselves; a value refused by them, by the SDK or by the server is reported
as a usage error naming the option it came from (`_OPTIONS`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click
from rich.console import Console

from wheel.cli import configfile
from wheel.errors import FieldError, WheelError
from wheel.model.http_tasks import HttpTask
from wheel.model.jobs import (
    DstFold,
    DstGap,
    MisfirePolicy,
    OverlapPolicy,
    Policies,
    Schedule,
    ScheduleKind,
)

if TYPE_CHECKING:  # imported when a command runs: `wheel --help` needs no gRPC
    from wheel.client import Client

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

# -- values --------------------------------------------------------------------------------

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


class DurationType(click.ParamType[timedelta, Any]):
    """ "30s", "5m", "1h30m", "250ms", "2d"."""

    name = "duration"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> timedelta:
        if isinstance(value, timedelta):
            return value
        text = str(value).strip().lower()
        parts = _DURATION_PART.findall(text)
        if not text or "".join(number + unit for number, unit in parts) != text:
            self.fail(f"{value!r} is not a duration (e.g. 30s, 5m, 1h30m, 250ms)", param, ctx)
        return timedelta(seconds=sum(float(number) * _UNIT_S[unit] for number, unit in parts))


_RELATIVE = re.compile(r"(now)?\s*([+-])\s*(\S+)")


class InstantType(click.ParamType[datetime, Any]):
    """ISO 8601 with a UTC offset ("2027-03-28T01:30:00+01:00", "2027-03-28T00:30:00Z"), or
    relative to now: "now", "now-3d", "-3d", "+1h30m" (resolved when the command runs).

    Relative instants keep scripts and docs from rotting: a backfill "from three
    days ago" stays inside the retention window whenever it runs.
    """

    name = "instant"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> datetime:
        if isinstance(value, datetime):
            return value
        text = str(value).strip()
        if text.lower() == "now":
            return datetime.now(UTC)
        relative = _RELATIVE.fullmatch(text.lower())
        if relative is not None:
            _, sign, amount = relative.groups()
            offset = DURATION.convert(amount, param, ctx)
            return datetime.now(UTC) + (offset if sign == "+" else -offset)
        try:
            instant = datetime.fromisoformat(text)
        except ValueError:
            self.fail(
                f"{value!r} is not an ISO 8601 instant or a time from now (now, -3d, +1h)",
                param,
                ctx,
            )
        if instant.tzinfo is None:
            self.fail(f"{value!r} needs a UTC offset (e.g. +01:00 or Z)", param, ctx)
        return instant


DURATION = DurationType()
INSTANT = InstantType()


def choice(cls: type[StrEnum]) -> click.Choice[str]:
    """The values of a StrEnum, as a case-insensitive choice."""
    return click.Choice([member.value for member in cls], case_sensitive=False)


def apply(options: Sequence[Callable[[Any], Any]]) -> Callable[[F], F]:
    """Several option decorators as one, in the order given."""

    def decorate(function: F) -> F:
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


# -- connection, errors, output ------------------------------------------------------------


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

# The option a FieldError's field came from: the client's, the model's or the request's name.
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
    "http.url": "--http",
    "count": "--count",
    "after": "--after",
    "start": "--from",
    "end": "--to",
    "scheduled_after": "--after",
    "scheduled_before": "--before",
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

    return apply(_CONNECTION)(run)


# -- schedules -----------------------------------------------------------------------------

SCHEDULE = (
    click.option("--now", "run_now", is_flag=True, help="Run once, now."),
    click.option("--at", type=INSTANT, help="Run once at this instant (ISO 8601)."),
    click.option("--cron", help='Cron expression: "30 1 * * *", "@hourly", "H */4 * * *".'),
    click.option("--tz", help="IANA zone the cron expression is read in (default UTC)."),
    click.option("--smear", type=DURATION, help="Spread runs by a stable offset in this window."),
    click.option("--start", type=INSTANT, help="No cron runs before this instant."),
    click.option("--end", type=INSTANT, help="No cron runs after this instant (inclusive)."),
    click.option("--dst-gap", type=choice(DstGap), help="Wall times a spring-forward skips."),
    click.option("--dst-fold", type=choice(DstFold), help="Wall times a fall-back repeats."),
)

_CRON_ONLY = ("tz", "smear", "start", "end", "dst_gap", "dst_fold")


def _flags(names: Sequence[str]) -> str:
    return ", ".join("--" + name.replace("_", "-") for name in names)


def schedule(options: dict[str, Any], base: Schedule | None = None) -> Schedule | None:
    """The schedule the options describe; None when none was given.

    With `base` (an update's current schedule), cron options change that
    schedule: `--tz` alone keeps the expression, `--cron` alone the zone.
    """
    from wheel.client import at, cron, now

    kinds = [name for name in ("run_now", "at", "cron") if options.get(name)]
    modifiers = [name for name in _CRON_ONLY if options.get(name) is not None]
    if len(kinds) > 1:
        raise click.UsageError("give one of --now, --at and --cron")
    if kinds and kinds[0] != "cron" and modifiers:
        raise click.UsageError(f"{_flags(modifiers)}: only for a --cron schedule")
    if kinds == ["run_now"]:
        return now()
    if kinds == ["at"]:
        return at(options["at"])
    if not kinds and not modifiers:
        return None
    current = base if base is not None and base.kind is ScheduleKind.CRON else None
    expression = options.get("cron") or (current.cron if current else None)
    if not expression:
        raise click.UsageError(f"{_flags(modifiers)}: only for a --cron schedule (give --cron)")

    def pick(name: str, inherited: Any) -> Any:
        given = options.get(name)
        return given if given is not None else inherited

    return cron(
        expression,
        pick("tz", current.time_zone if current else "UTC"),
        smear=pick("smear", current.smear if current else None),
        start=pick("start", current.starts_at if current else None),
        end=pick("end", current.ends_at if current else None),
        dst_gap=pick("dst_gap", current.dst_gap if current else DstGap.DEFAULT).lower(),
        dst_fold=pick("dst_fold", current.dst_fold if current else DstFold.DEFAULT).lower(),
    )


# -- payloads and policies -----------------------------------------------------------------

PAYLOAD = (
    click.option("--payload", help="The payload handed to every run, as UTF-8 text."),
    click.option(
        "--payload-file", type=click.File("rb"), help="Read the payload from a file ('-': stdin)."
    ),
)


def payload(options: dict[str, Any]) -> bytes | None:
    """The payload given by --payload or --payload-file; None when neither was."""
    text, file = options.get("payload"), options.get("payload_file")
    if text is not None and file is not None:
        raise click.UsageError("give --payload or --payload-file, not both")
    if file is not None:
        data: bytes = file.read()
        return data
    return None if text is None else text.encode()


HTTP = (
    click.option(
        "--http",
        "http_url",
        help="An HTTP task: the nodes POST each run's payload to this URL (no --task needed).",
    ),
    click.option(
        "--http-retry-4xx",
        "http_retry_4xx",
        is_flag=True,
        default=None,
        help="Retry 4xx answers like 5xx ones (by default a 4xx fails the run at once).",
    ),
)


def http_task(options: dict[str, Any], current: HttpTask | None = None) -> HttpTask | None:
    """The HTTP target --http (and --http-retry-4xx) name, over `current`; None without one."""
    url, retry = options.get("http_url"), options.get("http_retry_4xx")
    if url is None and retry is None:
        return current
    if url is None and current is None:
        raise click.UsageError("--http-retry-4xx goes with --http URL")
    base = url if url is not None else current.url if current is not None else ""
    keep = current.retry_client_errors if current is not None else False
    return HttpTask(base, keep if retry is None else retry)


POLICIES = (
    click.option("--max-attempts", type=int, help="Attempts in all, the first included (3)."),
    click.option("--backoff-base", type=DURATION, help="First retry delay (1s); doubles."),
    click.option("--backoff-cap", type=DURATION, help="Longest retry delay (5m)."),
    click.option(
        "--idempotent/--not-idempotent",
        default=None,
        help="--not-idempotent: an attempt that failed after it may have started goes to "
        "needs_review instead of being retried.",
    ),
    click.option("--misfire", type=choice(MisfirePolicy), help="Runs that waited past the grace."),
    click.option("--misfire-grace", type=DURATION, help="Later than this is a misfire (60s)."),
    click.option("--misfire-replay-cap", type=int, help="Most missed runs fire_all replays."),
    click.option("--overlap", type=choice(OverlapPolicy), help="A run due while one runs."),
    click.option("--timeout", type=DURATION, help="Longest a run may take (1h)."),
    click.option("--priority", type=int, help="Higher runs first when capacity is short."),
    click.option("--pool", help="Executor pool (default)."),
    click.option(
        "--notify-url",
        help="POST this job's dead, needs_review and skipped runs here instead of to the "
        "tenant's webhook (`wheel notifications`).",
    ),
)

_POLICY_FIELDS = tuple(field.name for field in dataclasses.fields(Policies))
_POLICY_ENUMS: dict[str, type[StrEnum]] = {"misfire": MisfirePolicy, "overlap": OverlapPolicy}


def policies(options: dict[str, Any], base: Policies) -> Policies | None:
    """`base` with the policy options given changed; None when none was."""
    changes = {name: options[name] for name in _POLICY_FIELDS if options.get(name) is not None}
    if not changes:
        return None
    for name, cls in _POLICY_ENUMS.items():
        if name in changes:
            changes[name] = cls(changes[name].lower())
    return dataclasses.replace(base, **changes)

"""The options of `wheel jobs` and `wheel executions`, defined once, and what they build.

Schedule, payload, HTTP and policy options turn into the model's `Schedule`,
`HttpTask` and `Policies`, which validate themselves; a value refused by them,
by the SDK or by the server is reported as a usage error naming the option it
came from (`wheel.cli.session`). The connection options are `wheel.cli.session`'s;
the parameter types (`DURATION`, `INSTANT`, `choice`) are `wheel.cli.options`'.

    @apply(SCHEDULE)
    @connected
    def create_job(session: Session, **options: Any) -> None:
        wanted = schedule(options)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

import click

from wheel.cli.options import DURATION, INSTANT, choice
from wheel.model.http_tasks import HttpTask
from wheel.model.jobs import (
    CalendarPolicy,
    DstFold,
    DstGap,
    IntervalDst,
    MisfirePolicy,
    OverlapPolicy,
    Policies,
    Schedule,
    ScheduleKind,
)

# -- schedules -----------------------------------------------------------------------------

SCHEDULE = (
    click.option("--now", "run_now", is_flag=True, help="Run once, now."),
    click.option("--at", type=INSTANT, help="Run once at this instant (ISO 8601)."),
    click.option("--cron", help='Cron expression: "30 1 * * *", "@hourly", "H */4 * * *".'),
    click.option("--tz", help="IANA zone of a --cron or --every schedule (default UTC)."),
    click.option("--smear", type=DURATION, help="Spread runs by a stable offset in this window."),
    click.option("--start", type=INSTANT, help="No runs before this instant (--cron, --every)."),
    click.option("--end", type=INSTANT, help="No runs after this instant (inclusive)."),
    click.option("--dst-gap", type=choice(DstGap), help="Wall times a spring-forward skips."),
    click.option("--dst-fold", type=choice(DstFold), help="Wall times a fall-back repeats."),
    click.option(
        "--every",
        type=DURATION,
        help="Run every so long (15s, 90m, 36h; 1s to 366d), aligned to the Unix epoch.",
    ),
    click.option(
        "--anchor", type=INSTANT, help="With --every: runs at this instant + k * the interval."
    ),
    click.option(
        "--interval-dst",
        type=choice(IntervalDst),
        help="With --every, across DST: exact real time (elapsed, the default) or the same "
        "wall-clock spacing in --tz (wall).",
    ),
)

_CRON_ONLY = ("tz", "smear", "start", "end", "dst_gap", "dst_fold")
_INTERVAL_ONLY = ("anchor", "interval_dst")


def _flags(names: Sequence[str]) -> str:
    return ", ".join("--" + name.replace("_", "-") for name in names)


def schedule(options: dict[str, Any], base: Schedule | None = None) -> Schedule | None:
    """The schedule the options describe; None when none was given.

    With `base` (an update's current schedule), cron options change that
    schedule: `--tz` alone keeps the expression, `--cron` alone the zone; an
    interval's options (`--every`, `--anchor`, `--interval-dst`, `--tz`, ...) change
    an interval the same way.
    """
    from wheel.client import at, cron, now

    kinds = [name for name in ("run_now", "at", "cron") if options.get(name)]
    if options.get("every") is not None:  # (a zero interval is given, and refused)
        kinds.append("every")
    modifiers = [name for name in _CRON_ONLY if options.get(name) is not None]
    interval_only = [name for name in _INTERVAL_ONLY if options.get(name) is not None]
    if len(kinds) > 1:
        raise click.UsageError("give one of --now, --at, --cron and --every")
    if kinds and kinds[0] not in ("cron", "every") and modifiers:
        raise click.UsageError(f"{_flags(modifiers)}: only for a --cron or --every schedule")
    if kinds == ["run_now"]:
        return now()
    if kinds == ["at"]:
        return at(options["at"])
    interval = base if base is not None and base.kind is ScheduleKind.INTERVAL else None
    if kinds == ["every"] or (not kinds and interval is not None and (modifiers or interval_only)):
        return _interval(options, interval)
    if interval_only:
        raise click.UsageError(f"{_flags(interval_only)}: only for an --every schedule")
    if not kinds and not modifiers:
        return None
    current = base if base is not None and base.kind is ScheduleKind.CRON else None
    expression = options.get("cron") or (current.cron if current else None)
    if not expression:
        raise click.UsageError(
            f"{_flags(modifiers)}: only for a --cron or --every schedule (give one)"
        )

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


def _interval(options: dict[str, Any], current: Schedule | None) -> Schedule:
    """An --every schedule; with `current` (an update's interval), the options change it."""
    from wheel.client import every

    def pick(name: str, inherited: Any) -> Any:
        given = options.get(name)
        return given if given is not None else inherited

    interval = pick("every", current.every if current else None)
    assert interval is not None  # given, or the current interval's
    return every(
        interval,
        pick("tz", current.time_zone if current else "UTC"),
        anchor=pick("anchor", current.anchor if current else None),
        dst=pick("interval_dst", current.interval_dst if current else IntervalDst.ELAPSED).lower(),
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
    click.option(
        "--deadline",
        type=DURATION,
        help="Each run must have succeeded this long after its instant (30m; 1s-366d), "
        "or it is announced once as deadline_missed.",
    ),
    click.option("--no-deadline", is_flag=True, default=None, help="Remove the job's deadline."),
    click.option(
        "--notify-after-failures",
        type=int,
        help="Announce when this many runs in a row end dead or needs_review, and the "
        "next success (0: never).",
    ),
    click.option(
        "--concurrency-key",
        help="At most --concurrency-limit of the tenant's runs with this key run at once, "
        "across all its jobs (the rest wait).",
    ),
    click.option(
        "--concurrency-key-field",
        help="Or read the key from this top-level field of the JSON payload.",
    ),
    click.option("--concurrency-limit", type=int, help="Runs with the key at once (1 or more)."),
    click.option(
        "--no-concurrency-key",
        is_flag=True,
        default=None,
        help="Remove the job's concurrency key (update).",
    ),
    click.option(
        "--skip-calendar",
        "calendars",
        multiple=True,
        metavar="NAME",
        help="A business calendar of the tenant's (`wheel calendars`): no run on a day it "
        "closes, in the job's zone (repeatable: closed if any closes it).",
    ),
    click.option("--no-calendars", is_flag=True, default=False, help="Name no business calendars."),
    click.option(
        "--calendar-policy",
        type=choice(CalendarPolicy),
        help="A run on a closed day: skip (default), or move to the same wall time on the "
        "next_business_day or previous_business_day.",
    ),
)


_POLICY_FIELDS = tuple(field.name for field in dataclasses.fields(Policies))
_POLICY_ENUMS: dict[str, type[StrEnum]] = {"misfire": MisfirePolicy, "overlap": OverlapPolicy}
_POLICY_ENUMS["calendar_policy"] = CalendarPolicy


def policies(options: dict[str, Any], base: Policies) -> Policies | None:
    """`base` with the policy options given changed; None when none was."""
    changes = {name: options[name] for name in _POLICY_FIELDS if options.get(name) is not None}
    if options.get("no_deadline"):
        if "deadline" in changes:
            raise click.UsageError("give --deadline or --no-deadline, not both")
        changes["deadline"] = None
    changes.update(_concurrency_key(options, changes))
    _calendar_changes(options, changes)
    if not changes:
        return None
    for name, cls in _POLICY_ENUMS.items():
        if name in changes:
            changes[name] = cls(changes[name].lower())
    return dataclasses.replace(base, **changes)


def _concurrency_key(options: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """A key given replaces a key field (and the other way round); --no-concurrency-key
    removes both and the limit."""
    if options.get("no_concurrency_key"):
        if {"concurrency_key", "concurrency_key_field", "concurrency_limit"} & set(changes):
            raise click.UsageError("--no-concurrency-key goes without the other key options")
        return {"concurrency_key": "", "concurrency_key_field": "", "concurrency_limit": 0}
    if "concurrency_key" in changes and "concurrency_key_field" not in changes:
        return {"concurrency_key_field": ""}
    if "concurrency_key_field" in changes and "concurrency_key" not in changes:
        return {"concurrency_key": ""}
    return {}


def _calendar_changes(options: dict[str, Any], changes: dict[str, Any]) -> None:
    """--skip-calendar (repeatable: none given is no change) and --no-calendars."""
    named = tuple(options.get("calendars") or ())
    changes.pop("calendars", None)
    if options.get("no_calendars"):
        if named:
            raise click.UsageError("give --skip-calendar or --no-calendars, not both")
        changes["calendars"] = ()
    elif named:
        changes["calendars"] = named

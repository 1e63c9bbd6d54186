"""Business calendars on a job: skips, moves, collisions and the 31-day cap, across DST in
three zones. Every instant comes from the zone's own data, relative to now."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from wheel.model.jobs import CalendarPolicy, DstGap, Schedule, ScheduleKind
from wheel.schedule import compile_schedule, preview
from wheel.schedule.business_days import MAX_MOVE_DAYS, BusinessDays, Placed, long_date
from wheel.schedule.zones import Transition, next_transition

JOB = uuid.UUID(int=31)
ZONES = ["Europe/London", "America/New_York", "Australia/Sydney"]
NOW = datetime.now(UTC)
DAY = timedelta(days=1)


@dataclass(frozen=True)
class Dates:
    """A calendar closing the days it is given (wheel.schedule.calendars' are the real ones)."""

    name: str
    days: Mapping[date, str] = field(default_factory=dict)

    def closed(self, day: date) -> str | None:
        return self.days.get(day)


def closing(name: str, *days: date, reason: str = "Christmas Day") -> Dates:
    return Dates(name, {day: reason for day in days})


def transition(zone: str, *, forward: bool) -> Transition:
    """The zone's next change of the given direction, from now on."""
    tz = ZoneInfo(zone)
    after = NOW
    while True:
        found = next_transition(tz, after, timedelta(days=400))
        assert found is not None
        if found.forward == forward:
            return found
        after = found.at + timedelta(hours=1)


def cron_on(day: date, at: time) -> str:
    """A weekly expression: `at` on `day`'s weekday."""
    return f"{at.minute} {at.hour} * * {(day.weekday() + 1) % 7}"


def days_of(
    zone: str,
    expression: str,
    calendars: list[Dates],
    policy: CalendarPolicy,
    **schedule: object,
) -> BusinessDays:
    plan = compile_schedule(
        Schedule(ScheduleKind.CRON, cron=expression, time_zone=zone, **schedule),  # type: ignore[arg-type]
        JOB,
        now=NOW,
    )
    return BusinessDays(plan, calendars, policy)


def placed_on(days: BusinessDays, day: date) -> list[Placed]:
    """The runs scheduled on `day` (local), placed."""
    tz = days.plan.tz
    start = datetime.combine(day, time(0), tz).astimezone(UTC)
    return [
        p
        for p in days.runs(start - DAY, start + 2 * DAY)
        if p.occurrence.instant.astimezone(tz).date() == day
    ]


def local_today(zone: str) -> date:
    return NOW.astimezone(ZoneInfo(zone)).date()


@pytest.mark.parametrize("zone", ZONES)
def test_skip_keeps_the_run_with_a_reason_naming_the_calendar(zone: str) -> None:
    holiday = local_today(zone) + 10 * DAY
    days = days_of(zone, "0 9 * * *", [closing("hols", holiday)], CalendarPolicy.SKIP)
    (run,) = placed_on(days, holiday)
    tz = ZoneInfo(zone)
    assert run.skipped
    assert run.instant == run.occurrence.instant
    assert run.reason(tz) == f"calendar hols: {long_date(holiday)} is Christmas Day"
    assert run.preview_note(tz) == (
        f"skipped: {long_date(holiday)} is Christmas Day (calendar hols)"
    )
    (open_run,) = placed_on(days, holiday + DAY)
    assert not open_run.skipped
    assert open_run.calendar is None


@pytest.mark.parametrize("zone", ZONES)
def test_a_move_across_spring_forward_keeps_the_wall_time(zone: str) -> None:
    change = transition(zone, forward=True)
    tz = ZoneInfo(zone)
    changed_on = change.after.date()
    before = changed_on - DAY
    nine = time(9, 30)
    days = days_of(
        zone, cron_on(before, nine), [closing("hols", before)], CalendarPolicy.NEXT_BUSINESS_DAY
    )
    (run,) = placed_on(days, before)
    assert run.moved
    moved = run.instant.astimezone(tz)
    assert (moved.date(), moved.time()) == (changed_on, nine)
    assert moved.utcoffset() != run.occurrence.instant.astimezone(tz).utcoffset()
    assert run.instant - run.occurrence.instant == DAY - (
        moved.utcoffset() - run.occurrence.instant.astimezone(tz).utcoffset()  # type: ignore[operator]
    )
    assert run.preview_note(tz) == (
        f"moved to {moved:%a} {moved.day} {moved:%b} "
        f"({before.day} {before:%b} is Christmas Day, calendar hols)"
    )
    assert run.moved_from(tz) == (
        f"moved from {before:%a} {before.day} {before:%b} 09:30 by calendar hols: Christmas Day"
    )


@pytest.mark.parametrize("zone", ZONES)
def test_a_move_back_across_fall_back_keeps_the_wall_time(zone: str) -> None:
    change = transition(zone, forward=False)
    tz = ZoneInfo(zone)
    changed_on = change.after.date()
    after = changed_on + DAY
    at = time(17, 15)
    days = days_of(
        zone, cron_on(after, at), [closing("hols", after)], CalendarPolicy.PREVIOUS_BUSINESS_DAY
    )
    (run,) = placed_on(days, after)
    moved = run.instant.astimezone(tz)
    assert run.moved
    assert (moved.date(), moved.time()) == (changed_on, at)
    assert run.instant < run.occurrence.instant


@pytest.mark.parametrize("zone", ZONES)
def test_a_moved_wall_time_in_the_gap_follows_the_dst_rule(zone: str) -> None:
    change = transition(zone, forward=True)
    tz = ZoneInfo(zone)
    changed_on = change.after.date()
    before = changed_on - DAY
    gone = (change.before.replace(tzinfo=None) + timedelta(minutes=30)).time()
    shifted = days_of(
        zone, cron_on(before, gone), [closing("hols", before)], CalendarPolicy.NEXT_BUSINESS_DAY
    )
    (run,) = placed_on(shifted, before)
    # A fixed-time expression's default: the end of the gap.
    assert run.moved
    assert run.instant == change.at
    assert run.instant.astimezone(tz).time() == change.after.time()
    dropped = days_of(
        zone,
        cron_on(before, gone),
        [closing("hols", before)],
        CalendarPolicy.NEXT_BUSINESS_DAY,
        dst_gap=DstGap.SKIP,
    )
    (run,) = placed_on(dropped, before)
    assert run.skipped
    reason = run.reason(tz)
    assert reason is not None
    assert "does not exist" in reason
    assert "calendar hols" in reason


@pytest.mark.parametrize("zone", ZONES)
def test_a_move_onto_a_scheduled_run_is_skipped(zone: str) -> None:
    holiday = local_today(zone) + 5 * DAY
    days = days_of(zone, "0 9 * * *", [closing("hols", holiday)], CalendarPolicy.NEXT_BUSINESS_DAY)
    (run,) = placed_on(days, holiday)
    following = holiday + DAY
    assert run.skipped
    assert run.reason(ZoneInfo(zone)) == (
        f"calendar hols: {long_date(holiday)} is Christmas Day; moved to "
        f"{following:%a} {following.day} {following:%b} 09:00, where a run already falls"
    )
    (next_day,) = placed_on(days, following)
    assert not next_day.skipped
    assert next_day.calendar is None


def test_of_two_runs_moving_to_one_instant_the_nearer_runs() -> None:
    zone = "Europe/London"
    first = local_today(zone) + 7 * DAY
    second = first + DAY
    expression = f"0 9 * * {(first.weekday() + 1) % 7},{(second.weekday() + 1) % 7}"
    calendars = [closing("a", first), closing("b", second, reason="Boxing Day")]
    forward = days_of(zone, expression, calendars, CalendarPolicy.NEXT_BUSINESS_DAY)
    ((early,), (late,)) = placed_on(forward, first), placed_on(forward, second)
    assert early.skipped
    assert late.moved
    assert late.calendar == "b"
    assert early.detail is not None
    assert early.detail.endswith("where a run already falls")
    back = days_of(zone, expression, calendars, CalendarPolicy.PREVIOUS_BUSINESS_DAY)
    ((early,), (late,)) = placed_on(back, first), placed_on(back, second)
    assert early.moved
    assert late.skipped
    assert early.instant.astimezone(ZoneInfo(zone)).date() == (first - DAY)


def test_the_first_calendar_to_close_a_day_names_it() -> None:
    zone = "America/New_York"
    holiday = local_today(zone) + 3 * DAY
    calendars = [Dates("empty"), closing("us", holiday, reason="Labor Day"), closing("x", holiday)]
    (run,) = placed_on(days_of(zone, "0 9 * * *", calendars, CalendarPolicy.SKIP), holiday)
    assert (run.calendar, run.holiday) == ("us", "Labor Day")


@pytest.mark.parametrize(
    ("policy", "sign"),
    [(CalendarPolicy.NEXT_BUSINESS_DAY, 1), (CalendarPolicy.PREVIOUS_BUSINESS_DAY, -1)],
)
def test_a_move_looks_at_most_31_days(policy: CalendarPolicy, sign: int) -> None:
    zone = "Australia/Sydney"
    holiday = local_today(zone) + 60 * DAY
    reachable = [holiday + sign * n * DAY for n in range(MAX_MOVE_DAYS)]
    expression = f"0 8 {holiday.day} {holiday.month} *"  # yearly: no other run near
    (run,) = placed_on(days_of(zone, expression, [closing("long", *reachable)], policy), holiday)
    moved = run.instant.astimezone(ZoneInfo(zone)).date()
    assert run.moved
    assert moved == holiday + sign * MAX_MOVE_DAYS * DAY
    too_long = [*reachable, holiday + sign * MAX_MOVE_DAYS * DAY]
    (run,) = placed_on(days_of(zone, expression, [closing("long", *too_long)], policy), holiday)
    side = "after" if sign > 0 else "before"
    assert run.skipped
    assert run.detail == f"no open day within 31 days {side} it"


@pytest.mark.parametrize("zone", ZONES)
def test_runs_after_a_window_that_move_into_it_are_found(zone: str) -> None:
    tz = ZoneInfo(zone)
    friday = local_today(zone) + 14 * DAY
    while friday.weekday() != 4:
        friday += DAY
    weekend = [friday + DAY, friday + 2 * DAY, friday + 3 * DAY]  # and the Monday
    days = days_of(
        zone,
        "0 9 * * 1,6",
        [closing("long-weekend", *weekend)],
        CalendarPolicy.PREVIOUS_BUSINESS_DAY,
    )
    end = datetime.combine(friday, time(12), tz).astimezone(UTC)
    moved_in = days.moved_in(end)
    # Saturday's and Monday's runs both move to Friday 09:00: Saturday's moved less.
    assert [p.occurrence.instant.astimezone(tz).date() for p in moved_in] == [friday + DAY]
    assert moved_in[0].instant == datetime.combine(friday, time(9), tz).astimezone(UTC)
    before_nine = datetime.combine(friday, time(8), tz).astimezone(UTC)
    assert days.moved_in(before_nine) == []
    assert (
        days_of(zone, "0 9 * * 1,6", [], CalendarPolicy.PREVIOUS_BUSINESS_DAY).moved_in(end) == []
    )


def test_previews_show_skipped_and_moved_runs_beside_the_runs_that_happen() -> None:
    zone = "Europe/London"
    tz = ZoneInfo(zone)
    holiday = local_today(zone) + 20 * DAY
    after = datetime.combine(holiday - DAY, time(12), tz).astimezone(UTC)
    skipping = days_of(zone, "0 9 * * *", [closing("hols", holiday)], CalendarPolicy.SKIP)
    runs = preview(skipping.plan, after, 2, skipping)
    assert [run.skipped for run in runs] == [True, False, False]
    assert runs[0].note == f"skipped: {long_date(holiday)} is Christmas Day (calendar hols)"
    assert (runs[0].calendar, runs[0].calendar_reason) == ("hols", "Christmas Day")
    moving = days_of(
        zone,
        cron_on(holiday, time(9)),
        [closing("hols", holiday)],
        CalendarPolicy.NEXT_BUSINESS_DAY,
    )
    (moved,) = preview(moving.plan, after, 1, moving)
    following = holiday + DAY
    assert moved.moved_from == datetime.combine(holiday, time(9), tz).astimezone(UTC)
    assert moved.fire_at == datetime.combine(following, time(9), tz).astimezone(UTC)
    assert moved.note == (
        f"moved to {following:%a} {following.day} {following:%b} "
        f"({holiday.day} {holiday:%b} is Christmas Day, calendar hols)"
    )
    assert preview(moving.plan, after, 1)[0].moved_from is None  # without the calendars


def test_a_preview_under_a_calendar_closing_every_day_stops() -> None:
    zone = "UTC"
    today = local_today(zone)
    everything = closing("all", *(today + n * DAY for n in range(400)))
    days = days_of(zone, "0 9 * * *", [everything], CalendarPolicy.SKIP)
    runs = preview(days.plan, NOW, 5, days)
    assert len(runs) == 5 + 31  # the runs asked for, and at most 31 lines more
    assert all(run.skipped for run in runs)

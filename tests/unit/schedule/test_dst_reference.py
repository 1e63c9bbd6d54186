"""Every DST transition 2020-2035 in 30 zones: wheel's runs equal the brute-force walk.

For each transition, the window around it is expanded by wheel and walked
minute by minute (second by second for seconds-field expressions) by the
reference; the instants must be identical, under Debian cron's default rule
and under every per-job override.
"""

from __future__ import annotations

import functools
import uuid
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.unit.schedule import reference
from wheel.model.jobs import DstFold, DstGap
from wheel.schedule import cron
from wheel.schedule.dst import DstRule
from wheel.schedule.expand import expand

JOB = uuid.UUID(int=42)

ZONES = [
    "Europe/London",
    "Europe/Dublin",  # negative DST: winter time is the "summer" offset minus one hour
    "Europe/Berlin",
    "Europe/Moscow",  # DST abolished in 2011, offset changed in 2014
    "Europe/Istanbul",  # DST abolished in 2016
    "Atlantic/Azores",  # transitions at midnight
    "America/New_York",
    "America/Chicago",
    "America/Denver",
    "America/Phoenix",  # no DST
    "America/St_Johns",  # half-hour offset with DST
    "America/Havana",  # transitions at midnight
    "America/Santiago",  # southern hemisphere, midnight transitions
    "America/Asuncion",  # southern, midnight, rules changed in 2024
    "America/Sao_Paulo",  # DST abolished in 2019
    "America/Mexico_City",  # DST abolished in 2022
    "America/Nuuk",  # rules changed in 2023
    "Australia/Sydney",  # southern hemisphere
    "Australia/Adelaide",  # half-hour offset with DST
    "Australia/Lord_Howe",  # 30-minute DST
    "Pacific/Auckland",
    "Pacific/Chatham",  # 45-minute offset, transitions at 02:45 / 03:45
    "Asia/Tehran",  # midnight transitions, DST abolished in 2022
    "Asia/Beirut",  # midnight transitions
    "Asia/Jerusalem",
    "Asia/Amman",  # DST abolished in 2022
    "Africa/Cairo",  # DST reinstated in 2023
    "Africa/Casablanca",  # negative DST during Ramadan: many transitions a year
    "Asia/Kolkata",  # no DST
    "UTC",
]

MINUTE_EXPRESSIONS = [
    "0 0 * * *",
    "30 0 * * *",
    "0 1 * * *",
    "30 1 * * *",
    "45 1 * * *",
    "59 1 * * *",
    "0 2 * * *",
    "30 2 * * *",
    "45 2 * * *",
    "0 3 * * *",
    "45 3 * * *",
    "15 23 * * *",
    "0,30 1,2 * * *",
    "0 * * * *",  # hourly
    "*/15 * * * *",
    "*/30 1 * * *",  # every 30 minutes during one hour
    "*/30 2 * * *",
    "*/30 0 * * *",
    "0 2 * * 0",  # weekly
    "30 1 31 * *",  # monthly on the 31st
]
SECOND_EXPRESSIONS = [
    "*/20 30 1 * * *",  # fixed minute and hour: fixed-time, every 20 s of 01:30
    "*/20 15 2 * * *",
    "0 */10 * * * *",  # wildcard minute with a seconds field
    "30 0 0 * * *",
    "*/30 * 2 * * *",
]
MINUTE_WINDOW = timedelta(hours=3)
SECOND_WINDOW = timedelta(minutes=65)
SECOND_ZONES = [
    "Europe/London", "Europe/Dublin", "Australia/Lord_Howe", "America/Santiago",
    "Pacific/Chatham", "Asia/Tehran", "America/St_Johns", "Africa/Cairo",
]  # fmt: skip


@functools.cache
def transitions(name: str) -> list[datetime]:
    return reference.transitions(ZoneInfo(name), 2020, 2035)


def test_the_zones_cover_what_the_issue_asks_for() -> None:
    assert len(ZONES) >= 25
    assert len(transitions("Australia/Lord_Howe")) == 32
    assert transitions("America/Sao_Paulo") == [], "no transitions since DST was abolished"
    assert len(transitions("Africa/Casablanca")) > 30, "Ramadan: two transitions a year, around it"


def check(expressions: list[str], name: str, window: timedelta, step: timedelta,
          rules: list[tuple[DstGap, DstFold]]) -> int:  # fmt: skip
    """Compare wheel with the walk for every expression and rule around every transition."""
    tz = ZoneInfo(name)
    parsed = [cron.parse(text, JOB) for text in expressions]
    compared = 0
    for instant in transitions(name):
        start, end = instant - window, instant + window
        walked = reference.Walk(tz, start, end, step, margin=window)
        for expr in parsed:
            for gap, fold in rules:
                rule = DstRule.for_expression(expr.wildcard, gap, fold)
                mine = [o.instant for o in expand(expr, tz, rule, start, end) if not o.skipped]
                assert mine == walked.runs(expr, rule), (
                    f"{expr.source!r} in {name} around {instant} under {rule}"
                )
                compared += 1
    return compared


DEFAULT = [(DstGap.DEFAULT, DstFold.DEFAULT)]


@pytest.mark.parametrize("name", ZONES)
def test_minute_expressions_match_the_walk_at_every_transition(name: str) -> None:
    compared = check(MINUTE_EXPRESSIONS, name, MINUTE_WINDOW, reference.MINUTE, DEFAULT)
    assert compared == len(MINUTE_EXPRESSIONS) * len(transitions(name))


@pytest.mark.parametrize("name", SECOND_ZONES)
def test_seconds_expressions_match_the_walk_at_every_transition(name: str) -> None:
    check(SECOND_EXPRESSIONS, name, SECOND_WINDOW, timedelta(seconds=1), DEFAULT)


OVERRIDES = [(gap, fold) for gap in (DstGap.SHIFT, DstGap.SKIP)
             for fold in (DstFold.FIRST, DstFold.LAST, DstFold.BOTH)]  # fmt: skip


@pytest.mark.parametrize(("gap", "fold"), OVERRIDES)
@pytest.mark.parametrize(
    "name", ["Europe/London", "Europe/Dublin", "Australia/Lord_Howe", "America/Santiago",
             "Pacific/Chatham", "Africa/Casablanca"]
)  # fmt: skip
def test_every_override_matches_the_walk(name: str, gap: DstGap, fold: DstFold) -> None:
    expressions = ["30 1 * * *", "0,30 1,2 * * *", "*/15 * * * *", "*/30 1 * * *", "45 2 * * *"]
    check(expressions, name, MINUTE_WINDOW, reference.MINUTE, [(gap, fold)])


@settings(max_examples=60, deadline=None)
@given(
    fields=st.tuples(
        st.sampled_from(["0", "*/15", "30", "0,45", "H", "*", "59", "*/7"]),
        st.sampled_from(["*", "0", "1", "2", "1-3", "*/2", "23", "0,2"]),
        st.sampled_from(["*", "1-15", "*/2", "31"]),
        st.sampled_from(["*", "3,10", "1-6"]),
        st.sampled_from(["*", "0", "1-5", "6"]),
    ),
    name=st.sampled_from(ZONES),
    pick=st.integers(min_value=0),
    gap=st.sampled_from(list(DstGap)),
    fold=st.sampled_from(list(DstFold)),
)
def test_random_expressions_and_zones_match_the_walk(
    fields: tuple[str, ...], name: str, pick: int, gap: DstGap, fold: DstFold
) -> None:
    found = transitions(name)
    assume(found)
    instant = found[pick % len(found)]
    expr = cron.parse(" ".join(fields), JOB)
    tz = ZoneInfo(name)
    rule = DstRule.for_expression(expr.wildcard, gap, fold)
    start, end = instant - MINUTE_WINDOW, instant + MINUTE_WINDOW
    walked = reference.Walk(tz, start, end, reference.MINUTE, margin=MINUTE_WINDOW)
    mine = [o.instant for o in expand(expr, tz, rule, start, end) if not o.skipped]
    assert mine == walked.runs(expr, rule)

"""The options and file keys that name a job's business calendars, read into Policies."""

from __future__ import annotations

import io

import click
import pytest

from wheel.cli.jobs import jobs
from wheel.cli.jobs_file import read_toml
from wheel.cli.jobs_options import policies
from wheel.model.jobs import CalendarPolicy, Policies


def test_skip_calendar_repeats_and_the_policy_is_read() -> None:
    read = policies(
        {"calendars": ("uk", "weekends"), "calendar_policy": "NEXT_BUSINESS_DAY"}, Policies()
    )
    assert read is not None
    assert read.calendars == ("uk", "weekends")
    assert read.calendar_policy is CalendarPolicy.NEXT_BUSINESS_DAY


def test_no_skip_calendar_changes_nothing_and_no_calendars_drops_them() -> None:
    base = Policies(calendars=("uk",))
    assert policies({"calendars": ()}, base) is None
    dropped = policies({"calendars": (), "no_calendars": True}, base)
    assert dropped is not None
    assert dropped.calendars == ()
    with pytest.raises(click.UsageError, match="--skip-calendar or --no-calendars"):
        policies({"calendars": ("uk",), "no_calendars": True}, base)


def test_an_apply_file_names_calendars_as_a_list_or_one_name() -> None:
    document = (
        b'[jobs.payroll]\ntask = "payroll.run"\ncron = "0 9 25 * *"\n'
        b'calendars = ["uk", "weekends"]\ncalendar_policy = "previous_business_day"\n'
        b'[jobs.digest]\ntask = "digest"\ncron = "0 8 * * *"\ncalendars = "uk"\n'
    )
    create = jobs.commands["create"]
    with click.Context(create) as ctx:
        payroll, digest = read_toml(io.BytesIO(document), create, ctx)
    assert payroll.policies is not None
    assert payroll.policies.calendars == ("uk", "weekends")
    assert payroll.policies.calendar_policy is CalendarPolicy.PREVIOUS_BUSINESS_DAY
    assert digest.policies is not None
    assert digest.policies.calendars == ("uk",)

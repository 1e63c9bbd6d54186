"""Business calendars end to end on a real node: the SDK (async and sync) and `wheel calendars`.

Dates are next year's, so the holidays and weekdays asserted hold whenever the tests run.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import date, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import wheel
from wheel.cli.calendars import calendars
from wheel.cli.jobs import jobs
from wheel.client import AsyncClient
from wheel.client.types import DateRange
from wheel.errors import Conflict, InvalidArgument, NotFound, VersionConflict
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store

YEAR = date.today().year + 1
SHUTDOWN = f"{YEAR}-12-24..{YEAR + 1}-01-02"


def _christmas_on_a_weekday() -> int:
    """The first year from next on whose 25 December is a weekday (so its reason is the
    holiday's and 26 December's too, whatever the weekday pattern)."""
    return next(y for y in range(YEAR, YEAR + 10) if date(y, 12, 25).weekday() < 4)


@pytest.fixture
async def bobs_token(store: Store) -> str:
    tenant = await store.tenants.create(f"bob-{uuid.uuid4().hex[:6]}")
    _, secret = await store.tenants.create_token(tenant.id, "bob")
    return secret


async def _rows(store: Store) -> list[tuple[object, ...]]:
    async with store.pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT tenant_id, name, version, definition::text FROM calendars ORDER BY id"
        )
        return list(await cursor.fetchall())


async def test_the_sdk_keeps_and_checks_a_tenants_calendars(
    node: SchedulerNode, token: str, store: Store
) -> None:
    year = _christmas_on_a_weekday()
    async with AsyncClient(node.address, token=token) as client:
        made = await client.create_calendar(
            "uk-holidays",
            holidays=["GB-ENG"],
            weekdays=["sat", "sun"],
            dates=[f"{year}-12-24..{year + 1}-01-02", date(year, 6, 1)],
            description="office closed",
        )
        assert made.version == 1
        assert made.weekdays == ("sat", "sun")
        assert made.dates[1] == DateRange(date(year, 6, 1), date(year, 6, 1))
        assert await client.get_calendar("uk-holidays") == made
        assert await client.get_calendar(str(made.id)) == made
        assert [c.name for c in (await client.list_calendars()).items] == ["uk-holidays"]

        days = {
            d.day: d.reason
            for d in await client.closed_days(
                "uk-holidays", first=date(year, 12, 20), last=date(year + 1, 1, 5)
            )
        }
        assert days[date(year, 12, 25)] == "Christmas Day"
        assert days[date(year, 12, 26)] == "Boxing Day"
        listed = f"a listed date (24 Dec {year} \N{EN DASH} 2 Jan {year + 1})"
        assert days[date(year, 12, 24)] == listed
        assert days[date(year + 1, 1, 2)] in (listed, "Saturday", "Sunday")
        assert date(year, 12, 23) not in days or days[date(year, 12, 23)] in ("Saturday", "Sunday")
        assert made.definition().closed(date(year, 12, 25)) == "Christmas Day"

        # An update names the version it edits; a stale one is refused and changes nothing.
        edited = await client.update_calendar(
            "uk-holidays", expected_version=1, weekdays=["sun"], dates=[SHUTDOWN]
        )
        assert (edited.version, edited.weekdays, edited.holidays) == (2, ("sun",), made.holidays)
        written = await _rows(store)
        with pytest.raises(VersionConflict) as stale:
            await client.update_calendar("uk-holidays", expected_version=1, weekdays=["mon"])
        assert (stale.value.expected, stale.value.current) == (1, 2)

        # Bad input: refused naming the field, and nothing written.
        with pytest.raises(InvalidArgument) as country:
            await client.create_calendar("elsewhere", holidays=["XX"])
        assert country.value.field == "holidays[0]"  # checked before it is sent
        with pytest.raises(InvalidArgument) as backwards:
            await client.create_calendar(
                "elsewhere", dates=[DateRange(date(year, 2, 2), date(year, 2, 1))]
            )
        assert backwards.value.field == "calendar.dates[0]"  # checked by the server
        with pytest.raises(InvalidArgument) as weekday:
            await client.update_calendar("uk-holidays", expected_version=2, weekdays=["funday"])
        assert weekday.value.field == "calendar.weekdays[0]"
        with pytest.raises(InvalidArgument) as empty:
            await client.create_calendar("closes-nothing")
        assert empty.value.field == "calendar"
        with pytest.raises(Conflict, match="a calendar named 'uk-holidays' exists"):
            await client.create_calendar("uk-holidays", weekdays=["sat"])
        assert await _rows(store) == written

        deleted = await client.delete_calendar("uk-holidays")
        assert deleted.version == 2
        with pytest.raises(NotFound):
            await client.get_calendar(str(made.id))
        assert await _rows(store) == []


async def test_a_tenant_never_sees_nor_names_another_tenants_calendars(
    node: SchedulerNode, token: str, bobs_token: str, store: Store
) -> None:
    async with (
        AsyncClient(node.address, token=token) as alice,
        AsyncClient(node.address, token=bobs_token) as bob,
    ):
        hers = await alice.create_calendar("holidays", weekdays=["sat"])
        for ref in ("holidays", str(hers.id)):
            with pytest.raises(NotFound):
                await bob.get_calendar(ref)
            with pytest.raises(NotFound):
                await bob.closed_days(ref)
            with pytest.raises(NotFound):
                await bob.update_calendar(ref, expected_version=1, weekdays=["sun"], base=hers)
            with pytest.raises(NotFound):
                await bob.delete_calendar(ref)
        assert (await bob.list_calendars()).items == ()
        # Names are the tenant's own: bob may have a calendar of the same name.
        his = await bob.create_calendar("holidays", weekdays=["sun"])
        assert his.id != hers.id
        assert await alice.get_calendar("holidays") == hers
        assert [c.id for c in (await bob.list_calendars()).items] == [his.id]


async def test_the_blocking_client_wraps_the_same_calls(node: SchedulerNode, token: str) -> None:
    def work() -> None:
        with wheel.Client(node.address, token=token) as client:
            made = client.create_calendar("weekend", weekdays=[5, 6])
            saturday = date.today() + timedelta(days=(5 - date.today().weekday()) % 7)
            closed = client.closed_days("weekend", first=saturday, last=saturday + timedelta(1))
            assert [(d.day, d.reason) for d in closed] == [
                (saturday, "Saturday"),
                (saturday + timedelta(1), "Sunday"),
            ]
            assert [c.name for c in client.calendars()] == ["weekend"]
            assert client.delete_calendar(str(made.id)).name == "weekend"

    await asyncio.to_thread(work)


async def test_the_cli_creates_checks_updates_and_deletes_a_calendar(
    node: SchedulerNode, token: str, store: Store
) -> None:
    env = {"WHEEL_ENDPOINTS": node.address, "WHEEL_TOKEN": token, "COLUMNS": "200"}

    def run(*args: str) -> Result:
        return CliRunner().invoke(calendars, list(args), env=env)

    async def cli(*args: str) -> Result:
        return await asyncio.to_thread(run, *args)

    made = await cli("create", "uk-holidays", "--holidays", "GB-ENG", "--weekdays", "sat,sun",
                     "--dates", SHUTDOWN, "--output", "json")  # fmt: skip
    assert made.exit_code == 0, made.output
    assert json.loads(made.stdout)["holidays"] == [{"country": "GB", "subdivision": "ENG"}]

    days = await cli("days", "uk-holidays", "--from", f"{YEAR}-12-20", "--to", f"{YEAR}-12-31")
    assert days.exit_code == 0, days.output
    christmas = f"{YEAR}-12-25"
    assert any(
        line.startswith(christmas) and "Christmas Day" in line for line in days.stdout.splitlines()
    )
    assert "a listed date" in days.stdout

    shown = await cli("show", "uk-holidays")
    assert shown.exit_code == 0, shown.output
    assert "GB-ENG" in shown.stdout
    assert "version:     1" in shown.stdout
    listed = await cli("list")
    assert listed.exit_code == 0, listed.output
    assert "uk-holidays" in listed.stdout

    updated = await cli("update", "uk-holidays", "--version", "1", "--no-weekdays")
    assert updated.exit_code == 0, updated.output
    assert "weekdays:    -" in updated.stdout
    stale = await cli("update", "uk-holidays", "--version", "1", "--weekdays", "sun")
    assert stale.exit_code == 1
    assert "at version 2, not 1" in stale.output

    written = await _rows(store)
    backwards = f"{YEAR}-03-02..{YEAR}-03-01"
    for args, option, words in [
        (("create", "x", "--holidays", "GB-XYZ"), "--holidays", "unknown subdivision 'XYZ' of GB"),
        (("create", "x", "--weekdays", "sat,funday"), "--weekdays", "unknown weekday 'funday'"),
        (("create", "x", "--dates", backwards), "--dates", "before it starts"),
        (("update", "uk-holidays", "--version", "2", "--holidays", "ZZ"), "--holidays",
         "unknown country"),
        (("days", "uk-holidays", "--from", f"{YEAR}-03-02", "--to", f"{YEAR}-03-01"), "--to",
         "before"),
    ]:  # fmt: skip
        refused = await cli(*args)
        assert refused.exit_code == 2, (args, refused.output)
        assert option in refused.output, refused.output
        assert words in refused.output, refused.output
    assert await _rows(store) == written

    deleted = await cli("delete", "uk-holidays")
    assert deleted.exit_code == 0, deleted.output
    gone = await cli("show", "uk-holidays")
    assert gone.exit_code == 1
    assert "not found" in gone.output


async def test_an_apply_file_holds_a_calendar_beside_its_jobs(
    node: SchedulerNode, token: str, store: Store, tmp_path: Path
) -> None:
    env = {"WHEEL_ENDPOINTS": node.address, "WHEEL_TOKEN": token, "COLUMNS": "200"}
    path = tmp_path / "schedules.toml"

    async def apply(*args: str) -> Result:
        def run() -> Result:
            return CliRunner().invoke(jobs, ["apply", "-f", str(path), *args], env=env)

        return await asyncio.to_thread(run)

    def write(weekdays: str, holidays: str = '["GB-ENG"]', extra: str = "") -> None:
        path.write_text(
            f"""
[calendars.uk-holidays]
holidays = {holidays}
weekdays = {weekdays}
dates = ["{SHUTDOWN}", {YEAR}-06-01]
{extra}

[jobs.nightly]
task = "reports.nightly"
cron = "30 1 * * *"
tz = "Europe/London"
"""
        )

    write('["sat", "sun"]')
    planned = await apply("--dry-run")
    assert planned.exit_code == 0, planned.output
    assert [line.split() for line in planned.stdout.splitlines() if "uk-holidays" in line] == [
        ["create", "uk-holidays"]
    ]
    assert await _rows(store) == []
    made = await apply()
    assert made.exit_code == 0, made.output
    async with AsyncClient(node.address, token=token) as client:
        calendar = await client.get_calendar("uk-holidays")
        assert calendar.weekdays == ("sat", "sun")
        assert calendar.dates[1] == DateRange(date(YEAR, 6, 1), date(YEAR, 6, 1))
        assert (await client.get_job("nightly")).name == "nightly"
        again = await apply()
        assert again.exit_code == 0, again.output
        assert "nothing to change" in again.stdout
        assert (await client.get_calendar("uk-holidays")).version == 1

        write('"sun"')
        edited = await apply()
        assert edited.exit_code == 0, edited.output
        assert [line.split() for line in edited.stdout.splitlines() if "uk-holidays" in line] == [
            ["update", "uk-holidays", "weekdays"]
        ]
        now = await client.get_calendar("uk-holidays")
        assert (now.version, now.weekdays) == (2, ("sun",))

    written = await _rows(store)
    for weekdays, holidays, extra, words in [
        ('["sun", "someday"]', '"GB"', "", "[calendars.uk-holidays]: weekdays[1]: unknown weekday"),
        ('"sun"', '"GB"', 'holiday = ["GB"]', "[calendars.uk-holidays]: holiday: is not one of"),
        ('"sun"', '["GB-NOWHERE"]', "", "unknown subdivision 'NOWHERE' of GB"),
    ]:  # fmt: skip
        write(weekdays, holidays, extra)
        refused = await apply()
        assert refused.exit_code == 2, refused.output
        assert "--file" in refused.output
        assert words in " ".join(refused.output.split()), refused.output
    assert await _rows(store) == written

"""The dashboard's pure helpers: schedules in words, DST changes found, colours per node."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from wheel.dashboard.pages import colour, next_change, words
from wheel.model.jobs import Schedule, ScheduleKind
from wheel.schedule import cron


def test_zones_without_dst_and_unknown_zones_have_no_change() -> None:
    now = datetime.now(UTC)
    assert next_change("UTC", now) is None
    assert next_change("Asia/Tokyo", now) is None
    assert next_change("Not/AZone", now) is None
    assert next_change("Europe/London", now) is not None


def test_schedules_in_words_from_wheels_own_cron_for_the_job() -> None:
    job = uuid.UUID(int=7)
    assert words(Schedule(kind=ScheduleKind.CRON, cron="30 1 * * 1-5"), job) == (
        "At 01:30, on Monday-Friday"
    )
    hashed = cron.parse("H H * * *", job)
    assert words(Schedule(kind=ScheduleKind.CRON, cron="H H * * *"), job) == (
        f"At {hashed.hours[0]:02d}:{hashed.minutes[0]:02d}, every day"
    )
    assert words(Schedule(kind=ScheduleKind.NOW), job) == "once, at once"


def test_each_node_has_a_stable_colour_and_no_owner_is_grey() -> None:
    assert colour("node-a") == colour("node-a")
    assert colour("node-a") != colour("node-b")
    assert colour(None) == "hsl(0, 0%, 50%)"


class _Client:
    """The session's API client (a collaborator here): only closing matters."""

    def __init__(self) -> None:
        self.closed = False

    async def close(self) -> None:
        self.closed = True


async def test_one_token_holds_a_few_sessions_and_idle_ones_end() -> None:
    from wheel.dashboard.sessions import Sessions

    now = [0.0]
    sessions = Sessions(idle_s=60, per_token=2, clock=lambda: now[0])
    clients = [_Client() for _ in range(3)]
    opened = []
    for client in clients:
        opened.append(await sessions.open(client, "whl_same"))  # type: ignore[arg-type]
        now[0] += 1
    assert [c.closed for c in clients] == [True, False, False]  # the oldest went
    other = await sessions.open(_Client(), "whl_other")  # type: ignore[arg-type]
    assert sessions.get(opened[2].id) is opened[2]
    now[0] += 30
    assert sessions.get(other.id, touch=False) is other  # a background refresh...
    now[0] += 40
    assert sessions.get(other.id) is None  # ...kept nothing alive
    assert sessions.get(opened[2].id) is None
    assert not opened[2].csrf_ok("forged")
    assert opened[2].csrf_ok(opened[2].csrf)

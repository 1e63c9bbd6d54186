"""What an acknowledged job survives: the reading's verdict, and how a node says it."""

from __future__ import annotations

import logging

import pytest

from wheel.errors import ConfigError, StoreError
from wheel.scheduler.durability import REMIND_S, DurabilityWatch
from wheel.store.durability import Durability

SAFE = Durability("on", "ANY 1 (standby)", 1, 0)


@pytest.mark.parametrize(
    ("reading", "says"),
    [
        (Durability("on", "", 0, 0), "no synchronous standby (synchronous_standby_names is empty)"),
        (Durability("local", "standby", 1, 0), "synchronous_commit is 'local'"),
        (Durability("off", "standby", 1, 0), "synchronous_commit is 'off'"),
        (Durability("on", "standby", 0, 0), "no synchronous standby is connected"),
    ],
)
def test_an_unsafe_setup_says_why(reading: Durability, says: str) -> None:
    assert reading.problem is not None
    assert reading.problem.startswith(says)


def test_a_synchronous_standby_is_safe_and_so_is_one_this_role_cannot_see() -> None:
    assert SAFE.problem is None
    assert Durability("remote_apply", "s1", 1, 0).problem is None
    assert Durability("on", "s1", 0, 1).problem is None, "pg_stat_replication hides its state"


class Reader:
    def __init__(self, *readings: Durability | Exception) -> None:
        self.readings = list(readings)

    async def read(self) -> Durability:
        reading = self.readings.pop(0)
        if isinstance(reading, Exception):
            raise reading
        return reading


UNSAFE = Durability("on", "", 0, 0)


async def test_the_watch_warns_on_a_change_reminds_and_says_when_it_is_safe_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    heard: list[bool] = []
    reader = Reader(UNSAFE, UNSAFE, UNSAFE, StoreError("gone"), SAFE)
    watch = DurabilityWatch(reader, node_id="n", report=heard.append,  # type: ignore[arg-type]
                            clock=lambda: now[0])  # fmt: skip
    caplog.set_level(logging.INFO, logger="wheel.scheduler.durability")

    def warnings() -> int:
        return sum(r.message == "node.not_durable" for r in caplog.records)

    assert await watch.check() == UNSAFE.problem
    assert warnings() == 1
    now[0] = 60.0
    await watch.check()
    assert warnings() == 1, "the same problem is not repeated every minute"
    now[0] = REMIND_S + 1
    await watch.check()
    assert warnings() == 2, "but it is again after a while"
    assert await watch.check() == UNSAFE.problem, "a failed read changes nothing"
    assert await watch.check() is None
    assert watch.problem is None
    assert heard == [False, False, False, True]
    assert caplog.records[-1].message == "node.durable"


async def test_required_it_refuses_to_start_on_an_unsafe_setup_or_a_failed_read() -> None:
    with pytest.raises(ConfigError) as refused:
        await DurabilityWatch(Reader(UNSAFE), node_id="n").require()  # type: ignore[arg-type]
    assert refused.value.field == "require_synchronous_standby"
    assert "no synchronous standby" in str(refused.value)
    with pytest.raises(StoreError):
        await DurabilityWatch(Reader(StoreError("gone")), node_id="n").require()  # type: ignore[arg-type]
    await DurabilityWatch(Reader(SAFE), node_id="n").require()  # type: ignore[arg-type]

"""Whether a node's previous lease is kept alive, read off its time to live (no etcd)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from wheel.coordinator.etcd import Etcd, LeaseTime
from wheel.coordinator.membership import kept_alive


class Readings:
    """etcd's answers for one lease, one per call, on a clock that moves only by sleeps."""

    def __init__(self, remaining: Iterable[int], granted_s: int = 10) -> None:
        self._remaining = iter(remaining)
        self._granted_s = granted_s
        self.now = 0.0
        self.calls = 0

    async def time_to_live(self, lease_id: int) -> LeaseTime:
        self.calls += 1
        return LeaseTime(next(self._remaining), self._granted_s)

    async def sleep(self, seconds: float) -> None:
        self.now += seconds

    async def decide(self) -> bool:
        etcd = cast(Etcd, self)
        return await kept_alive(etcd, 7, poll_s=1.0, clock=lambda: self.now, sleep=self.sleep)


async def test_a_lease_whose_time_never_counts_past_two_thirds_is_kept_alive() -> None:
    readings = Readings([9, 8, 7, 10, 9, 8, 7, 10, 9])  # renewed every 3.3 s
    assert await readings.decide()
    assert readings.now <= 9 - (10 * 2 / 3 - 1.5) + 1.0 + 1.0, "once a dead one would be past"


async def test_a_lease_renewed_by_an_etcd_restart_but_never_since_is_not() -> None:
    readings = Readings([10, 10, 9, 8, 7, 6, 5, 4])  # ten seconds, then counting down
    assert not await readings.decide()
    assert readings.now == 6.0, "as soon as it fell below 2/3 of 10 s, less the slack"


async def test_a_lease_that_missed_keep_alives_already_is_not_and_no_time_is_spent() -> None:
    readings = Readings([4])
    assert not await readings.decide()
    assert (readings.now, readings.calls) == (0.0, 1)


async def test_a_lease_that_is_gone_is_not() -> None:
    readings = Readings([-1], granted_s=0)
    assert not await readings.decide()


async def test_a_short_lease_kept_alive_every_second_is_kept_alive() -> None:
    readings = Readings([2, 2, 1, 2, 2, 1, 2, 2, 1, 2], granted_s=3)
    assert await readings.decide()

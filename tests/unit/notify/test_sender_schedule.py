"""The sender's tries on a manual clock: the backoff between them, the give-up, the stamp.

The outbox (the sender's collaborator) is an in-memory stand-in that keeps each row's
next try as the store does — due at `now + retry_in_s`, the try counted when taken — on the
test's `ManualClock`; the receiver is a real loopback HTTP endpoint answering from a
script. Nothing waits: a test moves the clock and runs a pass.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from tests.unit.answering import answering
from wheel.model.executions import ExecutionStatus
from wheel.model.ids import ExecutionKey, JobId, TenantId
from wheel.notify.sender import Sender, SendSettings
from wheel.store.outbox import Due
from wheel.timingwheel import ManualClock

SECRET = "whsec_" + "cd" * 32


@dataclass
class _Row:
    due: Due
    next_at_ms: int
    state: str = "pending"
    tries: int = 0
    retry_in_s: list[float] = field(default_factory=list)


class _Outbox:
    """Rows due at `next_at_ms` on the clock; `claim` counts the try and leases the row."""

    def __init__(self, clock: ManualClock) -> None:
        self._clock = clock
        self.rows: dict[str, _Row] = {}

    def add(self, url: str) -> _Row:
        now = datetime.fromtimestamp(self._clock.wall_ms() / 1000, UTC)
        due = Due(
            id=str(uuid.uuid4()), tenant_id=TenantId(uuid.uuid4()),
            key=ExecutionKey(JobId(uuid.uuid4()), now), job_name="nightly",
            status=ExecutionStatus.DEAD, reason=None, attempt=1, error="boom", url=url,
            created_at=now, tries=0, secrets=(SECRET,),
        )  # fmt: skip
        row = self.rows[due.id] = _Row(due, self._clock.wall_ms())
        return row

    async def claim(self, node_id: str, *, limit: int, lease_s: float) -> list[Due]:
        now_ms = self._clock.wall_ms()
        taken: list[Due] = []
        for row in self.rows.values():
            if row.state == "pending" and row.next_at_ms <= now_ms and len(taken) < limit:
                row.tries += 1
                row.next_at_ms = now_ms + int(lease_s * 1000)
                taken.append(replace(row.due, tries=row.tries))
        return taken

    async def tried(self, due: Due, *, delivered: bool, give_up: bool = False,
                    retry_in_s: float = 0.0, error: str | None = None,
                    status_code: int | None = None) -> bool:  # fmt: skip
        row = self.rows[due.id]
        if row.tries != due.tries:
            return False
        row.retry_in_s.append(retry_in_s)
        if delivered:
            row.state = "delivered"
        elif give_up:
            row.state = "gave_up"
        else:
            row.next_at_ms = self._clock.wall_ms() + round(retry_in_s * 1000)
        return True


def _stamps(heard: list[Mapping[str, str]]) -> list[int]:
    """The `t` of each request's signature, in order."""
    return [
        int(dict(part.split("=", 1) for part in headers["Wheel-Signature"].split(","))["t"])
        for headers in heard
    ]


def _sender(
    outbox: _Outbox, clock: ManualClock, settings: SendSettings,
    rand: Callable[[], float] = lambda: 1.0,  # the whole backoff, no random half
) -> Sender:  # fmt: skip
    return Sender(
        outbox,  # type: ignore[arg-type]  # the in-memory stand-in for `Outbox`
        replace(settings, denied_networks=()),
        node_id="node-a",
        clock=lambda: clock.wall_ms() / 1000,
        rand=rand,
    )


async def test_failed_tries_are_retried_after_a_backoff_that_doubles_to_its_cap() -> None:
    clock = ManualClock()
    outbox = _Outbox(clock)
    settings = SendSettings(backoff_base_s=2.0, backoff_cap_s=10.0, max_tries=10)
    heard: list[Mapping[str, str]] = []
    async with (
        answering([500] * 5 + [204], heard) as url,
        _sender(outbox, clock, settings) as sender,
    ):
        row = outbox.add(url)
        assert await sender.send_due() == 1, "due at once: the first try"
        for wait_s in (2, 4, 8, 10, 10):
            clock.advance(wait_s * 1000 - 1)
            assert await sender.send_due() == 0, f"not before its {wait_s} s backoff"
            clock.advance(1)
            assert await sender.send_due() == 1, f"tried again after {wait_s} s"
        assert row.state == "delivered"
    assert row.retry_in_s == [2.0, 4.0, 8.0, 10.0, 10.0, 0.0]
    first_s = outbox.rows[row.due.id].due.created_at.timestamp()
    assert [stamp - int(first_s) for stamp in _stamps(heard)] == [0, 2, 6, 14, 24, 34], (
        "each signature is stamped with the sender's clock at its try"
    )


async def test_a_notification_is_given_up_after_its_last_try_and_never_tried_again() -> None:
    clock = ManualClock()
    outbox = _Outbox(clock)
    settings = SendSettings(backoff_base_s=1.0, backoff_cap_s=60.0, max_tries=3)
    heard: list[Mapping[str, str]] = []
    async with answering([503], heard) as url, _sender(outbox, clock, settings) as sender:
        row = outbox.add(url)
        for wait_s in (0, 1, 2):
            clock.advance(wait_s * 1000)
            assert await sender.send_due() == 1
        assert row.state == "gave_up", "the third try was the last"
        assert row.retry_in_s == [1.0, 2.0, 0.0], "no backoff is asked after the last"
        clock.advance(3_600_000)
        assert await sender.send_due() == 0
    assert len(_stamps(heard)) == 3


async def test_a_random_half_spreads_the_retries_of_many_senders() -> None:
    clock = ManualClock()
    outbox = _Outbox(clock)
    settings = SendSettings(backoff_base_s=8.0, backoff_cap_s=60.0)
    halves = iter([0.0, 0.5])
    rand = lambda: next(halves)  # noqa: E731
    async with answering([500]) as url, _sender(outbox, clock, settings, rand) as sender:
        row = outbox.add(url)
        await sender.send_due()
        clock.advance(3999)
        assert await sender.send_due() == 0, "at least half the backoff"
        clock.advance(1)
        assert await sender.send_due() == 1, "the least wait: half of 8 s"
    assert row.retry_in_s == [4.0, 12.0], "half of 16 s, then half of the other half"

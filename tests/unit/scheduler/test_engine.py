"""The engine on a manual clock: fire → claim → dispatch → record, with no sleeps."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid
from datetime import timedelta

from tests.unit.scheduler.helpers import PARTITION, TOKEN, Bench, Heard, bench, due_runs, hello
from wheel.model.executions import AttemptResult, ClaimState, Outcome
from wheel.scheduler.links import Link
from wheel.scheduler.outgoing import Acknowledgements, Dispatches, Outgoing, Probe


async def _next(link: Link) -> Outgoing:
    message = await link.outbox.get()
    assert message is not None
    return message


def _connected(b: Bench, credit: int = 10) -> Link:
    link = b.links.connect(hello("ex", ("report",)), TOKEN)
    b.links.grant(link, "default", credit)
    return link


async def _dispatched(b: Bench, count: int) -> tuple[Link, Dispatches]:
    """`count` runs due now, dispatched in one message to one executor."""
    link = _connected(b)
    b.add(due_runs(uuid.uuid4(), count, overlap="allow", fire_at=b.now()))
    b.clock.advance(1)
    sent = await _next(link)
    assert isinstance(sent, Dispatches)
    return link, sent


async def test_a_run_is_claimed_ahead_dispatched_to_start_at_its_instant_and_recorded() -> None:
    b = bench(prefetch_ms=2000, lead_ms=250, claim_slice_ms=50, lease_s=30.0)
    e = b.engine
    e.start()
    try:
        link = _connected(b)
        due = due_runs(uuid.uuid4(), 1, overlap="allow", fire_at=b.now() + timedelta(seconds=5))
        assert b.add(due) == 1
        b.clock.advance(2999)
        assert len(e.ready) == 0, "not yet: 2 s ahead of 5 s is 3 s on"
        assert b.occurrences.claims == []
        b.clock.advance(1)
        sent = await _next(link)
        assert isinstance(sent, Dispatches)
        (dispatch,) = sent.items
        assert dispatch.key == due[0].key
        assert dispatch.start_at == due[0].fire_at, "the executor starts it at its instant"
        assert dispatch.deadline == due[0].fire_at + timedelta(seconds=60)
        assert link.credits["default"] == 9
        assert due[0].key in e.in_flight
        assert due[0].key not in e.known
        e.recorder.report(link, AttemptResult(dispatch.key, 1, Outcome.SUCCEEDED))
        ack = await _next(link)
        assert ack == Acknowledgements(accepted=(dataclasses.replace(sent.fences()[0]),))
        assert len(e.in_flight) == 0
        (recorded,) = b.occurrences.recorded
        assert (recorded.executor_id, recorded.executor_instance) == ("ex", "i1")
        assert (e.stats.claimed, e.stats.dispatched, e.stats.recorded) == (1, 1, 1)
    finally:
        await e.stop()


async def test_a_run_given_back_unstarted_is_asked_again_after_a_backoff_that_doubles() -> None:
    b = bench(prefetch_ms=0, lead_ms=0, claim_slice_ms=1)
    e = b.engine
    e.start()
    try:
        link = _connected(b)
        due = due_runs(uuid.uuid4(), 1, overlap="allow", fire_at=b.now())
        b.add(due)
        b.clock.advance(1)
        for backoff_ms in (1000, 2000, 4000):
            sent = await _next(link)
            assert isinstance(sent, Dispatches)
            fence = sent.items[0].claimed.fence
            e.recorder.report(link, AttemptResult(due[0].key, fence, Outcome.NOT_STARTED))
            await _next(link)  # acknowledged; pending again, back in the wheel
            assert due[0].key in e.known
            b.clock.advance(backoff_ms - 1)
            assert len(e.ready) == 0, f"not before {backoff_ms} ms"
            b.clock.advance(1)
        assert isinstance(await _next(link), Dispatches)
        assert len(b.occurrences.claims) == 4
    finally:
        await e.stop()


async def test_a_released_partition_fires_nothing_and_a_reowned_one_loads_afresh() -> None:
    b = bench(prefetch_ms=0, lead_ms=0, claim_slice_ms=1)
    e = b.engine
    due = due_runs(uuid.uuid4(), 3, overlap="allow", fire_at=b.now() + timedelta(seconds=1))
    b.add(due)
    e.release(PARTITION)
    assert (len(e.driver), e.known) == (0, {})
    assert b.add(due) == 0, "not owned: nothing is filed"
    e.own(PARTITION, 2)
    assert b.add(due) == 3


def test_the_snapshot_and_stats_a_node_logs_are_plain_json() -> None:
    b = bench()
    e = b.engine
    _connected(b, credit=3)
    b.add(due_runs(uuid.uuid4(), 2, overlap="allow", fire_at=b.now() + timedelta(seconds=30)))
    e.stats.count_refused("result.not_yours")
    e.stats.count_refused("heartbeat.refused", 3)
    snapshot = e.snapshot()
    assert (snapshot.timers, snapshot.owned, snapshot.credit) == (2, 1, {"default": 3})
    assert e.upcoming() == {("default", "1m"): 2, ("default", "5m"): 2}
    document = {**dataclasses.asdict(e.stats), **snapshot.pressure}
    assert json.loads(json.dumps(document))["refused"] == {
        "result.not_yours": 1,
        "heartbeat.refused": 3,
    }


async def test_runs_the_claim_skips_are_counted_by_reason_and_forgotten() -> None:
    heard = Heard()
    b = bench(observer=heard, prefetch_ms=0, lead_ms=0, claim_slice_ms=1)
    e = b.engine
    e.start()
    try:
        _connected(b)
        due = due_runs(uuid.uuid4(), 1, overlap="skip", fire_at=b.now())
        b.occurrences.answers[due[0].key] = ClaimState.SKIPPED
        b.add(due)
        b.clock.advance(1)
        await asyncio.wait_for(b.occurrences.asked.wait(), 10)
        await e.claims.stop()  # the claim's answer handled
        assert ("skipped", ("overlap", 1)) in heard.events
        assert due[0].key not in e.known
        e.note_skipped("misfire", 3)
        assert ("skipped", ("misfire", 3)) in heard.events
    finally:
        await e.stop()


async def test_a_lapse_holds_an_executor_back_only_if_it_was_silent_and_then_it_is_probed() -> None:
    b = bench(prefetch_ms=0, lead_ms=0, claim_slice_ms=1, lease_s=10.0, heartbeat_interval_s=1.0)
    e = b.engine
    e.start()
    try:
        link, sent = await _dispatched(b, 2)
        first, second = sent.fences()
        # The store let a lease lapse (it was away) while the executor kept talking.
        b.clock.advance(1500)
        e.links.heard(link)
        b.occurrences.lapsed = [first]
        assert await e.reap() == 1
        assert not link.held_back, "a lapse the store caused is not the executor's"
        # Silent for more than two heartbeat intervals: paused, frozen or cut off.
        b.clock.advance(2001)
        b.occurrences.lapsed = [second]
        assert await e.reap() == 1
        assert link.held_back
        assert await _next(link) == Probe(1), "asked at once"
        b.clock.advance(1000)
        assert e.probe() == 1, "and again every heartbeat interval"
        assert await _next(link) == Probe(2)
        e.links.heard(link)
        assert not link.held_back
    finally:
        await e.stop()


async def test_the_reaper_spares_attempts_whose_result_or_heartbeat_waits_to_be_recorded() -> None:
    b = bench(prefetch_ms=0, lead_ms=0, claim_slice_ms=1)
    e = b.engine
    e.start()
    try:
        link, sent = await _dispatched(b, 3)
        beating, done, silent = sent.fences()
        b.occurrences.heartbeats_open.clear()  # the store is away
        b.occurrences.records_open.clear()
        e.recorder.heartbeat(link, beating)
        e.recorder.report(link, AttemptResult(done.key, done.fence, Outcome.SUCCEEDED))
        assert e.recorder.reporting() == {beating, done}
        await asyncio.sleep(0)  # the batchers take them: being recorded, not yet recorded
        assert e.recorder.reporting() == {beating, done}
        b.occurrences.lapsed = [beating, done, silent]
        assert await e.reap() == 1, "only the attempt nobody spoke of"
        assert b.occurrences.spared[-1] == {beating, done}
        assert silent.key not in e.in_flight
        assert {beating.key, done.key} <= set(e.in_flight)
    finally:
        b.occurrences.heartbeats_open.set()
        b.occurrences.records_open.set()
        await e.stop()
    assert e.recorder.reporting() == set()


async def test_ready_runs_that_a_held_back_executor_s_credit_cannot_take_are_a_stall() -> None:
    b = bench(prefetch_ms=0, lead_ms=0, claim_slice_ms=1, dispatch_stall_s=30.0)
    e = b.engine
    e.start()
    try:
        link = _connected(b)
        e.links.hold_back(link)
        assert await _next(link) == Probe(1)
        b.add(due_runs(uuid.uuid4(), 3, overlap="allow", fire_at=b.now()))
        b.clock.advance(29_999)
        assert len(e.ready) == 3
        assert e.stalled() is None, "not for 30 s yet"
        b.clock.advance(1)
        reason = e.stalled()
        assert reason is not None
        assert "dispatch stalled in pool 'default': 3 runs ready" in reason
        assert "executors that serve it hold credit (ex 10)" in reason
        assert "held back after a lapsed lease, not answering: ex (1 probes)" in reason
        assert e.snapshot().stalled == reason
        e.links.heard(link)  # it answers
        assert isinstance(await _next(link), Dispatches)
        assert e.stalled() is None
    finally:
        await e.stop()


async def test_runs_waiting_for_credit_or_for_their_tenant_s_cap_are_not_a_stall() -> None:
    b = bench(prefetch_ms=0, lead_ms=0, claim_slice_ms=1, dispatch_stall_s=30.0,
              tenant_in_flight_cap=1)  # fmt: skip
    e = b.engine
    e.start()
    try:
        link = _connected(b, credit=0)
        b.add(due_runs(uuid.uuid4(), 3, overlap="allow", fire_at=b.now()))
        b.clock.advance(60_000)
        assert e.stalled() is None, "no credit: waiting for capacity"
        e.links.grant(link, "default", 5)
        assert isinstance(await _next(link), Dispatches)  # one: the tenant's cap is 1
        b.clock.advance(60_000)
        assert len(e.ready) == 2
        assert e.stalled() is None, "its tenant has no room: waiting for its cap"
    finally:
        await e.stop()


async def test_runs_whose_executor_is_busy_are_no_stall_while_another_s_credit_is_idle() -> None:
    b = bench(prefetch_ms=0, lead_ms=0, claim_slice_ms=1, dispatch_stall_s=30.0)
    e = b.engine
    e.start()
    try:
        busy = b.links.connect(hello("busy", ("report",)), TOKEN)  # no credit: all slots taken
        idle = b.links.connect(hello("idle", ("resize",), instance_id="i2"), TOKEN)
        b.links.grant(idle, "default", 10)
        b.add(due_runs(uuid.uuid4(), 2, overlap="allow", fire_at=b.now()))  # task "report"
        b.clock.advance(60_000)
        assert len(e.ready) == 2
        assert e.stalled() is None, "the credit there is for another task type"
        b.links.grant(busy, "default", 1)
        assert isinstance(await _next(busy), Dispatches)
    finally:
        await e.stop()


async def test_a_lost_stream_s_runs_not_due_soon_go_to_another_executor_at_once() -> None:
    """What was handed over ahead on a stream that ended goes back without a backoff;
    what is due within the margin stays the executor's (it may start it)."""
    b = bench(prefetch_ms=10_000, lead_ms=0, claim_slice_ms=1, lease_s=30.0)
    e = b.engine
    e.start()
    try:
        lost = _connected(b)
        later = due_runs(uuid.uuid4(), 1, overlap="allow", fire_at=b.now() + timedelta(seconds=5))
        soon = due_runs(uuid.uuid4(), 1, overlap="allow",
                        fire_at=b.now() + timedelta(milliseconds=500))  # fmt: skip
        b.add(later + soon)
        b.clock.advance(1)
        sent = await _next(lost)
        assert isinstance(sent, Dispatches)
        assert {item.key for item in sent.items} == {later[0].key, soon[0].key}
        other = b.links.connect(hello("other", ("report",), instance_id="i2"), TOKEN)
        b.links.grant(other, "default", 10)
        assert e.link_lost(lost) == 1
        assert e.link_lost(lost) == 0, "heard twice, given back once"
        await asyncio.wait_for(e.recorder.flush(), 10)  # given back: refiled for its instant
        b.clock.advance(1)
        again = await _next(other)
        assert isinstance(again, Dispatches)
        assert [(item.key, item.claimed.fence) for item in again.items] == [(later[0].key, 2)]
        assert again.items[0].start_at == later[0].fire_at, "no backoff: still on time"
        assert soon[0].key in e.in_flight, "the executor may start it: its lease decides"
        (given,) = [r for r in b.occurrences.recorded if r.key == later[0].key]
        assert (given.outcome, given.fence) == (Outcome.NOT_STARTED, 1)
    finally:
        await e.stop()


async def test_an_executor_that_holds_runs_and_answers_nothing_is_let_go() -> None:
    """Frozen or cut off while its stream looks up: asked every interval, let go after
    four, and what it held that is not due yet goes back to be claimed again."""
    b = bench(prefetch_ms=10_000, lead_ms=0, claim_slice_ms=1, lease_s=30.0,
              heartbeat_interval_s=1.0)  # fmt: skip
    e = b.engine
    e.start()
    try:
        link = _connected(b)
        b.add(due_runs(uuid.uuid4(), 1, overlap="allow", fire_at=b.now() + timedelta(seconds=8)))
        b.clock.advance(1)
        assert isinstance(await _next(link), Dispatches)
        b.clock.advance(1000)
        assert e.probe() == 1
        assert await _next(link) == Probe(1), "silent for an interval: asked"
        b.clock.advance(2999)  # silent 4 s since it connected
        e.probe()
        assert link.open, "four intervals: not yet"
        b.clock.advance(2)
        e.probe()
        assert not link.open
        await asyncio.wait_for(e.recorder.flush(), 10)
        (given,) = b.occurrences.recorded
        assert given.outcome is Outcome.NOT_STARTED
    finally:
        await e.stop()


async def test_runs_created_on_this_node_are_claimed_at_once_if_due_else_left_to_the_loader() -> (
    None
):
    b = bench(prefetch_ms=2000, lead_ms=250, claim_slice_ms=50, lease_s=30.0)
    e = b.engine
    e.start()
    try:
        link = _connected(b)
        due_now = due_runs(uuid.uuid4(), 1, overlap="allow", fire_at=b.now())
        in_a_minute = due_runs(uuid.uuid4(), 1, overlap="allow",
                               fire_at=b.now() + timedelta(minutes=1))  # fmt: skip
        for run in (*due_now, *in_a_minute):  # committed: the store has them
            b.occurrences.due[run.key] = run
        assert e.add_created([*due_now, *in_a_minute]) == 1
        assert in_a_minute[0].key not in e.known, "the loader's, in its window"
        b.clock.advance(1)
        sent = await _next(link)
        assert isinstance(sent, Dispatches)
        assert [d.key for d in sent.items] == [due_now[0].key]
        assert e.add_due(due_now) == 0, "the notified load finds it in flight and leaves it"
    finally:
        await e.stop()


async def test_a_crowded_instant_is_claimed_as_early_as_its_hand_over_takes() -> None:
    b = bench(prefetch_ms=500, lead_ms=250, claim_slice_ms=50, handover_rate_per_s=1000.0)
    e = b.engine
    e.start()
    try:
        instant = b.now() + timedelta(seconds=60)
        crowd = due_runs(uuid.uuid4(), 3000, overlap="allow", fire_at=instant)
        quiet = due_runs(uuid.uuid4(), 1, overlap="allow", fire_at=instant + timedelta(seconds=40))
        assert b.add(crowd + quiet) == 3001
        b.clock.advance(60_000 - 3000 - 1)
        assert len(e.ready) == 0, "3,000 runs at 1,000/s: not before 3 s ahead"
        b.clock.advance(1)
        assert len(e.ready) > 0, "3 s ahead, not prefetch_ms (0.5 s)"
        waited_ms = 0
        while len(e.ready) < 3000 and waited_ms < 1000:  # the wheel fires 512 at a time
            b.clock.advance(5)
            waited_ms += 5
        assert len(e.ready) == 3000, "the whole instant within a second of it"
        b.clock.advance(3000 + 40_000 - 500 - 1 - waited_ms)
        assert len(e.ready) == 3000, "a quiet instant keeps prefetch_ms"
        b.clock.advance(1)
        assert len(e.ready) == 3001
    finally:
        await e.stop()

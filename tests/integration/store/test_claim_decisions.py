"""The claim's decisions tell the truth of their moment.

A run that waited past its job's misfire grace (no executor, a cap, a breaker)
meets the misfire policy at its claim, as after an outage, and its reason says
how long it waited, for what, and which rule skipped it. An overlap skip names
the run that was in flight, and each test reads that run back to check it
really was in flight then: handed over by the skipped run's instant, due, no
result. A run handed over after another's instant (both waited) is waited for,
not overlapped.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from tests.integration.store import factories as make
from wheel.durations import readable
from wheel.model.executions import (
    AttemptResult,
    ClaimState,
    Execution,
    ExecutionStatus,
    Fenced,
    Outcome,
)
from wheel.model.ids import ExecutionKey, PartitionId, new_job_id
from wheel.model.jobs import Job, MisfirePolicy, OverlapPolicy
from wheel.model.tenants import Tenant
from wheel.store import Store
from wheel.store.occurrences import UNBOUND, ExecutorBinding

EPOCH = 3
PARTITION = 4
GRACE = timedelta(minutes=1)
EXECUTOR = ExecutorBinding("executor-1", "instance-1")


def ago(seconds: float) -> datetime:
    return (datetime.now(UTC) - timedelta(seconds=seconds)).replace(microsecond=0)


async def owned(store: Store) -> dict[PartitionId, int]:
    epochs = {PartitionId(PARTITION): EPOCH}
    await store.occurrences.set_epochs(epochs, node_id="node-a")
    return epochs


async def runs(store: Store, owner: Tenant, job: Job, instants: list[datetime]) -> list[Execution]:
    return [await store.executions.get(owner.id, ExecutionKey(job.id, at)) for at in instants]


def waited_s(reason: str) -> float:
    """The wait a misfire's reason states, in seconds ("3 min 20 s", "25.7 s")."""
    match = re.match(r"misfire: waited (?:(\d+) min)? ?(?:([\d.]+) s)?", reason)
    assert match is not None, reason
    return int(match[1] or 0) * 60 + float(match[2] or 0)


@pytest.mark.parametrize(
    ("policy", "claimed"),
    [
        (MisfirePolicy.SKIP, [False, False, False, True]),
        (MisfirePolicy.FIRE_ONCE, [False, False, False, True]),
        (MisfirePolicy.FIRE_ALL, [False, False, True, True]),  # the replay cap is 2
    ],
)
async def test_runs_that_waited_past_their_grace_meet_the_misfire_policy_at_their_claim(
    store: Store, policy: MisfirePolicy, claimed: list[bool]
) -> None:
    owner = await make.tenant(store)
    job = await make.job(
        store, owner, partition=PARTITION, misfire=policy, misfire_grace=GRACE,
        misfire_replay_cap=2, overlap=OverlapPolicy.ALLOW,
    )  # fmt: skip
    # Nobody could run them: three waited past the grace, the last is only late.
    instants = [ago(200), ago(140), ago(80), ago(20)]
    await store.occurrences.insert([make.occurrence(job, at) for at in instants])
    keys = [ExecutionKey(job.id, at) for at in instants]
    outcome = await store.occurrences.claim_batch(
        keys, await owned(store), lease_s=30, ahead_s=1, executors=[EXECUTOR] * 4,
        waited=["for an executor"] * 4,
    )  # fmt: skip
    assert [k in {c.key for c in outcome.claimed} for k in keys] == claimed
    assert {u.key: u.state for u in outcome.unclaimed} == {
        k: ClaimState.MISFIRED for k, took in zip(keys, claimed, strict=True) if not took
    }
    rule = {
        MisfirePolicy.SKIP: " (policy skip)",
        MisfirePolicy.FIRE_ONCE: "; a later run fires instead (policy fire_once)",
        MisfirePolicy.FIRE_ALL: "; the latest 2 fire instead, the replay cap (policy fire_all)",
    }[policy]
    for execution, took in zip(await runs(store, owner, job, instants), claimed, strict=True):
        if took:
            assert execution.status is ExecutionStatus.DISPATCHED
            assert execution.reason is None
            continue
        assert execution.status is ExecutionStatus.SKIPPED
        reason = execution.reason or ""
        assert re.fullmatch(
            r"misfire: waited [\d. mins]+ for an executor, past its 1 min grace" + re.escape(rule),
            reason,
        ), reason
        assert execution.finished_at is not None
        # What it says it waited is what it waited, up to the moment of the skip.
        really = (execution.finished_at - execution.fire_at).total_seconds()
        assert really > GRACE.total_seconds()
        assert abs(waited_s(reason) - really) <= 1.0, (reason, really)


async def test_fire_once_fires_the_latest_missed_run_however_late(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(
        store, owner, partition=PARTITION, misfire=MisfirePolicy.FIRE_ONCE, misfire_grace=GRACE,
        overlap=OverlapPolicy.ALLOW,
    )  # fmt: skip
    instants = [ago(3600), ago(1800)]
    await store.occurrences.insert([make.occurrence(job, at) for at in instants])
    keys = [ExecutionKey(job.id, at) for at in instants]
    outcome = await store.occurrences.claim_batch(keys, await owned(store), lease_s=30, ahead_s=1)
    assert [c.key for c in outcome.claimed] == [keys[1]]
    (skipped,) = outcome.unclaimed
    assert (skipped.key, skipped.state) == (keys[0], ClaimState.MISFIRED)
    reason = (await runs(store, owner, job, instants[:1]))[0].reason or ""
    # The caller did not say what it waited for: the reason does not guess.
    assert reason.startswith("misfire: waited 1 h, past its 1 min grace; a later run fires")


async def test_a_retry_is_not_a_misfire(store: Store, database_dsn: str) -> None:
    owner = await make.tenant(store)
    job = await make.job(
        store, owner, partition=PARTITION, misfire=MisfirePolicy.SKIP, misfire_grace=GRACE,
        max_attempts=3, overlap=OverlapPolicy.ALLOW,
    )  # fmt: skip
    key = await make.failed_run(store, job, ago(30), attempts=1)  # within the grace, then failed
    epochs = await owned(store)
    async with await psycopg.AsyncConnection.connect(database_dsn, autocommit=True) as conn:
        # Its retry came due long before the claim, past the grace.
        await conn.execute(
            "UPDATE executions SET fire_at = now() - interval '10 minutes' WHERE job_id = %s",
            (job.id,),
        )
    outcome = await store.occurrences.claim_batch([key], epochs, lease_s=30, ahead_s=1)
    assert [c.key for c in outcome.claimed] == [key]


async def test_an_overlap_skip_names_the_run_that_was_in_flight_then(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=PARTITION, overlap=OverlapPolicy.SKIP)
    epochs = await owned(store)
    now = datetime.now(UTC)
    first = ago(2)
    # Two later runs, claimed ahead of their instants (as a node does, `lead_ms` ahead).
    second, third = now + timedelta(milliseconds=800), now + timedelta(milliseconds=900)
    await store.occurrences.insert([make.occurrence(job, at) for at in (first, second, third)])
    running = ExecutionKey(job.id, first)
    (claim,) = await store.occurrences.claim([running], epochs, lease_s=30, executors=[EXECUTOR])

    outcome = await store.occurrences.claim_batch(
        [ExecutionKey(job.id, second)], epochs, lease_s=30, ahead_s=1
    )
    assert [u.state for u in outcome.unclaimed] == [ClaimState.SKIPPED]
    # Nothing wrote the first run since: what is read now is what the claim saw.
    held, skipped = await runs(store, owner, job, [first, second])
    assert held.status is ExecutionStatus.DISPATCHED
    assert held.finished_at is None
    assert held.dispatched_at is not None
    assert skipped.finished_at is not None
    assert held.dispatched_at <= skipped.fire_at, "in flight at the skipped run's instant"
    assert held.fire_at <= skipped.finished_at, "and due by the skip"
    assert re.fullmatch(
        rf"overlap: run {re.escape(running.id)} was in flight \(handed to executor-1 "
        r"[\d.]+ m?s before, due [\d.]+ m?s before, no result yet\) \(policy skip\)",
        skipped.reason or "",
    ), skipped.reason

    # Its first heartbeat says the handler started: now it is running.
    assert await store.occurrences.heartbeat(
        [Fenced(running, claim.fence)], executor=EXECUTOR, lease_s=30
    ) == []  # fmt: skip
    outcome = await store.occurrences.claim_batch(
        [ExecutionKey(job.id, third)], epochs, lease_s=30, ahead_s=1
    )
    assert [u.state for u in outcome.unclaimed] == [ClaimState.SKIPPED]
    held, skipped = await runs(store, owner, job, [first, third])
    assert held.status is ExecutionStatus.RUNNING
    assert held.started_at is not None
    assert skipped.finished_at is not None
    assert held.started_at <= skipped.finished_at
    assert re.fullmatch(
        rf"overlap: run {re.escape(running.id)} was still running \(started [\d.]+ m?s "
        r"before, on executor-1\) \(policy skip\)",
        skipped.reason or "",
    ), skipped.reason


async def test_runs_that_waited_together_go_in_order_not_as_overlaps(store: Store) -> None:
    """Two runs waited for an executor (within the grace): the first is handed over after
    the second's instant, so the second did not overlap it then; it waits for it, and
    goes once the first's result is in."""
    owner = await make.tenant(store)
    job = await make.job(store, owner, partition=PARTITION, overlap=OverlapPolicy.SKIP)
    epochs = await owned(store)
    first, second = ago(10), ago(5)
    await store.occurrences.insert([make.occurrence(job, at) for at in (first, second)])
    earlier, later = ExecutionKey(job.id, first), ExecutionKey(job.id, second)
    (claim,) = await store.occurrences.claim([earlier], epochs, lease_s=30, executors=[EXECUTOR])
    outcome = await store.occurrences.claim_batch([later], epochs, lease_s=30, ahead_s=1)
    assert [(u.key, u.state) for u in outcome.unclaimed] == [(later, ClaimState.BLOCKED)]
    assert (await runs(store, owner, job, [second]))[0].status is ExecutionStatus.PENDING

    await store.occurrences.record_results(
        [AttemptResult(earlier, claim.fence, Outcome.SUCCEEDED, executor_id="executor-1",
                       executor_instance="instance-1")]
    )  # fmt: skip
    outcome = await store.occurrences.claim_batch(
        [later], epochs, lease_s=30, ahead_s=1, executors=[UNBOUND]
    )
    assert [c.key for c in outcome.claimed] == [later], "nothing in flight: it runs, late"


@pytest.mark.parametrize(
    "seconds", [0.0042, 0.5, 1.0, 25.7, 59.9, 60.0, 77.0, 200.2, 3599.0, 3600.0, 7500.0, 200_000.0]
)
async def test_reasons_read_durations_as_the_api_writes_them(
    database_dsn: str, seconds: float
) -> None:
    async with await psycopg.AsyncConnection.connect(database_dsn, autocommit=True) as conn:
        row = await (await conn.execute("SELECT wheel_readable(%s)", (seconds,))).fetchone()
    assert row is not None
    assert row[0] == readable(seconds)


async def test_reasons_spell_execution_ids_as_the_api_does(database_dsn: str) -> None:
    key = ExecutionKey(new_job_id(), datetime.now(UTC).replace(microsecond=456))
    async with await psycopg.AsyncConnection.connect(database_dsn, autocommit=True) as conn:
        row = await (
            await conn.execute("SELECT wheel_execution_id(%s, %s)", (key.job_id, key.scheduled_for))
        ).fetchone()
    assert row is not None
    assert row[0] == key.id


async def test_runs_missed_before_they_were_loaded_say_when_they_came_due(store: Store) -> None:
    """The rule on loading (a partition taken over, a job made for a past instant) says how
    long before the load each run came due: no claim about which scheduler was running."""
    owner = await make.tenant(store)
    job = await make.job(
        store, owner, partition=PARTITION, misfire=MisfirePolicy.FIRE_ONCE, misfire_grace=GRACE,
    )  # fmt: skip
    instants = [ago(200), ago(30), ago(10)]
    await store.occurrences.insert([make.occurrence(job, at) for at in instants])
    assert await store.occurrences.apply_misfire(await owned(store)) == 2
    old, recent, latest = await runs(store, owner, job, instants)
    assert latest.status is ExecutionStatus.PENDING
    fires = "; a later run fires instead (policy fire_once)"
    assert re.fullmatch(
        r"misfire: came due [\d. mins]+ before a scheduler loaded it, past its 1 min grace"
        + re.escape(fires),
        old.reason or "",
    ), old.reason
    # Within its grace, but a later run came due too: firing both would be a replay.
    assert re.fullmatch(
        r"misfire: came due [\d.]+ s before a scheduler loaded it" + re.escape(fires),
        recent.reason or "",
    ), recent.reason
    for run in (old, recent):
        assert run.finished_at is not None
        really = (run.finished_at - run.fire_at).total_seconds()
        stated = re.match(r"misfire: came due (?:(\d+) min)? ?(?:([\d.]+) s)?", run.reason or "")
        assert stated is not None
        assert abs(int(stated[1] or 0) * 60 + float(stated[2] or 0) - really) <= 1.0


async def test_with_no_grace_a_run_being_claimed_is_not_missed(store: Store) -> None:
    """A run due less than a second ago is being claimed, not waiting: even a job that
    allows no grace runs it; one that waited longer is skipped, and says so."""
    owner = await make.tenant(store)
    job = await make.job(
        store, owner, partition=PARTITION, misfire=MisfirePolicy.SKIP, misfire_grace=timedelta(0),
        overlap=OverlapPolicy.ALLOW,
    )  # fmt: skip
    now = datetime.now(UTC)
    instants = [now - timedelta(seconds=5), now - timedelta(milliseconds=200)]
    await store.occurrences.insert([make.occurrence(job, at) for at in instants])
    keys = [ExecutionKey(job.id, at) for at in instants]
    outcome = await store.occurrences.claim_batch(keys, await owned(store), lease_s=30, ahead_s=1)
    assert [c.key for c in outcome.claimed] == [keys[1]]
    assert [(u.key, u.state) for u in outcome.unclaimed] == [(keys[0], ClaimState.MISFIRED)]
    (missed,) = await runs(store, owner, job, instants[:1])
    assert re.fullmatch(
        r"misfire: waited [\d.]+ s, and its job allows no grace \(policy skip\)",
        missed.reason or "",
    ), missed.reason


async def test_a_queue_skip_names_the_queued_run_and_the_one_in_flight(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(
        store, owner, partition=PARTITION, overlap=OverlapPolicy.QUEUE, misfire_grace=GRACE
    )
    epochs = await owned(store)
    instants = [ago(9), ago(6), ago(3), ago(2)]
    await store.occurrences.insert([make.occurrence(job, at) for at in instants])
    running, queued, third, fourth = (ExecutionKey(job.id, at) for at in instants)
    (claim,) = await store.occurrences.claim([running], epochs, lease_s=30, executors=[EXECUTOR])
    assert await store.occurrences.skip_queued([(third, queued)]) == [third]
    held, skipped = await runs(store, owner, job, [instants[0], instants[2]])
    assert held.status is ExecutionStatus.DISPATCHED, "in flight when the skip was decided"
    assert skipped.reason == (
        f"overlap: run {queued.id} was already queued behind run {running.id}, in flight"
        " (policy queue)"
    )
    await store.occurrences.record_results(
        [AttemptResult(running, claim.fence, Outcome.SUCCEEDED, executor_id="executor-1",
                       executor_instance="instance-1")]
    )  # fmt: skip
    assert await store.occurrences.skip_queued([(fourth, queued)]) == [], "nothing in flight"
    assert (await runs(store, owner, job, [instants[3]]))[0].status is ExecutionStatus.PENDING


async def _hand_over(database_dsn: str, key: ExecutionKey, **columns: datetime) -> None:
    """Set a run's instants as if it had been handed over (or retried) then."""
    sets = ", ".join(f"{name} = %({name})s" for name in columns)
    async with await psycopg.AsyncConnection.connect(database_dsn, autocommit=True) as conn:
        await conn.execute(
            f"UPDATE executions SET {sets} WHERE job_id = %(job)s AND scheduled_for = %(at)s",
            {**columns, "job": key.job_id, "at": key.scheduled_for},
        )


async def test_a_missed_run_skipped_as_an_overlap_says_so(store: Store, database_dsn: str) -> None:
    # The robustness finding (seed 1271529138): Postgres was down while a run was in flight,
    # so the next one waited past its grace, and its claim skipped it as overlapping the run
    # whose result was not yet recorded; the reason said a later run fired instead, and none
    # had come due.
    owner = await make.tenant(store)
    job = await make.job(
        store, owner, partition=PARTITION, misfire=MisfirePolicy.FIRE_ONCE, misfire_grace=GRACE,
        overlap=OverlapPolicy.SKIP,
    )  # fmt: skip
    epochs = await owned(store)
    first, missed, later = ago(100), ago(90), datetime.now(UTC) + timedelta(seconds=30)
    await store.occurrences.insert([make.occurrence(job, first)])
    running = ExecutionKey(job.id, first)
    (_,) = await store.occurrences.claim([running], epochs, lease_s=300, executors=[EXECUTOR])
    await _hand_over(database_dsn, running, dispatched_at=first)  # on time, then Postgres went
    await store.occurrences.insert([make.occurrence(job, at) for at in (missed, later)])
    outcome = await store.occurrences.claim_batch(
        [ExecutionKey(job.id, missed)], epochs, lease_s=30, ahead_s=1
    )
    assert [u.state for u in outcome.unclaimed] == [ClaimState.SKIPPED]
    (skipped,) = await runs(store, owner, job, [missed])
    assert re.fullmatch(
        rf"overlap: run {re.escape(running.id)} was in flight \(handed to executor-1 "
        r"[\d. mins]+ before, due [\d. mins]+ before, no result yet\) \(policy skip\)",
        skipped.reason or "",
    ), skipped.reason


@pytest.mark.parametrize("earlier", ["in flight", "pending"])
async def test_fire_once_does_not_take_an_earlier_runs_retry_for_a_later_run(
    store: Store, database_dsn: str, earlier: str
) -> None:
    # A retry moves a run's fire_at, not its instant: an earlier run retried after a missed
    # run's instant is not a later run that fires instead of it.
    owner = await make.tenant(store)
    job = await make.job(
        store, owner, partition=PARTITION, misfire=MisfirePolicy.FIRE_ONCE, misfire_grace=GRACE,
        max_attempts=3, overlap=OverlapPolicy.ALLOW,
    )  # fmt: skip
    first, missed = ago(200), ago(90)
    retried = await make.failed_run(store, job, first, attempts=1)
    epochs = await owned(store)
    if earlier == "in flight":
        (_,) = await store.occurrences.claim([retried], epochs, lease_s=300)
    await _hand_over(database_dsn, retried, fire_at=ago(70))  # its retry came due after `missed`
    await store.occurrences.insert([make.occurrence(job, missed)])
    key = ExecutionKey(job.id, missed)
    outcome = await store.occurrences.claim_batch([key], epochs, lease_s=30, ahead_s=1)
    assert [c.key for c in outcome.claimed] == [key], outcome.unclaimed


async def test_fire_once_does_not_count_a_later_run_claimed_ahead_of_its_instant(
    store: Store,
) -> None:
    # A node claims a run `lead_ms` before its instant: in flight, it has not come due, and a
    # missed run claimed meanwhile is the latest due one: it fires.
    owner = await make.tenant(store)
    job = await make.job(
        store, owner, partition=PARTITION, misfire=MisfirePolicy.FIRE_ONCE, misfire_grace=GRACE,
        overlap=OverlapPolicy.ALLOW,
    )  # fmt: skip
    epochs = await owned(store)
    missed, ahead = ago(90), datetime.now(UTC) + timedelta(seconds=5)
    await store.occurrences.insert([make.occurrence(job, at) for at in (missed, ahead)])
    (_,) = await store.occurrences.claim([ExecutionKey(job.id, ahead)], epochs, lease_s=30)
    key = ExecutionKey(job.id, missed)
    outcome = await store.occurrences.claim_batch([key], epochs, lease_s=30, ahead_s=1)
    assert [c.key for c in outcome.claimed] == [key], outcome.unclaimed

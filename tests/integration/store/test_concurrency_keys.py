"""A concurrency key's limit holds across a tenant's jobs and concurrent claims, kept by
claims and every record; another tenant's key of the same name is another key."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import psycopg

from tests.integration.store import factories as make
from tests.integration.store.waiting import blocked_on_a_lock
from wheel.model.executions import AttemptResult, ClaimState, ExecutionStatus, Outcome
from wheel.model.ids import ExecutionKey, PartitionId
from wheel.model.jobs import Policies
from wheel.model.tenants import Tenant
from wheel.store import Store

LEASE_S = 30.0
AHEAD_S = 3600.0
EPOCHS = {PartitionId(4): 1}


async def keyed_runs(
    store: Store, owner: Tenant, count: int, *, key: str = "billing", limit: int = 1,
    at: datetime | None = None,
) -> list[ExecutionKey]:  # fmt: skip
    """`count` runs due now, each of its own job, all with concurrency key `key`."""
    jobs = [
        await make.job(store, owner, partition=4, concurrency_key=key, concurrency_limit=limit)
        for _ in range(count)
    ]
    instant = at or datetime.now(UTC).replace(microsecond=0)
    occurrences = [make.occurrence(job, instant) for job in jobs]
    await store.occurrences.insert(occurrences)
    return [o.key for o in occurrences]


async def in_flight(store: Store, owner: Tenant, key: str = "billing") -> int:
    holders = await store.executions.holding_keys(owner.id, [key])
    async with store.pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT coalesce(sum(in_flight), 0) FROM concurrency_keys"
            " WHERE tenant_id = %s AND key = %s",
            (owner.id, key),
        )
        row = await cursor.fetchone()
    assert row is not None
    assert row[0] == holders[key].count, "the counter and the runs in flight agree"
    return int(row[0])


async def test_concurrent_claims_from_two_nodes_never_pass_a_keys_limit(
    store: Store, database_dsn: str
) -> None:
    owner = await store.tenants.create("keyed")
    other = await store.tenants.create("other")
    keys = await keyed_runs(store, owner, 8)
    two = await keyed_runs(store, owner, 5, key="reports", limit=2)
    theirs = await keyed_runs(store, other, 2)  # the same key's name, another tenant
    plain_run = make.occurrence(await make.job(store, owner, partition=4),
                                datetime.now(UTC).replace(microsecond=0))  # fmt: skip
    await store.occurrences.insert([plain_run])
    plain = [plain_run.key]
    assert await store.occurrences.set_epochs(EPOCHS, node_id="node-a") == [PartitionId(4)]
    second_node = await Store.open(database_dsn, min_size=1, max_size=2)
    try:
        first, second = await asyncio.gather(
            store.occurrences.claim_batch(keys[:4] + two[:3] + theirs[:1] + plain, EPOCHS,
                                          lease_s=LEASE_S, ahead_s=AHEAD_S),
            second_node.occurrences.claim_batch(keys[4:] + two[3:] + theirs[1:], EPOCHS,
                                                lease_s=LEASE_S, ahead_s=AHEAD_S),
        )  # fmt: skip
    finally:
        await second_node.close()
    claimed = {c.key for c in first.claimed + second.claimed}
    held = {u.key for u in first.unclaimed + second.unclaimed if u.state is ClaimState.AT_KEY_LIMIT}
    assert len(claimed & set(keys)) == 1, "one 'billing' run at most, across jobs and claims"
    assert len(claimed & set(two)) == 2
    assert len(claimed & set(theirs)) == 1, "the other tenant's 'billing' is its own"
    assert set(plain) <= claimed, "a run without a key is not held"
    assert held == (set(keys) | set(two) | set(theirs)) - claimed
    assert await in_flight(store, owner) == 1
    assert await in_flight(store, owner, "reports") == 2
    assert await in_flight(store, other) == 1
    (waiting,) = [k for k in keys if k not in claimed][:1]
    assert (await store.executions.get(owner.id, waiting)).status is ExecutionStatus.PENDING


async def test_every_way_out_of_flight_gives_the_key_back(store: Store) -> None:
    owner = await store.tenants.create("released")
    first, second, third, fourth = await keyed_runs(store, owner, 4)
    await store.occurrences.set_epochs(EPOCHS, node_id="node-a")

    async def claim(key: ExecutionKey, lease_s: float = LEASE_S) -> int:
        outcome = await store.occurrences.claim_batch(
            [key], EPOCHS, lease_s=lease_s, ahead_s=AHEAD_S
        )
        assert [c.key for c in outcome.claimed] == [key]
        return outcome.claimed[0].fence

    fence = await claim(first)
    assert await in_flight(store, owner) == 1
    held = await store.occurrences.claim_batch([second], EPOCHS, lease_s=LEASE_S, ahead_s=AHEAD_S)
    assert [u.state for u in held.unclaimed] == [ClaimState.AT_KEY_LIMIT]
    await store.executions.cancel(owner.id, second)  # a waiting run cancelled: nothing moves
    assert await in_flight(store, owner) == 1

    await store.occurrences.record_results([AttemptResult(first, fence, Outcome.SUCCEEDED)])
    assert await in_flight(store, owner) == 0, "a result gives the key back"

    await claim(third, lease_s=0.001)
    async with asyncio.timeout(10):  # the fault: a lease of 1 ms runs out
        while not await store.occurrences.reap(EPOCHS):
            continue
    assert await in_flight(store, owner) == 0, "an expired lease gives the key back"

    fence = await claim(fourth)
    await store.occurrences.record_results([AttemptResult(fourth, fence, Outcome.NOT_STARTED)])
    assert await in_flight(store, owner) == 0, "an attempt given back gives the key back"
    assert (await store.executions.get(owner.id, fourth)).status is ExecutionStatus.PENDING


async def test_a_claim_that_read_a_stale_count_is_redone_under_the_lock(
    store: Store, database_dsn: str
) -> None:
    owner = await store.tenants.create("contended-key")
    keys = await keyed_runs(store, owner, 2)
    await store.occurrences.set_epochs(EPOCHS, node_id="node-a")
    async with await psycopg.AsyncConnection.connect(database_dsn) as other_node:
        # Another node's claim of the first run, counted but not yet committed.
        await other_node.execute("SELECT wheel_count_in_flight(%s, %s, true)", ([owner.id], [1]))
        await other_node.execute(
            "SELECT wheel_count_keys(%s, %s, %s, %s)", ([owner.id], ["billing"], [1], [0])
        )
        claim = asyncio.create_task(
            store.occurrences.claim_batch(keys[1:], EPOCHS, lease_s=LEASE_S, ahead_s=AHEAD_S)
        )
        await blocked_on_a_lock(database_dsn)  # it read the key free, and waits to count
        await other_node.commit()
    outcome = await claim
    assert outcome.claimed == []
    assert [u.state for u in outcome.unclaimed] == [ClaimState.AT_KEY_LIMIT]


async def test_runs_claimed_ahead_of_their_instant_are_held_to_the_limit(store: Store) -> None:
    owner = await store.tenants.create("ahead")
    keys = await keyed_runs(store, owner, 3, at=make.soon())
    await store.occurrences.set_epochs(EPOCHS, node_id="node-a")
    outcome = await store.occurrences.claim_batch(keys, EPOCHS, lease_s=LEASE_S, ahead_s=AHEAD_S)
    assert len(outcome.claimed) == 1
    assert {u.state for u in outcome.unclaimed} == {ClaimState.AT_KEY_LIMIT}


async def test_a_key_read_from_the_payload_and_an_edit_rekeys_pending_runs(store: Store) -> None:
    owner = await store.tenants.create("payload-keys")
    policies = Policies(concurrency_key_field="customer", concurrency_limit=1)
    made = []
    for customer in (b'"acme"', b'"acme"', b"42"):
        job = await make.job(store, owner, partition=4)
        spec = replace(job.spec, payload=b'{"customer": ' + customer + b"}", policies=policies)
        made.append(await store.jobs.update(owner.id, job.id, job.version, spec))
    at = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=1)
    await store.occurrences.insert([make.occurrence(job, at) for job in made])
    runs = [ExecutionKey(job.id, at) for job in made]
    assert [(await store.executions.get(owner.id, k)).concurrency_key for k in runs] == [
        "acme", "acme", "42"
    ]  # fmt: skip
    await store.occurrences.set_epochs(EPOCHS, node_id="node-a")
    outcome = await store.occurrences.claim_batch(runs, EPOCHS, lease_s=LEASE_S, ahead_s=AHEAD_S)
    assert {c.key for c in outcome.claimed} == {runs[0], runs[2]}
    assert [u.key for u in outcome.unclaimed] == [runs[1]]

    edited = made[1]
    spec = replace(edited.spec, payload=b'{"customer": "globex"}')
    await store.jobs.update(owner.id, edited.id, edited.version, spec)
    assert (await store.executions.get(owner.id, runs[1])).concurrency_key == "globex"
    assert (await store.executions.get(owner.id, runs[0])).concurrency_key == "acme", (
        "a run in flight keeps the key it is counted under"
    )


async def test_a_job_without_a_key_holds_none(store: Store) -> None:
    owner = await store.tenants.create("plain")
    job = await make.job(store, owner, partition=4)
    at = datetime.now(UTC).replace(microsecond=0)
    await store.occurrences.insert([make.occurrence(job, at)])
    assert (await store.executions.get(owner.id, ExecutionKey(job.id, at))).concurrency_key is None


async def _key_table_reads(store: Store) -> tuple[int, int, int]:
    """concurrency_keys' scans and row writes so far, and executions' updates (a canary)."""
    async with store.pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT coalesce(sum(seq_scan + coalesce(idx_scan, 0))"
            "           FILTER (WHERE relname = 'concurrency_keys'), 0),"
            "       coalesce(sum(n_tup_ins + n_tup_upd)"
            "           FILTER (WHERE relname = 'concurrency_keys'), 0),"
            "       coalesce(sum(n_tup_upd) FILTER (WHERE relname LIKE 'executions%'), 0)"
            " FROM pg_stat_user_tables"
        )
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


async def _claimed_and_recorded(
    store: Store, database_dsn: str, keys: list[ExecutionKey]
) -> tuple[int, int]:
    """Claim and record `keys` on one backend of its own; how many scans and row writes of
    concurrency_keys they cost, once that backend's statistics have been flushed."""
    scans, writes, updated = await _key_table_reads(store)
    node = await Store.open(database_dsn, min_size=1, max_size=1)
    try:
        outcome = await node.occurrences.claim_batch(keys, EPOCHS, lease_s=LEASE_S,
                                                     ahead_s=AHEAD_S)  # fmt: skip
        await node.occurrences.record_results(
            [AttemptResult(c.key, c.fence, Outcome.SUCCEEDED) for c in outcome.claimed]
        )
        async with node.pool.connection() as conn:
            await conn.execute("SELECT pg_stat_force_next_flush()")
    finally:
        await node.close()  # the backend ends: its statistics are flushed
    async with asyncio.timeout(10):
        while True:
            now = await _key_table_reads(store)
            if now[2] >= updated + 2 * len(keys):
                return now[0] - scans, now[1] - writes
            await asyncio.sleep(0.05)  # statistics reach shared memory on their own


async def test_runs_without_a_key_never_touch_the_keys_counts(
    store: Store, database_dsn: str
) -> None:
    owner = await store.tenants.create("free-of-keys")
    at = datetime.now(UTC).replace(microsecond=0)
    plain = [make.occurrence(await make.job(store, owner, partition=4), at) for _ in range(20)]
    await store.occurrences.insert(plain)
    await store.occurrences.set_epochs(EPOCHS, node_id="node-a")
    assert await _claimed_and_recorded(store, database_dsn, [o.key for o in plain]) == (0, 0)
    keyed = await keyed_runs(store, owner, 1)
    scans, writes = await _claimed_and_recorded(store, database_dsn, keyed)
    assert scans > 0, "a run with a key reads its key's count (the check sees it)"
    assert writes >= 2, "made, counted up, counted down"

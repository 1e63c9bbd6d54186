"""A tenant's max_in_flight is one cap for the whole cluster, kept by claims and records."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import psycopg

from tests.integration.store import factories as make
from tests.integration.store.waiting import blocked_on_a_lock
from wheel.model.executions import AttemptResult, ClaimState, Outcome
from wheel.model.ids import ExecutionKey, PartitionId
from wheel.model.tenants import Tenant
from wheel.store import Store

LEASE_S = 30.0
AHEAD_S = 3600.0


async def pending(
    store: Store, owner: Tenant, count: int, *, ahead: bool = False
) -> list[ExecutionKey]:
    """`count` runs of one tenant, due now (`ahead`: at an instant minutes away)."""
    jobs = [await make.job(store, owner, partition=4) for _ in range(count)]
    at = make.soon() if ahead else datetime.now(UTC).replace(microsecond=0)
    occurrences = [make.occurrence(job, at) for job in jobs]
    await store.occurrences.insert(occurrences)
    return [o.key for o in occurrences]


async def in_flight(store: Store, owner: Tenant) -> int:
    loaded = await store.tenants.load(owner.id)
    assert loaded is not None
    return loaded.in_flight


async def test_concurrent_claims_from_two_nodes_never_pass_the_cap(
    store: Store, database_dsn: str
) -> None:
    owner = await store.tenants.create("capped", max_in_flight=3)
    other_tenant = await store.tenants.create("uncapped", max_in_flight=100)
    keys = await pending(store, owner, 10)
    others = await pending(store, other_tenant, 4)
    epochs = {PartitionId(4): 1}
    assert await store.occurrences.set_epochs(epochs, node_id="node-a") == [PartitionId(4)]
    second_node = await Store.open(database_dsn, min_size=1, max_size=2)
    try:
        first, second = await asyncio.gather(
            store.occurrences.claim_batch(keys[:5] + others[:2], epochs, lease_s=LEASE_S,
                                          ahead_s=AHEAD_S),
            second_node.occurrences.claim_batch(keys[5:] + others[2:], epochs, lease_s=LEASE_S,
                                                ahead_s=AHEAD_S),
        )  # fmt: skip
    finally:
        await second_node.close()
    claimed = [c for c in first.claimed + second.claimed if c.tenant_id == owner.id]
    capped = [u for u in first.unclaimed + second.unclaimed if u.state is ClaimState.CAPPED]
    assert len(claimed) == 3, "three at most, however the two claims interleaved"
    assert sorted(u.key for u in capped) == sorted(set(keys) - {c.key for c in claimed})
    assert len([c for c in first.claimed + second.claimed if c.tenant_id == other_tenant.id]) == 4
    assert await in_flight(store, owner) == 3

    done = claimed[0]
    await store.occurrences.record_results([AttemptResult(done.key, done.fence, Outcome.SUCCEEDED)])
    assert await in_flight(store, owner) == 2, "a recorded attempt gives its room back"
    again = await store.occurrences.claim_batch(
        [u.key for u in capped], epochs, lease_s=LEASE_S, ahead_s=AHEAD_S
    )
    assert len(again.claimed) == 1
    assert await in_flight(store, owner) == 3


async def test_a_claim_that_read_a_stale_room_is_redone_under_the_lock(
    store: Store, database_dsn: str
) -> None:
    """The room is read unlocked: a claim that overshot (another committed first) rolls
    back and claims again with the tenant's row locked, leaving the rest capped."""
    owner = await store.tenants.create("contended", max_in_flight=3)
    keys = await pending(store, owner, 6)
    epochs = {PartitionId(4): 1}
    await store.occurrences.set_epochs(epochs, node_id="node-a")
    async with await psycopg.AsyncConnection.connect(database_dsn) as other_node:
        # Another node's claim of three, counted but not yet committed.
        await other_node.execute(
            "SELECT * FROM wheel_claim(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            ([4], [1], [k.job_id for k in keys[:3]], [k.scheduled_for for k in keys[:3]],
             [None] * 3, [None] * 3, LEASE_S, AHEAD_S, min(k.scheduled_for for k in keys[:3]),
             max(k.scheduled_for for k in keys[:3])),
        )  # fmt: skip
        await other_node.execute("SELECT wheel_count_in_flight(%s, %s, true)", ([owner.id], [3]))
        claim = asyncio.create_task(
            store.occurrences.claim_batch(keys[3:], epochs, lease_s=LEASE_S, ahead_s=AHEAD_S)
        )
        await blocked_on_a_lock(database_dsn)  # it read room for 3, and waits to count them
        await other_node.commit()
    outcome = await claim
    assert outcome.claimed == []
    assert sorted(u.key for u in outcome.unclaimed) == sorted(keys[3:])
    assert {u.state for u in outcome.unclaimed} == {ClaimState.CAPPED}
    assert await in_flight(store, owner) == 3
    pending_now = await store.occurrences.claim_batch(keys[3:], epochs, lease_s=LEASE_S,
                                                      ahead_s=AHEAD_S)  # fmt: skip
    assert pending_now.claimed == [], "the rolled-back claim left its runs pending and capped"


async def test_a_reaped_lease_gives_its_room_back(store: Store) -> None:
    owner = await store.tenants.create("reaped", max_in_flight=1)
    first, second = await pending(store, owner, 2)
    epochs = {PartitionId(4): 1}
    await store.occurrences.set_epochs(epochs, node_id="node-a")
    claim = await store.occurrences.claim_batch(
        [first, second], epochs, lease_s=0.001, ahead_s=AHEAD_S
    )
    assert [c.key for c in claim.claimed] == [first]
    assert [u.state for u in claim.unclaimed] == [ClaimState.CAPPED]
    async with asyncio.timeout(10):  # the fault: a lease of 1 ms runs out
        while not (reaped := await store.occurrences.reap(epochs)):
            continue
    assert [r.key for r in reaped] == [first]
    assert await in_flight(store, owner) == 0
    later = await store.occurrences.claim_batch([second], epochs, lease_s=LEASE_S, ahead_s=AHEAD_S)
    assert [c.key for c in later.claimed] == [second]


async def test_claims_and_records_of_one_tenant_racing_keep_the_count_true(
    store: Store, database_dsn: str
) -> None:
    """Two nodes claiming and recording for one tenant at once, many rounds. Locking the
    tenant's row inside the claim's own statement crashed Postgres 18.6 here (a recheck
    of the lock against a CTE); whatever interleaves, the count stays the truth."""
    owner = await store.tenants.create("busy", max_in_flight=300)
    keys = await pending(store, owner, 600)
    epochs = {PartitionId(4): 1}
    await store.occurrences.set_epochs(epochs, node_id="node-a")
    second = await Store.open(database_dsn, min_size=1, max_size=2)

    async def node(s: Store, mine: list[ExecutionKey]) -> int:
        done = 0
        for first in range(0, len(mine), 50):
            outcome = await s.occurrences.claim_batch(
                mine[first : first + 50], epochs, lease_s=LEASE_S, ahead_s=AHEAD_S,
                tenant_ids={owner.id},
            )  # fmt: skip
            results = [AttemptResult(c.key, c.fence, Outcome.SUCCEEDED) for c in outcome.claimed]
            done += len((await s.occurrences.record_results(results)).recorded)
        return done

    try:
        finished = await asyncio.gather(node(store, keys[::2]), node(second, keys[1::2]))
    finally:
        await second.close()
    assert sum(finished) == len(keys), "every run claimed once and recorded"
    assert await in_flight(store, owner) == 0


async def test_runs_claimed_ahead_of_their_instant_pass_the_cap_and_count(
    store: Store,
) -> None:
    """A planned spike of one tenant is handed over ahead in full; while those run, its
    runs due now wait for room."""
    owner = await store.tenants.create("spiky", max_in_flight=3)
    ahead = await pending(store, owner, 10, ahead=True)
    epochs = {PartitionId(4): 1}
    await store.occurrences.set_epochs(epochs, node_id="node-a")
    spike = await store.occurrences.claim_batch(ahead, epochs, lease_s=LEASE_S, ahead_s=AHEAD_S)
    assert len(spike.claimed) == 10, "not held back by the cap"
    assert await in_flight(store, owner) == 10, "and counted"
    assert all(c.lease_until >= c.fire_at for c in spike.claimed), "a whole lease past each"
    due = await pending(store, owner, 2)
    waiting = await store.occurrences.claim_batch(due, epochs, lease_s=LEASE_S, ahead_s=AHEAD_S)
    assert waiting.claimed == []
    assert {u.state for u in waiting.unclaimed} == {ClaimState.CAPPED}

"""The notification outbox against real Postgres: written by the statement that settles a run,
taken for one try at a time, fenced by its try, pruned after retention."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime, timedelta

from tests.integration.store import factories as make
from wheel.model.executions import AttemptResult, ExecutionStatus, Outcome
from wheel.model.ids import ExecutionKey, PartitionId
from wheel.model.notifications import DeliveryState
from wheel.store import Store

HOOK = make.HOOK
S = ExecutionStatus


async def test_a_run_that_goes_dead_leaves_one_notification_with_what_it_became(
    store: Store,
) -> None:
    owner = await make.hooked(store)
    job = await make.job(store, owner, max_attempts=2, backoff_base=timedelta(0))
    key = await make.failed_run(store, job, make.soon(), 2)
    (due,) = await store.outbox.claim("node-a", limit=10, lease_s=30)
    assert (due.key, due.status, due.attempt, due.url) == (key, S.DEAD, 2, HOOK)
    assert due.error is not None
    assert due.error.startswith("boom 1")
    assert (due.job_name, due.tenant_id, due.tries) == (job.spec.name, owner.id, 1)
    secret = (await store.webhooks.get(owner.id)).secret
    assert due.secrets == (secret,)
    assert secret.startswith("whsec_")


async def test_no_webhook_means_no_notification_and_a_retry_notifies_again(store: Store) -> None:
    quiet = await make.tenant(store)
    job = await make.job(store, quiet, max_attempts=1)
    await make.failed_run(store, job, make.soon(), 1)
    assert await store.outbox.claim("node-a", limit=10, lease_s=30) == []

    owner = await make.hooked(store)
    job = await make.job(store, owner, max_attempts=1)
    key = await make.failed_run(store, job, make.soon(), 1)
    await store.executions.retry(owner.id, key)
    epochs = {PartitionId(job.partition): 1}
    (claim,) = await store.occurrences.claim([key], epochs, lease_s=30)
    await store.occurrences.record_results([AttemptResult(key, claim.fence, Outcome.FAILED)])
    taken = await store.outbox.claim("node-a", limit=10, lease_s=30)
    # Each try's death, with that try's attempts (a retry starts a new try).
    assert [(d.key, d.status, d.attempt) for d in taken] == [(key, S.DEAD, 1), (key, S.DEAD, 1)]


async def test_a_jobs_own_url_wins_and_notifies_without_a_tenant_webhook(store: Store) -> None:
    owner = await make.tenant(store)
    job = await make.job(store, owner, max_attempts=1, notify_url="http://127.0.0.1:9/own")
    await make.failed_run(store, job, make.soon(), 1)
    (due,) = await store.outbox.claim("node-a", limit=10, lease_s=30)
    assert due.url == "http://127.0.0.1:9/own"


async def test_needs_review_is_announced_and_skipped_only_when_asked_for(store: Store) -> None:
    owner = await make.hooked(store)
    careful = await make.job(store, owner, idempotent=False)
    review = await make.failed_run(store, careful, make.soon(), 1)
    skipping = await make.job(store, owner)
    at = make.soon() + timedelta(minutes=1)
    await store.occurrences.insert([make.occurrence(skipping, at)])
    assert await store.occurrences.skip([ExecutionKey(skipping.id, at)], "overlap: test")
    taken = await store.outbox.claim("node-a", limit=10, lease_s=30)
    assert [(d.key, d.status) for d in taken] == [(review, S.NEEDS_REVIEW)]

    await store.webhooks.set(owner.id, url=HOOK, on=(S.SKIPPED,))
    later = at + timedelta(minutes=1)
    await store.occurrences.insert([make.occurrence(skipping, later)])
    await store.occurrences.skip([ExecutionKey(skipping.id, later)], "overlap: test")
    (due,) = await store.outbox.claim("node-a", limit=10, lease_s=30)
    assert (due.key, due.status, due.reason) == (
        ExecutionKey(skipping.id, later),
        S.SKIPPED,
        "overlap: test",
    )


async def test_a_run_inserted_skipped_by_the_misfire_policy_is_announced(store: Store) -> None:
    owner = await make.hooked(store, on=(S.SKIPPED,))
    job = await make.job(store, owner)
    at = make.soon()
    await store.occurrences.insert(
        [dataclasses.replace(make.occurrence(job, at), status=S.SKIPPED)]
    )
    (due,) = await store.outbox.claim("node-a", limit=10, lease_s=30)
    assert (due.key, due.status) == (ExecutionKey(job.id, at), S.SKIPPED)


async def test_a_taken_notification_is_no_other_senders_until_its_lease_ends(store: Store) -> None:
    owner = await make.hooked(store)
    job = await make.job(store, owner, max_attempts=1)
    await make.failed_run(store, job, make.soon(), 1)
    (first,) = await store.outbox.claim("node-a", limit=10, lease_s=0.3)
    assert await store.outbox.claim("node-b", limit=10, lease_s=30) == []
    await asyncio.sleep(0.4)  # the lease is a span of the database's clock: let it pass
    (second,) = await store.outbox.claim("node-b", limit=10, lease_s=30)
    assert (second.id, second.tries) == (first.id, 2)
    # node-a outlived its lease: its late outcome must not overwrite node-b's try.
    assert not await store.outbox.tried(first, delivered=True, status_code=200)
    assert await store.outbox.tried(second, delivered=False, retry_in_s=60, error="HTTP 503",
                                    status_code=503)  # fmt: skip
    (delivery,) = await store.outbox.of_run(owner.id, first.key)
    assert (delivery.state, delivery.tries, delivery.last_error) == (
        DeliveryState.PENDING, 2, "HTTP 503",
    )  # fmt: skip
    assert delivery.next_at is not None
    assert delivery.next_at > datetime.now(UTC) + timedelta(seconds=50)
    assert await store.outbox.claim("node-a", limit=10, lease_s=30) == []


async def test_concurrent_senders_never_take_the_same_notification(store: Store) -> None:
    owner = await make.hooked(store)
    job = await make.job(store, owner, max_attempts=1)
    start = make.soon()
    for n in range(20):
        await make.failed_run(store, job, start + timedelta(minutes=n), 1)
    batches = await asyncio.gather(
        *(store.outbox.claim(f"node-{n}", limit=7, lease_s=30) for n in range(4))
    )
    ids = [d.id for batch in batches for d in batch]
    assert len(ids) == len(set(ids)) == 20


async def test_delivered_and_abandoned_ones_are_pruned_and_pending_ones_kept(store: Store) -> None:
    owner = await make.hooked(store)
    job = await make.job(store, owner, max_attempts=1)
    start = make.soon()
    keys = [await make.failed_run(store, job, start + timedelta(minutes=n), 1) for n in range(3)]
    delivered, abandoned, pending = sorted(
        await store.outbox.claim("node-a", limit=10, lease_s=30), key=lambda d: d.key.scheduled_for
    )
    await store.outbox.tried(delivered, delivered=True, status_code=204)
    await store.outbox.tried(abandoned, delivered=False, give_up=True, error="refused: ...")
    states = {k: (await store.outbox.of_run(owner.id, k))[0].state for k in keys}
    assert list(states.values()) == [DeliveryState.DELIVERED, DeliveryState.GAVE_UP,
                                     DeliveryState.PENDING]  # fmt: skip
    assert await store.outbox.prune(datetime.now(UTC) + timedelta(minutes=1)) == 2
    assert [await store.outbox.of_run(owner.id, k) != [] for k in keys] == [False, False, True]
    assert pending.key == keys[2]


async def test_another_tenant_sees_none_of_a_runs_notifications(store: Store) -> None:
    owner = await make.hooked(store)
    other = await make.tenant(store)
    job = await make.job(store, owner, max_attempts=1)
    key = await make.failed_run(store, job, make.soon(), 1)
    assert len(await store.outbox.of_run(owner.id, key)) == 1
    assert await store.outbox.of_run(other.id, key) == []


async def test_a_rotated_secret_signs_beside_the_new_one_for_a_day(store: Store) -> None:
    owner = await make.hooked(store)
    before = (await store.webhooks.get(owner.id)).secret
    rotated = await store.webhooks.set(owner.id, url=HOOK, on=(S.DEAD,), rotate_secret=True)
    assert rotated.secret != before
    assert rotated.secret_rotated_at is not None
    job = await make.job(store, owner, max_attempts=1)
    await make.failed_run(store, job, make.soon(), 1)
    (due,) = await store.outbox.claim("node-a", limit=10, lease_s=30)
    assert due.secrets == (rotated.secret, before)
    unchanged = await store.webhooks.set(owner.id, url="", on=(S.DEAD,))
    assert (unchanged.url, unchanged.secret) == ("", rotated.secret)

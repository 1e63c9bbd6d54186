"""A paused job keeps its note, who paused it (the token's name) and when; resume clears them."""

from __future__ import annotations

import pytest

from tests.integration.store import factories as make
from wheel.errors import NotFound
from wheel.model.jobs import JobStatus
from wheel.model.pauses import Pause
from wheel.store import Store
from wheel.store.tenants import token_hash


async def test_a_pause_keeps_its_note_who_and_when_until_resumed(store: Store) -> None:
    owner = await make.tenant(store)
    _, alice = await store.tenants.create_token(owner.id, "alice")
    _, bob = await store.tenants.create_token(owner.id, "bob")
    job = await make.job(store, owner)

    paused = await store.jobs.pause(
        owner.id, job.id, note="vendor outage, INC-123", by_token=token_hash(alice)
    )
    assert paused.status is JobStatus.PAUSED
    assert paused.pause == Pause("vendor outage, INC-123", "alice", paused.updated_at)
    assert (await store.jobs.get(owner.id, job.id)).pause == paused.pause
    listed, _ = await store.jobs.list(owner.id)
    assert [j.pause for j in listed] == [paused.pause]
    assert (await store.jobs.many(owner.id, [job.id]))[job.id].pause == paused.pause

    again = await store.jobs.pause(
        owner.id, job.id, note="vendor outage, INC-123", by_token=token_hash(bob)
    )
    assert again.pause == paused.pause, "a repeated pause keeps the first who and when"

    other = await store.jobs.pause(
        owner.id, job.id, note="still down, INC-124", by_token=token_hash(bob)
    )
    assert other.pause == Pause("still down, INC-124", "bob", other.updated_at)
    assert other.updated_at >= paused.updated_at

    resumed = await store.jobs.resume(owner.id, job.id)
    assert (resumed.status, resumed.pause) == (JobStatus.ACTIVE, None)
    async with store.pool.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT pause_note, paused_by, paused_at FROM jobs WHERE id = %s", (job.id,)
            )
        ).fetchone()
    assert row == ("", "", None), "resume clears the columns, not only the answer"

    anonymous = await store.jobs.pause(owner.id, job.id)
    assert anonymous.pause == Pause("", "a person", anonymous.updated_at)


async def test_another_tenant_neither_pauses_nor_reads_the_note(store: Store) -> None:
    owner, stranger = await make.tenant(store), await make.tenant(store)
    _, theirs = await store.tenants.create_token(stranger.id, "mallory")
    job = await make.job(store, owner)
    await store.jobs.pause(owner.id, job.id, note="private")
    with pytest.raises(NotFound):
        await store.jobs.pause(stranger.id, job.id, note="mine now", by_token=token_hash(theirs))
    with pytest.raises(NotFound):
        await store.jobs.get(stranger.id, job.id)
    # A token of another tenant's names nobody here.
    other = await make.job(store, owner)
    paused = await store.jobs.pause(owner.id, other.id, by_token=token_hash(theirs))
    assert paused.pause == Pause("", "a person", paused.updated_at)
    first = await store.jobs.get(owner.id, job.id)
    assert first.pause == Pause("private", "a person", first.updated_at)


async def test_the_dev_views_recent_runs_carry_their_jobs_pause(store: Store) -> None:
    owner = await make.tenant(store)
    _, alice = await store.tenants.create_token(owner.id, "alice")
    job = await make.job(store, owner)
    at = make.soon()
    await store.occurrences.insert([make.occurrence(job, at)])
    paused = await store.jobs.pause(owner.id, job.id, note="outage", by_token=token_hash(alice))
    (recent,) = await store.executions.recent(owner.id, since=at, upcoming_s=3600, limit=5)
    assert (recent.job_status, recent.paused_by, recent.pause_note, recent.paused_at) == (
        "paused", "alice", "outage", paused.updated_at
    )  # fmt: skip

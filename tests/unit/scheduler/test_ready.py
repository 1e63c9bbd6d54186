"""The ready queues: priority first, round-robin across tenants, tenant room, one per job."""

from __future__ import annotations

import uuid
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from tests.unit.scheduler.helpers import A, B, C, item, unlimited
from wheel.model.ids import JobId, PartitionId, TenantId
from wheel.scheduler.ready import Ready, ReadyQueues


def test_round_robin_across_tenants_whatever_their_backlog() -> None:
    queues = ReadyQueues()
    for n in range(1000):
        queues.push(item(A, n))
    queues.push(item(B, 5000))
    taken = queues.take("default", 4, unlimited)
    assert [i.tenant for i in taken].count(B) == 1
    assert taken[1].tenant == B or taken[0].tenant == B


def test_higher_priority_first_across_tenants() -> None:
    queues = ReadyQueues()
    for n in range(5):
        queues.push(item(A, n))
    urgent = item(B, 99, priority=10)
    queues.push(urgent)
    assert queues.take("default", 1, unlimited) == [urgent]


def test_within_a_tenant_earliest_first() -> None:
    queues = ReadyQueues()
    items = [item(A, n) for n in (3, 1, 2)]
    for i in items:
        queues.push(i)
    assert [i.fire_at_ms for i in queues.take("default", 3, unlimited)] == sorted(
        i.fire_at_ms for i in items
    )


def test_a_tenant_without_room_waits_and_others_go() -> None:
    queues = ReadyQueues()
    for n in range(10):
        queues.push(item(A, n))
        queues.push(item(B, n))
    taken = queues.take("default", 10, lambda t: 2 if t == A else 100)
    assert Counter(i.tenant for i in taken) == {A: 2, B: 8}
    assert queues.waiting("default") == 10


def test_one_occurrence_per_exclusive_job_per_take() -> None:
    queues = ReadyQueues()
    job = JobId(uuid.uuid4())
    for n in range(3):
        queues.push(item(A, n, job=job, overlap="skip"))
    assert len(queues.take("default", 10, unlimited)) == 1
    assert queues.waiting("default") == 2


def test_pools_are_separate() -> None:
    queues = ReadyQueues()
    slow = item(A, 1, pool="slow")
    queues.push(slow)
    queues.push(item(A, 2))
    assert queues.take("slow", 10, unlimited) == [slow]
    assert queues.pools() == ["default"]


def test_dropping_a_partition_removes_only_its_items() -> None:
    queues = ReadyQueues()
    keep = [item(A, n, partition=1) for n in range(3)]
    drop = [item(B, n, partition=2) for n in range(3)]
    for i in keep + drop:
        queues.push(i)
    assert set(map(id, queues.drop_partition(PartitionId(2)))) == set(map(id, drop))
    assert set(map(id, queues.take("default", 10, unlimited))) == set(map(id, keep))


@given(
    st.lists(st.tuples(st.sampled_from([A, B, C]), st.integers(0, 3)), max_size=60),
    st.integers(1, 20),
)
def test_nothing_lost_or_duplicated(entries: list[tuple[TenantId, int]], batch: int) -> None:
    queues = ReadyQueues()
    pushed = [item(tenant, n, priority=priority) for n, (tenant, priority) in enumerate(entries)]
    for i in pushed:
        queues.push(i)
    taken: list[Ready] = []
    while True:
        got = queues.take("default", batch, unlimited)
        if not got:
            break
        assert [-i.priority for i in got] == sorted(-i.priority for i in got)
        taken.extend(got)
    assert sorted(map(id, taken)) == sorted(map(id, pushed))
    assert len(queues) == 0


def test_a_job_being_claimed_gets_no_second_occurrence_in_a_concurrent_claim() -> None:
    queues = ReadyQueues()
    job = JobId(uuid.uuid4())
    for n in range(2):
        queues.push(item(A, n, job=job, overlap="queue"))
    first = queues.take("default", 10, unlimited)
    assert len(first) == 1
    assert queues.take("default", 10, unlimited, busy={job}) == []
    assert len(queues.take("default", 10, unlimited)) == 1, "once that claim is done"


def test_a_tenant_s_runs_claimed_ahead_of_their_instant_need_no_room() -> None:
    """Only runs due by then are held to the tenant's room: a planned spike goes ahead."""
    queues = ReadyQueues()
    due = [item(B, n) for n in range(3)]
    ahead = [item(A, 100 + n) for n in range(3)]
    for i in (*due, *ahead):
        queues.push(i)
    due_by_ms = due[-1].fire_at_ms
    taken = queues.take("default", 10, lambda t: 0 if t == A else 1, due_by_ms=due_by_ms)
    assert Counter(i.tenant for i in taken) == {A: 3, B: 1}, "all of A's spike, B's room"
    assert queues.waiting("default") == 2

"""The whole system as users run it: 2-3 `wheel scheduler` processes, 2 `wheel executor`s.

Lateness figures are printed (run with -s to see them); they are measured,
not asserted: the machine is shared. What is asserted is behaviour: every
occurrence reaches the state it must, with the fences and attempts it must.
"""

from __future__ import annotations

import asyncio
import itertools
import signal
import statistics
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cluster import Cluster
from tests.e2e.runs import PARTITIONS, jobs, lateness_ms, settle, statuses, summary, whole_second
from tests.integration.coordinator.secured_etcd import PASSWORD, secured_etcd
from tests.integration.notify.receiver import HANG, Receiver
from wheel.api.server.registration import register_job
from wheel.model.http_tasks import HttpTask
from wheel.model.ids import ExecutionKey
from wheel.model.jobs import JobSpec, Policies, Schedule, ScheduleKind
from wheel.store import Store


async def up(cluster: Cluster, nodes: int = 3, executors: int = 2, **node_options: Any) -> None:
    for n in range(nodes):
        cluster.start_node(f"node-{n}", **node_options)
    for n in range(executors):
        cluster.start_executor(f"executor-{n}")
    try:
        await cluster.ready()
    except TimeoutError:
        pytest.fail(f"cluster did not settle\n{cluster.dump_logs()}")


async def test_one_off_jobs_fire_at_their_instant_once_each(cluster: Cluster, store: Store) -> None:
    await up(cluster)
    tenant = (await store.tenants.create("acme")).id
    when = whole_second(3)
    created = await jobs(
        store, tenant, "noop", [when + timedelta(milliseconds=50 * n) for n in range(200)]
    )
    ids = [j.id for j in created]
    await settle(cluster, ids, "succeeded")
    late = lateness_ms(cluster, ids)
    print(summary("one-off lateness", late))
    assert min(late) >= 0, "never early"
    attempts = cluster.query("SELECT count(*) FROM attempts WHERE job_id = ANY(%s)", ids)
    assert attempts[0][0] == len(ids), "each ran exactly once"


async def test_a_cron_job_fires_every_occurrence(cluster: Cluster, store: Store) -> None:
    await up(cluster)
    tenant = (await store.tenants.create("acme")).id
    spec = JobSpec(
        name="every second", task_type="noop",
        schedule=Schedule(kind=ScheduleKind.CRON, cron="* * * * * *"),
        policies=Policies(misfire_grace=timedelta(0)),
    )  # fmt: skip
    job = (await register_job(store, tenant, spec, partitions=PARTITIONS)).job
    start = datetime.now(UTC) + timedelta(seconds=3)
    end = start + timedelta(seconds=30)

    def fired() -> list[datetime]:
        rows = cluster.query(
            "SELECT scheduled_for FROM executions WHERE job_id = %s AND status = 'succeeded'"
            " AND scheduled_for >= %s AND scheduled_for < %s ORDER BY 1",
            job.id, start, end,
        )  # fmt: skip
        return [r[0] for r in rows]

    await cluster.wait_until(lambda: len(fired()) == 30, within=90)
    instants = fired()
    assert all(b - a == timedelta(seconds=1) for a, b in itertools.pairwise(instants))
    rows = cluster.query(
        "SELECT count(*), count(DISTINCT (job_id, scheduled_for)) FROM attempts"
        " WHERE job_id = %s AND scheduled_for >= %s AND scheduled_for < %s",
        job.id, start, end,
    )  # fmt: skip
    assert rows[0][0] == rows[0][1] == 30, "each occurrence ran once"
    print(summary("cron lateness", lateness_ms(cluster, [job.id])))


async def test_failures_retry_with_backoff_then_dead_or_needs_review(
    cluster: Cluster, store: Store
) -> None:
    await up(cluster, breaker_failures=100)  # ten failing jobs: not a broken task type
    tenant = (await store.tenants.create("acme")).id
    retrying = await jobs(
        store, tenant, "fail", [whole_second(2)] * 5, max_attempts=3,
        backoff_base=timedelta(milliseconds=300), backoff_cap=timedelta(seconds=1),
    )  # fmt: skip
    careful = await jobs(store, tenant, "fail", [whole_second(2)] * 5, idempotent=False)
    await settle(cluster, [j.id for j in retrying], "dead")
    await settle(cluster, [j.id for j in careful], "needs_review")
    rows = cluster.query(
        "SELECT job_id, array_agg(number ORDER BY number), array_agg(fence ORDER BY number),"
        " array_agg(outcome::text ORDER BY number), array_agg(error ORDER BY number)"
        " FROM attempts WHERE job_id = ANY(%s) GROUP BY job_id",
        [j.id for j in retrying],
    )
    for _, numbers, fences, outcomes, errors in rows:
        assert numbers == [1, 2, 3]
        assert fences == sorted(set(fences))
        assert outcomes == ["failed"] * 3
        assert all("boom" in e for e in errors)
    counts = cluster.query(
        "SELECT count(*) FROM attempts WHERE job_id = ANY(%s)", [j.id for j in careful]
    )
    assert counts[0][0] == len(careful), "never retried automatically"


async def test_a_killed_executor_s_work_runs_again_elsewhere_with_a_higher_fence(
    cluster: Cluster, store: Store
) -> None:
    await up(cluster)
    tenant = (await store.tenants.create("acme")).id
    (job,) = await jobs(store, tenant, "hang_first", [whole_second(2)])
    key = ExecutionKey(job.id, job.spec.schedule.at)  # type: ignore[arg-type]

    def running_on() -> str | None:
        rows = cluster.query(
            "SELECT executor_id FROM executions WHERE job_id = %s AND status = 'running'", job.id
        )
        return rows[0][0] if rows else None

    await cluster.wait_until(lambda: running_on() is not None)
    victim = running_on()
    assert victim is not None
    cluster.executors[victim].signal(signal.SIGKILL)
    await settle(cluster, [job.id], "succeeded")
    rows = cluster.query(
        "SELECT number, fence, executor_id, outcome::text FROM attempts"
        " WHERE job_id = %s ORDER BY number",
        job.id,
    )
    (first, second) = rows
    assert first[2] == victim
    assert first[3] == "lease_expired"
    assert second[2] != victim
    assert second[3] == "succeeded"
    assert second[1] > first[1], "a higher fence"
    assert key.id  # one execution, one id: both attempts are rows of the same key


async def test_a_stopped_executor_s_late_result_is_refused(cluster: Cluster, store: Store) -> None:
    await up(cluster)
    tenant = (await store.tenants.create("acme")).id
    # Attempt 1 sleeps 6 s: past the 3 s lease, so its result comes late.
    (job,) = await jobs(store, tenant, "hang_first", [whole_second(2)], payload=b"6")

    def running_on() -> str | None:
        rows = cluster.query(
            "SELECT executor_id FROM executions WHERE job_id = %s AND status = 'running'", job.id
        )
        return rows[0][0] if rows else None

    await cluster.wait_until(lambda: running_on() is not None)
    frozen = running_on()
    assert frozen is not None
    cluster.executors[frozen].signal(signal.SIGSTOP)
    await settle(cluster, [job.id], "succeeded")  # re-dispatched after the lease ran out
    cluster.executors[frozen].signal(signal.SIGCONT)

    def refused() -> bool:
        return any(e.get("event") in ("executions.stale_result_dropped", "executions.stale_fence")
                   for e in cluster.executors[frozen].events())  # fmt: skip

    await cluster.wait_until(refused, within=30)
    rows = cluster.query(
        "SELECT number, executor_id, outcome::text FROM attempts WHERE job_id = %s ORDER BY 1",
        job.id,
    )
    assert [(r[1] == frozen, r[2]) for r in rows] == [(True, "lease_expired"), (False, "succeeded")]
    assert statuses(cluster, [job.id]) == {"succeeded": 1}


async def test_a_killed_scheduler_node_s_partitions_still_fire(
    cluster: Cluster, store: Store
) -> None:
    await up(cluster)
    tenant = (await store.tenants.create("acme")).id
    start = whole_second(2)
    created = await jobs(
        store, tenant, "noop", [start + timedelta(milliseconds=250 * n) for n in range(40)]
    )
    await asyncio.sleep((start - datetime.now(UTC)).total_seconds() + 1)  # some fired already
    cluster.nodes["node-1"].signal(signal.SIGKILL)
    await settle(cluster, [j.id for j in created], "succeeded", within=90)
    late = lateness_ms(cluster, [j.id for j in created])
    print(summary("lateness across a node kill", late))


async def test_a_poison_task_ends_dead_and_does_not_walk_the_fleet(
    cluster: Cluster, store: Store
) -> None:
    for n in range(2):
        cluster.start_node(f"node-{n}")
    for n in range(2):
        cluster.start_executor(f"executor-{n}", supervise=True, via_etcd=True)
    await cluster.ready()
    tenant = (await store.tenants.create("acme")).id
    (job,) = await jobs(store, tenant, "poison", [whole_second(2)], max_attempts=3,
                        backoff_base=timedelta(milliseconds=100))  # fmt: skip
    await settle(cluster, [job.id], "dead", within=120)
    rows = cluster.query("SELECT outcome::text FROM attempts WHERE job_id = %s", job.id)
    assert [r[0] for r in rows] == ["lease_expired"] * 3

    def exits() -> list[int]:
        return sorted(code for p in cluster.executors.values() for code in p.exits)

    # The supervisor restarts the last one killed within its resync period.
    await cluster.wait_until(lambda: len(exits()) >= 3, within=10)
    assert exits() == [17, 17, 17], "each attempt killed one executor (exit 17), then it stopped"


async def test_a_tenant_s_spike_does_not_hold_back_another_tenant(
    cluster: Cluster, store: Store
) -> None:
    await up(cluster)
    noisy = (await store.tenants.create("noisy")).id
    quiet = (await store.tenants.create("quiet")).id
    when = whole_second(5)  # room to create 10,000 jobs first
    spike = await jobs(store, noisy, "noop", [when] * 10_000)
    (single,) = await jobs(store, quiet, "noop", [when])
    await settle(cluster, [j.id for j in spike], "succeeded", within=180)
    await settle(cluster, [single.id], "succeeded")
    noisy_late = lateness_ms(cluster, [j.id for j in spike])
    quiet_late = lateness_ms(cluster, [single.id])
    print(summary("noisy tenant (10,000 at once)", noisy_late))
    print(summary("quiet tenant (1)", quiet_late))
    assert quiet_late[0] <= statistics.median(noisy_late), "served within the first half of a spike"


async def test_processes_run_work_through_an_etcd_with_tls_and_a_password(
    cluster: Cluster, store: Store, tmp_path: Path
) -> None:
    """`wheel scheduler` as deployed against a secured etcd (TLS with client certificates and
    a user, set by flags and a password file, a mounted Secret), and a `wheel executor` that
    needs none of it: it is given a node."""
    async with secured_etcd(tmp_path) as secured:
        password = tmp_path / "etcd-password"
        password.write_text(PASSWORD)
        settings = {
            "etcd_endpoint": secured.endpoint,
            "etcd_ca_file": str(secured.authority.path),
            "etcd_cert_file": str(secured.client_cert),
            "etcd_key_file": str(secured.client_key),
            "etcd_user": "root",
            "etcd_password_file": str(password),
        }
        for n in range(2):
            cluster.start_node(f"node-{n}", **settings)
        # The executor holds no etcd setting at all: the nodes tell it the cluster.
        cluster.start_executor("executor-0")
        assert "--etcd" not in cluster.executors["executor-0"].argv
        await cluster.ready()
        tenant = (await store.tenants.create("secured")).id
        start = whole_second(2)
        instants = [start + timedelta(milliseconds=100 * n) for n in range(20)]
        created = await jobs(store, tenant, "noop", instants)
        await settle(cluster, [j.id for j in created], "succeeded")


async def test_an_http_task_outlives_a_frozen_node_and_its_stale_attempt_is_refused(
    cluster: Cluster, store: Store
) -> None:
    """Node processes POST an HTTP task to a local server; the node holding attempt 1 is
    frozen mid-request, the other node retries it once the lease runs out, and when the
    frozen one wakes its attempt is refused as stale and never recorded."""
    await up(cluster, nodes=2, executors=0)
    tenant = (await store.tenants.create("acme")).id
    async with Receiver.running(answers=[HANG, 200]) as receiver:
        target = HttpTask(receiver.url)
        spec = JobSpec(name="post", task_type=target.task_type, payload=b'{"n": 1}', http=target,
                       schedule=Schedule(kind=ScheduleKind.AT, at=whole_second(2)),
                       policies=Policies(timeout=timedelta(minutes=2),
                                         backoff_base=timedelta(milliseconds=100)))  # fmt: skip
        job = (await register_job(store, tenant, spec, partitions=PARTITIONS)).job
        (first,) = await receiver.received(1, within=30)
        holder = cluster.query("SELECT executor_id FROM executions WHERE job_id = %s", job.id)
        frozen = str(holder[0][0]).removeprefix("http@")
        cluster.nodes[frozen].signal(signal.SIGSTOP)
        await settle(cluster, [job.id], "succeeded", within=60)
        cluster.nodes[frozen].signal(signal.SIGCONT)

        def refused() -> bool:
            return any(e.get("event") == "http_task.stale" and e.get("cancelled")
                       for e in cluster.nodes[frozen].events())  # fmt: skip

        await cluster.wait_until(refused, within=30)
        second = receiver.requests[1]
        assert len(receiver.requests) == 2
    assert first.headers["Idempotency-Key"] == second.headers["Idempotency-Key"]
    assert int(second.headers["Wheel-Fence"]) > int(first.headers["Wheel-Fence"])
    rows = cluster.query(
        "SELECT number, executor_id, outcome::text FROM attempts WHERE job_id = %s ORDER BY 1",
        job.id,
    )
    assert [(r[1] == f"http@{frozen}", r[2]) for r in rows] == [
        (True, "lease_expired"), (False, "succeeded"),
    ]  # fmt: skip

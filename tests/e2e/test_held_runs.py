"""Runs handed to an executor ahead of their instant stay safe when it goes.

One node hands the runs of one instant to two executors seconds ahead of it
(claim-ahead). One executor is then killed, or frozen, before the instant.
Its held runs go to the other executor in bounded time: at once when it dies
(its stream ends), within the keepalive timeout when it is frozen. Each run
starts once, on time, and no result under a superseded fence is recorded.
A frozen executor that wakes after its node gave its runs away starts none
of them: their stream is gone.
"""

from __future__ import annotations

import signal
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.e2e.cluster import Cluster
from tests.e2e.runs import jobs
from wheel.model.ids import TenantId
from wheel.store import Store

RUNS = 20


async def handed_over(
    cluster: Cluster, store: Store, tenant: TenantId, instant: datetime
) -> tuple[list[Any], str]:
    """RUNS jobs due at `instant`, once every run is held by one executor or the other:
    the jobs, and an executor that holds some."""
    made = await jobs(store, tenant, "noop", [instant] * RUNS)
    ids = [job.id for job in made]

    def holders() -> dict[str, int]:
        rows = cluster.query(
            "SELECT executor_id, count(*) FROM executions WHERE job_id = ANY(%s)"
            " AND status = 'dispatched' GROUP BY 1",
            ids,
        )
        return {str(r[0]): int(r[1]) for r in rows}

    await cluster.wait_until(lambda: sum(holders().values()) == RUNS and len(holders()) == 2)
    assert datetime.now(UTC) < instant, "handed over ahead of the instant"
    return made, sorted(holders())[0]


def assert_each_started_once_on_time(
    cluster: Cluster, made: list[Any], instant: datetime, gone: str, within_s: float
) -> None:
    rows = cluster.query(
        "SELECT job_id, count(*) FILTER (WHERE started_at IS NOT NULL),"
        " array_agg(outcome::text ORDER BY fence), max(started_at),"
        " bool_or(executor_id = %s AND started_at IS NOT NULL)"
        " FROM attempts WHERE job_id = ANY(%s) GROUP BY job_id",
        gone, [job.id for job in made],
    )  # fmt: skip
    assert len(rows) == RUNS
    for job_id, started, outcomes, started_at, by_gone in rows:
        assert started == 1, f"{job_id}: started {started} times ({outcomes})"
        assert "lease_expired" not in outcomes, f"{job_id}: waited for its lease: {outcomes}"
        assert outcomes[-1] == "succeeded", f"{job_id}: {outcomes}"
        assert not by_gone, f"{job_id}: started by the executor that went"
        assert started_at - instant <= timedelta(seconds=within_s), (job_id, started_at)
    statuses = cluster.query(
        "SELECT status::text, count(*) FROM executions WHERE job_id = ANY(%s) GROUP BY 1",
        [job.id for job in made],
    )
    assert statuses == [("succeeded", RUNS)]


async def test_a_killed_holder_s_runs_start_on_time_on_another_executor(
    cluster: Cluster, store: Store
) -> None:
    cluster.start_node("node-0", lease_s=10, prefetch_ms=4000)
    for n in range(2):
        cluster.start_executor(f"executor-{n}")
    await cluster.ready()
    tenant = (await store.tenants.create("held")).id
    instant = (datetime.now(UTC) + timedelta(seconds=6)).replace(microsecond=0)
    made, victim = await handed_over(cluster, store, tenant, instant)
    cluster.executors[victim].signal(signal.SIGKILL)
    await cluster.wait_until(
        lambda: cluster.query(
            "SELECT count(*) FROM executions WHERE job_id = ANY(%s) AND status = 'succeeded'",
            [job.id for job in made],
        )[0][0] == RUNS,
        within=30,
    )  # fmt: skip
    assert_each_started_once_on_time(cluster, made, instant, victim, within_s=1.0)


@pytest.mark.timeout(180)
async def test_a_frozen_holder_s_runs_go_elsewhere_and_it_starts_none_when_it_wakes(
    cluster: Cluster, store: Store
) -> None:
    """The node notices a frozen executor by its keepalive (10 s, then 5 s to answer),
    so the runs are handed over 30 s ahead."""
    cluster.start_node("node-0", lease_s=60, prefetch_ms=30_000)
    for n in range(2):
        cluster.start_executor(f"executor-{n}")
    await cluster.ready()
    tenant = (await store.tenants.create("frozen")).id
    instant = (datetime.now(UTC) + timedelta(seconds=34)).replace(microsecond=0)
    made, frozen = await handed_over(cluster, store, tenant, instant)
    cluster.executors[frozen].signal(signal.SIGSTOP)
    try:
        await cluster.wait_until(
            lambda: cluster.query(
                "SELECT count(*) FROM executions WHERE job_id = ANY(%s)"
                " AND status = 'succeeded'",
                [job.id for job in made],
            )[0][0] == RUNS,
            within=60,
        )  # fmt: skip
    finally:
        cluster.executors[frozen].signal(signal.SIGCONT)

    def woke_and_came_back() -> bool:
        ups = [e for e in cluster.executors[frozen].events() if e.get("event") == "link.up"]
        return len(ups) >= 2  # its node let it go: it opened a new stream

    await cluster.wait_until(woke_and_came_back, within=30)
    assert_each_started_once_on_time(cluster, made, instant, frozen, within_s=1.0)

"""Postgres goes away for longer than a run's lease while executors hold runs, and comes back.

A scheduler node and real executor processes run against a Postgres of the
test's own, which is crashed (immediate shutdown) and restarted on the same
port, several times in a row. Each outage lasts longer than the lease (3 s)
and past the reconnect backoff psycopg_pool would otherwise use (1, 3, 7 s
after the first failure). Runs are in flight when it goes (handlers that end
during the outage and ones that outlive it), and more runs fall due during
it. After every outage:

- every run that fell due while Postgres was away, and every run made right
  after it returned, is dispatched within RESUME_BOUND_S of Postgres
  accepting connections (the node resumes within about a second; the bound
  leaves room for a loaded machine);
- every run ends succeeded (none lost), and no result was accepted with a
  fence other than the run's latest (none stale).

Without its fixes, the node stops dispatching for good after the
first outage (its executor's link is held back and never heard again), or
resumes only at the pool's next reconnect attempt.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from tests.e2e.cluster import Cluster
from tests.e2e.runs import (
    assert_no_stale_result_accepted,
    dispatch_delays,
    made,
    running_on,
    statuses,
    tenant_of,
)
from tests.services import CrashablePostgres, delete_cluster_keys
from wheel.local import LocalServices
from wheel.model.ids import TenantId
from wheel.store import migrate

OUTAGE_S = 8.0
"""Longer than the lease (FAST["lease-s"]: 3 s), and past psycopg_pool's third reconnect
try (7 s)."""
RESUME_BOUND_S = 5.0
"""Every run due by the time Postgres is back is dispatched within this of its return."""
HELD_S = 2 * OUTAGE_S
"""How long the handlers that outlive an outage run (their first attempt)."""

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
async def outage_cluster(
    local_services: LocalServices,
) -> AsyncIterator[tuple[Cluster, CrashablePostgres]]:
    postgres = await CrashablePostgres.start()
    await migrate(postgres.dsn)
    name = f"e2e-pg-{uuid.uuid4().hex[:8]}"
    cluster = Cluster(postgres.dsn, local_services.etcd.port, name)
    try:
        yield cluster, postgres
    finally:
        cluster.stop()
        await postgres.close()
        await delete_cluster_keys(local_services, name)


async def outage(
    cluster: Cluster, postgres: CrashablePostgres, tenant: TenantId, *, holders: int, spread: int
) -> tuple[list[uuid.UUID], list[uuid.UUID], list[float]]:
    """One outage with `holders` runs in flight on every executor: the jobs it made, those
    whose runs were due by the time Postgres was back, and their dispatch delays."""
    executors = len(cluster.executors)
    start = (datetime.now(UTC) + timedelta(seconds=1)).replace(microsecond=0)
    # Half end during the outage (their results wait for Postgres), half outlive it.
    instants = [start] * (holders * executors)
    retry = timedelta(seconds=0.1)
    short = await made(postgres.dsn, tenant, "hang_first", instants,
                       payload=b"%.1f" % (OUTAGE_S / 2), backoff_base=retry)  # fmt: skip
    long = await made(postgres.dsn, tenant, "hang_first", instants,
                      payload=b"%.1f" % HELD_S, backoff_base=retry)  # fmt: skip
    await cluster.wait_until(lambda: len(running_on(cluster, short + long)) == executors, 30)
    crashed_at = datetime.now(UTC)
    # Due while Postgres is away: loaded into the wheel, fired, waiting to be claimed.
    during = await made(postgres.dsn, tenant, "noop", [
        crashed_at + timedelta(seconds=2 + OUTAGE_S * n / spread) for n in range(spread)
    ])  # fmt: skip
    await postgres.crash()
    await asyncio.sleep(OUTAGE_S - (datetime.now(UTC) - crashed_at).total_seconds())  # the outage
    back_at = await postgres.restart()
    after = await made(postgres.dsn, tenant, "noop", [datetime.now(UTC)] * spread)
    settled = [*during, *after]

    def done() -> bool:
        return statuses(cluster, settled).get("succeeded", 0) == len(settled)

    try:
        await cluster.wait_until(done, within=RESUME_BOUND_S * 4)
    except TimeoutError:
        pytest.fail(f"after the outage: {statuses(cluster, settled)}\n{cluster.dump_logs()}")
    return [*short, *long, *settled], settled, dispatch_delays(cluster, settled, back_at)


async def settle_all(cluster: Cluster, job_ids: list[uuid.UUID]) -> None:
    def done() -> bool:
        return statuses(cluster, job_ids).get("succeeded", 0) == len(job_ids)

    try:
        await cluster.wait_until(done, within=HELD_S + 30)
    except TimeoutError:
        pytest.fail(f"{statuses(cluster, job_ids)}\n{cluster.dump_logs()}")


@pytest.mark.parametrize(
    ("executors", "outages", "holders", "spread"),
    [(1, 3, 3, 10), (2, 2, 2, 20)],
    ids=["one executor, three outages", "two executors holding runs, two outages"],
)
async def test_dispatch_resumes_after_each_outage_longer_than_the_lease(
    outage_cluster: tuple[Cluster, CrashablePostgres],
    executors: int,
    outages: int,
    holders: int,
    spread: int,
) -> None:
    cluster, postgres = outage_cluster
    cluster.start_node("node-0")
    names = {f"executor-{n}" for n in range(executors)}
    for name in sorted(names):
        cluster.start_executor(name)
    await cluster.ready()
    tenant = tenant_of(postgres.dsn, "outage")
    every: list[uuid.UUID] = []
    for number in range(outages):
        made_now, resumed, delays = await outage(
            cluster, postgres, tenant, holders=holders, spread=spread
        )
        every += made_now
        print(f"outage {number + 1}: dispatch after Postgres was back: max {delays[-1]:.2f} s")
        assert delays[-1] <= RESUME_BOUND_S, delays
        served = cluster.query(
            "SELECT DISTINCT executor_id FROM attempts WHERE job_id = ANY(%s)", resumed
        )
        assert {row[0] for row in served} == names, "every executor takes work again"
    await settle_all(cluster, every)
    assert_no_stale_result_accepted(cluster, every)

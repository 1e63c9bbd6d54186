"""wheel on a highly available Postgres: the primary's machine is lost, or handed over.

Patroni runs two Postgres servers on the run's etcd, the primary committing on a
synchronous standby (`wheel.local.patroni`). Two `wheel scheduler` processes and a
`wheel executor` reach it through one multi-host DSN with
target_session_attrs=read-write, as docs/operations.md says to. Runs are in flight
(handlers that outlive the failover, past the 3 s lease), and more fall due while
it happens; a client keeps creating jobs, retrying what fails.

When the primary is SIGKILLed and its data directory deleted, Patroni promotes the
standby once the primary's leader key expires (its ttl, 20 s). Then:
- every create the client saw acknowledged is there;
- every run ends succeeded: none lost;
- no result was accepted under a fence other than the run's latest (none stale);
- every run due during the failover is dispatched within RESUME_BOUND_S of the
  new primary accepting writes.
A switchover under the same load must meet the same.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import psycopg
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
from tests.services import delete_cluster_keys
from wheel.errors import WheelError
from wheel.local import LocalServices
from wheel.local.patroni import PatroniCluster
from wheel.model.ids import TenantId
from wheel.store import migrate

pytestmark = pytest.mark.timeout(420)

HELD_S = 30.0
"""The first attempts of the runs in flight outlive the failover (and the 3 s lease)."""
RESUME_BOUND_S = 10.0
"""Runs due during the failover are dispatched within this of the new primary's first write."""
AFTER = 5
"""Creates the client makes on the new primary before the test moves on."""
WRITABLE_BOUND_S = 50.0
"""The new primary takes writes within this of the kill: Patroni's ttl (20 s), its loop, and a
shared two-core machine."""


@pytest.fixture
async def on_patroni(
    patroni_cluster: PatroniCluster, local_services: LocalServices
) -> AsyncIterator[tuple[Cluster, PatroniCluster, str]]:
    with psycopg.connect(patroni_cluster.dsn(), autocommit=True) as conn:
        conn.execute("CREATE DATABASE wheel")
    dsn = patroni_cluster.dsn("wheel")
    await migrate(dsn)
    name = f"e2e-ha-{uuid.uuid4().hex[:8]}"
    cluster = Cluster(dsn, local_services.etcd.port, name)
    try:
        yield cluster, patroni_cluster, dsn
    finally:
        cluster.stop()
        await delete_cluster_keys(local_services, name)


async def _keep_creating(
    dsn: str, tenant: TenantId, patroni: PatroniCluster, was: object, until: float
) -> tuple[list[uuid.UUID], datetime]:
    """A client creating a run-soon job at a time, retrying what fails, until the new
    primary has taken AFTER creates: the ids it saw acknowledged, and when the new primary
    took its first."""
    acknowledged: list[uuid.UUID] = []
    first: datetime | None = None
    after = 0
    while time.monotonic() < until and after < AFTER:
        try:
            soon = datetime.now(UTC) + timedelta(seconds=1)
            ids = await made(dsn, tenant, "noop", [soon])
        except (WheelError, psycopg.Error, OSError):
            continue  # a client's retry: the next try opens a new connection
        acknowledged += ids
        if first is not None or patroni.primary() not in (None, was):
            first = first or datetime.now(UTC)
            after += 1
    assert first is not None, "the new primary took no create in time"
    return acknowledged, first


async def _through_a_change_of_primary(
    cluster: Cluster, patroni: PatroniCluster, dsn: str, change: str
) -> None:
    cluster.start_node("node-0")
    cluster.start_node("node-1")
    cluster.start_executor("executor-0")
    await cluster.ready()
    tenant = tenant_of(dsn, "ha")
    start = (datetime.now(UTC) + timedelta(seconds=1)).replace(microsecond=0)
    retry = timedelta(seconds=0.1)
    held = await made(dsn, tenant, "hang_first", [start] * 4,
                         payload=b"%.1f" % HELD_S, backoff_base=retry)  # fmt: skip
    await cluster.wait_until(lambda: bool(running_on(cluster, held)), 30)
    changed_at = datetime.now(UTC)
    during = await made(dsn, tenant, "noop", [
        changed_at + timedelta(seconds=2 + 25 * n / 20) for n in range(20)
    ])  # fmt: skip
    primary = patroni.primary()
    assert primary is not None
    began = time.monotonic()
    if change == "kill":
        patroni.kill(primary)
        patroni.delete_data(primary)
    else:
        patroni.switchover()
    created, back_at = await _keep_creating(
        dsn, tenant, patroni, primary, until=began + WRITABLE_BOUND_S
    )
    new_primary = patroni.primary()
    assert new_primary is not None
    assert new_primary is not primary
    writable_s = (back_at - changed_at).total_seconds()
    print(f"\n{change}: the new primary took a create {writable_s:.2f} s after; "
          f"{len(created)} creates acknowledged")  # fmt: skip

    every = [*held, *during, *created]

    def done() -> bool:
        return statuses(cluster, every).get("succeeded", 0) == len(every)

    try:
        await cluster.wait_until(done, within=HELD_S + 60)
    except TimeoutError:
        pytest.fail(f"{statuses(cluster, every)} of {len(every)}\n{cluster.dump_logs()}")
    present = cluster.query("SELECT count(*) FROM jobs WHERE id = ANY(%s)", created)[0][0]
    assert present == len(created), "every acknowledged create survived"
    assert_no_stale_result_accepted(cluster, every)
    delays = dispatch_delays(cluster, during, back_at)
    print(f"{change}: runs due meanwhile dispatched at most {delays[-1]:.2f} s after that")
    assert delays[-1] <= RESUME_BOUND_S, delays


async def test_the_primary_lost_with_its_disk_loses_no_acknowledged_job_and_no_run(
    on_patroni: tuple[Cluster, PatroniCluster, str],
) -> None:
    await _through_a_change_of_primary(*on_patroni, change="kill")


async def test_a_switchover_under_load_loses_nothing(
    on_patroni: tuple[Cluster, PatroniCluster, str],
) -> None:
    await _through_a_change_of_primary(*on_patroni, change="switchover")

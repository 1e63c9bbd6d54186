"""A session keeps its lease alive, and says it is lost no later than the lease could expire."""

from __future__ import annotations

import os
import signal
import time

from wheel.coordinator.etcd import Etcd
from wheel.coordinator.session import Session
from wheel.local import EtcdServer


async def test_a_kept_session_outlives_its_ttl(own_etcd: EtcdServer) -> None:
    etcd = await Etcd.connect(own_etcd.endpoint)
    session = await Session.open(etcd, ttl_s=1)
    await etcd.put("/w/nodes/a", b"{}", lease=session.lease_id)
    first_deadline = session.deadline
    for _ in range(6):  # two TTLs' worth of keep-alives
        await session.refreshed.wait()
    assert session.deadline > first_deadline + 1
    assert session.alive()
    assert await etcd.get("/w/nodes/a") is not None
    await session.close()
    assert await etcd.get("/w/nodes/a") is None, "closing revokes: the key goes at once"
    await etcd.close()


async def test_etcd_gone_silent_loses_the_session_by_its_deadline(own_etcd: EtcdServer) -> None:
    etcd = await Etcd.connect(own_etcd.endpoint, timeout_s=30)
    session = await Session.open(etcd, ttl_s=2)
    os.kill(own_etcd.process.pid, signal.SIGSTOP)
    stopped_at = time.monotonic()
    await session.lost.wait()
    assert not session.alive()
    # No keep-alive got through after etcd stopped: the deadline is at most one TTL on.
    assert session.deadline <= stopped_at + 2
    os.kill(own_etcd.process.pid, signal.SIGCONT)
    await etcd.close()


async def test_closing_revokes_even_a_lease_this_side_has_given_up_on(
    own_etcd: EtcdServer,
) -> None:
    """The local deadline is conservative: past it, etcd may still hold the lease (a
    loaded machine, a late keep-alive). A clean exit must not leave its keys a TTL."""
    now = [time.monotonic()]
    etcd = await Etcd.connect(own_etcd.endpoint)
    session = await Session.open(etcd, ttl_s=30, clock=lambda: now[0])
    await etcd.put("/w/executors/x", b"{}", lease=session.lease_id)
    now[0] += 31  # this side's deadline has passed; etcd's has not
    assert not session.alive()
    await session.close()
    assert await etcd.get("/w/executors/x") is None
    await etcd.close()

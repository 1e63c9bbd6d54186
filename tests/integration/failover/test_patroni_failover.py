"""A Postgres primary lost or handed over under Patroni, with a synchronous standby.

What wheel relies on: a commit acknowledged by the primary is on the synchronous
standby, Patroni promotes that standby, and a multi-host DSN with
target_session_attrs=read-write finds the new primary on a fresh connection.

Time bound: a killed primary's leader key expires at most ttl_s (20 s, Patroni's
minimum) after its last renewal; the standby promotes on its next HA loop
(loop_wait_s, 1 s). Each test asserts the measured figure against ttl_s plus a
margin for a shared two-core machine, and records it (`record_property`).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import psycopg
import pytest

from wheel.local.patroni import PatroniCluster, PatroniMember

ROWS = 200
CONNECT_TIMEOUT_S = 2
RETRY_S = 0.05
# On top of ttl_s: the standby's HA loop, promotion, and a shared machine's scheduling.
MARGIN_S = 15.0
SWITCHOVER_BOUND_S = 30.0


def _server_port(conn: psycopg.Connection[tuple[object, ...]]) -> int:
    row = conn.execute("SELECT inet_server_port()").fetchone()
    assert row is not None
    return int(str(row[0]))


def _ids(member: PatroniMember) -> set[int]:
    with psycopg.connect(member.dsn(), connect_timeout=CONNECT_TIMEOUT_S) as conn:
        return {int(row[0]) for row in conn.execute("SELECT id FROM acked")}


def _write_until_accepted(cluster: PatroniCluster, row_id: int, timeout_s: float) -> int:
    """Insert `row_id` through the multi-host DSN, a fresh connection per try, until one
    commits (a client's retry); returns the port of the server that took it."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with psycopg.connect(cluster.dsn(), connect_timeout=CONNECT_TIMEOUT_S) as conn:
                conn.execute("INSERT INTO acked (id) VALUES (%s)", (row_id,))
                conn.commit()
                return _server_port(conn)
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(RETRY_S)  # pacing a client's retries, not waiting for an event


def test_sync_standby_is_promoted_with_every_commit_when_the_primary_dies(
    patroni_cluster: PatroniCluster, record_property: pytest.RecordProperty
) -> None:
    cluster = patroni_cluster
    primary, standby = cluster.primary(), cluster.sync_standby()
    assert primary is not None
    assert standby is not None
    assert standby is not primary
    with psycopg.connect(primary.dsn(), autocommit=True) as conn:
        replication = conn.execute("SELECT application_name, sync_state FROM pg_stat_replication")
        assert replication.fetchall() == [(standby.name, "sync")]
        names = conn.execute("SHOW synchronous_standby_names").fetchone()
        assert names is not None
        assert names[0], "the primary waits for a synchronous standby"
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)

    with psycopg.connect(cluster.dsn(), connect_timeout=CONNECT_TIMEOUT_S) as conn:
        assert _server_port(conn) == primary.pg_port
        conn.execute("CREATE TABLE acked (id bigint PRIMARY KEY)")
        conn.commit()
        for row_id in range(ROWS):  # one commit each: every one waits for the standby's flush
            conn.execute("INSERT INTO acked (id) VALUES (%s)", (row_id,))
            conn.commit()

    killed_at = time.monotonic()
    cluster.kill(primary)
    cluster.delete_data(primary)
    port = _write_until_accepted(cluster, ROWS, timeout_s=cluster.timings.ttl_s + MARGIN_S)
    writable_s = time.monotonic() - killed_at
    record_property("kill_to_writable_s", round(writable_s, 2))
    print(f"\nkill -> first write on the new primary: {writable_s:.2f} s")

    assert port == standby.pg_port
    assert cluster.primary() is standby
    assert _ids(standby) == set(range(ROWS + 1)), "every acknowledged commit survived"
    assert writable_s < cluster.timings.ttl_s + MARGIN_S

    # The lost member comes back from an empty data directory: cloned from the new primary.
    rejoin_started = time.monotonic()
    cluster.start_member(primary)
    assert cluster.wait_for_sync_standby() is primary
    rejoin_s = time.monotonic() - rejoin_started
    record_property("empty_member_to_sync_standby_s", round(rejoin_s, 2))
    print(f"empty member -> synchronous standby again: {rejoin_s:.2f} s")
    assert _ids(primary) == set(range(ROWS + 1))


@dataclass
class _Writer:
    """Inserts ids 0, 1, 2, ... through the multi-host DSN until stopped, reconnecting on
    errors; records each write whose commit returned (acknowledged) and where it went."""

    dsn: str
    acked: list[tuple[int, int, float]] = field(default_factory=list)
    """(id, server port, monotonic time of the acknowledgement)."""
    failures: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None

    def run(self) -> None:
        next_id = 0
        conn: psycopg.Connection[tuple[object, ...]] | None = None
        try:
            while not self.stop.is_set():
                try:
                    if conn is None:
                        conn = psycopg.connect(self.dsn, connect_timeout=CONNECT_TIMEOUT_S)
                        port = _server_port(conn)
                    conn.execute("INSERT INTO acked (id) VALUES (%s)", (next_id,))
                    conn.commit()
                    self.acked.append((next_id, port, time.monotonic()))
                except psycopg.OperationalError:
                    self.failures += 1
                    if conn is not None:
                        conn.close()
                    conn = None
                    self.stop.wait(RETRY_S)  # pacing reconnects, not waiting for an event
                next_id += 1  # an unacknowledged id is never reused: it may have committed
        except BaseException as exc:
            self.error = exc
        finally:
            if conn is not None:
                conn.close()

    def acks_from(self, port: int) -> int:
        return sum(1 for _, served_by, _ in self.acked if served_by == port)


def test_switchover_under_writes_keeps_every_acknowledged_write(
    patroni_cluster: PatroniCluster, record_property: pytest.RecordProperty
) -> None:
    cluster = patroni_cluster
    old, new = cluster.primary(), cluster.sync_standby()
    assert old is not None
    assert new is not None
    with psycopg.connect(old.dsn(), autocommit=True) as conn:
        conn.execute("CREATE TABLE acked (id bigint PRIMARY KEY)")

    writer = _Writer(cluster.dsn())
    thread = threading.Thread(target=writer.run, name="writer")
    thread.start()
    try:
        cluster.wait_until(
            "writes on the old primary", lambda: writer.acks_from(old.pg_port) >= 50, timeout_s=30
        )
        asked_at = time.monotonic()
        message = cluster.switchover(new)
        answered_s = time.monotonic() - asked_at
        cluster.wait_until(
            "writes on the new primary",
            lambda: writer.acks_from(new.pg_port) >= 50 or writer.error is not None,
            timeout_s=SWITCHOVER_BOUND_S,
        )
    finally:
        writer.stop.set()
        thread.join()
    assert writer.error is None, writer.error
    first_on_new = min(at for _, port, at in writer.acked if port == new.pg_port)
    writable_s = first_on_new - asked_at
    record_property("switchover_to_writable_s", round(writable_s, 2))
    record_property("switchover_answered_s", round(answered_s, 2))
    print(
        f"\nswitchover asked -> first write on the new primary: {writable_s:.2f} s "
        f"(REST answered after {answered_s:.2f} s: {message}; "
        f"{len(writer.acked)} writes acknowledged, {writer.failures} failed)"
    )

    assert cluster.primary() is new
    acked = {row_id for row_id, _, _ in writer.acked}
    assert acked <= _ids(new), "every acknowledged write is on the new primary"
    assert writable_s < SWITCHOVER_BOUND_S
    # The old primary follows the new one and becomes its synchronous standby again.
    assert cluster.wait_for_sync_standby() is old

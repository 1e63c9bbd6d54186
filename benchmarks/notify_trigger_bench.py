"""What a row trigger whose WHEN is false costs an UPDATE: the notification outbox's shape.

    .venv/bin/python benchmarks/notify_trigger_bench.py [--rows 200000] [--rounds 6]

On a partitioned table like `executions`, updates every row's status back and
forth, alternately with and without an AFTER UPDATE OF status trigger whose
WHEN never holds (the hot path: claims and successes never become dead,
needs_review or skipped), and prints the medians and their ratio. The
store's own hot path, with and without the real triggers, is
`store_bench.py --price-notify-triggers`.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import psycopg

from wheel.local import PostgresServer

SCHEMA = """
CREATE TYPE st AS ENUM ('pending', 'dispatched', 'dead');
CREATE TABLE t (id int, status st NOT NULL, note text) PARTITION BY RANGE (id);
CREATE TABLE t0 PARTITION OF t FOR VALUES FROM (0) TO (100000000);
CREATE TABLE sink (id int);
CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS
    $$ BEGIN INSERT INTO sink VALUES (NEW.id); RETURN NULL; END $$;
"""
TRIGGER = """CREATE TRIGGER tr AFTER UPDATE OF status ON t FOR EACH ROW
    WHEN (NEW.status IN ('dead') AND OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION f()"""


def round_trip(conn: psycopg.Connection) -> float:
    began = time.perf_counter()
    conn.execute("UPDATE t SET status = 'dispatched' WHERE status = 'pending'")
    conn.execute("UPDATE t SET status = 'pending' WHERE status = 'dispatched'")
    return time.perf_counter() - began


def main(rows: int, rounds: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="wheel-bench-"))
    root.chmod(0o755)
    server = PostgresServer.start(root / "pg", durable=False)
    try:
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute(SCHEMA)
            conn.execute(
                "INSERT INTO t SELECT g, 'pending', 'x' FROM generate_series(1, %s) g", (rows,)
            )
            conn.execute("VACUUM ANALYZE t")
            took: dict[str, list[float]] = {"without": [], "with": []}
            for _ in range(rounds):
                for mode in ("without", "with"):
                    if mode == "with":
                        conn.execute(TRIGGER)
                    took[mode].append(round_trip(conn))
                    if mode == "with":
                        conn.execute("DROP TRIGGER tr ON t")
                    conn.execute("VACUUM t")
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    without, with_ = (statistics.median(took[m]) for m in ("without", "with"))
    updates = 2 * rows
    print(f"{updates:,} row updates per round, median of {rounds} alternating rounds")
    print(f"without the trigger  {without:.3f} s  ({without / updates * 1e9:,.0f} ns/row)")
    print(f"with it (WHEN false) {with_:.3f} s  ({with_ / updates * 1e9:,.0f} ns/row)")
    print(f"ratio {with_ / without:.2f}x, {(with_ - without) / updates * 1e9:,.0f} ns/row")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    main(args.rows, args.rounds)

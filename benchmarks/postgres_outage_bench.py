"""How soon a connection pool answers again after Postgres comes back, by outage length.

    PYTHONPATH=. .venv/bin/python benchmarks/postgres_outage_bench.py [--outages 5,15,35]

wheel's pool (`wheel.store.pool.open_pool`) and psycopg_pool with its own reconnect
backoff, side by side against one durable Postgres that is crashed (immediate
shutdown) and restarted on its port. Each pool has a caller asking `SELECT 1` every
100 ms, as a node's loops do. Prints, per outage, how long after Postgres accepted
connections again each pool answered.
"""

from __future__ import annotations

import argparse
import asyncio
import logging

from psycopg_pool import AsyncConnectionPool
from tests.services import CrashablePostgres, until_answered

from wheel import eventloop
from wheel.store.pool import Pool, open_pool

ASK_EVERY_S = 0.1


async def main(outages: list[float]) -> None:
    postgres = await CrashablePostgres.start()
    plain: Pool = AsyncConnectionPool(
        postgres.dsn, min_size=2, max_size=8, open=False, timeout=120,
        kwargs={"autocommit": True}, name="psycopg_pool",
    )  # fmt: skip
    await plain.open(wait=True)
    wheel = await open_pool(postgres.dsn, min_size=2, max_size=8, timeout_s=120)
    print(f"{'outage s':>9} {'wheel pool s':>13} {'psycopg_pool s':>15}")
    try:
        for outage_s in outages:
            await postgres.crash()
            asking = [asyncio.create_task(until_answered(p, ASK_EVERY_S)) for p in (wheel, plain)]
            await asyncio.sleep(outage_s)  # the outage
            await postgres.restart()
            back = asyncio.get_running_loop().time()
            took = [at - back for at in await asyncio.gather(*asking)]
            print(f"{outage_s:>9.0f} {took[0]:>13.2f} {took[1]:>15.2f}")
    finally:
        await wheel.close()
        await plain.close()
        await postgres.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--outages", default="5,15,35", help="outage lengths in seconds")
    arguments = parser.parse_args()
    for noisy in ("psycopg", "wheel"):  # each pool logs every try; the table says it all
        logging.getLogger(noisy).setLevel(logging.ERROR)
    eventloop.run(main([float(s) for s in arguments.outages.split(",")]))
